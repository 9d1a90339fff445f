// DeadLetterFile: where records the database refused go, one JSON object
// per line, with the server's message, so none is lost without a trace:
//
//   {"time":"2026-11-30T06:37:14.123456Z","table":"audit_log","source_id":"..","seq":"..",
//    "error":"(4025, 23000) CONSTRAINT `status` failed ...",
//    "record":{"at":"1764484634123456","message_id":"42","status":-5,...}}
//
// Every 64-bit integer is written as a string: the key, int64 columns and
// timestamp columns (microseconds since the epoch). JSON readers that hold
// numbers as doubles (jq, JavaScript) would read values past 2^53 as a
// neighbour. Narrower integers are numbers, booleans true/false, doubles
// numbers ("NaN", "Infinity", "-Infinity" as strings).
//
// Each line is written with one write() and fdatasync()ed: refusals are
// rare, and each is worth keeping.
//
// Thread safety: append() from any thread.
#pragma once

#include <filesystem>
#include <string>

#include "auditpipe/column.h"
#include "auditpipe/detail/thread_annotations.h"
#include "auditpipe/sink/sink.h"

namespace auditpipe::internal {

class DeadLetterFile {
 public:
  // Opens (creating) the file for appending; throws auditpipe::error.
  explicit DeadLetterFile(const std::filesystem::path& path);
  ~DeadLetterFile();
  DeadLetterFile(const DeadLetterFile&) = delete;
  DeadLetterFile& operator=(const DeadLetterFile&) = delete;

  // False if the line could not be written (the caller reports it).
  bool append(const TableDescriptor& table, const RecordRef& record, const std::string& error);

  const std::filesystem::path& path() const noexcept { return path_; }

 private:
  const std::filesystem::path path_;
  detail::Mutex mutex_;
  int fd_;  // written under mutex_ (one whole line at a time)
};

// The record as a JSON object of its columns.
void append_record_json(std::string& out, const TableDescriptor& table, const std::byte* record);

}  // namespace auditpipe::internal
