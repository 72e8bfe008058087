#include "model.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <map>
#include <optional>

#include "backend.h"
#include "errors.h"
#include "gguf.h"
#include "hparams.h"
#include "huge_pages.h"
#include "tensors.h"
#include "tensors_deepseek4.h"

namespace neuron {

const char * arch_name(Arch arch) {
    switch (arch) {
        case Arch::Llama: return "llama";
        case Arch::Qwen2: return "qwen2";
        case Arch::Qwen3: return "qwen3";
        case Arch::Qwen3Moe: return "qwen3moe";
        case Arch::DeepSeek2: return "deepseek2";
        case Arch::GptOss: return "gpt-oss";
        case Arch::Qwen35Moe: return "qwen35moe";
        case Arch::GlmDsa: return "glm-dsa";
        case Arch::DeepSeek4: return "deepseek4";
    }
    return "?";
}

Model::~Model() {
    for (auto * b : buffers) ggml_backend_buffer_free(b);
    for (auto * c : ctxs) ggml_free(c);
}

FileMapping::~FileMapping() {
    if (addr) munmap(addr, size);
}

namespace {

struct Artifact {
    std::string path;
    gguf_context * gguf = nullptr;
    ggml_context * meta = nullptr;
    int fd = -1;  // opened when its first tensor is read
    FileMapping * mapping = nullptr;  // owned by the model; made when its first tensor is mapped
    ~Artifact() {
        if (gguf) gguf_free(gguf);
        if (meta) ggml_free(meta);
        if (fd >= 0) close(fd);
    }
};

// llama.cpp's weight_buft_supported for matmul weights: ask the device with a dummy buffer.
bool buft_supports(ggml_backend_dev_t dev, ggml_backend_buffer_type_t buft, ggml_tensor * w, ggml_op op,
                   int64_t n_ids_used) {
    if (op != GGML_OP_MUL_MAT && op != GGML_OP_MUL_MAT_ID) return false;
    ggml_init_params p = {ggml_tensor_overhead() * 8, nullptr, true};
    ggml_context * ctx = ggml_init(p);
    ggml_tensor * mm = nullptr;
    if (op == GGML_OP_MUL_MAT) {
        mm = ggml_mul_mat(ctx, w, ggml_new_tensor_4d(ctx, GGML_TYPE_F32, w->ne[0], 512, w->ne[2], w->ne[3]));
    } else {
        ggml_tensor * b = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, w->ne[0], n_ids_used, 512);
        mm = ggml_mul_mat_id(ctx, w, b, ggml_new_tensor_2d(ctx, GGML_TYPE_I32, n_ids_used, 512));
    }
    w->buffer = ggml_backend_buft_alloc_buffer(buft, 0);
    const bool ok = ggml_backend_dev_supports_op(dev, mm);
    ggml_backend_buffer_free(w->buffer);
    w->buffer = nullptr;
    ggml_free(ctx);
    return ok;
}

void read_exact(int fd, void * dst, size_t n, size_t offset, const std::string & path, const std::string & name) {
    auto * p = (uint8_t *) dst;
    while (n > 0) {
        const ssize_t r = pread(fd, p, std::min(n, (size_t) 1 << 30), (off_t) offset);
        if (r <= 0) {
            throw RuntimeError("ARTIFACT_READ", "reading tensor " + name + " from " + path + " failed: " +
                                                    (r == 0 ? std::string("unexpected end of file") : strerror(errno)))
                .str("file", path)
                .str("tensor", name);
        }
        p += r;
        n -= (size_t) r;
        offset += (size_t) r;
    }
}

struct Found {
    Want want;
    int art;
    int64_t tid;
    ggml_tensor * meta;
};

void open_artifact(Artifact & art) {
    if (art.fd >= 0) return;
    art.fd = open(art.path.c_str(), O_RDONLY);
    if (art.fd < 0) throw RuntimeError("ARTIFACT_UNREADABLE", "cannot open " + art.path).str("file", art.path);
}

RuntimeError truncated(const std::string & path, const std::string & name) {
    return RuntimeError("ARTIFACT_READ", "reading tensor " + name + " from " + path + " failed: unexpected end of file")
        .str("file", path)
        .str("tensor", name);
}

// The whole file, read-only and shared with the page cache (the copy a seeding host already holds).
// A mapped file that shrinks under us would raise SIGBUS on the next touch: a host maps only artifacts
// whose size and sha256 it has just verified, in its own data dir, and its torrent client only reads
// them (a piece it rewrites holds the same, hash-checked bytes); deleting or replacing the file
// (unlink, rename) leaves this mapping on the old inode. Only an in-place truncation by another
// process could fault, as with llama.cpp's mmap.
FileMapping & map_artifact(Artifact & art, Model & model, bool huge_pages) {
    if (art.mapping) return *art.mapping;
    open_artifact(art);
    struct stat st{};
    if (fstat(art.fd, &st) != 0 || st.st_size <= 0)
        throw RuntimeError("ARTIFACT_UNREADABLE", "cannot stat " + art.path).str("file", art.path);
    void * addr = mmap(nullptr, (size_t) st.st_size, PROT_READ, MAP_SHARED, art.fd, 0);
    if (addr == MAP_FAILED) {
        throw RuntimeError("ARTIFACT_UNREADABLE", "cannot map " + art.path + ": " + strerror(errno))
            .str("file", art.path);
    }
    if (huge_pages) advise_huge_mapping(addr, (size_t) st.st_size);
    model.mappings.push_back(std::make_unique<FileMapping>(addr, (size_t) st.st_size));
    art.mapping = model.mappings.back().get();
    return *art.mapping;
}

// One CPU buffer per artifact over the mapped bytes its tensors span, each tensor at its file offset.
void place_mapped(std::vector<std::unique_ptr<Artifact>> & arts,
                  const std::vector<std::pair<const Found *, ggml_tensor *>> & mapped, Model & model, bool huge_pages) {
    std::vector<std::pair<size_t, size_t>> span(arts.size(), {SIZE_MAX, 0});
    std::map<std::pair<int, int64_t>, size_t> used;  // (artifact, tensor) -> bytes: tied embeddings count once
    for (const auto & [f, t] : mapped) {
        Artifact & art = *arts[f->art];
        const FileMapping & m = map_artifact(art, model, huge_pages);
        const size_t offset = gguf_get_data_offset(art.gguf) + gguf_get_tensor_offset(art.gguf, f->tid);
        const size_t n = ggml_nbytes(t);
        // a short file would fault on first touch (SIGBUS): refuse it here, as the read path does
        if (offset > m.size || n > m.size - offset) throw truncated(art.path, f->want.name);
        span[f->art] = {std::min(span[f->art].first, offset), std::max(span[f->art].second, offset + n)};
        used[{f->art, f->tid}] = n;
    }
    std::vector<ggml_backend_buffer_t> bufs(arts.size(), nullptr);
    for (size_t i = 0; i < arts.size(); ++i) {
        if (span[i].second == 0) continue;
        auto * base = (uint8_t *) arts[i]->mapping->addr;
        bufs[i] = ggml_backend_cpu_buffer_from_ptr(base + span[i].first, span[i].second - span[i].first);
        ggml_backend_buffer_set_usage(bufs[i], GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
        model.buffers.push_back(bufs[i]);
        // fault the span in now (a host's verified artifact is in the page cache already), so the first step pays no
        // page faults, in 2 MB pages where the kernel can (huge_pages.cpp)
        model.huge_page_bytes += fault_in_span(arts[i]->fd, base, span[i].first, span[i].second, huge_pages);
    }
    for (const auto & [f, t] : mapped) {
        Artifact & art = *arts[f->art];
        const size_t offset = gguf_get_data_offset(art.gguf) + gguf_get_tensor_offset(art.gguf, f->tid);
        ggml_backend_tensor_alloc(bufs[f->art], t, (uint8_t *) art.mapping->addr + offset);
    }
    for (const auto & [key, n] : used) model.mapped_bytes += n;
    if (model.mapped_bytes > 0) {
        model.weight_bytes += model.mapped_bytes;
        model.weight_buffers.emplace_back("CPU_Mapped", model.mapped_bytes);
    }
}

}  // namespace

std::unique_ptr<Model> load_model(const LoadOptions & opts) {
    if (opts.artifacts.empty()) throw RuntimeError("BAD_OPTIONS", "no artifacts given");
    std::vector<std::unique_ptr<Artifact>> arts;
    for (const auto & path : opts.artifacts) {
        auto art = std::make_unique<Artifact>();
        art->path = path;
        gguf_init_params p = {true, &art->meta};
        art->gguf = gguf_init_from_file(path.c_str(), p);
        if (!art->gguf) throw RuntimeError("ARTIFACT_UNREADABLE", "cannot read GGUF " + path).str("file", path);
        arts.push_back(std::move(art));
    }

    auto model = std::make_unique<Model>();
    HParams & hp = model->hp;
    hp = read_hparams(arts[0]->gguf, arts[0]->path);
    if (opts.il0 < 0 || opts.il1 > hp.n_layer || opts.il0 > opts.il1) {
        throw RuntimeError("BAD_RANGE", "layer range [" + std::to_string(opts.il0) + ", " + std::to_string(opts.il1) +
                                            ") is outside the model's " + std::to_string(hp.n_layer) + " blocks")
            .num("from", opts.il0)
            .num("to", opts.il1)
            .num("blocks", (double) hp.n_layer);
    }
    if (opts.embed && opts.il0 != 0) {
        throw RuntimeError("BAD_RANGE", "embed needs the range to start at block 0, not " + std::to_string(opts.il0))
            .num("from", opts.il0);
    }
    if (opts.head && opts.il1 != hp.n_layer) {
        throw RuntimeError("BAD_RANGE", "head needs the range to end at the last block (" + std::to_string(hp.n_layer) +
                                            "), not " + std::to_string(opts.il1))
            .num("to", opts.il1)
            .num("blocks", (double) hp.n_layer);
    }
    model->il0 = opts.il0;
    model->il1 = opts.il1;
    model->embed = opts.embed;
    model->head = opts.head;
    model->layers.resize(opts.il1 - opts.il0);

    std::vector<Want> wants;
    // the vocabulary the metadata states (0: taken from the embedding or head below)
    const int64_t V = hp.n_vocab;
    if (opts.embed) wants.push_back({"token_embd.weight", &model->tok_embd, true, GGML_OP_GET_ROWS, {hp.n_embd, V}});
    for (int il = opts.il0; il < opts.il1; ++il) block_wants(hp, il, model->layers[il - opts.il0], wants);
    if (hp.arch == Arch::Llama && opts.il1 > opts.il0) {
        wants.push_back({"rope_freqs.weight", &model->rope_freqs, false, GGML_OP_ROPE, {hp.n_rot / 2}});  // llama 3.1+
    }
    if (opts.head) {
        wants.push_back({"output_norm.weight", &model->output_norm, true, GGML_OP_MUL, {hp.n_embd}});
        bool has_output = false;
        for (auto & art : arts) has_output = has_output || gguf_find_tensor(art->gguf, "output.weight") >= 0;
        // no output.weight anywhere: tied embeddings (llama.cpp duplicates token_embd.weight)
        wants.push_back({has_output ? "output.weight" : "token_embd.weight",
                         &model->output,
                         true,
                         GGML_OP_MUL_MAT,
                         {hp.n_embd, V}});
        if (hp.arch == Arch::Qwen2) wants.push_back({"output.bias", &model->output_b, false, GGML_OP_ADD, {V}});
        if (hp.arch == Arch::DeepSeek4) deepseek4_head_wants(hp, *model, wants);
    }

    // locate every tensor
    std::vector<Found> found;
    std::vector<std::string> missing;
    const auto in_any = [&](const std::string & name) {
        for (auto & art : arts)
            if (gguf_find_tensor(art->gguf, name.c_str()) >= 0) return true;
        return false;
    };
    for (const auto & w : wants) {
        int where = -1;
        int64_t tid = -1;
        for (size_t i = 0; i < arts.size() && where < 0; ++i) {
            tid = gguf_find_tensor(arts[i]->gguf, w.name.c_str());
            if (tid >= 0) where = (int) i;
        }
        if (where < 0) {
            if (w.required || (!w.unless.empty() && !in_any(w.unless))) missing.push_back(w.name);
            continue;
        }
        // a fused tensor is there: the separate ones are not used (llama.cpp does not load them then)
        if (!w.unless.empty() && in_any(w.unless)) continue;
        found.push_back({w, where, tid, ggml_get_tensor(arts[where]->meta, w.name.c_str())});
    }
    if (!missing.empty()) {
        throw RuntimeError("MISSING_TENSOR",
                           "tensor " + missing[0] + " of layers [" + std::to_string(opts.il0) + ", " +
                               std::to_string(opts.il1) + ") is in none of the artifacts (" +
                               join_names(opts.artifacts) + ")" +
                               (missing.size() > 1 ? "; " + std::to_string(missing.size() - 1) + " more missing" : ""))
            .str("tensor", missing[0])
            .list("missing", missing)
            .list("files", opts.artifacts)
            .num("from", opts.il0)
            .num("to", opts.il1);
    }
    if (hp.n_vocab == 0) {
        for (auto & f : found) {
            if (f.want.slot == &model->tok_embd || f.want.slot == &model->output) hp.n_vocab = f.meta->ne[1];
        }
        for (auto & f : found) {
            if (f.want.slot == &model->tok_embd || f.want.slot == &model->output) f.want.ne[1] = hp.n_vocab;
            if (f.want.slot == &model->output_b) f.want.ne[0] = hp.n_vocab;
        }
    }
    // every shape as the metadata implies it: ggml aborts the process on a graph over mismatched shapes
    for (const auto & f : found) {
        const std::string problem = shape_problem(f.want, f.meta);
        if (!problem.empty())
            throw RuntimeError("BAD_TENSOR", problem + "; the artifact does not match its metadata")
                .str("tensor", f.want.name);
    }

    // choose a buffer type per tensor, the way llama.cpp does: the CPU's repacking buffer
    // types first for matmul weights, then the device's own; the embedding stays on the CPU
    ggml_backend_dev_t dev = opts.device;
    ggml_backend_dev_t cpu = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
    const bool on_cpu = ggml_backend_dev_type(dev) == GGML_BACKEND_DEVICE_TYPE_CPU;
    const auto extras = on_cpu ? cpu_extra_bufts() : std::vector<ggml_backend_buffer_type_t>{};
    ggml_backend_buffer_type_t cpu_buft = ggml_backend_dev_buffer_type(cpu);
    ggml_backend_buffer_type_t dev_buft = ggml_backend_dev_buffer_type(dev);

    std::map<ggml_backend_buffer_type_t, ggml_context *> ctx_of;
    std::vector<std::pair<const Found *, ggml_tensor *>> placed;
    std::vector<std::pair<const Found *, ggml_tensor *>> mapped;  // used in place from the mapped artifact
    ggml_context * mapped_ctx = nullptr;
    auto new_ctx = [&]() {
        ggml_init_params p = {ggml_tensor_overhead() * (found.size() + 1), nullptr, true};
        ggml_context * c = ggml_init(p);
        model->ctxs.push_back(c);
        return c;
    };
    auto ctx_for = [&](ggml_backend_buffer_type_t buft) {
        auto it = ctx_of.find(buft);
        if (it != ctx_of.end()) return it->second;
        return ctx_of[buft] = new_ctx();
    };
    for (const auto & f : found) {
        ggml_backend_buffer_type_t buft = dev_buft;
        if (f.want.op == GGML_OP_GET_ROWS) {
            buft = cpu_buft;
        } else if (on_cpu && (f.want.op == GGML_OP_MUL_MAT || f.want.op == GGML_OP_MUL_MAT_ID)) {
            for (auto * extra : extras) {
                // ggml's AMX buffer type takes MLA's per-head k_b/v_b (3-D matmul weights) when probed with one shape,
                // and then no backend runs the batched graph's: the scheduler aborts (GGML_ASSERT(*cur_backend_id !=
                // -1)) on AMX CPUs. Those stay in the CPU's repacked or plain layout; other weights may use AMX.
                if (f.want.op == GGML_OP_MUL_MAT && f.meta->ne[2] > 1 &&
                    std::strstr(ggml_backend_buft_name(extra), "AMX") != nullptr)
                    continue;
                if (buft_supports(cpu, extra, f.meta, f.want.op, std::max<int64_t>(1, hp.n_expert_used))) {
                    buft = extra;
                    break;
                }
            }
        }
        // the plain CPU layout is the file's: map it, unless the file's alignment is below ggml's (32 bytes)
        const size_t offset =
            gguf_get_data_offset(arts[f.art]->gguf) + gguf_get_tensor_offset(arts[f.art]->gguf, f.tid);
        const bool in_place = opts.mmap && buft == cpu_buft && offset % 32 == 0;
        if (in_place && !mapped_ctx) mapped_ctx = new_ctx();
        ggml_tensor * t = ggml_dup_tensor(in_place ? mapped_ctx : ctx_for(buft), f.meta);
        ggml_set_name(t, f.want.name.c_str());
        *f.want.slot = t;
        (in_place ? mapped : placed).emplace_back(&f, t);
    }
    std::vector<ggml_backend_buffer_t> anonymous;  // CPU memory advised to 2 MB pages
    for (auto & [buft, c] : ctx_of) {
        ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors_from_buft(c, buft);
        if (!buf) {
            throw RuntimeError("OUT_OF_MEMORY",
                               std::string("cannot allocate ") +
                                   std::to_string(ggml_backend_alloc_ctx_tensors_from_buft_size(c, buft)) +
                                   " bytes of weights in " + ggml_backend_buft_name(buft));
        }
        ggml_backend_buffer_set_usage(buf, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
        const bool cpu_memory = buft == cpu_buft || std::find(extras.begin(), extras.end(), buft) != extras.end();
        if (opts.huge_pages && cpu_memory) {
            advise_huge_buffer(ggml_backend_buffer_get_base(buf), ggml_backend_buffer_get_size(buf));
            anonymous.push_back(buf);
        }
        model->buffers.push_back(buf);
        model->weight_bytes += ggml_backend_buffer_get_size(buf);
        model->weight_buffers.emplace_back(ggml_backend_buft_name(buft), ggml_backend_buffer_get_size(buf));
    }
    place_mapped(arts, mapped, *model, opts.huge_pages);

    // read the bytes: straight into host memory when possible, else through a staging buffer
    std::vector<uint8_t> staging;
    for (auto & [f, t] : placed) {
        Artifact & art = *arts[f->art];
        open_artifact(art);
        const size_t offset = gguf_get_data_offset(art.gguf) + gguf_get_tensor_offset(art.gguf, f->tid);
        const size_t n = ggml_nbytes(t);
        const bool direct =
            ggml_backend_buffer_is_host(t->buffer) && ggml_backend_buffer_get_type(t->buffer) == cpu_buft;
        if (direct) {
            read_exact(art.fd, t->data, n, offset, art.path, f->want.name);
        } else {
            staging.resize(n);
            read_exact(art.fd, staging.data(), n, offset, art.path, f->want.name);
            ggml_backend_tensor_set(t, staging.data(), 0, n);
        }
    }
    for (ggml_backend_buffer_t buf : anonymous)
        model->huge_page_bytes +=
            huge_buffer_bytes(ggml_backend_buffer_get_base(buf), ggml_backend_buffer_get_size(buf));
    if (hp.arch == Arch::DeepSeek4) {
        const std::string problem = deepseek4_weight_problem(*model);
        if (!problem.empty()) throw RuntimeError("BAD_TENSOR", problem + "; the artifact does not match its metadata");
    }
    return model;
}

}  // namespace neuron
