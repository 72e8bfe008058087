#include "gguf_keys.h"

#include "errors.h"

namespace neuron {

std::optional<int64_t> get_int(const gguf_context * g, const std::string & key) {
    const int64_t id = gguf_find_key(g, key.c_str());
    if (id < 0) return std::nullopt;
    switch (gguf_get_kv_type(g, id)) {
        case GGUF_TYPE_BOOL: return gguf_get_val_bool(g, id) ? 1 : 0;
        case GGUF_TYPE_UINT8: return gguf_get_val_u8(g, id);
        case GGUF_TYPE_INT8: return gguf_get_val_i8(g, id);
        case GGUF_TYPE_UINT16: return gguf_get_val_u16(g, id);
        case GGUF_TYPE_INT16: return gguf_get_val_i16(g, id);
        case GGUF_TYPE_UINT32: return gguf_get_val_u32(g, id);
        case GGUF_TYPE_INT32: return gguf_get_val_i32(g, id);
        case GGUF_TYPE_UINT64: return (int64_t) gguf_get_val_u64(g, id);
        case GGUF_TYPE_INT64: return gguf_get_val_i64(g, id);
        case GGUF_TYPE_ARRAY: {
            // per-layer arrays (e.g. head_count_kv): only uniform ones are supported
            const size_t n = gguf_get_arr_n(g, id);
            const auto t = gguf_get_arr_type(g, id);
            if (n == 0 || (t != GGUF_TYPE_UINT32 && t != GGUF_TYPE_INT32)) break;
            const auto * data = (const int32_t *) gguf_get_arr_data(g, id);
            for (size_t i = 1; i < n; ++i) {
                if (data[i] != data[0]) {
                    throw RuntimeError("UNSUPPORTED_MODEL", "metadata " + key + " varies per layer; not supported");
                }
            }
            return data[0];
        }
        default: break;
    }
    throw RuntimeError("BAD_METADATA", "metadata " + key + " is not an integer").str("key", key);
}

std::optional<float> get_float(const gguf_context * g, const std::string & key) {
    const int64_t id = gguf_find_key(g, key.c_str());
    if (id < 0) return std::nullopt;
    switch (gguf_get_kv_type(g, id)) {
        case GGUF_TYPE_FLOAT32: return gguf_get_val_f32(g, id);
        case GGUF_TYPE_FLOAT64: return (float) gguf_get_val_f64(g, id);
        default: break;
    }
    if (auto v = get_int(g, key)) return (float) *v;
    return std::nullopt;
}

std::optional<std::string> get_str(const gguf_context * g, const std::string & key) {
    const int64_t id = gguf_find_key(g, key.c_str());
    if (id < 0 || gguf_get_kv_type(g, id) != GGUF_TYPE_STRING) return std::nullopt;
    return std::string(gguf_get_val_str(g, id));
}

int64_t require_int(const gguf_context * g, const std::string & key, const std::string & path) {
    if (auto v = get_int(g, key)) return *v;
    throw RuntimeError("BAD_METADATA", "artifact " + path + " lacks metadata key " + key)
        .str("key", key)
        .str("file", path);
}

}  // namespace neuron
