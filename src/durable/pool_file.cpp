#include "durable/pool_file.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "auditpipe/diagnostics.h"
#include "auditpipe/status.h"
#include "durable/owned_file.h"

namespace auditpipe::internal {

namespace {
// 02: the slot header lost an unused word (the slots of 01 files are laid
// out differently).
constexpr char pool_magic[8] = {'A', 'P', 'P', 'O', 'O', 'L', '0', '2'};
constexpr std::size_t page = 4096;
constexpr std::size_t align_up(std::size_t n, std::size_t a) {
  return (n + a - 1) / a * a;
}

// The kernel's identifier of this boot, or "" where it cannot be read.
void read_boot_id(char (&out)[40]) {
  std::memset(out, 0, sizeof out);
  const int fd = ::open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  const ssize_t n = ::read(fd, out, sizeof out - 1);
  ::close(fd);
  if (n <= 0) {
    std::memset(out, 0, sizeof out);
    return;
  }
  for (ssize_t i = 0; i < n; ++i) {
    if (out[i] == '\n') out[i] = '\0';
  }
}
}  // namespace

struct PoolFile::Header {
  char magic[8];  // written last when a file is created
  std::uint64_t fingerprint;
  std::uint64_t capacity;
  std::uint64_t stride;
  std::int64_t source_id_base;
  std::atomic<std::uint64_t> source_count;
};

// Re-makes the pool file `held` (laid out for `old_capacity` slots, all
// `old_size` bytes of it) for `capacity` slots: its header page, sources
// and calibration as they are, its committed records in its first slots.
// The new file is built beside it and renamed over it only once whole, so
// a crash at any point leaves the old file or the new one, never half of
// either. On success `held` holds the new file; on failure it still holds
// the old one, unchanged, and the reason is returned.
std::string PoolFile::remake_for_capacity(OwnedFile& held, const std::filesystem::path& path,
                                          std::size_t slab_offset, std::size_t old_capacity,
                                          std::size_t old_size, std::size_t capacity,
                                          std::size_t stride, std::size_t* carried) {
  void* p = mmap(nullptr, old_size, PROT_READ, MAP_SHARED, held.fd(), 0);
  if (p == MAP_FAILED) return std::string("cannot map it to read: ") + std::strerror(errno);
  const auto* old = static_cast<const std::byte*>(p);
  struct Unmap {
    void* p;
    std::size_t n;
    ~Unmap() { munmap(p, n); }
  } unmap{p, old_size};
  std::vector<std::size_t> committed;
  for (std::size_t i = 0; i < old_capacity; ++i) {
    const auto* s = reinterpret_cast<const SlotHeader*>(old + slab_offset + i * stride);
    if (s->state.load(std::memory_order_relaxed) ==
        static_cast<std::uint32_t>(SlotState::committed))
      committed.push_back(i);
  }
  if (committed.size() > capacity) {
    return "it holds " + std::to_string(committed.size()) +
           " committed records, more than a pool of capacity " + std::to_string(capacity) +
           " takes; open it with capacity " + std::to_string(old_capacity) + " (or at least " +
           std::to_string(committed.size()) + ") to write them first";
  }
  // Beside the file itself, and renamed over it: a durable_path that is a
  // symlink stays one.
  std::error_code ec;
  const std::filesystem::path target = std::filesystem::canonical(path, ec);
  if (ec) return "cannot resolve it to re-make it: " + ec.message();
  struct stat st {};
  if (::fstat(held.fd(), &st) != 0) return std::string("cannot stat: ") + std::strerror(errno);
  const std::filesystem::path next_path = target.string() + ".resizing";
  OwnedFile next;
  // O_TRUNC: one left by a crash during an earlier re-make is only ever
  // written by the holder of the pool file, which this logger is.
  const OwnedFile::Taken taken = next.take(next_path, O_CREAT | O_TRUNC, 0600);
  if (taken != OwnedFile::Taken::owned) {
    return "cannot make " + next_path.string() + " to re-make it for capacity " +
           std::to_string(capacity) + ": " +
           (taken == OwnedFile::Taken::in_use ? std::string("in use")
                                              : std::strerror(next.error()));
  }
  auto abandon = [&](const std::string& why) {
    ::unlink(next_path.c_str());
    next.release();
    return "cannot re-make it for capacity " + std::to_string(capacity) + " (in " +
           next_path.string() + "): " + why;
  };
  // The old file's owner and permissions (an operator may have changed
  // them; root re-making a service user's file must not take it over).
  // The owner as far as this process may give it.
  [[maybe_unused]] const int owned = ::fchown(next.fd(), st.st_uid, st.st_gid);
  if (::fchmod(next.fd(), st.st_mode & 07777) != 0) return abandon(std::strerror(errno));
  const std::size_t size = slab_offset + capacity * stride;
  if (const int rc = ::posix_fallocate(next.fd(), 0, static_cast<off_t>(size)); rc != 0)
    return abandon(std::strerror(rc));
  std::vector<std::byte> front(old, old + slab_offset);
  const std::uint64_t new_capacity = capacity;
  std::memcpy(front.data() + offsetof(Header, capacity), &new_capacity, sizeof new_capacity);
  auto put = [&](const std::byte* from, std::size_t n, std::size_t at) {
    while (n > 0) {
      const ssize_t w = ::pwrite(next.fd(), from, n, static_cast<off_t>(at));
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) return false;
      from += w;
      at += static_cast<std::size_t>(w);
      n -= static_cast<std::size_t>(w);
    }
    return true;
  };
  for (std::size_t j = 0; j < committed.size(); ++j) {
    if (!put(old + slab_offset + committed[j] * stride, stride, slab_offset + j * stride))
      return abandon(std::strerror(errno));
  }
  if (!put(front.data(), front.size(), 0)) return abandon(std::strerror(errno));
  // On disk before it takes the old file's name: a power cut after the
  // rename must not leave an empty file where the sources' seqs were.
  if (::fdatasync(next.fd()) != 0) return abandon(std::strerror(errno));
  // The name still this file's (not re-pointed or replaced since it was
  // opened): rename() ignores locks, and would replace what it now names.
  struct stat named {};
  if (::stat(target.c_str(), &named) != 0 || named.st_dev != st.st_dev || named.st_ino != st.st_ino)
    return abandon("the file was replaced while it was re-made");
  if (::rename(next_path.c_str(), target.c_str()) != 0) return abandon(std::strerror(errno));
  // The rename itself on disk, as the new file's contents are.
  if (const int dir = ::open(target.parent_path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
  held.swap(next);  // `next` lets go of the old file as it goes
  *carried = committed.size();
  return {};
}

PoolFile::PoolFile(const std::filesystem::path& path, std::uint64_t fingerprint,
                   std::size_t capacity, std::size_t stride,
                   std::optional<std::int64_t> source_id_base) {
  const std::string name = path.string();
  // Absolute: the process may change its working directory later.
  path_ = std::filesystem::absolute(path);
  // A file this open made and could not finish (no room for the pool, no
  // mapping) is removed: left behind it would look like a pool to the
  // next reader of the directory.
  bool made_here = false;
  auto fail = [&](const std::string& why) {
    if (base_ != nullptr) munmap(base_, size_);
    if (made_here) ::unlink(path.c_str());
    file_.release();
    throw error("auditpipe: durable pool '" + name + "': " + why);
  };
  OwnedFile::Taken taken = file_.take(path, O_CREAT | O_EXCL, 0600);
  const bool created = taken == OwnedFile::Taken::owned;
  // (O_CREAT again: a dangling symlink, which O_EXCL does not follow, gets its target.)
  if (taken == OwnedFile::Taken::failed && file_.error() == EEXIST)
    taken = file_.take(path, O_CREAT, 0600);
  if (taken == OwnedFile::Taken::failed) {
    fail(std::string(file_.lock_failed() ? "cannot lock (one logger per pool file): "
                                         : "cannot open: ") +
         std::strerror(file_.error()));
  }
  if (taken == OwnedFile::Taken::in_use)
    fail("in use by another logger, in this process or another (one logger owns a pool file)");
  made_here = created;  // only the lock's holder may remove it
  {
    // A re-making a crash cut short (remake_for_capacity) left its file:
    // only the holder of this one writes it, and this logger is.
    std::error_code ec;
    const std::filesystem::path target = std::filesystem::canonical(path, ec);
    if (!ec) ::unlink((target.string() + ".resizing").c_str());
  }
  const std::size_t sources_offset = page;
  const std::size_t slab_offset =
      align_up(sources_offset + max_sources * sizeof(PersistedSource), page);
  size_ = slab_offset + capacity * stride;
  struct stat st {};
  if (::fstat(file_.fd(), &st) != 0) fail(std::string("cannot stat: ") + std::strerror(errno));
  if (st.st_nlink == 0) {
    // Another logger made it, failed, and removed it while this one opened it.
    fail("it was removed while this logger opened it (another logger's open failed); open again");
  }
  if (st.st_size != 0) {
    // Say what differs before anything is mapped.
    Header h{};
    if (::pread(file_.fd(), &h, sizeof h, 0) == static_cast<ssize_t>(sizeof h) &&
        std::memcmp(h.magic, pool_magic, 8) == 0) {
      if (h.fingerprint != fingerprint) {
        // The fingerprint covers the table's name as well as its columns:
        // a new user's two programs differed only in the name.
        fail(
            "it was made for a different table (name or record layout); drain it with the "
            "program that made it, and remove it only once drained: the committed records it "
            "holds go with it");
      }
      if (h.stride != stride) {
        fail("it was made for records of " + std::to_string(h.stride) + " bytes a slot, not " +
             std::to_string(stride) +
             "; drain it with the program that made it, and remove it only once drained: the "
             "committed records it holds go with it");
      }
      if (h.capacity != capacity) {
        // Options::capacity changed between runs: the file follows it,
        // carrying its committed records and its sources' seqs.
        if (h.capacity == 0 || h.capacity > (SIZE_MAX / 2) / stride ||
            static_cast<std::size_t>(st.st_size) != slab_offset + h.capacity * stride) {
          fail("its size (" + std::to_string(st.st_size) +
               " bytes) does not match the capacity it names (" + std::to_string(h.capacity) +
               "); it is damaged");
        }
        std::size_t carried = 0;
        const std::string why =
            remake_for_capacity(file_, path, slab_offset, h.capacity,
                                static_cast<std::size_t>(st.st_size), capacity, stride, &carried);
        if (!why.empty()) fail(why);
        diagnostics()->info(
            "auditpipe: durable pool '{}' was made for a pool of capacity {}; re-made for {}, "
            "with the {} committed records it held",
            name, h.capacity, capacity, carried);
        if (::fstat(file_.fd(), &st) != 0)
          fail(std::string("cannot stat: ") + std::strerror(errno));
      }
    }
    if (static_cast<std::size_t>(st.st_size) != size_) {
      fail("its size (" + std::to_string(st.st_size) + " bytes) does not match this pool (" +
           std::to_string(size_) + " bytes); it is not a pool file of this layout");
    }
  }
  if (st.st_size == 0) {
    const int rc = ::posix_fallocate(file_.fd(), 0, static_cast<off_t>(size_));
    if (rc != 0) fail("cannot allocate " + std::to_string(size_) + " bytes: " + std::strerror(rc));
  }
  void* p = mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, file_.fd(), 0);
  if (p == MAP_FAILED) fail(std::string("cannot map: ") + std::strerror(errno));
  base_ = static_cast<std::byte*>(p);
  slab_ = base_ + slab_offset;
  header_ = reinterpret_cast<Header*>(base_);

  static const char zeros[8] = {};
  if (std::memcmp(header_->magic, pool_magic, 8) == 0) {
    if (header_->fingerprint != fingerprint || header_->capacity != capacity ||
        header_->stride != stride) {
      fail(
          "it was made for a different table (name or record layout) or capacity; drain it "
          "with the program and settings that made it, and remove it only once drained: the "
          "committed records it holds go with it");
    }
    existed_ = true;
    if (source_id_base && *source_id_base != header_->source_id_base) {
      // Its sources' records may be in the table already: renumbering
      // them would store them again under new keys.
      diagnostics()->warn(
          "auditpipe: durable pool '{}' was made with source_id_base {}, and keeps it so that its "
          "sources go on; Options::source_id_base {} is not used (remove the file once a run "
          "has drained it to start from that base)",
          name, header_->source_id_base, *source_id_base);
    }
  } else if (std::memcmp(header_->magic, zeros, 8) == 0) {
    // New (or never finished being created: nothing was committed into it).
    std::memset(base_, 0, slab_offset);
    new (header_) Header{};
    header_->fingerprint = fingerprint;
    header_->capacity = capacity;
    header_->stride = stride;
    if (source_id_base) {
      header_->source_id_base = *source_id_base;
    } else {
      std::uint64_t r = 0;
      if (::getentropy(&r, sizeof r) != 0)
        r = static_cast<std::uint64_t>(::time(nullptr)) * 2654435761u;
      header_->source_id_base = static_cast<std::int64_t>((r & ((std::uint64_t{1} << 46) - 1)) | 1)
                                << 16;
    }
    for (std::size_t i = 0; i < max_sources; ++i) {
      new (base_ + sources_offset + i * sizeof(PersistedSource)) PersistedSource{};
    }
    std::memset(slab_, 0, capacity * stride);
    std::memcpy(header_->magic, pool_magic, 8);
  } else {
    fail("not an auditpipe durable pool file");
  }

  static_assert(sizeof(Header) <= clock_offset && clock_offset + sizeof(PersistedClock) <= page);
  clock_ = reinterpret_cast<PersistedClock*>(base_ + clock_offset);
  read_boot_id(boot_id_);
  const std::uint32_t whole = clock_->whole.load(std::memory_order_acquire);
  if (existed_ && (whole == 1 || whole == 2)) {
    const ClockCopy& c = clock_->copies[whole - 1];
    earlier_clock_.known = c.micros_per_tick > 0;
    earlier_clock_.this_boot = boot_id_[0] != '\0' && std::memcmp(c.boot_id, boot_id_, 40) == 0;
    earlier_clock_.clock = {c.anchor_tsc, c.anchor_micros, c.micros_per_tick};
  }
}

void PoolFile::save_clock(const TscClock::Snapshot& clock) noexcept {
  if (clock.micros_per_tick <= 0 || clock.anchor_tsc == saved_anchor_) return;
  const std::uint32_t whole = clock_->whole.load(std::memory_order_relaxed);
  const std::uint32_t next = whole == 1 ? 2 : 1;
  ClockCopy& c = clock_->copies[next - 1];
  std::memcpy(c.boot_id, boot_id_, sizeof c.boot_id);
  c.anchor_tsc = clock.anchor_tsc;
  c.anchor_micros = clock.anchor_micros;
  c.micros_per_tick = clock.micros_per_tick;
  // Release: a process reading the file after this one died sees the copy
  // whole before it sees it named.
  clock_->whole.store(next, std::memory_order_release);
  saved_anchor_ = clock.anchor_tsc;
}

PoolFile::~PoolFile() {
  munmap(base_, size_);
}

void PoolFile::let_go_in_fork_child() noexcept {
  // The shared mapping is the parent's slots. Zeroed private memory takes
  // its place at the same address, so that anything of the child's that
  // still points into the pool (a record it held at the fork, refused on
  // commit) writes there and not into the parent's slots.
  mmap(base_, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
  file_.close_in_fork_child();
}

SourceTable PoolFile::sources() noexcept {
  return SourceTable{header_->source_id_base, &header_->source_count,
                     reinterpret_cast<PersistedSource*>(base_ + page), max_sources};
}

}  // namespace auditpipe::internal
