// Counts heap allocations per thread, through a replaced global operator new
// (alloc_counter.cpp), so the platform can report allocations per record on
// its own hot path without counting the writer thread's work.
#pragma once

#include <cstddef>

namespace platform {

// operator new calls made by the calling thread so far.
std::size_t allocations_on_this_thread() noexcept;

}  // namespace platform
