// Counts heap allocations per thread, through a replaced global operator new
// (alloc_counter.cpp), so a program can report the allocations of its own
// hot path without counting other threads' work (the writer's, for one).
// Link the object library auditpipe_alloc_counter into an executable; it
// replaces operator new/delete for the whole program.
#pragma once

#include <cstddef>

namespace auditpipe::tools {

// operator new calls made by the calling thread so far.
std::size_t allocations_on_this_thread() noexcept;
// Bytes those calls asked for.
std::size_t allocated_bytes_on_this_thread() noexcept;

}  // namespace auditpipe::tools
