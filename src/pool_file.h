// PoolFile: the memory-mapped file behind a durable record pool.
//
// Layout: a 4 KiB header page, a table of record sources (source_id and
// next seq of each producer source, so both carry across restarts), then
// the slab of slots, page-aligned. The file is created at its full size
// with its blocks allocated up front (a full disk is an error at start,
// never a SIGBUS on a producer), mapped shared and populated, and locked
// against a second process. Because every store to the slab lands in the
// kernel's page cache, a record whose commit() returned survives the
// process being killed; surviving a crash of the machine itself would take
// an msync per commit, which auditpipe does not do.
//
// Thread safety: immutable after construction; the mapped memory is
// synchronized by its users.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <filesystem>

#include "auditpipe/record_pool.h"

namespace auditpipe::internal {

class PoolFile {
 public:
  // Opens or creates `path` for a pool of `capacity` slots of `stride`
  // bytes. Throws auditpipe::error if the file belongs to another layout,
  // is in use by another process, or cannot be created.
  PoolFile(const std::filesystem::path& path, std::uint64_t fingerprint, std::size_t capacity,
           std::size_t stride);
  ~PoolFile();
  PoolFile(const PoolFile&) = delete;
  PoolFile& operator=(const PoolFile&) = delete;

  std::byte* slab() const noexcept { return slab_; }
  // True if the file existed (its slots hold records of an earlier run).
  bool existed() const noexcept { return existed_; }
  SourceTable sources() noexcept;

  static constexpr std::size_t max_sources = 4096;

 private:
  struct Header;

  int fd_ = -1;
  std::byte* base_ = nullptr;
  std::size_t size_ = 0;
  std::byte* slab_ = nullptr;
  Header* header_ = nullptr;
  bool existed_ = false;
};

}  // namespace auditpipe::internal
