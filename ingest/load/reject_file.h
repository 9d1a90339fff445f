// RejectFile: where `auditpipe ingest` puts every input record it could not
// convert, one JSON object per line: {"file": ..., "line": N, "offset": N,
// "source_id": N, "reason": ..., "text": ...} (text cut to max_text_bytes,
// invalid UTF-8 escaped as \u00XX so the file itself is valid JSON lines).
//
// A load killed (kill -9, a crash) leaves what it rejected after its last
// checkpoint in the file, and often a last line cut off mid-way (stdio
// writes whole buffers); the rerun reads those lines again. So opening an
// existing file removes a cut-off last line, and add() does not write again
// a record of an input resumed from its checkpoint (resume()) whose (file,
// source_id, offset) the file holds after that checkpoint: the file's last
// 16 MiB are read at open, and resume() reads further back, until a line
// of that input from before the checkpoint (up to 256 MiB). (A window of
// 16 MiB alone was shorter than the rejects of one second between
// checkpoints.) Nothing else is held back: a new input of the same name
// (the next day's log), or one loaded into another database beside the same
// reject file, has its rejects written whatever the file holds. (Lines
// written before lines named their input match any input of their file.)
//
// Who may call: the loader's reader threads (add), its checkpoint thread
// (sync, before a checkpoint covers the rejected lines).
//
// Thread safety: add() and sync() from any thread.
#pragma once

#include <cstdint>
#include <cstdio>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace auditpipe::ingest {

class RejectFile {
 public:
  /// Opens `path` for appending (created if missing); see the file's comment
  /// for what it reads of an existing one. Throws auditpipe::error.
  explicit RejectFile(std::string path, std::size_t max_text_bytes = 4096);
  /// Closes it; a file this object created and never wrote to is removed
  /// (a clean load leaves no empty reject file behind).
  ~RejectFile();
  RejectFile(const RejectFile&) = delete;
  RejectFile& operator=(const RejectFile&) = delete;

  /// The input `source_id` read from `file` resumes from `from_offset`, its
  /// stored checkpoint (0 for a run killed before its first one moved):
  /// what the file holds of it from there on is not written again (above).
  void resume(std::string_view file, std::int64_t source_id, std::uint64_t from_offset);
  /// Appends one rejected record of the input `source_id`, unless it is one
  /// a resumed input's killed run wrote (above).
  void add(std::string_view file, std::int64_t source_id, std::uint64_t line, std::uint64_t offset,
           std::string_view reason, std::string_view text);
  /// Everything added so far is on disk (fflush + fsync). Throws auditpipe::error.
  void sync();
  /// Records added by this process.
  std::uint64_t count() const;
  /// The file's path.
  const std::string& path() const noexcept { return path_; }

 private:
  const std::string path_;
  const std::size_t max_text_bytes_;
  mutable std::mutex mutex_;
  std::FILE* file_ = nullptr;
  bool created_ = false;  ///< the file did not exist before
  std::uint64_t count_ = 0;
  std::string line_;  ///< reused: no allocation per reject in steady state
  /// (file as escaped, '\n', source_id, '\n', offset) of the lines in the
  /// file's last 16 MiB at open, by their file (as escaped, '\n'): each
  /// resumed input looks at its own file's only
  std::unordered_map<std::string, std::vector<std::string>> tail_;
  /// Those keys of resumed inputs at or after their checkpoints
  std::set<std::string> held_;
  std::uint64_t at_open_ = 0;    ///< the file's size at open (after its repair)
  std::uint64_t held_from_ = 0;  ///< where the lines read at open begin
  std::string key_;              ///< reused
};

/// `text` as a JSON string's contents (no quotes), appended to `out`:
/// quotes, backslashes and control characters escaped, bytes that are not
/// valid UTF-8 written as \u00XX.
void append_json_escaped(std::string& out, std::string_view text);

}  // namespace auditpipe::ingest
