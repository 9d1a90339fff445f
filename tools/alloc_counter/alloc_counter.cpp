#include "alloc_counter.h"

#include <cstdlib>
#include <new>

namespace {
thread_local std::size_t thread_allocations = 0;
thread_local std::size_t thread_bytes = 0;

void* counted_alloc(std::size_t n) {
  ++thread_allocations;
  thread_bytes += n;
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* counted_aligned_alloc(std::size_t n, std::align_val_t a) {
  ++thread_allocations;
  thread_bytes += n;
  const auto align = static_cast<std::size_t>(a);
  if (void* p = std::aligned_alloc(align, (n + align - 1) / align * align)) return p;
  throw std::bad_alloc();
}
}  // namespace

namespace auditpipe::tools {
std::size_t allocations_on_this_thread() noexcept {
  return thread_allocations;
}
std::size_t allocated_bytes_on_this_thread() noexcept {
  return thread_bytes;
}
}  // namespace auditpipe::tools

void* operator new(std::size_t n) {
  return counted_alloc(n);
}
void* operator new[](std::size_t n) {
  return counted_alloc(n);
}
void* operator new(std::size_t n, std::align_val_t a) {
  return counted_aligned_alloc(n, a);
}
void* operator new[](std::size_t n, std::align_val_t a) {
  return counted_aligned_alloc(n, a);
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete[](void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::size_t) noexcept {
  std::free(p);
}
void operator delete(void* p, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept {
  std::free(p);
}
