// Mapped weights in 2 MB pages where the kernel allows (huge_pages.cpp says why).
#pragma once

#include <cstddef>

namespace neuron {

// Asks the kernel to fault the file mapping [addr, addr + size) in as 2 MB folios.
void advise_huge_mapping(void * addr, size_t size);

// Faults the mapped file bytes [file_from, file_to) in, in 2 MB pages where the kernel can: where the file sits in the
// page cache in small folios, drops those clean pages and reads the span again. Returns the bytes mapped with 2 MB
// pages (0 where the kernel has none for files, or with `huge_pages` false: 4 KB pages, as faulted).
size_t fault_in_span(int fd, void * mapping, size_t file_from, size_t file_to, bool huge_pages);

// Asks for 2 MB pages under a weight buffer in anonymous memory
// (ggml's CPU and repacking buffers), before it is written.
void advise_huge_buffer(void * base, size_t size);

// Bytes of the buffer [base, base + size) in 2 MB pages.
size_t huge_buffer_bytes(void * base, size_t size);

}  // namespace neuron
