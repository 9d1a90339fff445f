#include "durable/dead_letter_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>

#include "auditpipe/detail/text_escape.h"
#include "auditpipe/status.h"
#include "auditpipe/timestamp.h"

namespace auditpipe::internal {

using detail::append_json_string;
using detail::append_number;

namespace {

// JSON numbers are doubles to most readers (jq, JavaScript): a 64-bit
// integer past 2^53 would be read as a neighbour. So every 64-bit integer
// (the key, int64 columns, timestamps' microseconds) is a string, on every
// line whatever its value, so that a reader meets one type per field;
// narrower integers are numbers, which doubles hold exactly.
void append_integer_string(std::string& out, std::int64_t v) {
  out += '"';
  append_number(out, v);
  out += '"';
}

void append_time(std::string& out, std::int64_t micros) {
  char buf[32];
  char* end = timestamp{micros}.format(buf, 'T');
  out.append(buf, end);
  out += 'Z';
}

}  // namespace

void append_record_json(std::string& out, const TableDescriptor& table, const std::byte* record) {
  out += '{';
  bool first = true;
  for (const Column& c : table.columns) {
    if (!first) out += ',';
    first = false;
    append_json_string(out, c.name);
    out += ':';
    if (is_null(record, c)) {
      out += "null";
      continue;
    }
    switch (c.type) {
      case ColumnType::text:
        append_json_string(out, read_text(record, c));
        break;
      case ColumnType::float64: {
        const double v = read_float64(record, c);
        if (std::isfinite(v)) {
          append_number(out, v);
        } else {
          append_json_string(out, std::isnan(v) ? "NaN" : v > 0 ? "Infinity" : "-Infinity");
        }
        break;
      }
      case ColumnType::boolean:
        out += read_integer(record, c) ? "true" : "false";
        break;
      case ColumnType::int64:
      case ColumnType::timestamp:
        append_integer_string(out, read_integer(record, c));
        break;
      default:
        append_number(out, read_integer(record, c));
        break;
    }
  }
  out += '}';
}

DeadLetterFile::DeadLetterFile(const std::filesystem::path& path)
    : path_(path), fd_(::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600)) {
  if (fd_ < 0) {
    throw error("auditpipe: cannot open dead-letter file '" + path.string() +
                "': " + std::strerror(errno));
  }
}

DeadLetterFile::~DeadLetterFile() {
  ::close(fd_);
}

bool DeadLetterFile::append(const TableDescriptor& table, const RecordRef& r,
                            const std::string& e) {
  std::string line = "{\"time\":\"";
  append_time(line, timestamp::now().micros);
  line += "\",\"table\":";
  append_json_string(line, table.name);
  line += ",\"source_id\":";
  append_integer_string(line, r.source_id);
  line += ",\"seq\":";
  append_integer_string(line, r.seq);
  line += ",\"error\":";
  append_json_string(line, e);
  line += ",\"record\":";
  append_record_json(line, table, r.data);
  line += "}\n";
  detail::MutexLock lock(mutex_);
  const char* p = line.data();
  std::size_t left = line.size();
  while (left > 0) {
    const ssize_t n = ::write(fd_, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  return ::fdatasync(fd_) == 0;
}

}  // namespace auditpipe::internal
