// See reject_file.h.
#include "reject_file.h"

#include <fcntl.h>
#include <sys/stat.h>
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

constexpr std::string_view line_head = "{\"file\":\"";
constexpr std::string_view offset_field = ",\"offset\":";
constexpr std::string_view source_field = ",\"source_id\":";

std::string_view digits_at(std::string_view line, std::size_t at, bool sign) {
  std::size_t end = at;
  if (sign && end < line.size() && line[end] == '-') ++end;
  while (end < line.size() && line[end] >= '0' && line[end] <= '9') ++end;
  return line.substr(at, end - at);
}

// The key of a reject line ({"file":"F","line":N,"offset":O,"source_id":S,
// ...}): F as escaped, '\n', S, '\n', O; S empty in a line written before
// lines named their input; empty for a line of another shape.
std::string key_of(std::string_view line) {
  if (!line.starts_with(line_head)) return {};
  const std::size_t file_end = line.find("\",\"line\":", line_head.size());
  const std::size_t off = line.find(offset_field);
  if (file_end == std::string_view::npos || off == std::string_view::npos) return {};
  const std::string_view offset = digits_at(line, off + offset_field.size(), false);
  std::string_view source;
  if (line.substr(off + offset_field.size() + offset.size()).starts_with(source_field))
    source = digits_at(line, off + offset_field.size() + offset.size() + source_field.size(), true);
  std::string key(line.substr(line_head.size(), file_end - line_head.size()));
  key += '\n';
  key += source;
  key += '\n';
  key += offset;
  return key;
}

// Whether `key` is a line of the input `file_key` (F as escaped, '\n') with
// the id `source` (or of that file before lines named their input), and at
// which offset.
bool of_input(std::string_view key, std::string_view file_key, std::string_view source,
              std::uint64_t* offset) {
  if (!key.starts_with(file_key)) return false;
  key.remove_prefix(file_key.size());
  const std::size_t nl = key.find('\n');
  if (nl == std::string_view::npos) return false;
  const std::string_view id = key.substr(0, nl);
  if (!id.empty() && id != source) return false;
  *offset = 0;
  for (const char c : key.substr(nl + 1))
    *offset = *offset * 10 + static_cast<std::uint64_t>(c - '0');
  return true;
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
  const int fd = ::open(path_.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  auto fail = [&](const char* what) {
    const int e = errno;
    if (fd >= 0) ::close(fd);
    throw error("auditpipe ingest: cannot " + std::string(what) + " the reject file " + path_ +
                ": " + std::strerror(e));
  };
  if (fd < 0) fail("open");
  struct stat st {};
  if (::fstat(fd, &st) != 0) fail("read");
  const auto size = static_cast<std::uint64_t>(st.st_size);
  if (size > 0 && S_ISREG(st.st_mode)) {
    constexpr std::uint64_t window = 16u << 20;
    const std::uint64_t from = size > window ? size - window : 0;
    std::string tail(size - from, '\0');
    std::size_t got = 0;
    while (got < tail.size()) {
      const ssize_t n =
          ::pread(fd, tail.data() + got, tail.size() - got, static_cast<off_t>(from + got));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) fail("read");
      got += static_cast<std::size_t>(n);
    }
    // A last line without its end: cut off by a crash. The rerun rejects
    // its record again, whole.
    const std::size_t last_end = tail.rfind('\n');
    const std::uint64_t whole = last_end == std::string::npos ? from : from + last_end + 1;
    if (whole < size && (last_end != std::string::npos || from == 0)) {
      if (::ftruncate(fd, static_cast<off_t>(whole)) != 0) fail("repair");
      std::fprintf(stderr,
                   "auditpipe ingest: the reject file %s ended in a line cut off (a crash?): "
                   "removed; its record is rejected again if it is read again\n",
                   path_.c_str());
    }
    // Keys of the whole lines: {"file":"F","line":N,"offset":O,...
    std::size_t at = from == 0 ? 0 : tail.find('\n') + 1;
    held_from_ = from + at;
    const std::size_t end = last_end == std::string::npos ? 0 : last_end + 1;
    while (at < end) {
      const std::size_t eol = tail.find('\n', at);
      std::string key = key_of(std::string_view(tail.data() + at, eol - at));
      at = eol + 1;
      if (!key.empty()) {
        std::string file_key = key.substr(0, key.find('\n') + 1);
        tail_[std::move(file_key)].push_back(std::move(key));
      }
    }
    at_open_ = whole;
  }
  file_ = ::fdopen(fd, "a");
  if (file_ == nullptr) fail("open");
}

void RejectFile::resume(std::string_view file, std::int64_t source_id, std::uint64_t from_offset) {
  if (file_ == nullptr) return;
  std::string escaped;
  append_json_escaped(escaped, file);
  escaped += '\n';
  const std::string source = std::to_string(source_id);
  std::lock_guard lock(mutex_);
  std::uint64_t offset = 0;
  // Held under this input's id (a line without one is taken for it).
  auto hold = [&](std::uint64_t at) { held_.insert(escaped + source + '\n' + std::to_string(at)); };
  static const std::vector<std::string> none;
  const auto of_file = tail_.find(escaped);
  for (const std::string& key : of_file == tail_.end() ? none : of_file->second) {
    if (of_input(key, escaped, source, &offset) && offset >= from_offset) hold(offset);
  }
  // Back from where the tail read at open began, a chunk at a time, until
  // a line of this input from before its checkpoint (what lies before
  // that, no run reads again), the file's start, or `most` bytes.
  constexpr std::uint64_t chunk = 4u << 20, most = 256u << 20;
  const int fd = fileno(file_);
  std::uint64_t end = held_from_;
  std::string buffer, carry;  // carry: a line's end whose start is in the chunk below
  bool before_checkpoint = false;
  while (end > 0 && !before_checkpoint && at_open_ - end < most) {
    const std::uint64_t from = end > chunk ? end - chunk : 0;
    buffer.assign(end - from, '\0');
    std::size_t got = 0;
    while (got < buffer.size()) {
      const ssize_t n =
          ::pread(fd, buffer.data() + got, buffer.size() - got, static_cast<off_t>(from + got));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;  // unreadable: the tail's keys are all there is
      got += static_cast<std::size_t>(n);
    }
    buffer += carry;
    // Whole lines only: the first may have begun in the chunk below.
    const std::size_t first = from == 0 ? 0 : buffer.find('\n');
    if (first == std::string::npos) {
      carry = std::move(buffer);
      end = from;
      continue;
    }
    const std::size_t begin = from == 0 ? 0 : first + 1;
    carry = buffer.substr(0, begin);
    for (std::size_t at = begin; at < buffer.size();) {
      std::size_t eol = buffer.find('\n', at);
      if (eol == std::string::npos) eol = buffer.size();
      std::string key = key_of(std::string_view(buffer.data() + at, eol - at));
      at = eol + 1;
      if (!of_input(key, escaped, source, &offset)) continue;
      if (offset < from_offset) {
        before_checkpoint = true;
      } else {
        hold(offset);
      }
    }
    end = from;
  }
}

RejectFile::~RejectFile() {
  if (file_ != nullptr) std::fclose(file_);
  if (created_ && count_ == 0) ::unlink(path_.c_str());
}

void RejectFile::add(std::string_view file, std::int64_t source_id, std::uint64_t line,
                     std::uint64_t offset, std::string_view reason, std::string_view text) {
  const bool cut = text.size() > max_text_bytes_;
  if (cut) text = text.substr(0, utf8_prefix_length(text, max_text_bytes_));
  std::lock_guard lock(mutex_);
  ++count_;
  line_.clear();
  line_ += "{\"file\":\"";
  append_json_escaped(line_, file);
  if (!held_.empty()) {
    key_.assign(line_, line_head.size());
    key_ += '\n';
    key_ += std::to_string(source_id);
    key_ += '\n';
    key_ += std::to_string(offset);
    if (held_.count(key_) > 0) return;  // written by a run that was killed
  }
  line_ += "\",\"line\":";
  line_ += std::to_string(line);
  line_ += ",\"offset\":";
  line_ += std::to_string(offset);
  line_ += ",\"source_id\":";
  line_ += std::to_string(source_id);
  line_ += ",\"reason\":\"";
  append_json_escaped(line_, reason);
  line_ += "\",\"text\":\"";
  append_json_escaped(line_, text);
  line_ += cut ? "\",\"text_cut\":true}\n" : "\"}\n";
  if (std::fwrite(line_.data(), 1, line_.size(), file_) != line_.size())
    throw error("auditpipe ingest: cannot write the reject file " + path_ + ": " +
                std::strerror(errno));
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
