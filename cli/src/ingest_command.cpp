// See ingest_command.h.
#include "ingest_command.h"

#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <filesystem>

#include <spdlog/spdlog.h>

#include "auditpipe/diagnostics.h"
#include "auditpipe/sink/seal.h"
#include "auditpipe/status.h"
#include "hidden_arguments.h"
#include "input/byte_source.h"
#include "input/record_reader.h"
#include "input/schema_file.h"
#include "input/schema_inference.h"
#include "replay_source.h"
#include "validators.h"

namespace auditpipe::cli {
namespace {

// Set by SIGINT/SIGTERM: the load stops reading, drains and checkpoints. A
// second signal ends the process at once, saying what that costs: a pipe's
// records read and not yet stored cannot be read again. (Before, it died
// by the signal without a word, and the hint it had shown said a rerun
// sends what is not stored, untrue for a pipe.)
std::atomic<bool> stop_requested{false};
std::atomic<bool> reads_a_pipe{false};
static_assert(std::atomic<bool>::is_always_lock_free);

extern "C" void on_stop_signal(int signal) {
  if (!stop_requested.exchange(true)) return;
  // write(2) and _exit(2): what a signal handler may call.
  static constexpr char pipe[] =
      "\nauditpipe ingest: quit: the records read from the pipe and not yet stored are lost\n";
  static constexpr char files[] = "\nauditpipe ingest: quit: a rerun loads what is not stored\n";
  if (reads_a_pipe.load()) {
    (void)!::write(STDERR_FILENO, pipe, sizeof pipe - 1);
  } else {
    (void)!::write(STDERR_FILENO, files, sizeof files - 1);
  }
  ::_exit(128 + signal);
}

constexpr const char* description =
    R"(Loads audit logs (JSON lines, CSV or TSV; plain, gzip or zstd) into a table of a
MySQL/MariaDB, PostgreSQL or SQLite database, exactly once.

URL is a database URL as auditpipe::open() takes it: sqlite:///abs/path.db,
mysql://user:password@host:3306/db, postgresql://user@host/db (see the README).
FILE... are the inputs; - is standard input. Compression is recognized from
the data. The format comes from the name (.csv, .tsv, anything else is JSON
lines; .gz/.zst ignored) unless --format says.)";

constexpr const char* footer = R"(
COLUMNS
  By default the table must exist: its columns are read from the database.
  --schema FILE describes them instead (and the table is created if missing):
    {"table": "audit_log", "columns": [
      {"name": "at", "type": "timestamp"},
      {"name": "user_name", "type": "text", "size": 64, "nullable": true,
       "path": "user.name"}]}
  Types: boolean, int8, int16, int32, int64, uint8, uint16, uint32, float64,
  timestamp, text (with "size" in bytes, and "chars": at most that many
  characters too, as a VARCHAR(n) column holds n). --infer FILE... prints such
  a file, guessed from the first lines, to edit and pass back.
  Input fields go to the column of the same name; --map column=path takes a
  nested JSON field (user.name) or another CSV header; --set column=value puts
  a constant. A field that is missing or null becomes NULL if the column is
  nullable, else the column's default, else the line is rejected. An empty
  CSV field is such a missing one, but in a text column with neither NULL nor
  a default, where it is empty text (as a quoted "" always is). true/false go
  into an integer column as 1/0.
  A column the database fills (identity, AUTO_INCREMENT, serial, a default
  like now()) is left to it unless --map/--set names it or an input's first
  64 KiB have its field; a later line with a value for it is rejected.

VALUES
  timestamps: ISO 8601 (2026-11-30T12:34:56.123456Z, +02:00 offsets, a space
  instead of T, a date alone) or epoch numbers: seconds (with a fraction),
  13 digits milliseconds, 16 microseconds, 19 nanoseconds; digits past the
  microsecond are dropped (a JSON number of more than 16 digits is a double:
  quote it). booleans: true/false,
  1/0, t/f, yes/no. Integers out of the column's range, and fractions for an
  integer column, are rejected. Text longer than the column is cut at a
  character boundary and counted; invalid UTF-8 is repaired (U+FFFD) and counted.

REJECTS
  Each line that cannot be loaded is appended to the reject file as a JSON line
  with its file, line number, byte offset, the reason and the text. The load
  goes on; --max-rejects N stops it once more than N lines were rejected.

EXACTLY ONCE
  Every row gets a key (source_id, seq): source_id from the input's first 4 KiB,
  seq the record's byte offset in the (decompressed) input. Loading the same
  input again, after a crash, kill -9, Ctrl-C or a database outage, stores no
  row twice. A checkpoint per input in the table auditpipe_ingest_checkpoints
  (--checkpoint-table), written only after the rows it covers are stored, lets
  a rerun skip what is done; a file that grew continues where it stopped.

FOLLOW
  --follow keeps reading a plain file as it grows. A rotated file (renamed
  away, or truncated in place) is read to its end and the new file loaded from
  its start; the end of a file truncated in place is read from its copy
  (the newest app.log.1, app.log-DATE, ... that begins as it did). Ctrl-C or SIGTERM drains, checkpoints and exits 0.
  Without --follow too, a log rotated since its last load has the rest of
  its rotated copy (uncompressed) read too.

EXIT STATUS
  0    every record stored, none rejected
  3    every good record stored, some lines rejected (see the reject file)
  1    something is not stored: an input failed, the database refused or
       could not take rows, --max-rejects was exceeded, or --give-up-after
       ran out
  2    a usage error (an option, --set/--map, the schema file, or the URL
       itself: malformed, an unknown option or scheme, sealing's key file
       or anchor file)
  130  interrupted (not --follow): run the same command again to continue
       (standard input as a pipe: the whole records read from it are stored)

EXAMPLES
  auditpipe ingest --infer audit.jsonl > audit.schema.json
  auditpipe ingest --schema audit.schema.json sqlite:///var/lib/audit.db audit.jsonl
  auditpipe ingest --table audit_log --set host=web1 \
      mysql://loader@db1/audit audit-2026-11.jsonl.zst
  auditpipe ingest --table audit_log --follow postgresql://loader@db/audit app.log
)";

// A usage error: the message, and exit status 2 as for the parser's own.
int usage(const std::string& message) {
  std::fprintf(stderr, "auditpipe ingest: %s (see --help)\n",
               HiddenArguments::shown(message).c_str());
  return 2;
}

bool split_assignment(const std::string& text, std::pair<std::string, std::string>& out) {
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0) return false;
  out = {text.substr(0, eq), text.substr(eq + 1)};
  return true;
}

}  // namespace

IngestCommand::IngestCommand(CLI::App& app) {
  command_ = app.add_subcommand("ingest", description);
  command_->footer(footer);
  command_->add_option("URL FILE", arguments_, "the database URL, then the inputs (- is stdin)")
      ->required();
  command_->add_option("--table,-t", config_.table, "the table to load into");
  command_
      ->add_option("--schema", config_.schema_file, "the columns, from a schema file (see COLUMNS)")
      ->check(CLI::ExistingFile);
  command_->add_flag("--infer", infer_,
                     "print a schema file guessed from the inputs' first lines, and stop "
                     "(no URL then)");
  command_->add_option("--infer-lines", infer_lines_, "lines --infer looks at")
      ->default_val(1000)
      ->check(whole_number_from_one());
  command_->add_option("--format,-f", config_.format, "auto, jsonl (or json), csv or tsv")
      ->check(CLI::IsMember({"auto", "jsonl", "json", "csv", "tsv"}))
      ->default_val("auto");
  // One value per --map/--set (repeat the option for more): a vector
  // option would otherwise swallow the URL and files after it.
  command_->add_option("--map,-m", maps_, "column=path: the input field a column comes from")
      ->allow_extra_args(false);
  command_->add_option("--set,-s", sets_, "column=value: a constant for a column")
      ->allow_extra_args(false);
  command_->add_option("--reject-file", config_.reject_file,
                       "where rejected lines go (default TABLE.rejects.jsonl)");
  command_->add_option("--max-rejects", max_rejects_, "stop after more than N rejected lines")
      ->check(CLI::Validator(
          [](std::string& value) {
            return value.find('-') == std::string::npos ? std::string()
                                                        : "a count of lines, not " + value;
          },
          "N"));
  command_->add_flag("--follow,-F", config_.follow, "keep reading the files as they grow");
  command_
      ->add_option("--give-up-after", give_up_after_,
                   "stop (exit 1) once the database has stored no row for SECONDS while its writes "
                   "fail (an outage, a full disk); a rerun continues. Default: wait for it")
      ->check(whole_number_from_one());
  command_->add_flag("--quiet,-q", config_.quiet,
                     "no progress line, and no summary unless something is not stored");
  command_->add_option(
      "--source-name", config_.source_name,
      "the name the (one) input's checkpoint is kept under (default: its path, \"stdin\" for "
      "stdin); an input, stdin too, is found again by its first 4 KiB either way");
  command_->add_option("--checkpoint-table", config_.checkpoint_table,
                       "the table of checkpoints (default auditpipe_ingest_checkpoints)");
  command_->add_flag("!--no-checkpoint", config_.checkpoints,
                     "keep no checkpoints (a rerun reads everything again; keys still "
                     "prevent duplicates)");
  command_->add_option("--parallel,-j", config_.parallel, "inputs read at once (default up to 4)");
  command_
      ->add_option("--writers", config_.writers, "database writer threads (default: the sink's)")
      ->check(CLI::Range(1u, 256u));
  command_
      ->add_option(
          "--batch-size", config_.batch_size,
          "rows per statement, as given (default: the sink's, adapting to how long writes take)")
      ->check(CLI::Range(1u, 65536u));
  command_
      ->add_option("--text-bytes", config_.unbounded_text_bytes,
                   "bytes kept of columns the table declares without a length (TEXT)")
      ->default_val(1024)
      ->check(whole_number_from_one(16u << 20));
  command_
      ->add_option("--max-record-bytes", config_.max_record_bytes, "longer records are rejected")
      ->default_val(1 << 20)
      ->check(whole_number_from_one());
}

int IngestCommand::run() {
  if (!command_->parsed()) return 0;
  if (max_rejects_ > 0 || command_->count("--max-rejects") > 0) config_.max_rejects = max_rejects_;
  if (command_->count("--give-up-after") > 0)
    config_.give_up_after = std::chrono::seconds(give_up_after_);
  for (const auto& [text, out] :
       {std::pair{&maps_, &config_.maps}, std::pair{&sets_, &config_.sets}}) {
    const bool map = text == &maps_;
    for (const std::string& m : *text) {
      std::pair<std::string, std::string> kv;
      if (!split_assignment(m, kv)) return usage("expected column=value, got \"" + m + "\"");
      // An empty path read no field: every row got NULL, exit 0.
      if (map && kv.second.empty())
        return usage("--map " + m + ": no input field after '=' (column=path)");
      // Given twice, the last one won without a word.
      for (const auto& [column, value] : *out) {
        if (column == kv.first)
          return usage(std::string(map ? "--map" : "--set") + " gives column " + column + " twice");
      }
      out->push_back(std::move(kv));
    }
  }
  if (infer_) return infer();
  if (arguments_.size() < 2) return usage("give a database URL and at least one input");
  if (config_.table.empty() && !config_.schema_file)
    return usage("give --table (or --schema FILE)");
  config_.url = arguments_.front();
  config_.files.assign(arguments_.begin() + 1, arguments_.end());
  if (config_.follow) {
    for (const std::string& f : config_.files) {
      if (struct stat st{}; f == "-") {
        return usage("--follow reads files, not standard input");
      } else if (::stat(f.c_str(), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
        // A pipe has no end to follow past and no rotation: read without
        // --follow, it is read until its writers close it. (Before, the
        // open waited for a writer, deaf to Ctrl-C.)
        return usage("--follow reads files; " + f +
                     " is not a regular file (a pipe or device): leave --follow out, and it is "
                     "read until its writers close it");
      }
    }
  }

  // Sealing's key and anchor files before anything connects (or a SQLite
  // file is made): a missing or world-readable key is the command's
  // mistake, not the database's. A bad URL, or sealing options that
  // contradict each other, are left to the sink's parser, whose message
  // names the URL.
  try {
    const seal::SealSettings sealing = seal::settings_in_url(config_.url);
    if (!seal::contradiction(sealing, false)) seal::check_files(sealing);
  } catch (const url_error&) {
  } catch (const error& e) {
    std::fprintf(stderr, "%s\n", HiddenArguments::shown(e.what()).c_str());
    return 2;
  }

  for (const std::string& file : config_.files) {
    struct stat st {};
    if (file == "-" || (::stat(file.c_str(), &st) == 0 && S_ISFIFO(st.st_mode)))
      reads_a_pipe.store(true);
  }
  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
  // -q: the library's own notes ("sealed through seal N") go too; its
  // warnings and errors stay.
  if (config_.quiet) diagnostics()->set_level(spdlog::level::warn);
  const ingest::LoadSummary summary = ingest::load(config_, stop_requested);
  if (!config_.quiet || summary.exit_code() != 0)
    std::fputs(ingest::format_summary(summary).c_str(), stderr);
  if (config_.follow && stop_requested.load() && summary.exit_code() == 0) return 0;
  return summary.exit_code();
}

int IngestCommand::infer() {
  if (arguments_.empty()) return usage("--infer needs the input files");
  for (const std::string& f : arguments_) {
    // A URL here is the load's command line with --infer added: infer
    // reads files only, and would say "cannot open" of the URL.
    if (f.find("://") != std::string::npos && !std::filesystem::exists(f)) {
      return usage("--infer reads input files and prints a schema; '" + redact_url(f) +
                   "' looks like a database URL (load with --schema, without --infer)");
    }
  }
  std::vector<std::string> records_text;
  ingest::Format format = ingest::Format::jsonl;
  for (const std::string& f : arguments_) {
    // A CSV sample is one header and its records: the first file's.
    if (!records_text.empty() && format != ingest::Format::jsonl) break;
    format = ingest::format_of(config_.format, f);
    auto source = ingest::open_byte_source(f);
    ingest::RecordReader reader(*source, format, config_.max_record_bytes);
    ingest::RawRecord raw;
    while (records_text.size() < infer_lines_ && reader.next(raw)) {
      if (raw.kind == ingest::RawRecord::Kind::record ||
          raw.kind == ingest::RawRecord::Kind::incomplete)
        records_text.emplace_back(raw.text);
      // A last line without its end is the end: the reader gives it again
      // at each call (a file still being written), and it was counted up
      // to --infer-lines times ("999 records looked at" for 3).
      if (raw.kind == ingest::RawRecord::Kind::incomplete) break;
    }
  }
  const std::string table = config_.table.empty() ? "audit_log" : config_.table;
  const ingest::InferredColumns inferred =
      ingest::infer_columns(records_text, format, infer_lines_);
  // Checked like any schema before it is printed: what --infer writes loads.
  Schema check(table, inferred.columns);
  // Lines left out leave columns guessed without them (a number beyond 64
  // bits, before, made an int64 column the load then refused the line for).
  if (inferred.unparsed > 0) {
    const std::size_t looked_at = records_text.size() - (format == ingest::Format::jsonl ? 0 : 1);
    std::fprintf(stderr,
                 "auditpipe ingest --infer: left out %zu of the %zu records looked at (the schema "
                 "is guessed from the others); the first, record %zu: %s\n",
                 inferred.unparsed, looked_at, inferred.first_unparsed_record,
                 inferred.first_unparsed_reason.c_str());
  }
  for (const std::string& note : inferred.notes)
    std::fprintf(stderr, "auditpipe ingest --infer: %s\n", note.c_str());
  std::fputs(ingest::to_schema_json(table, inferred.columns, inferred.paths).c_str(), stdout);
  return 0;
}

}  // namespace auditpipe::cli
