// Mapped weights in 2 MB pages. A decode step reads every weight once, so with 4 KB pages a 1 GB model walks 262,144
// page-table entries per token; on the 1.1B bench model that costs 15-20 % of a step (docs/architecture.md,
// "Weights in 2 MB pages"). Linux maps a file's page cache with 2 MB pages only where the cache holds it in 2 MB
// folios. A single large file read from its start ramps up to them (llama.cpp's one GGUF gets them so); our ~50 MB
// per-block artifacts mostly do not, nor do files the torrent client wrote or our sha256 check read. MADV_HUGEPAGE
// makes the kernel fault the mapping's uncached pages in as 2 MB folios; where the file is cached in small ones
// already, its cached pages are collapsed in place where the kernel can, else dropped and faulted in again: one read of
// the span from disk at load, tried first on a 2 MB stretch so a filesystem without large folios costs no more. Nothing
// here can fail a load: every call is advice, and a kernel without file huge pages keeps 4 KB pages.
#include "huge_pages.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>

namespace neuron {

namespace {

#if defined(__linux__) && defined(MADV_HUGEPAGE)
constexpr size_t HUGE = size_t(2) << 20;
#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25  // Linux 6.1; older headers lack it, older kernels answer EINVAL
#endif

// the kernel's switch for transparent huge pages ("always [madvise] never") at never, where advice changes nothing;
// read once per process, not for every artifact and buffer
bool huge_pages_switched_off() {
    static const bool off = [] {
        FILE * f = std::fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
        if (!f) return true;
        char line[128] = {0};
        const bool never = !std::fgets(line, sizeof line, f) || std::strstr(line, "[never]") != nullptr;
        std::fclose(f);
        return never;
    }();
    return off;
}

// Bytes of [from, to) the kernel maps with 2 MB pages: FilePmdMapped and AnonHugePages of the VMAs that start inside it
// (/proc/self/smaps).
size_t pmd_mapped(uintptr_t from, uintptr_t to) {
    FILE * f = std::fopen("/proc/self/smaps", "r");
    if (!f) return 0;
    char line[512];
    bool inside = false;
    size_t kb_total = 0;
    bool line_start = true;
    while (std::fgets(line, sizeof line, f)) {
        // the rest of a line longer than the buffer (a header with a long path) is not a line of its own
        const bool at_start = line_start;
        line_start = std::strchr(line, '\n') != nullptr;
        if (!at_start) continue;
        unsigned long a = 0, b = 0;
        // a VMA's header ("7f…000-7f…000 r--s …"); its fields ("FilePmdMapped:  2048 kB") do not parse as two addresses
        if (std::sscanf(line, "%lx-%lx ", &a, &b) == 2) {
            // VMAs come in address order: none after `to` is read (the kernel walks each one's page tables for it)
            if (a >= to) break;
            inside = a >= from;
            continue;
        }
        unsigned long kb = 0;
        if (inside && (std::sscanf(line, "FilePmdMapped: %lu kB", &kb) == 1 ||
                       std::sscanf(line, "AnonHugePages: %lu kB", &kb) == 1))
            kb_total += kb;
    }
    std::fclose(f);
    return kb_total * 1024;
}
#endif

void populate(uint8_t * from, size_t len) {
#ifdef MADV_POPULATE_READ
    if (madvise(from, len, MADV_POPULATE_READ) == 0) return;
#endif
    posix_madvise(from, len, POSIX_MADV_WILLNEED);
}

}  // namespace

void advise_huge_mapping(void * addr, size_t size) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    // the whole mapping, so its VMA stays one (advice on a part would split it)
    if (!huge_pages_switched_off()) madvise(addr, size, MADV_HUGEPAGE);
#else
    (void) addr;
    (void) size;
#endif
}

size_t fault_in_span(int fd, void * mapping, size_t file_from, size_t file_to, bool huge_pages) {
    auto * base = (uint8_t *) mapping;
    uint8_t * from = base + (file_from & ~(size_t) 4095);
    const size_t len = (size_t) (base + file_to - from);
    populate(from, len);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    // 2 MB pages need the mapping aligned as the file is: the kernel aligns large file mappings so
    const auto lo = ((uintptr_t) base + file_from + HUGE - 1) & ~(uintptr_t) (HUGE - 1);
    const auto hi = ((uintptr_t) base + file_to) & ~(uintptr_t) (HUGE - 1);
    if (!huge_pages || (uintptr_t) base % HUGE != 0 || hi <= lo || huge_pages_switched_off()) return 0;
    const size_t want = hi - lo;
    // counted per mapping: pages of the file outside the span may be in it too, so at most the span
    const auto mapped = [&] { return std::min(pmd_mapped((uintptr_t) base, (uintptr_t) base + file_to), len); };
    const size_t got = mapped();
    if (got >= want / 2) return got;
    // cached in small folios (a file just written or read): the kernel may collapse them in place (Linux 6.1+, where
    // read-only file huge pages are built in), with no read from disk
    if (madvise((void *) lo, want, MADV_COLLAPSE) == 0) return mapped();
    // else drop them and fault them in again: write back what is still dirty, unmap our pages, drop the file's clean
    // cached pages (pages another process maps stay)
    fdatasync(fd);
    const auto refault = [&](uint8_t * p, size_t n) {
        madvise(p, n, MADV_DONTNEED);
        posix_fadvise(fd, (off_t) (p - base), (off_t) n, POSIX_FADV_DONTNEED);
        populate(p, n);
    };
    // first one 2 MB stretch at a time, up to three (one may be in a 2 MB page already): where the page cache keeps no
    // large folios (ext4 before Linux 6.16, NFS, FUSE) the span is not read again for nothing
    size_t now = got;
    for (const uintptr_t at : {lo, lo + (want / 2 & ~(uintptr_t) (HUGE - 1)), hi - HUGE}) {
        refault((uint8_t *) at, HUGE);
        if ((now = mapped()) > got) break;
    }
    if (now <= got) return now;
    refault(from, len);
    return mapped();
#else
    (void) fd;
    (void) huge_pages;
    return 0;
#endif
}

// Weights read into memory (repacked for faster matmul, or with mmap off) come from ggml's aligned malloc: anonymous
// pages, which the kernel backs with 2 MB ones under `madvise` only where asked. Asked before the weights are written.
void advise_huge_buffer(void * base, size_t size) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    const auto lo = ((uintptr_t) base + 4095) & ~(uintptr_t) 4095;
    const auto hi = ((uintptr_t) base + size) & ~(uintptr_t) 4095;
    if (hi > lo && hi - lo >= HUGE && !huge_pages_switched_off()) madvise((void *) lo, hi - lo, MADV_HUGEPAGE);
#else
    (void) base;
    (void) size;
#endif
}

size_t huge_buffer_bytes(void * base, size_t size) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    return std::min(pmd_mapped((uintptr_t) base, (uintptr_t) base + size), size);
#else
    (void) base;
    (void) size;
    return 0;
#endif
}

}  // namespace neuron
