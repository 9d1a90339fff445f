// The load behind `auditpipe ingest`: input files through the runtime-schema
// pipeline into one table, exactly once and resumable.
//
//   - Each input is identified by its first bytes (source_identity.h); each
//     record's key is (that source_id, the record's byte offset in the
//     decompressed input), so loading the same input again stores nothing
//     twice whatever happened to the earlier run.
//   - A checkpoint per input (checkpoint_store.h) says how far every record
//     is stored; a rerun skips that prefix instead of sending it again. A
//     checkpoint is written only after the pipeline flushed everything
//     before it and the reject file is synced.
//   - Records that cannot be converted go to the reject file with their
//     file, line and reason; the load goes on (up to max_rejects).
//   - follow: at the end of a plain file, wait for it to grow; a rotated
//     file (renamed, or truncated in place) is finished and the new one is
//     loaded as a new input.
//
// Who may call: the command line (cli/), and tests.
//
// Thread safety: load() runs on the calling thread and starts its own;
// `stop` may be set from any thread (a signal handler's flag).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "auditpipe/status.h"
#include "input/format.h"

namespace auditpipe::ingest {

/// The format of `path`: `configured` unless it is "auto", else by the
/// name (.csv, .tsv/.tab; anything else JSON lines; .gz/.zst/.zstd ignored).
Format format_of(const std::string& configured, const std::string& path);

/// What `auditpipe ingest` was asked to do.
struct LoadConfig {
  std::string url;
  std::string table;                                      ///< empty: the schema file's
  std::vector<std::string> files;                         ///< "-" is standard input
  std::optional<std::string> schema_file;                 ///< unset: the existing table's columns
  std::string format = "auto";                            ///< auto (by file name), jsonl, csv, tsv
  std::vector<std::pair<std::string, std::string>> maps;  ///< column, input path
  std::vector<std::pair<std::string, std::string>> sets;  ///< column, constant
  std::string reject_file;                                ///< empty: <table>.rejects.jsonl
  std::optional<std::uint64_t> max_rejects;
  bool follow = false;
  bool quiet = false;
  std::optional<std::string> source_name;  ///< the checkpoint's name for the (single) input
  std::string checkpoint_table = "auditpipe_ingest_checkpoints";
  bool checkpoints = true;
  unsigned parallel = 0;  ///< inputs read at once; 0: min(inputs, 4)
  unsigned writers = 0;   ///< 0: the sink's preference
  std::size_t batch_size = 0;
  std::uint64_t memory_bytes = 256ull << 20;  ///< the record pool's size
  std::uint32_t unbounded_text_bytes = 1024;
  std::size_t max_record_bytes = 1 << 20;
  std::chrono::milliseconds checkpoint_interval{1000};
  std::chrono::milliseconds follow_poll{200};
  /// Stop (exit 1) once the database has stored no row for this long while
  /// its writes fail (an outage, a full disk); unset: wait for it.
  std::optional<std::chrono::seconds> give_up_after;
};

/// What load() did.
struct LoadSummary {
  std::uint64_t records = 0;    ///< committed this run
  std::uint64_t written = 0;    ///< stored this run (Stats::written)
  std::uint64_t rejects = 0;    ///< this run
  std::uint64_t refused = 0;    ///< records the database refused (Stats::rejected_by_sink)
  std::uint64_t unwritten = 0;  ///< committed, not known stored at the end
  std::uint64_t skipped = 0;    ///< records already stored by earlier runs, not read again
  /// lines earlier runs rejected (into their reject file), not read again
  std::uint64_t skipped_rejects = 0;
  std::uint64_t held_back = 0;  ///< unterminated last lines of files still being written
  std::uint64_t empty_lines = 0;
  std::uint64_t repaired_lines = 0;  ///< JSON lines of invalid UTF-8 made valid before parsing
  /// CSV/TSV fields of invalid UTF-8 the writers made valid (Stats::invalid_utf8_fields)
  std::uint64_t repaired_fields = 0;
  std::uint64_t truncated_fields = 0;
  /// text fields whose NUL bytes the sink replaced (PostgreSQL; Stats::nul_replaced_fields)
  std::uint64_t nul_replaced_fields = 0;
  std::uint64_t input_bytes = 0;
  std::uint64_t inputs = 0;
  double seconds = 0;
  bool interrupted = false;
  bool aborted = false;             ///< max_rejects exceeded
  bool gave_up = false;             ///< give_up_after ran out
  std::vector<std::string> errors;  ///< inputs that could not be loaded, and why
  std::string reject_file;
  /// 0: everything stored; 3: everything stored but some lines rejected
  /// (or a last line held back);
  /// 1: something is not stored (errors, refused, unwritten, aborted);
  /// 130: interrupted (rerun to continue).
  int exit_code() const;
};

/// The command's own mistake, found before anything is made or read: a
/// schema file's content, a --map or --set that cannot be (the command
/// exits 2 for it, as for a malformed URL).
struct usage_error : auditpipe::error {
  using auditpipe::error::error;
};

/// Runs the load. Throws usage_error for the command's mistakes (above),
/// auditpipe::error for what else stops it before any record is read (no
/// table and no schema file, the database unreachable); problems with
/// single inputs end up in the summary.
LoadSummary load(const LoadConfig& config, const std::atomic<bool>& stop);

/// The summary as the command prints it.
std::string format_summary(const LoadSummary& s);

}  // namespace auditpipe::ingest
