// The ByteSource implementations: a file descriptor or memory underneath
// (RawInput), read as it is, through zlib (gzip) or through libzstd.
// Only open_byte_source()/memory_byte_source() create them.
#include "input/byte_source.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "auditpipe/status.h"

namespace auditpipe::ingest {
namespace {

constexpr std::size_t compressed_chunk = 64 * 1024;

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw auditpipe::error("ingest: " + path + ": " + what);
}

[[noreturn]] void corrupt(const std::string& path, const std::string& what,
                          std::uint64_t suspect_from, std::uint64_t reached) {
  throw corrupt_data("ingest: " + path + ": " + what, suspect_from, reached);
}

// The file's own bytes: a descriptor or a memory block, with the first few
// bytes (read to detect compression) served again before the rest.
class RawInput {
 public:
  virtual ~RawInput() = default;
  std::size_t read(char* out, std::size_t n) {
    if (prefix_pos_ < prefix_.size()) {
      const std::size_t k = std::min(n, prefix_.size() - prefix_pos_);
      std::memcpy(out, prefix_.data() + prefix_pos_, k);
      prefix_pos_ += k;
      return k;
    }
    const std::size_t k = read_more(out, n);
    bytes_read_ += k;
    return k;
  }
  // Reads up to 4 bytes to look at, to be read again.
  std::string_view peek() {
    char buf[4];
    std::size_t got = 0;
    while (got < sizeof buf) {
      const std::size_t k = read_more(buf + got, sizeof buf - got);
      if (k == 0) break;
      got += k;
    }
    bytes_read_ += got;
    prefix_.assign(buf, got);
    prefix_pos_ = 0;
    return prefix_;
  }
  virtual bool seekable() const noexcept = 0;
  // Only when seekable(): moves to `offset` (clamped to the size); returns the new offset.
  virtual std::uint64_t seek(std::uint64_t offset) = 0;
  virtual std::optional<std::uint64_t> size() const = 0;
  std::uint64_t bytes_read() const noexcept { return bytes_read_; }
  const std::string& path() const noexcept { return path_; }
  /// Whether the last read returned 0 because the load is stopping, not
  /// because the data ended.
  virtual bool interrupted() const noexcept { return false; }

 protected:
  explicit RawInput(std::string path) : path_(std::move(path)) {}
  virtual std::size_t read_more(char* out, std::size_t n) = 0;
  void drop_prefix(std::uint64_t new_position) {
    prefix_.clear();
    prefix_pos_ = 0;
    bytes_read_ = new_position;
  }

 private:
  std::string path_;
  std::string prefix_;
  std::size_t prefix_pos_ = 0;
  std::uint64_t bytes_read_ = 0;
};

class FdInput final : public RawInput {
 public:
  FdInput(std::string path, int fd, bool owned, Interrupt interrupt)
      : RawInput(std::move(path)), fd_(fd), owned_(owned), interrupt_(std::move(interrupt)) {
    struct stat st {};
    if (::fstat(fd_, &st) != 0) fail(this->path(), std::string("fstat: ") + std::strerror(errno));
    regular_ = S_ISREG(st.st_mode);
  }
  ~FdInput() override {
    if (owned_) ::close(fd_);
  }
  FdInput(const FdInput&) = delete;
  FdInput& operator=(const FdInput&) = delete;

  bool seekable() const noexcept override { return regular_; }
  std::uint64_t seek(std::uint64_t offset) override {
    const std::uint64_t end = *size();
    const std::uint64_t to = std::min(offset, end);
    if (::lseek(fd_, static_cast<off_t>(to), SEEK_SET) < 0)
      fail(path(), std::string("lseek: ") + std::strerror(errno));
    drop_prefix(to);
    return to;
  }
  std::optional<std::uint64_t> size() const override {
    if (!regular_) return std::nullopt;
    struct stat st {};
    if (::fstat(fd_, &st) != 0) fail(path(), std::string("fstat: ") + std::strerror(errno));
    return static_cast<std::uint64_t>(st.st_size);
  }

 protected:
  std::size_t read_more(char* out, std::size_t n) override {
    // After a stop, nothing more is taken from a pipe: what was read is
    // loaded, what was not stays in it.
    if (!regular_ && interrupt_ && (interrupted_ || !wait_readable())) return 0;
    for (;;) {
      const ssize_t k = ::read(fd_, out, n);
      if (k >= 0) return static_cast<std::size_t>(k);
      if (errno == EINTR) continue;
      fail(path(), std::string("read: ") + std::strerror(errno));
    }
  }

 public:
  bool interrupted() const noexcept override { return interrupted_; }

 private:
  // A pipe or terminal can stay silent for ever (`tail -f log | auditpipe
  // ingest ... -`), and a stop signal is taken by another thread than this
  // blocked read, which restarts after it anyway: the wait looks at the
  // stop between polls instead. False once interrupt_ says stop (looked at
  // first: a pipe that always has data would never stop otherwise).
  bool wait_readable() {
    constexpr int look_every_ms = 100;
    for (;;) {
      if (interrupt_()) {
        interrupted_ = true;
        return false;
      }
      pollfd p{fd_, POLLIN, 0};
      const int r = ::poll(&p, 1, look_every_ms);
      if (r > 0) return true;  // data, the end or an error: read() tells which
      if (r < 0 && errno != EINTR) fail(path(), std::string("poll: ") + std::strerror(errno));
    }
  }

  int fd_;
  bool owned_;
  bool regular_ = false;
  Interrupt interrupt_;
  bool interrupted_ = false;
};

class MemoryInput final : public RawInput {
 public:
  MemoryInput(std::string name, std::string_view data) : RawInput(std::move(name)), data_(data) {}
  bool seekable() const noexcept override { return true; }
  std::uint64_t seek(std::uint64_t offset) override {
    pos_ = static_cast<std::size_t>(std::min<std::uint64_t>(offset, data_.size()));
    drop_prefix(pos_);
    return pos_;
  }
  std::optional<std::uint64_t> size() const override { return data_.size(); }

 protected:
  std::size_t read_more(char* out, std::size_t n) override {
    const std::size_t k = std::min(n, data_.size() - pos_);
    std::memcpy(out, data_.data() + pos_, k);
    pos_ += k;
    return k;
  }

 private:
  std::string_view data_;
  std::size_t pos_ = 0;
};

// What every source shares: the raw input, the position, discarding skips.
class SourceBase : public ByteSource {
 public:
  explicit SourceBase(std::unique_ptr<RawInput> raw) : raw_(std::move(raw)) {}
  std::uint64_t position() const noexcept override { return position_; }
  std::uint64_t input_bytes_read() const noexcept override { return raw_->bytes_read(); }
  std::optional<std::uint64_t> input_size() const override { return raw_->size(); }
  const std::string& path() const noexcept override { return raw_->path(); }

  bool skip_to(std::uint64_t offset) override {
    if (offset < position_)
      fail(path(), "cannot skip back to byte " + std::to_string(offset) + " from byte " +
                       std::to_string(position_) + " in a stream");
    char buf[16 * 1024];
    while (position_ < offset) {
      const std::size_t want =
          static_cast<std::size_t>(std::min<std::uint64_t>(sizeof buf, offset - position_));
      if (read(buf, want) == 0) return false;
    }
    return true;
  }

 protected:
  std::unique_ptr<RawInput> raw_;
  std::uint64_t position_ = 0;
};

class PlainSource final : public SourceBase {
 public:
  using SourceBase::SourceBase;
  std::size_t read(char* out, std::size_t n) override {
    const std::size_t k = raw_->read(out, n);
    position_ += k;
    return k;
  }
  bool skip_to(std::uint64_t offset) override {
    if (!raw_->seekable()) return SourceBase::skip_to(offset);
    position_ = raw_->seek(offset);
    return position_ == offset;
  }
  bool compressed() const noexcept override { return false; }
  std::string_view compression() const noexcept override { return "none"; }
};

class GzipSource final : public SourceBase {
 public:
  explicit GzipSource(std::unique_ptr<RawInput> raw)
      : SourceBase(std::move(raw)), in_(compressed_chunk) {
    std::memset(&z_, 0, sizeof z_);
    if (inflateInit2(&z_, 15 + 16) != Z_OK) fail(path(), "zlib: inflateInit2 failed");
  }
  ~GzipSource() override { inflateEnd(&z_); }
  GzipSource(const GzipSource&) = delete;
  GzipSource& operator=(const GzipSource&) = delete;

  std::size_t read(char* out, std::size_t n) override {
    if (n == 0) return 0;
    z_.next_out = reinterpret_cast<Bytef*>(out);
    z_.avail_out = static_cast<uInt>(std::min<std::size_t>(n, 1u << 30));
    while (z_.avail_out == static_cast<uInt>(std::min<std::size_t>(n, 1u << 30))) {
      if (z_.avail_in == 0) {
        const std::size_t k = raw_->read(in_.data(), in_.size());
        if (k == 0) {
          if (in_member_ && !raw_->interrupted())
            fail(path(), "truncated gzip data: the stream ends inside a member at byte " +
                             std::to_string(consumed_));
          break;  // between members: no more data now
        }
        z_.next_in = reinterpret_cast<Bytef*>(in_.data());
        z_.avail_in = static_cast<uInt>(k);
      }
      if (!in_member_) {
        // Zero bytes after a member are padding (a tape block's, a
        // preallocated file's): gzip -t and zcat ignore them, and so does
        // this. What follows them is not gzip data.
        while (z_.avail_in > 0 && *z_.next_in == 0) {
          ++z_.next_in;
          --z_.avail_in;
          ++consumed_;
          padded_ = true;
        }
        if (z_.avail_in == 0) continue;
        if (padded_) {
          fail(path(), "data after the zero bytes that pad the end of the gzip data, at byte " +
                           std::to_string(consumed_));
        }
        // A new member begins: the next bytes must be gzip's magic again
        // (inflate itself checks the header).
        inflateReset(&z_);
        in_member_ = true;
        member_start_ = position_ + (std::min<std::size_t>(n, 1u << 30) - z_.avail_out);
      }
      const uInt before_in = z_.avail_in;
      const int rc = inflate(&z_, Z_NO_FLUSH);
      consumed_ += before_in - z_.avail_in;
      if (rc == Z_STREAM_END) {
        in_member_ = false;
      } else if (rc == Z_DATA_ERROR || rc == Z_NEED_DICT) {
        corrupt(path(),
                "corrupt gzip data at byte " + std::to_string(consumed_) +
                    (z_.msg ? std::string(": ") + z_.msg : std::string()),
                member_start_, position_);
      } else if (rc == Z_MEM_ERROR) {
        fail(path(), "zlib: out of memory");
      } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
        fail(path(), "zlib error " + std::to_string(rc) + " at byte " + std::to_string(consumed_));
      }
    }
    const std::size_t produced =
        static_cast<std::size_t>(std::min<std::size_t>(n, 1u << 30) - z_.avail_out);
    position_ += produced;
    return produced;
  }
  bool compressed() const noexcept override { return true; }
  std::string_view compression() const noexcept override { return "gzip"; }

 private:
  z_stream z_;
  std::vector<char> in_;
  bool in_member_ = true;
  bool padded_ = false;             // zero bytes followed the last member
  std::uint64_t member_start_ = 0;  // where the current member's output began
  std::uint64_t consumed_ = 0;      // compressed bytes given to inflate
};

class ZstdSource final : public SourceBase {
 public:
  explicit ZstdSource(std::unique_ptr<RawInput> raw)
      : SourceBase(std::move(raw)), ctx_(ZSTD_createDCtx()), in_(ZSTD_DStreamInSize()) {
    if (ctx_ == nullptr) fail(path(), "zstd: cannot create a decompression context");
  }
  ~ZstdSource() override { ZSTD_freeDCtx(ctx_); }
  ZstdSource(const ZstdSource&) = delete;
  ZstdSource& operator=(const ZstdSource&) = delete;

  std::size_t read(char* out, std::size_t n) override {
    ZSTD_outBuffer ob{out, n, 0};
    while (ob.pos == 0 && n > 0) {
      if (ib_.pos == ib_.size) {
        const std::size_t k = raw_->read(in_.data(), in_.size());
        if (k == 0) {
          if (frame_open_ && !raw_->interrupted())
            fail(path(), "truncated zstd data: the stream ends inside a frame at byte " +
                             std::to_string(consumed_));
          break;
        }
        ib_ = ZSTD_inBuffer{in_.data(), k, 0};
      }
      if (!frame_open_) frame_start_ = position_ + ob.pos;
      const std::size_t before = ib_.pos;
      const std::size_t rc = ZSTD_decompressStream(ctx_, &ob, &ib_);
      consumed_ += ib_.pos - before;
      if (ZSTD_isError(rc))
        corrupt(
            path(),
            "corrupt zstd data at byte " + std::to_string(consumed_) + ": " + ZSTD_getErrorName(rc),
            frame_start_, position_);
      frame_open_ = rc != 0;
    }
    position_ += ob.pos;
    return ob.pos;
  }
  bool compressed() const noexcept override { return true; }
  std::string_view compression() const noexcept override { return "zstd"; }

 private:
  ZSTD_DCtx* ctx_;
  std::vector<char> in_;
  ZSTD_inBuffer ib_{nullptr, 0, 0};
  bool frame_open_ = false;
  std::uint64_t frame_start_ = 0;  // where the current frame's output began
  std::uint64_t consumed_ = 0;
};

std::unique_ptr<ByteSource> detect(std::unique_ptr<RawInput> raw) {
  const std::string_view head = raw->peek();
  if (head.size() >= 2 && static_cast<unsigned char>(head[0]) == 0x1f &&
      static_cast<unsigned char>(head[1]) == 0x8b)
    return std::make_unique<GzipSource>(std::move(raw));
  if (head.size() >= 4 && head == std::string_view("\x28\xb5\x2f\xfd", 4))
    return std::make_unique<ZstdSource>(std::move(raw));
  return std::make_unique<PlainSource>(std::move(raw));
}

}  // namespace

std::unique_ptr<ByteSource> open_byte_source(const std::string& path, Interrupt interrupt) {
  if (path == "-")
    return detect(std::make_unique<FdInput>("-", STDIN_FILENO, false, std::move(interrupt)));
  // A FIFO's open waits for a writer, for ever if none comes, where no stop
  // is looked at: opened without waiting, the wait is the reads' (which
  // look at the stop every 100 ms; Linux's poll reports nothing on a FIFO
  // until a writer has written or come and gone), and then reads block
  // as usual.
  struct stat st {};
  const bool fifo = interrupt && ::stat(path.c_str(), &st) == 0 && S_ISFIFO(st.st_mode);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | (fifo ? O_NONBLOCK : 0));
  if (fd < 0) fail(path, std::string("cannot open: ") + std::strerror(errno));
  if (fifo) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  std::unique_ptr<RawInput> raw;
  try {
    raw = std::make_unique<FdInput>(path, fd, true, std::move(interrupt));
  } catch (...) {
    ::close(fd);
    throw;
  }
  return detect(std::move(raw));
}

std::unique_ptr<ByteSource> memory_byte_source(std::string_view data, std::string name) {
  return detect(std::make_unique<MemoryInput>(std::move(name), data));
}

}  // namespace auditpipe::ingest
