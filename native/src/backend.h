#pragma once
// The ggml backend registry: which devices exist and which one a runtime computes on.
#include <string>
#include <vector>

#include "ggml-backend.h"

namespace neuron {

// Loads ggml backends once per process: every CPU variant in `dirs` (the registry keeps the
// best one for this processor) plus any extra backend libraries (CUDA, Vulkan, ...).
// Returns why extra libraries failed to load (e.g. no CUDA runtime), one line each.
std::vector<std::string> load_backends(const std::vector<std::string> & dirs,
                                       const std::vector<std::string> & extra_libs);

// "auto" prefers a GPU when one is registered; "cpu" forces the CPU; anything else is a device name.
ggml_backend_dev_t pick_device(const std::string & name);

std::vector<std::string> device_names();

void set_n_threads(ggml_backend_t backend, int n_threads);

// A thread pool kept for the CPU backend's graphs, as llama.cpp's tools attach one: without it ggml starts and joins
// n_threads - 1 threads for every graph. Null (ggml's per-graph threads) for one thread or when the CPU library lacks
// it. Freed with free_cpu_threadpool after the backend that uses it.
void * attach_cpu_threadpool(ggml_backend_t cpu, int n_threads);
void free_cpu_threadpool(void * pool);

// The CPU's extra buffer types (weight repacking for faster matmul), like llama.cpp uses.
std::vector<ggml_backend_buffer_type_t> cpu_extra_bufts();

}  // namespace neuron
