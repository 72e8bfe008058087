{
  # Variables come from native/build.mjs (the ggml binaries of node-llama-cpp and the
  # headers extracted from its bundled llama.cpp release).
  "variables": {
    "ggml_bins%": "",
    "ggml_bins_rel%": "",
    "ggml_include%": "",
    "ggml_lib_base%": "libggml-base.so",
    "ggml_lib%": "libggml.so",
  },
  "targets": [
    {
      "target_name": "neuron_native",
      "sources": [
        "src/addon.cpp",
        "src/addon_seams.cpp",
        "src/addon_batch.cpp",
        "src/backend.cpp",
        "src/model.cpp",
        "src/huge_pages.cpp",
        "src/gguf_keys.cpp",
        "src/hparams.cpp",
        "src/hparams_experts.cpp",
        "src/hparams_qwen35.cpp",
        "src/hparams_checks.cpp",
        "src/tensors.cpp",
        "src/graph.cpp",
        "src/graph_moe.cpp",
        "src/graph_delta.cpp",
        "src/graph_dsa.cpp",
        "src/hparams_glm_dsa.cpp",
        "src/seams.cpp",
        "src/kv_cache.cpp",
        "src/runtime.cpp",
        "src/runtime_batch.cpp",
        "src/quantize.cpp",
        "src/models/llama.cpp",
        "src/models/qwen2.cpp",
        "src/models/qwen3.cpp",
        "src/models/deepseek2.cpp",
        "src/models/qwen35moe.cpp",
        "src/models/glm_dsa.cpp",
        "src/models/deepseek4.cpp",
        "src/graph_dsv4.cpp",
        "src/seam_inputs.cpp",
        "src/hparams_deepseek4.cpp",
        "src/tensors_deepseek4.cpp",
      ],
      "include_dirs": [
        "<!(node -p \"require('node-addon-api').include_dir\")",
        "<(ggml_include)",
        "src",
      ],
      "defines": ["NAPI_VERSION=8", "NAPI_CPP_EXCEPTIONS", "NODE_ADDON_API_DISABLE_DEPRECATED"],
      "cflags!": ["-fno-exceptions"],
      "cflags_cc!": ["-fno-exceptions", "-fno-rtti"],
      "cflags_cc": ["-std=c++17", "-O2", "-fexceptions", "-Wall", "-Wno-unused-parameter"],
      "conditions": [
        ["OS=='linux'", {
          "libraries": [
            "-L<(ggml_bins)",
            "-l:<(ggml_lib_base)",
            "-l:<(ggml_lib)",
            # relative first (the layout inside the repo or a packaged app), absolute as fallback
            "-Wl,-rpath,'$$ORIGIN/<(ggml_bins_rel)'",
            "-Wl,-rpath,<(ggml_bins)",
          ],
        }],
        ["OS=='mac'", {
          "xcode_settings": {
            "GCC_ENABLE_CPP_EXCEPTIONS": "YES",
            "CLANG_CXX_LANGUAGE_STANDARD": "c++17",
            "MACOSX_DEPLOYMENT_TARGET": "11.0",
            "OTHER_LDFLAGS": [
              "-L<(ggml_bins)", "<(ggml_bins)/<(ggml_lib_base)", "<(ggml_bins)/<(ggml_lib)",
              "-Wl,-rpath,@loader_path/<(ggml_bins_rel)", "-Wl,-rpath,<(ggml_bins)",
            ],
          },
        }],
      ],
    },
  ],
}
