// ReplaySource: a byte source whose first bytes were already read (to
// identify the input, source_identity.h) and are served again, so that
// stdin and compressed inputs, which cannot seek back, are read once.
//
// Who may call: the loader.
//
// Thread safety: one thread, like any ByteSource.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

#include "input/byte_source.h"

namespace auditpipe::ingest {

class ReplaySource final : public ByteSource {
 public:
  /// Reads up to `prefix_limit` bytes from `inner` and keeps them for
  /// replay. It stops early once it holds `prefix_enough` bytes (and, with
  /// `whole_first_line`, a line end): a pipe that trickles (`tail -f log |
  /// auditpipe ingest -`) is loaded once that much has come, not after
  /// `prefix_limit` bytes. A file's first read fills the limit anyway.
  ReplaySource(std::unique_ptr<ByteSource> inner, std::size_t prefix_limit,
               std::size_t prefix_enough = SIZE_MAX, bool whole_first_line = false)
      : inner_(std::move(inner)) {
    prefix_.resize(prefix_limit);
    std::size_t got = 0;
    while (got < prefix_limit) {
      const std::size_t n = inner_->read(prefix_.data() + got, prefix_limit - got);
      if (n == 0) break;
      got += n;
      if (got >= prefix_enough && (!whole_first_line || has_first_line(got))) break;
    }
    prefix_.resize(got);
  }

  /// The bytes read ahead (the input's first bytes).
  const std::string& prefix() const noexcept { return prefix_; }

  std::size_t read(char* out, std::size_t n) override {
    if (cursor_ < prefix_.size()) {
      const std::size_t k = std::min(n, prefix_.size() - cursor_);
      std::memcpy(out, prefix_.data() + cursor_, k);
      cursor_ += k;
      return k;
    }
    return inner_->read(out, n);
  }
  bool skip_to(std::uint64_t offset) override {
    if (offset <= prefix_.size()) {
      if (offset < cursor_ && cursor_ > prefix_.size()) return false;
      cursor_ = static_cast<std::size_t>(offset);
      return true;
    }
    cursor_ = prefix_.size();
    return inner_->skip_to(offset);
  }
  std::uint64_t position() const noexcept override {
    return cursor_ < prefix_.size() ? cursor_ : inner_->position();
  }
  std::uint64_t input_bytes_read() const noexcept override { return inner_->input_bytes_read(); }
  std::optional<std::uint64_t> input_size() const override { return inner_->input_size(); }
  bool compressed() const noexcept override { return inner_->compressed(); }
  std::string_view compression() const noexcept override { return inner_->compression(); }
  const std::string& path() const noexcept override { return inner_->path(); }

 private:
  // A line end after the first line with anything but blanks in it (a CSV
  // header, which a resumed load reads again from the prefix).
  bool has_first_line(std::size_t got) const {
    const std::string_view read(prefix_.data(), got);
    const std::size_t text = read.find_first_not_of(" \t\r\n");
    return text != std::string_view::npos && read.find('\n', text) != std::string_view::npos;
  }

  std::unique_ptr<ByteSource> inner_;
  std::string prefix_;
  std::size_t cursor_ = 0;
};

}  // namespace auditpipe::ingest
