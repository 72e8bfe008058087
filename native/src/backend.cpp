#include "backend.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>

#include "errors.h"

namespace neuron {

static std::mutex g_load_mutex;
static std::vector<std::string> g_loaded;

// ggml logs every repacked tensor at debug level; pass on warnings and errors only
// (NEURON_GGML_LOG=debug shows everything). Chains to whatever callback was set before.
static ggml_log_callback g_prev_log = nullptr;
static void * g_prev_log_data = nullptr;
static ggml_log_level g_last_level = GGML_LOG_LEVEL_NONE;
static std::vector<std::string> * g_capture = nullptr;  // while probing GPU libraries: keep their complaints

static void filtered_log(ggml_log_level level, const char * text, void * user_data) {
    if (level != GGML_LOG_LEVEL_CONT) g_last_level = level;
    const ggml_log_level effective = level == GGML_LOG_LEVEL_CONT ? g_last_level : level;
    if (effective < GGML_LOG_LEVEL_WARN) return;
    if (g_capture) {
        g_capture->emplace_back(text);
        return;
    }
    if (g_prev_log) g_prev_log(level, text, g_prev_log_data);
    else fputs(text, stderr);
}

static void install_log_filter() {
    const char * env = getenv("NEURON_GGML_LOG");
    if (env && std::string(env) == "debug") return;
    ggml_log_get(&g_prev_log, &g_prev_log_data);
    if (g_prev_log == filtered_log) return;
    ggml_log_set(filtered_log, nullptr);
}

std::vector<std::string> load_backends(const std::vector<std::string> & dirs,
                                       const std::vector<std::string> & extra_libs) {
    std::lock_guard<std::mutex> lock(g_load_mutex);
    if (g_loaded.empty()) install_log_filter();
    // node-llama-cpp may share this process and its libggml: do not register the CPU twice.
    if (ggml_backend_reg_by_name("CPU") == nullptr) {
        for (const auto & dir : dirs) {
            if (std::find(g_loaded.begin(), g_loaded.end(), dir) != g_loaded.end()) continue;
            ggml_backend_load_all_from_path(dir.c_str());
            g_loaded.push_back(dir);
        }
    }
    // a GPU build whose driver or runtime is missing fails to load: say so in info, not on stderr
    std::vector<std::string> problems;
    for (const auto & lib : extra_libs) {
        if (std::find(g_loaded.begin(), g_loaded.end(), lib) != g_loaded.end()) continue;
        g_loaded.push_back(lib);
        if (!std::filesystem::exists(lib)) continue;
        std::vector<std::string> captured;
        g_capture = &captured;  // only effective while our filter is the installed callback
        ggml_backend_load(lib.c_str());
        g_capture = nullptr;
        for (auto & line : captured) {
            while (!line.empty() && (line.back() == '\n' || line.back() == ' ')) line.pop_back();
            problems.push_back(line);
        }
    }
    if (ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU) == nullptr) {
        throw RuntimeError("NO_BACKEND", "no ggml CPU backend could be loaded from " + join_names(dirs) +
                                             "; is node-llama-cpp's prebuilt package installed for this platform?");
    }
    return problems;
}

std::vector<std::string> device_names() {
    std::vector<std::string> names;
    for (size_t i = 0; i < ggml_backend_dev_count(); ++i)
        names.emplace_back(ggml_backend_dev_name(ggml_backend_dev_get(i)));
    return names;
}

ggml_backend_dev_t pick_device(const std::string & name) {
    if (name.empty() || name == "auto") {
        if (auto * gpu = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_GPU)) return gpu;
        return ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
    }
    if (name == "cpu" || name == "CPU") return ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
    if (auto * dev = ggml_backend_dev_by_name(name.c_str())) return dev;
    const auto available = device_names();
    throw RuntimeError("UNKNOWN_DEVICE", "no ggml device named '" + name + "'; available: " + join_names(available))
        .str("device", name)
        .list("available", available);
}

void set_n_threads(ggml_backend_t backend, int n_threads) {
    ggml_backend_dev_t dev = ggml_backend_get_device(backend);
    ggml_backend_reg_t reg = dev ? ggml_backend_dev_backend_reg(dev) : nullptr;
    if (!reg) return;
    auto fn = (ggml_backend_set_n_threads_t) ggml_backend_reg_get_proc_address(reg, "ggml_backend_set_n_threads");
    if (fn) fn(backend, n_threads);
}

void * attach_cpu_threadpool(ggml_backend_t cpu, int n_threads) {
    if (n_threads < 2) return nullptr;
    ggml_backend_dev_t dev = ggml_backend_get_device(cpu);
    ggml_backend_reg_t reg = dev ? ggml_backend_dev_backend_reg(dev) : nullptr;
    if (!reg) return nullptr;
    using new_fn = ggml_threadpool_t (*)(ggml_threadpool_params *);
    using set_fn = void (*)(ggml_backend_t, ggml_threadpool_t);
    auto make = (new_fn) ggml_backend_reg_get_proc_address(reg, "ggml_threadpool_new");
    auto set = (set_fn) ggml_backend_reg_get_proc_address(reg, "ggml_backend_cpu_set_threadpool");
    if (!make || !set) return nullptr;
    ggml_threadpool_params params = ggml_threadpool_params_default(n_threads);
    // No polling: by default the workers spin for a while after each graph, holding the cores the host's event
    // loop (and in the app the tracker and UI) needs between
    // steps; asleep on a condition variable, they wake per graph.
    params.poll = 0;
    ggml_threadpool_t pool = make(&params);
    if (pool) set(cpu, pool);
    return pool;
}

void free_cpu_threadpool(void * pool) {
    if (!pool) return;
    ggml_backend_dev_t dev = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
    ggml_backend_reg_t reg = dev ? ggml_backend_dev_backend_reg(dev) : nullptr;
    auto free_fn =
        reg ? (void (*)(ggml_threadpool_t)) ggml_backend_reg_get_proc_address(reg, "ggml_threadpool_free") : nullptr;
    if (free_fn) free_fn((ggml_threadpool_t) pool);
}

std::vector<ggml_backend_buffer_type_t> cpu_extra_bufts() {
    std::vector<ggml_backend_buffer_type_t> out;
    auto * cpu = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
    if (!cpu) return out;
    auto fn = (ggml_backend_dev_get_extra_bufts_t) ggml_backend_reg_get_proc_address(
        ggml_backend_dev_backend_reg(cpu), "ggml_backend_dev_get_extra_bufts");
    if (!fn) return out;
    for (auto * p = fn(cpu); p && *p; ++p) out.push_back(*p);
    return out;
}

}  // namespace neuron
