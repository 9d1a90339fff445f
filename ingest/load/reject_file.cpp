// See reject_file.h.
#include "reject_file.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "auditpipe/fixed_string.h"
#include "auditpipe/status.h"
#include "auditpipe/utf8.h"

namespace auditpipe::ingest {
namespace {

// The length of the valid UTF-8 sequence at s[i], or 0 if there is none.
std::size_t utf8_sequence(std::string_view s, std::size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  const std::size_t n = c < 0x80         ? 1
                        : (c >> 5) == 6  ? 2
                        : (c >> 4) == 14 ? 3
                        : (c >> 3) == 30 ? 4
                                         : 0;
  if (n == 0 || i + n > s.size()) return 0;
  return is_valid_utf8(s.substr(i, n)) ? n : 0;
}

}  // namespace

void append_json_escaped(std::string& out, std::string_view text) {
  static constexpr char hex[] = "0123456789abcdef";
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
      ++i;
    } else if (c == '\n') {
      out += "\\n";
      ++i;
    } else if (c == '\r') {
      out += "\\r";
      ++i;
    } else if (c == '\t') {
      out += "\\t";
      ++i;
    } else if (c < 0x20) {
      out += "\\u00";
      out += hex[c >> 4];
      out += hex[c & 15];
      ++i;
    } else if (c < 0x80) {
      out += static_cast<char>(c);
      ++i;
    } else if (const std::size_t n = utf8_sequence(text, i); n > 0) {
      out.append(text.substr(i, n));
      i += n;
    } else {
      out += "\\u00";
      out += hex[c >> 4];
      out += hex[c & 15];
      ++i;
    }
  }
}

RejectFile::RejectFile(std::string path, std::size_t max_text_bytes)
    : path_(std::move(path)), max_text_bytes_(max_text_bytes) {
  created_ = ::access(path_.c_str(), F_OK) != 0;
  file_ = std::fopen(path_.c_str(), "a");
  if (file_ == nullptr)
    throw error("auditpipe ingest: cannot open the reject file " + path_ + ": " +
                std::strerror(errno));
}

RejectFile::~RejectFile() {
  if (file_ != nullptr) std::fclose(file_);
  if (created_ && count_ == 0) ::unlink(path_.c_str());
}

void RejectFile::add(std::string_view file, std::uint64_t line, std::uint64_t offset,
                     std::string_view reason, std::string_view text) {
  const bool cut = text.size() > max_text_bytes_;
  if (cut) text = text.substr(0, utf8_prefix_length(text, max_text_bytes_));
  std::lock_guard lock(mutex_);
  line_.clear();
  line_ += "{\"file\":\"";
  append_json_escaped(line_, file);
  line_ += "\",\"line\":";
  line_ += std::to_string(line);
  line_ += ",\"offset\":";
  line_ += std::to_string(offset);
  line_ += ",\"reason\":\"";
  append_json_escaped(line_, reason);
  line_ += "\",\"text\":\"";
  append_json_escaped(line_, text);
  line_ += cut ? "\",\"text_cut\":true}\n" : "\"}\n";
  if (std::fwrite(line_.data(), 1, line_.size(), file_) != line_.size())
    throw error("auditpipe ingest: cannot write the reject file " + path_ + ": " +
                std::strerror(errno));
  ++count_;
}

void RejectFile::sync() {
  std::lock_guard lock(mutex_);
  if (std::fflush(file_) != 0 || ::fsync(fileno(file_)) != 0)
    throw error("auditpipe ingest: cannot write the reject file " + path_ + ": " +
                std::strerror(errno));
}

std::uint64_t RejectFile::count() const {
  std::lock_guard lock(mutex_);
  return count_;
}

}  // namespace auditpipe::ingest
