// See loader.h.
#include "loader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

#include "auditpipe/database.h"
#include "auditpipe/dynamic_logger.h"
#include "auditpipe/open.h"
#include "auditpipe/schema.h"
#include "auditpipe/sink/seal.h"
#include "auditpipe/status.h"
#include "checkpoint_store.h"
#include "input/byte_source.h"
#include "input/field_survey.h"
#include "input/record_reader.h"
#include "input/row_mapper.h"
#include "input/schema_file.h"
#include "progress.h"
#include "read_only_database.h"
#include "reject_file.h"
#include "replay_source.h"
#include "source_identity.h"

namespace auditpipe::ingest {
namespace {

// Bytes read ahead of each input at most: its identity prefix, and room for
// a CSV header line, which a resumed load needs without reading from the
// start. A pipe is read ahead only as far as those need.
constexpr std::size_t lookahead_bytes = 64 * 1024;

// A message of the command's own: "auditpipe ingest: ...".
std::string as_usage(std::string_view message) {
  for (std::string_view prefix : {"auditpipe: ", "ingest: "})
    if (message.starts_with(prefix)) message.remove_prefix(prefix.size());
  return "auditpipe ingest: " + std::string(message);
}

// A call on the checkpoint table failed (the database down, a lock held
// elsewhere): on_checkpoints() waits and tries again.
struct checkpoint_failure : error {
  using error::error;
};

// The load was stopped (Ctrl-C, SIGTERM) while an input waited for its
// checkpoint: the input ends as a stop ends it, with nothing to report.
struct stopped_while_waiting : std::exception {
  const char* what() const noexcept override { return "stopped"; }
};

}  // namespace

Format format_of(const std::string& configured, const std::string& path) {
  if (configured == "jsonl" || configured == "json") return Format::jsonl;
  if (configured == "csv") return Format::csv;
  if (configured == "tsv") return Format::tsv;
  std::string name = path;
  for (const char* ext : {".gz", ".zst", ".zstd"})
    if (name.size() > std::strlen(ext) && name.ends_with(ext))
      name.resize(name.size() - std::strlen(ext));
  if (name.ends_with(".csv")) return Format::csv;
  if (name.ends_with(".tsv") || name.ends_with(".tab")) return Format::tsv;
  return Format::jsonl;
}

namespace {

// How long after its last write a file's unterminated last line is taken
// as complete.
constexpr auto settle_time = std::chrono::seconds(10);

std::string lower_ascii(std::string_view s) {
  std::string out(s);
  for (char& ch : out)
    if (ch >= 'A' && ch <= 'Z') ch = static_cast<char>(ch - 'A' + 'a');
  return out;
}

// A regular file, which can be opened again and read from the start; stdin
// and a pipe cannot (a second opening reads on where the first stopped).
bool reopenable(const std::string& path) {
  struct stat st {};
  return path != "-" && ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool recently_written(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;  // stdin, a pipe
  const auto mtime = std::chrono::system_clock::time_point(
      std::chrono::seconds(st.st_mtim.tv_sec) + std::chrono::nanoseconds(st.st_mtim.tv_nsec));
  return std::chrono::system_clock::now() - mtime < settle_time;
}

// Whether an input whose first bytes are `prefix` is the one checkpointed
// as `c`: it starts with the bytes it was identified by and, if it was seen
// longer since (grown_bytes, grown_id) and is that long, with those too. A
// shorter one (a compressed snapshot of an earlier state, whose size says
// nothing) is matched as before: read again under its id, which the keys
// make harmless, instead of stored again under a new one.
bool starts_like(std::string_view prefix, const Checkpoint& c, std::uint64_t grown_bytes,
                 std::int64_t grown_id) {
  return starts_as(prefix, c.prefix_bytes, c.salt, c.source_id) &&
         (grown_bytes <= c.prefix_bytes || prefix.size() < grown_bytes ||
          starts_as(prefix, grown_bytes, c.salt, grown_id));
}

bool starts_like(std::string_view prefix, const Checkpoint& c) {
  return starts_like(prefix, c, c.grown_bytes, c.grown_id);
}

// The files beside `log` whose names begin with its name (app.log.1,
// app.log-20261204, app.log.1.gz: where rotation puts it), newest first,
// up to 8.
std::vector<std::string> rotated_copies(const std::string& log) {
  namespace fs = std::filesystem;
  const fs::path path(log);
  const std::string base = path.filename().string();
  std::vector<std::pair<fs::file_time_type, fs::path>> found;
  std::error_code ec;
  for (const auto& entry :
       fs::directory_iterator(path.has_parent_path() ? path.parent_path() : fs::path("."), ec)) {
    const std::string name = entry.path().filename().string();
    if (name.size() <= base.size() || name.compare(0, base.size(), base) != 0) continue;
    std::error_code e;
    if (!entry.is_regular_file(e)) continue;
    found.emplace_back(entry.last_write_time(e), entry.path());
  }
  std::sort(found.begin(), found.end(), std::greater<>());
  if (found.size() > 8) found.resize(8);
  std::vector<std::string> paths;
  for (const auto& f : found)  // as `log` names its directory ("app.log.1", not "./app.log.1")
    paths.push_back((path.has_parent_path() ? f.second : f.second.filename()).string());
  return paths;
}

// Of rotated_copies(log), those that begin as `begins_as` says and hold
// more than `done` bytes, newest first. A compressed copy's length is
// known only by decompressing it all: with `plain_only` it is not looked
// at, else it is taken for longer.
std::vector<std::string> rotated_copies_past(
    const std::string& log, std::uint64_t done, bool plain_only,
    const std::function<bool(std::string_view prefix)>& begins_as) {
  std::vector<std::string> found;
  for (const std::string& path : rotated_copies(log)) {
    try {
      ReplaySource copy(open_byte_source(path), identity_prefix_bytes);
      if (plain_only && copy.compressed()) continue;
      const auto size = copy.compressed() ? std::nullopt : copy.input_size();
      if (size && *size <= done) continue;  // nothing beyond what was read
      if (begins_as(copy.prefix())) found.push_back(path);
    } catch (const std::exception&) {
      // Not readable (being written, compressed meanwhile): not it.
    }
  }
  return found;
}

// The whole records at the start of the file `path`, up to byte `size`:
// where they end, the lines before there, and how many records they are.
struct WholeRecords {
  std::uint64_t bytes = 0;
  std::uint64_t lines = 0;
  std::uint64_t records = 0;
};

WholeRecords whole_records(const std::string& path, Format format, std::size_t max_record_bytes,
                           std::uint64_t size) {
  WholeRecords whole;
  auto source = open_byte_source(path);
  RecordReader reader(*source, format, max_record_bytes);
  RawRecord raw;
  while (reader.next(raw) && raw.kind != RawRecord::Kind::incomplete && raw.end_offset <= size) {
    whole.bytes = reader.offset();
    whole.lines = reader.line() - 1;
    if (raw.kind == RawRecord::Kind::record) ++whole.records;
  }
  return whole;
}

// How far one input is handled, published by its reader for the checkpoint
// thread. Guarded by InputState::mutex.
struct Position {
  std::uint64_t bytes_done = 0;
  std::uint64_t lines_done = 0;
  std::uint64_t records_done = 0;
  std::uint64_t rejects = 0;
};

struct InputState {
  std::string path;  ///< as given
  std::string name;  ///< the checkpoint's name
  Format format = Format::jsonl;
  std::mutex mutex;
  bool identified = false;  ///< guarded by mutex
  /// guarded by mutex: the source a rotation replaced (never this input's id)
  std::int64_t not_this = -1;
  bool reframe = false;  ///< reader thread only: read again from the position at once
  /// reader thread only: the input's id (saved.source_id) for its reject lines
  std::int64_t reject_source_id = 0;
  Checkpoint saved;  ///< guarded by mutex: the last checkpoint stored
  /// guarded by mutex: the grown identity (Checkpoint::grown_bytes) to store next
  struct {
    std::uint64_t bytes = 0;
    std::int64_t id = 0;
  } grown;
  Position position;  ///< guarded by mutex
  /// guarded by mutex: the first offset this run read the current source
  /// from (its rows have seq >= it); none if it read none of it yet.
  std::optional<std::uint64_t> read_from;
  std::atomic<std::uint64_t> input_bytes{0};
  std::optional<std::uint64_t> input_size;  ///< set before the readers start
  /// Read as it grows (--follow); not a rotated copy read to catch up.
  bool follows = false;
  /// Opened (and its first bytes read) before the readers start, for an
  /// input that cannot be opened twice (stdin, a pipe); the first pass takes it.
  std::unique_ptr<ByteSource> opened;
};

class Load {
 public:
  Load(const LoadConfig& config, const std::atomic<bool>& stop) : config_(config), stop_(stop) {}

  LoadSummary run();

 private:
  void leave_columns_to_database();
  void add_unread_rotated_copies();
  /// Appends to `found` the rotated copy of `input` that holds lines its
  /// last load did not read, and the copies rotated after it (the log in
  /// between, when it was rotated more than once), to be read too; none
  /// that is among `found` or the inputs given. Throws if `input` or the
  /// checkpoints cannot be read.
  void add_rotated_copies_of(const InputState& input,
                             std::vector<std::unique_ptr<InputState>>& found);
  bool still_starts_like(int fd, InputState& input);
  void read_rotated_copy(InputState& input, RowMapper& mapper, std::uint64_t& source_id);
  void read_inputs();
  void read_input(InputState& input);
  // One pass over the input from its position: false when there is nothing
  // more to wait for (the end without follow, a stop, an error).
  bool pass(InputState& input, const std::string& open_path, RowMapper& mapper,
            std::uint64_t& source_id);
  Checkpoint identify(InputState& input, const std::string& open_path, const std::string& prefix,
                      std::optional<std::uint64_t> size, std::int64_t not_this);
  /// identify()'s work on the checkpoint table; db_mutex_ held.
  Checkpoint identify_in_store(InputState& input, const std::string& open_path,
                               const std::string& prefix, std::optional<std::uint64_t> size,
                               std::int64_t not_this, Checkpoint c);
  /// Runs `work` (calls on store_) under db_mutex_ through an outage of the
  /// database or a lock held elsewhere (SQLite's busy timeout ends in an
  /// error): it waits and tries again on a new connection, as the writers
  /// do, until it succeeds, the load stops, or --give-up-after runs out
  /// (then the last error is thrown). Reading an input's checkpoint is part
  /// of reading the input: a follower that met a rotation during an outage
  /// ended with an error, and a piped input lost what it had read.
  template <class Work>
  auto on_checkpoints(const std::string& input_name, Work work) -> decltype(work());
  /// A call on store_; any failure thrown as checkpoint_failure.
  template <class Call>
  auto in_store(Call call) -> decltype(call());
  /// A new connection for the checkpoints if the last one failed; throws
  /// checkpoint_failure if none can be had. db_mutex_ held.
  void reconnect_checkpoints();
  /// A record of the pool; waits while it is full, up to a stop (`stream`:
  /// up to an abort only, see pass()).
  DynamicLogger::Record acquire(bool stream);
  void reject(InputState& input, const RawRecord& raw, std::string_view reason);
  void reject_unclosed_quote(InputState& input, const std::string& open_path, const RawRecord& raw,
                             Position& pos, std::string_view reason);
  void checkpoint_loop();
  void give_up_loop();
  void checkpoint_now();
  void fail(InputState& input, const std::string& message);
  /// Throws usage_error if the mapping onto schema_ cannot be made.
  void check_mapping() const;
  bool stopping() const { return stop_.load(std::memory_order_relaxed) || aborted_.load(); }
  /// Whether reading `stream` (a pipe: see pass()) or a file ends now.
  bool halted(bool stream) const { return stream ? aborted_.load() : stopping(); }
  /// For reads of pipes, which may wait for data for ever.
  Interrupt interrupt() const {
    return [this] { return stopping(); };
  }

  const LoadConfig& config_;
  const std::atomic<bool>& stop_;
  std::unique_ptr<Database> db_;
  std::mutex db_mutex_;  ///< one thread at a time on db_, store_ and claims_
  std::unique_ptr<CheckpointStore> store_;
  /// The inputs of this command that identify() gave each checkpoint, with
  /// the first bytes (up to identity_prefix_bytes) each was identified by.
  struct Claim {
    const InputState* input;
    std::string prefix;
  };
  std::map<std::int64_t, std::vector<Claim>> claims_;
  std::string store_table_;  ///< the target table the checkpoints are of
  std::optional<Schema> schema_;
  std::vector<std::pair<std::string, std::string>> maps_;
  std::vector<std::string> left_to_database_;  ///< columns the load leaves out
  std::unique_ptr<DynamicLogger> logger_;
  std::unique_ptr<RejectFile> rejects_;
  std::string options_dead_letter_;  ///< the pipeline's dead-letter file
  std::vector<std::unique_ptr<InputState>> inputs_;
  std::atomic<std::size_t> next_input_{0};
  std::atomic<bool> aborted_{false};
  std::atomic<bool> gave_up_{false};     ///< --give-up-after ran out
  std::atomic<bool> watch_done_{false};  ///< give_up_loop() ends
  std::atomic<std::uint64_t> records_{0};
  std::atomic<std::uint64_t> rejected_{0};
  std::atomic<std::uint64_t> empty_lines_{0};
  std::atomic<std::uint64_t> repaired_lines_{0};
  std::atomic<std::uint64_t> skipped_{0};
  std::atomic<std::uint64_t> skipped_rejects_{0};
  std::atomic<std::uint64_t> held_back_{0};
  bool checkpoint_broken_ = false;  ///< guarded by db_mutex_: reconnect before the next use
  std::mutex errors_mutex_;
  std::vector<std::string> errors_;
  /// Rows this load read from a damaged gzip member or zstd frame: removed
  /// once the load has stored everything (remove_suspect_rows).
  struct SuspectRows {
    std::string path;
    std::int64_t source_id;
    std::uint64_t from;  ///< the first suspect row's seq (offset)
    std::uint64_t to;    ///< past the last one's
  };
  std::vector<SuspectRows> suspects_;  ///< guarded by errors_mutex_
  void remove_suspect_rows();
  std::mutex checkpoint_mutex_;
  std::condition_variable checkpoint_wake_;
  bool readers_done_ = false;  ///< guarded by checkpoint_mutex_
};

LoadSummary Load::run() {
  const auto started = std::chrono::steady_clock::now();
  // Without a schema file the table must be there already: a SQLite path
  // is looked at read-only first, so a mistyped one is reported, not
  // created as an empty database.
  if (!config_.schema_file && is_sqlite_url(config_.url)) {
    try {
      (void)connect_read_only(config_.url);
    } catch (const url_error&) {
      throw;  // the URL itself: a usage error
    } catch (const std::exception& e) {
      std::string why = e.what();
      if (why.rfind("auditpipe: ", 0) == 0) why.erase(0, 11);
      throw error("auditpipe ingest: " + why +
                  "; without --schema FILE the table must exist already");
    }
  }
  // A schema file, and the mapping onto it, before anything connects (or a
  // SQLite file is made): their mistakes are the command's.
  std::string table = config_.table;
  maps_ = config_.maps;
  if (config_.schema_file) {
    SchemaFile file;
    try {
      file = read_schema_file(*config_.schema_file);
    } catch (const error& e) {
      throw usage_error(as_usage(e.what()));
    }
    if (table.empty()) table = file.table;
    if (table.empty())
      throw usage_error("auditpipe ingest: " + *config_.schema_file +
                        " names no table and --table was not given");
    for (const auto& entry : file.paths) {
      // (A named copy: clang 14 cannot capture a structured binding.)
      const std::string& column = entry.first;
      if (std::none_of(maps_.begin(), maps_.end(),
                       [&](const auto& m) { return m.first == column; }))
        maps_.push_back(entry);
    }
    try {
      schema_.emplace(table, file.columns);  // names that are not identifiers, reserved ones
    } catch (const error& e) {
      throw usage_error(as_usage(e.what()));
    }
    check_mapping();
  }
  db_ = Database::connect(config_.url);

  if (!config_.schema_file) {
    if (table.empty()) throw error("auditpipe ingest: give --table (or --schema FILE)");
    std::optional<Schema> found = db_->read_schema(table, config_.unbounded_text_bytes);
    if (!found)
      throw error("auditpipe ingest: there is no table " + table + " on " + db_->describe() +
                  "; give --schema FILE to create it (`auditpipe ingest --infer FILE > "
                  "schema.json` writes one to start from)");
    schema_.emplace(std::move(*found));
  }

  store_table_ = table;
  if (config_.checkpoints) {
    store_ = std::make_unique<CheckpointStore>(*db_, table, config_.checkpoint_table);
    // Checkpoints of a table that is not there (dropped since, or another
    // database's file copied here) say rows are stored that are not: the
    // rerun would skip them all and report success.
    if (config_.schema_file && !db_->read_schema(table, config_.unbounded_text_bytes)) {
      if (const std::size_t stale = store_->forget_all(); stale > 0) {
        std::fprintf(stderr,
                     "auditpipe ingest: %zu checkpoints in %s are of a table %s that does not "
                     "exist (dropped since?): removed; every input is loaded from its start\n",
                     stale, store_->table().c_str(), table.c_str());
      }
    }
  }

  const std::string reject_path =
      config_.reject_file.empty() ? table + ".rejects.jsonl" : config_.reject_file;
  for (const std::string& f : config_.files) {
    // Rejects appended to an input being read (a reject file loaded again
    // after a fix, under its default name) changed the input.
    std::error_code ec;
    if (f != "-" && std::filesystem::equivalent(f, reject_path, ec)) {
      throw usage_error("auditpipe ingest: " + f +
                        " is also the reject file, which the load appends to: give another "
                        "--reject-file (or load a copy of it)");
    }
  }
  rejects_ = std::make_unique<RejectFile>(reject_path);

  for (const std::string& f : config_.files) {
    auto in = std::make_unique<InputState>();
    in->path = f;
    in->format = format_of(config_.format, f);
    if (config_.source_name && config_.files.size() == 1) {
      in->name = *config_.source_name;
    } else if (f == "-") {
      in->name = "stdin";
    } else {
      std::error_code ec;
      const auto abs = std::filesystem::absolute(f, ec);
      in->name = ec ? f : abs.string();
      struct stat st {};
      if (::stat(f.c_str(), &st) == 0 && S_ISREG(st.st_mode))
        in->input_size = static_cast<std::uint64_t>(st.st_size);
    }
    in->follows = config_.follow;
    inputs_.push_back(std::move(in));
  }
  add_unread_rotated_copies();
  if (!config_.schema_file) leave_columns_to_database();

  if (!config_.schema_file) check_mapping();  // with the columns left to the database

  Options options;
  const std::size_t record = schema_->descriptor().record_size;
  options.capacity =
      std::clamp<std::size_t>(config_.memory_bytes / std::max<std::size_t>(record, 1), 256, 65536);
  options.writers = config_.writers;
  if (config_.batch_size != 0) {
    // "Rows per statement", as asked: not shrunk towards a write latency,
    // which protects application threads' waits, not a file's reader.
    options.batch_size = config_.batch_size;
    // A pool holds a whole batch at least, whatever the memory target says.
    options.capacity = std::max(options.capacity, config_.batch_size);
    options.write_latency_target = std::chrono::milliseconds(0);
  }
  options.overflow = Overflow::block;
  options.dead_letter_path = options_dead_letter_ = rejects_->path() + ".refused";
  // The pipeline makes its dead-letter file at start: gone again when it
  // stays empty, also when the start or the load fails.
  struct RemoveIfEmpty {
    const std::string& path;
    ~RemoveIfEmpty() {
      std::error_code ec;
      if (std::filesystem::file_size(path, ec) == 0 && !ec) std::filesystem::remove(path, ec);
    }
  } remove_if_empty{options_dead_letter_};
  logger_ = std::make_unique<DynamicLogger>(*schema_, auditpipe::open(config_.url), options);

  Progress progress(stderr, Progress::mode_for(stderr, config_.quiet), [this] {
    ProgressSample s;
    std::uint64_t total = 0;
    bool known = true;
    for (const auto& in : inputs_) {
      s.input_bytes += in->input_bytes.load(std::memory_order_relaxed);
      if (in->input_size)
        total += *in->input_size;
      else
        known = false;
    }
    // Followed inputs grow and rotate: their sizes at the start are no total.
    if (known && !config_.follow) s.input_total = total;
    const Stats st = logger_->stats();
    s.records = records_.load();
    s.written = st.written;
    s.rejects = rejected_.load();
    s.retries = st.retries;
    s.health = std::string(to_string(st.health));
    // Stopped, and waiting for the database to store what was read.
    if (stop_.load(std::memory_order_relaxed) && st.pool_in_use > 0)
      s.health += ", stopping (Ctrl-C again quits now)";
    return s;
  });

  std::thread checkpointer([this] { checkpoint_loop(); });
  std::thread give_up_watch;
  if (config_.give_up_after) give_up_watch = std::thread([this] { give_up_loop(); });
  read_inputs();
  // Stopped (Ctrl-C, SIGTERM) while the database does not take rows: what
  // follows waits for it, up to half a minute or more; said once a second
  // has not been enough.
  if (stop_.load() && !aborted_.load() && !logger_->flush(std::chrono::seconds(1)))
    std::fprintf(stderr,
                 "\nauditpipe ingest: stopping: waiting for the database to store the records "
                 "read (Ctrl-C again quits now; a rerun loads what is not stored%s)\n",
                 std::any_of(inputs_.begin(), inputs_.end(),
                             [](const auto& in) { return !reopenable(in->path); })
                     ? ", but not the records read from a pipe"
                     : "");
  // --give-up-after covers the drain as well: give_up_loop() keeps watching
  // the database until what was read is stored, or gives up.
  if (config_.give_up_after) {
    while (!aborted_.load() && !stop_.load() && logger_->stats().pool_in_use > 0)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  {
    std::lock_guard lock(checkpoint_mutex_);
    readers_done_ = true;
  }
  checkpoint_wake_.notify_all();
  checkpointer.join();

  watch_done_.store(true);
  if (give_up_watch.joinable()) give_up_watch.join();
  // Given up: what is not stored is not waited for again (a rerun sends it).
  const CloseReport report =
      gave_up_.load() ? logger_->close(std::chrono::milliseconds(1000)) : logger_->close();
  if (report.drained) checkpoint_now();  // everything committed is stored: the final positions
  remove_suspect_rows();
  progress.stop();

  LoadSummary s;
  s.records = records_.load();
  s.written = report.stats.written;
  s.rejects = rejected_.load();
  s.refused = report.stats.rejected_by_sink;
  s.unwritten = report.unwritten + report.on_disk;
  s.skipped = skipped_.load();
  s.skipped_rejects = skipped_rejects_.load();
  s.held_back = held_back_.load();
  s.empty_lines = empty_lines_.load();
  s.repaired_lines = repaired_lines_.load();
  s.repaired_fields = report.stats.invalid_utf8_fields;
  s.truncated_fields = report.stats.truncated_fields;
  s.nul_replaced_fields = report.stats.nul_replaced_fields;
  for (const auto& in : inputs_) s.input_bytes += in->input_bytes.load();
  s.inputs = inputs_.size();
  s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  s.interrupted = stop_.load() && !config_.follow;
  s.aborted = aborted_.load() && !gave_up_.load();  // --max-rejects
  s.gave_up = gave_up_.load();
  s.errors = errors_;
  s.reject_file = rejects_->path();
  return s;
}

// A log rotated while no load ran went on in its rotated copy past what
// was loaded of it: that copy's rest is read too, as an input of this
// command that continues its checkpoint (before, a message asked the user
// to load it; a load from cron lost those lines). Uncompressed copies only:
// a compressed copy's length needs a whole decompression, and most are
// older rotations, loaded whole.
void Load::add_unread_rotated_copies() {
  if (!store_) return;
  std::vector<std::unique_ptr<InputState>> copies;
  for (const auto& given : inputs_) {
    try {
      add_rotated_copies_of(*given, copies);
    } catch (const std::exception&) {
      // Unreadable, or the database did not answer: the input's own read
      // says so; no catch-up is looked for.
    }
  }
  // First: a followed input keeps its reader thread until the stop, and a
  // copy behind it would wait for ever.
  inputs_.insert(inputs_.begin(), std::make_move_iterator(copies.begin()),
                 std::make_move_iterator(copies.end()));
}

void Load::add_rotated_copies_of(const InputState& input,
                                 std::vector<std::unique_ptr<InputState>>& found) {
  if (input.path == "-" || !input.input_size) return;  // a pipe has no rotated copies
  const std::string prefix =
      std::string(ReplaySource(open_byte_source(input.path), identity_prefix_bytes).prefix());
  // The inputs loaded under this very name before (the newest 8: their
  // times may tie).
  const std::vector<Checkpoint> named_so = on_checkpoints(input.name, [&] {
    std::vector<Checkpoint> named;
    for (Checkpoint& known : in_store([&] { return store_->candidates(input.name); }))
      if (named.size() < 8 && known.source_name == input.name) named.push_back(known);
    return named;
  });
  const auto same_file = [](const std::string& a, const std::string& b) {
    std::error_code ec;  // one missing: not the same
    return a == b || std::filesystem::equivalent(a, b, ec);
  };
  for (const Checkpoint& old : named_so) {
    if (starts_like(prefix, old)) continue;  // this very file, not rotated since
    const auto copies = rotated_copies_past(
        input.path, old.bytes_done, true, [&](std::string_view p) { return starts_like(p, old); });
    if (copies.empty()) continue;
    const std::string& copy = copies.front();
    // Known by its whole identity prefix: that file. By fewer bytes (it was
    // that short when loaded), any file that begins so is taken for it, and
    // a wrong one would have its first bytes_done skipped: named only.
    const bool sure =
        old.prefix_bytes == identity_prefix_bytes || old.grown_bytes == identity_prefix_bytes;
    if (!sure) {
      std::fprintf(stderr,
                   "auditpipe ingest: %s is a new file since the last load of that name; the "
                   "file it replaced was loaded to byte %llu, and %s begins as it did (over its "
                   "first %llu bytes only, which another file may begin with too) and is longer: "
                   "if it is that file, load it too (auditpipe ingest ... %s)\n",
                   input.path.c_str(), static_cast<unsigned long long>(old.bytes_done),
                   copy.c_str(), static_cast<unsigned long long>(old.prefix_bytes), copy.c_str());
      continue;
    }
    auto given_or_found = [&](const std::string& path, bool rename) {
      bool given_too = false;
      for (const auto& in : inputs_) {
        if (!same_file(in->path, path)) continue;
        // Given by its own name: found under the log's, as its checkpoint
        // is (one salted when first seen is found by name only).
        if (rename) in->name = input.name;
        given_too = true;
      }
      for (const auto& in : found) given_too = given_too || same_file(in->path, path);
      return given_too;
    };
    auto add = [&](const std::string& path, const std::string& name) {
      auto in = std::make_unique<InputState>();
      in->path = path;
      in->name = name;
      in->format = input.format;
      if (struct stat st{}; ::stat(path.c_str(), &st) == 0)
        in->input_size = static_cast<std::uint64_t>(st.st_size);
      found.push_back(std::move(in));
    };
    if (!given_or_found(copy, true)) {
      // Found by identify() under the checkpoint's name.
      add(copy, input.name);
      std::fprintf(stderr,
                   "auditpipe ingest: %s is a new file since the last load of that name; the "
                   "file it replaced went on past the %llu bytes loaded of it, in %s: its rest "
                   "is loaded too\n",
                   input.path.c_str(), static_cast<unsigned long long>(old.bytes_done),
                   copy.c_str());
    }
    // Rotated more than once since that load: the copies newer than that
    // one were the log in between (app.log.1, when the rest is in
    // app.log.2), which no load saw under this name. Loaded too, each as
    // an input of its own: one a load did see is found by its first bytes
    // and skipped to where it was loaded. Before, they were left out
    // without a word.
    std::error_code ec;
    const auto copy_time = std::filesystem::last_write_time(copy, ec);
    if (ec) return;
    for (const std::string& path : rotated_copies(input.path)) {
      std::error_code e;
      const auto time = std::filesystem::last_write_time(path, e);
      // The same time (files copied or restored with one): which came
      // first cannot be told, so it is loaded too. Loaded before, it is
      // found by its first bytes and skipped; left out, it was lost.
      if (e || time < copy_time || same_file(path, copy) || same_file(path, input.path) ||
          given_or_found(path, false))
        continue;
      add(path, path);
      std::fprintf(stderr,
                   "auditpipe ingest: %s was rotated more than once since the last load of that "
                   "name: %s, rotated %s %s, is loaded too\n",
                   input.path.c_str(), path.c_str(),
                   time == copy_time ? "(by its time) no earlier than" : "after", copy.c_str());
    }
    return;
  }
}

void Load::read_inputs() {
  unsigned n = config_.parallel != 0
                   ? config_.parallel
                   : static_cast<unsigned>(std::min<std::size_t>(inputs_.size(), 4));
  n = std::max(1u, std::min<unsigned>(n, static_cast<unsigned>(inputs_.size())));
  std::vector<std::thread> readers;
  for (unsigned i = 0; i < n; ++i)
    readers.emplace_back([this] {
      for (;;) {
        const std::size_t k = next_input_.fetch_add(1);
        if (k >= inputs_.size() || stopping()) return;
        read_input(*inputs_[k]);
      }
    });
  for (auto& t : readers) t.join();
}

void Load::fail(InputState& input, const std::string& message) {
  std::lock_guard lock(errors_mutex_);
  errors_.push_back(input.path + ": " + message);
}

void Load::remove_suspect_rows() {
  std::vector<SuspectRows> suspects;
  {
    std::lock_guard lock(errors_mutex_);
    suspects = suspects_;
  }
  if (suspects.empty()) return;
  const bool sealed = seal::settings_in_url(config_.url).mode != seal::Mode::none;
  std::lock_guard db_lock(db_mutex_);
  for (const SuspectRows& s : suspects) {
    const std::string where = " FROM " + db_->quote(store_table_) + " WHERE " +
                              db_->quote(source_id_column) + " = ? AND " + db_->quote(seq_column) +
                              " >= ? AND " + db_->quote(seq_column) + " < ?";
    const std::vector<std::string> params = {std::to_string(s.source_id), std::to_string(s.from),
                                             std::to_string(s.to)};
    std::string outcome;
    try {
      const auto count = db_->query("SELECT COUNT(*)" + where, params);
      const std::string n = count.empty() || !count[0][0] ? "0" : *count[0][0];
      if (n == "0") continue;
      if (sealed) {
        // Removing sealed rows is what verify reports as tampering.
        outcome = n +
                  " rows read from its damaged part are in the sealed table and were not "
                  "removed (verify would report them deleted): they may be garbage, and keep "
                  "a good copy's rows out; look at them with SELECT *" +
                  where + " (" + params[0] + ", " + params[1] + ", " + params[2] + ")";
      } else {
        db_->execute("DELETE" + where, params);
        outcome = "removed the " + n + " rows read from its damaged part";
      }
    } catch (const std::exception& e) {
      outcome = "could not remove the rows read from its damaged part (" + std::string(e.what()) +
                "): they may be garbage, and keep a good copy's rows out; remove them with DELETE" +
                where + " (" + params[0] + ", " + params[1] + ", " + params[2] + ")";
    }
    std::lock_guard lock(errors_mutex_);
    errors_.push_back(s.path + ": " + outcome);
  }
}

void Load::check_mapping() const {
  // The mapping of each format the inputs have, made once: a --map or
  // --set that cannot be (no such column, a value the column cannot hold,
  // two columns reading one field) is said before a table is made or an
  // input read, not once per input.
  std::set<Format> formats;
  for (const std::string& f : config_.files) formats.insert(format_of(config_.format, f));
  for (const Format format : formats) {
    try {
      RowMapper check(schema_->columns(), format,
                      MappingOptions{maps_, config_.sets, left_to_database_});
    } catch (const error& e) {
      throw usage_error(as_usage(e.what()));
    }
  }
}

Checkpoint Load::identify(InputState& input, const std::string& open_path,
                          const std::string& prefix, std::optional<std::uint64_t> size,
                          std::int64_t not_this) {
  const std::string_view id_prefix =
      std::string_view(prefix).substr(0, std::min(prefix.size(), identity_prefix_bytes));
  Checkpoint c;
  c.source_id = source_id_of(id_prefix);
  c.source_name = input.name;
  c.prefix_bytes = id_prefix.size();
  if (!store_) return c;
  return on_checkpoints(
      input.name, [&] { return identify_in_store(input, open_path, prefix, size, not_this, c); });
}

Checkpoint Load::identify_in_store(InputState& input, const std::string& open_path,
                                   const std::string& prefix, std::optional<std::uint64_t> size,
                                   std::int64_t not_this, Checkpoint c) {
  const std::string_view id_prefix =
      std::string_view(prefix).substr(0, std::min(prefix.size(), identity_prefix_bytes));
  // An input seen before starts with the bytes it was identified by (fewer
  // than identity_prefix_bytes if it was that short then: it may have grown
  // and moved since), and is at least as long as it was loaded. Not
  // `not_this`: the file a rotation just replaced, whose successor may
  // start with the same bytes.
  // Nor one another input of this command holds whose first bytes differ
  // from these: two files that began alike (logs seen holding only the same
  // CSV header, a log and its successor seen so) have gone their own ways,
  // and under one id the rows at the same offsets would be taken for each
  // other's and skipped. The same file given twice, or through a link, has
  // the same bytes and keeps sharing its id (its rows are skipped by key).
  const std::string_view own = id_prefix;
  auto claimed_by_another = [&](const Checkpoint& known) {
    const auto it = claims_.find(known.source_id);
    if (it == claims_.end()) return false;
    for (const Claim& claim : it->second) {
      if (claim.input == &input) continue;
      const std::size_t common = std::min(claim.prefix.size(), own.size());
      if (std::string_view(claim.prefix).substr(0, common) != own.substr(0, common)) return true;
    }
    return false;
  };
  auto begins_as = [&](const Checkpoint& known) {
    return known.source_id != not_this && starts_like(prefix, known) && !claimed_by_another(known);
  };
  auto same_input = [&](const Checkpoint& known) {
    return begins_as(known) && (!size || *size >= known.bytes_done);
  };
  // Of several that match (short inputs that began alike, and the one
  // identified by these very bytes), the one matched over the most bytes;
  // of those, the most recently written.
  std::optional<Checkpoint> best;
  auto matched = [&](const Checkpoint& k) {
    const std::uint64_t grown = k.grown_bytes <= prefix.size() ? k.grown_bytes : 0;
    return std::max(k.prefix_bytes, grown);
  };
  // One that matches over the whole identity prefix but is shorter than it
  // was loaded: the same file cut short (a crash lost its unsynced tail, a
  // `head` of it), not a new input whose rows are all to be stored again.
  std::optional<Checkpoint> cut_short;
  auto consider = [&](Checkpoint& known) {
    if (same_input(known)) {
      if (!best || matched(known) > matched(*best)) best = std::move(known);
    } else if (size && own.size() == identity_prefix_bytes &&
               matched(known) == identity_prefix_bytes && begins_as(known) &&
               (!cut_short || known.bytes_done > cut_short->bytes_done)) {
      cut_short = std::move(known);
    }
  };
  for (Checkpoint& known : in_store([&] { return store_->candidates(input.name); }))
    consider(known);
  if (auto known = in_store([&] { return store_->find(c.source_id); })) consider(*known);
  // (A file cut short is matched over more bytes than an input identified
  // by fewer than the whole prefix, which it also starts with.)
  if (best && cut_short && matched(*cut_short) > matched(*best)) best.reset();
  if (best) {
    claims_[best->source_id].push_back({&input, std::string(own)});
    return *best;
  }
  // A new input. Its first bytes may be those of another one (a rotated
  // log's successor, a copy cut short): salted until its id is its own.
  // Unless the id holds this very input after all: another load (another
  // process, which no lock keeps out) identified it since the lookups
  // above, or it was salted itself when first seen under another name.
  // Salted again, its rows would be stored a second time under a new id.
  while (auto known = in_store([&] { return store_->find(c.source_id); })) {
    if (same_input(*known)) {
      claims_[known->source_id].push_back({&input, std::string(own)});
      return *known;
    }
    c.salt = c.source_id;
    c.source_id = source_id_of(id_prefix, c.salt);
  }
  std::optional<WholeRecords> kept;
  if (cut_short) {
    // Its rows were stored under the old id: what it holds in whole records
    // is not read again. What is appended from here on lies at offsets the
    // old id's lost tail had, so it goes under this new (salted) id, whose
    // keys nothing holds yet.
    const WholeRecords whole =
        whole_records(open_path, input.format, config_.max_record_bytes, *size);
    c.bytes_done = whole.bytes;
    c.lines_done = whole.lines;
    c.records_done = whole.records;
    kept = whole;
  }
  // Recorded before any of its records is sent, so that a crash before the
  // first checkpoint still finds this identity again.
  in_store([&] {
    store_->save(c);
    return true;
  });
  claims_[c.source_id].push_back({&input, std::string(own)});
  if (kept) {
    const WholeRecords& whole = *kept;
    std::fprintf(stderr,
                 "\nauditpipe ingest: %s is shorter than when it was loaded (%llu of %llu bytes) "
                 "and begins with the same 4 KiB: taken for that file cut short; its %llu "
                 "records are taken for ones loaded before and not loaded again (lines "
                 "appended to it after it was cut and before this load would be among them: "
                 "look at its end), and what is appended from now on is loaded as an input of "
                 "its own\n",
                 input.path.c_str(), static_cast<unsigned long long>(*size),
                 static_cast<unsigned long long>(cut_short->bytes_done),
                 static_cast<unsigned long long>(whole.records));
  }
  return c;
}

template <class Call>
auto Load::in_store(Call call) -> decltype(call()) {
  try {
    return call();
  } catch (const std::exception& e) {
    throw checkpoint_failure(e.what());
  }
}

void Load::reconnect_checkpoints() {
  if (!checkpoint_broken_) return;
  try {
    db_ = Database::connect(config_.url);
    store_ = std::make_unique<CheckpointStore>(*db_, store_table_, config_.checkpoint_table);
  } catch (const std::exception& e) {
    throw checkpoint_failure(e.what());
  }
  checkpoint_broken_ = false;
}

template <class Work>
auto Load::on_checkpoints(const std::string& input_name, Work work) -> decltype(work()) {
  std::chrono::milliseconds pause(200);
  std::optional<std::chrono::steady_clock::time_point> failing_since;
  for (;;) {
    std::string failure;
    {
      std::lock_guard lock(db_mutex_);
      try {
        reconnect_checkpoints();
        auto result = work();
        if (failing_since) {
          std::fprintf(stderr, "\nauditpipe ingest: %s: its checkpoint is reached again\n",
                       input_name.c_str());
        }
        return result;
      } catch (const checkpoint_failure& e) {
        failure = e.what();
        checkpoint_broken_ = true;
      }
    }
    const auto now = std::chrono::steady_clock::now();
    if (!failing_since) {
      failing_since = now;
      std::fprintf(stderr,
                   "\nauditpipe ingest: %s: cannot reach its checkpoint (%s); trying again until "
                   "the database answers%s\n",
                   input_name.c_str(), failure.c_str(),
                   config_.give_up_after ? " or --give-up-after runs out" : "");
    }
    if (stop_.load() && !aborted_.load()) throw stopped_while_waiting();
    if (stopping() || gave_up_.load() ||
        (config_.give_up_after && now - *failing_since >= *config_.give_up_after)) {
      throw error(failure);
    }
    const auto until = now + pause;
    while (!stopping() && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    pause = std::min<std::chrono::milliseconds>(pause * 2, std::chrono::seconds(5));
  }
}

DynamicLogger::Record Load::acquire(bool stream) {
  for (;;) {
    DynamicLogger::Record r = logger_->acquire();
    // The pool full means the database is behind: wait for it (that is the
    // backpressure), but not past a stop.
    if (r || r.status() != Status::timed_out || halted(stream)) return r;
  }
}

void Load::reject(InputState& input, const RawRecord& raw, std::string_view reason) {
  rejects_->add(input.path, input.reject_source_id, raw.line, raw.offset, reason, raw.text);
  const std::uint64_t n = rejected_.fetch_add(1) + 1;
  if (config_.max_rejects && n > *config_.max_rejects) aborted_.store(true);
}

void Load::reject_unclosed_quote(InputState& input, const std::string& open_path,
                                 const RawRecord& raw, Position& pos, std::string_view reason) {
  // The record's first line, read again: the reader kept only its start.
  auto source = open_byte_source(open_path);
  std::string first;
  std::uint64_t next = raw.end_offset;
  if (source->skip_to(raw.offset)) {
    char c;
    std::uint64_t at = raw.offset;
    while (source->read(&c, 1) == 1) {
      ++at;
      if (c == '\n') {
        next = at;
        break;
      }
      if (first.size() < config_.max_record_bytes) first += c;
    }
  }
  if (!first.empty() && first.back() == '\r') first.pop_back();
  RawRecord line = raw;
  line.text = first;
  reject(input, line, reason);
  ++pos.rejects;
  pos.bytes_done = next;
  pos.lines_done = raw.line;
  std::lock_guard lock(input.mutex);
  input.position = pos;
}

// A column the database fills (now(), a sequence, identity) keeps the
// database's default only if the load leaves it out of every row: an insert
// cannot give some rows a value and others the default. It is left out
// unless a --map or --set names it or an input's first records (the bytes
// looked ahead, which a pass reads anyway) carry its field; a record that
// carries it later is rejected, not its value dropped (RowMapper).
void Load::leave_columns_to_database() {
  std::vector<ColumnSpec> columns = schema_->columns();
  auto named = [&](const std::string& column) {
    auto is = [&](const auto& entry) { return lower_ascii(entry.first) == lower_ascii(column); };
    return std::any_of(maps_.begin(), maps_.end(), is) ||
           std::any_of(config_.sets.begin(), config_.sets.end(), is);
  };
  if (std::none_of(columns.begin(), columns.end(),
                   [&](const ColumnSpec& c) { return c.filled_by_database && !named(c.name); }))
    return;
  // JSON keys match a column's name exactly, CSV header names in either case
  // (as RowMapper reads them).
  std::set<std::string> json_keys, csv_names;
  for (auto& in : inputs_) {
    try {
      auto source =
          std::make_unique<ReplaySource>(open_byte_source(in->path, interrupt()), lookahead_bytes);
      for (const std::string& f :
           surveyed_fields(source->prefix(), in->format, config_.max_record_bytes))
        (in->format == Format::jsonl ? json_keys : csv_names)
            .insert(in->format == Format::jsonl ? f : lower_ascii(f));
      if (!reopenable(in->path)) in->opened = std::move(source);
    } catch (const std::exception&) {
      // Not readable now: its reader says why, when it tries.
    }
  }
  std::vector<ColumnSpec> kept;
  for (ColumnSpec& c : columns) {
    if (!c.filled_by_database || named(c.name) || json_keys.count(c.name) > 0 ||
        csv_names.count(lower_ascii(c.name)) > 0) {
      kept.push_back(std::move(c));
      continue;
    }
    if (!config_.quiet)
      std::fprintf(stderr,
                   "auditpipe ingest: column %s is left to the database's default (no input "
                   "begins with a field \"%s\")\n",
                   c.name.c_str(), c.name.c_str());
    left_to_database_.push_back(c.name);
  }
  if (kept.empty())
    throw error("auditpipe ingest: every column of " + std::string(schema_->table()) +
                " is filled by the database, and the inputs carry none of them");
  schema_.emplace(std::string(schema_->table()), std::move(kept));
}

// Whether the followed file (open as `fd`) still begins with the bytes it
// was identified by.
bool Load::still_starts_like(int fd, InputState& input) {
  std::string prefix(identity_prefix_bytes, '\0');
  const ssize_t n = ::pread(fd, prefix.data(), prefix.size(), 0);
  if (n < 0) return true;  // unreadable now: the next pass says why
  prefix.resize(static_cast<std::size_t>(n));
  std::lock_guard lock(input.mutex);
  return !input.identified || starts_like(prefix, input.saved, input.grown.bytes, input.grown.id);
}

// copytruncate copies the log, then empties it: the lines written after the
// last pass are only in the copy (app.log.1, app.log-20261204, app.log.1.gz,
// ...). It is the file beside the log whose name begins with the log's,
// whose first bytes are the log's identity and which is longer than what
// was read: read from there to its end under the same key. Lines written
// between the copy and the truncation are lost to every reader.
void Load::read_rotated_copy(InputState& input, RowMapper& mapper, std::uint64_t& source_id) {
  std::uint64_t done;
  {
    std::lock_guard lock(input.mutex);
    if (!input.identified) return;
    done = input.position.bytes_done;
  }
  const auto copies = rotated_copies_past(input.path, done, false, [&](std::string_view prefix) {
    std::lock_guard lock(input.mutex);
    return starts_like(prefix, input.saved, input.grown.bytes, input.grown.id);
  });
  for (const std::string& path : copies) {
    try {
      if (!config_.quiet)
        std::fprintf(stderr, "auditpipe ingest: %s was truncated; its rest is read from %s\n",
                     input.path.c_str(), path.c_str());
      pass(input, path, mapper, source_id);
      return;
    } catch (const corrupt_data&) {
      throw;  // its rows read from the damaged part go (read_input)
    } catch (const std::exception&) {
      // Not readable (being written, compressed meanwhile): the next one.
    }
  }
}

void Load::read_input(InputState& input) {
  // follow: the file is kept open by descriptor, so that a rotated (renamed)
  // file can still be read to its end through /proc/self/fd.
  int keep_fd = -1;
  std::string open_path = input.path;
  if (input.follows && input.path != "-") {
    keep_fd = ::open(input.path.c_str(), O_RDONLY | O_CLOEXEC);
    if (keep_fd < 0) {
      fail(input, std::strerror(errno));
      return;
    }
    open_path = "/proc/self/fd/" + std::to_string(keep_fd);
  }
  std::optional<RowMapper> mapper;
  // A new input from its start (the first, or the file after a rotation).
  auto restart = [&] {
    if (mapper) repaired_lines_.fetch_add(mapper->repaired_lines());
    mapper.emplace(schema_->columns(), input.format,
                   MappingOptions{maps_, config_.sets, left_to_database_});
    std::lock_guard lock(input.mutex);
    if (input.identified) input.not_this = input.saved.source_id;
    input.identified = false;
    input.position = {};
    input.read_from.reset();
  };
  try {
    restart();
    std::uint64_t source_id = 0;
    while (pass(input, open_path, *mapper, source_id) || input.reframe) {
      if (std::exchange(input.reframe, false) && !stopping()) continue;
      if (!input.follows || stopping()) break;
      // Wait for growth or a rotation.
      std::this_thread::sleep_for(config_.follow_poll);
      if (stopping()) break;
      struct stat now {};
      struct stat kept {};
      ::fstat(keep_fd, &kept);
      const bool renamed = ::stat(input.path.c_str(), &now) != 0 || now.st_ino != kept.st_ino ||
                           now.st_dev != kept.st_dev;
      std::uint64_t done;
      {
        std::lock_guard lock(input.mutex);
        done = input.position.bytes_done;
      }
      if (renamed && static_cast<std::uint64_t>(kept.st_size) <= done) {
        // The old file is read to its end: go on with the new one, once it exists.
        const int fd = ::open(input.path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) continue;
        ::close(keep_fd);
        keep_fd = fd;
        open_path = "/proc/self/fd/" + std::to_string(keep_fd);
        restart();
      } else if (!renamed && (static_cast<std::uint64_t>(kept.st_size) < done ||
                              !still_starts_like(keep_fd, input))) {
        // Truncated in place (copytruncate), perhaps written again past
        // where it was read: what was not read yet is in the copy.
        read_rotated_copy(input, *mapper, source_id);
        restart();  // a new input from its start
      }
    }
  } catch (const corrupt_data& e) {
    // The checkpoint goes back to the start, so that a good copy of the
    // input, or this one repaired, is read whole. The rows read from the
    // damaged member were stored before its checksum failed, under the keys
    // the good copy's rows have: they would keep the good ones out (a new
    // user's good copy loaded "exit 0" over 8,527 garbage rows). They are
    // removed once everything read is stored; rows of the members before
    // it were checked, and stay. Only rows this load read itself: rows
    // stored before (by an earlier load of a good copy with the same first
    // bytes, say, before this copy was damaged on disk) are not touched.
    std::optional<std::int64_t> source;
    std::optional<std::uint64_t> read_from;
    {
      std::lock_guard lock(input.mutex);
      if (input.identified) source = input.saved.source_id;
      read_from = input.read_from;
      input.position = {};
    }
    const std::uint64_t from = std::max(e.suspect_from, read_from.value_or(e.reached));
    if (source && from < e.reached) {
      std::lock_guard lock(errors_mutex_);
      suspects_.push_back({input.path, *source, from, e.reached});
    }
    std::string what = std::string(e.what()) + "; its checkpoint is set back to the start";
    if (from < e.reached)
      what += ", and the rows this load read from the damaged part (bytes " + std::to_string(from) +
              " to " + std::to_string(e.reached) +
              " of its decompressed data) are removed once it has stored what it read, so "
              "that a good copy of it loads whole";
    if (e.suspect_from < from)
      what += "; rows of bytes " + std::to_string(e.suspect_from) + " to " + std::to_string(from) +
              " were stored by an earlier load, of this input or of a copy with the same first "
              "bytes, and are left as they are: if that load read this damaged copy, they may "
              "be garbage (look at them by their " +
              std::string(source_id_column) + " " +
              (source ? std::to_string(*source) : std::string("?")) + " and " +
              std::string(seq_column) + ", the offset)";
    fail(input, what);
  } catch (const stopped_while_waiting&) {
    // Stopped: a rerun reads it.
  } catch (const std::exception& e) {
    fail(input, e.what());
  }
  if (mapper) repaired_lines_.fetch_add(mapper->repaired_lines());
  if (keep_fd >= 0) ::close(keep_fd);
}

bool Load::pass(InputState& input, const std::string& open_path, RowMapper& mapper,
                std::uint64_t& source_id) {
  // Enough read ahead once the input can be identified (and a CSV header
  // read again on resume): a slow pipe is not held back for 64 KiB.
  const auto read_ahead = [&](std::unique_ptr<ByteSource> inner) {
    return std::make_unique<ReplaySource>(std::move(inner), lookahead_bytes, identity_prefix_bytes,
                                          mapper.needs_header());
  };
  const bool read_once = !reopenable(open_path);
  auto source =
      read_ahead(input.opened ? std::move(input.opened) : open_byte_source(open_path, interrupt()));
  const std::string& prefix = source->prefix();
  if (prefix.empty()) return true;  // nothing yet: follow waits, anything else is done

  Position start;
  std::uint64_t counted_as_skipped = 0;  // by this pass's identification
  std::uint64_t rejects_counted_as_skipped = 0;
  {
    std::unique_lock lock(input.mutex);
    if (input.identified) {
      // Not the file identified before (replaced between two passes): a new input.
      if (!starts_like(prefix, input.saved, input.grown.bytes, input.grown.id)) {
        input.not_this = input.saved.source_id;
        input.identified = false;
        input.position = {};
        input.read_from.reset();
      }
    }
    if (!input.identified) {
      lock.unlock();
      const std::int64_t not_this = input.not_this;
      // The size bounds what was loaded only where it counts the same bytes
      // as offsets do: not for compressed input.
      const auto size = source->compressed() ? std::nullopt : source->input_size();
      Checkpoint c =
          identify(input, open_path, prefix, size, not_this);  // a round trip: not under the lock
      // What a killed run rejected past the checkpoint is in the reject
      // file: not written again as this run reads it again.
      // (One at 0 too: a run killed before its first checkpoint moved.)
      if (c.stored) rejects_->resume(input.path, c.source_id, c.bytes_done);
      lock.lock();
      input.saved = c;
      input.reject_source_id = c.source_id;
      input.identified = true;
      input.position = {c.bytes_done, c.lines_done, c.records_done, c.rejects};
      input.grown = {c.grown_bytes, c.grown_id};
      skipped_.fetch_add(c.records_done);
      skipped_rejects_.fetch_add(c.rejects);
      counted_as_skipped = c.records_done;
      rejects_counted_as_skipped = c.rejects;
    }
    // Identified while shorter than its identity prefix and longer now:
    // remembered, for telling it from another input that began the same.
    const std::size_t seen = std::min(prefix.size(), identity_prefix_bytes);
    if (input.saved.prefix_bytes < identity_prefix_bytes &&
        seen > std::max<std::uint64_t>(input.saved.prefix_bytes, input.grown.bytes))
      input.grown = {seen,
                     source_id_of(std::string_view(prefix).substr(0, seen), input.saved.salt)};
    start = input.position;
    source_id = static_cast<std::uint64_t>(input.saved.source_id);
  }

  // A CSV header is the input's first record: read again from the prefix
  // when the load resumes past it.
  if (mapper.needs_header() && start.bytes_done > 0) {
    auto head = memory_byte_source(prefix, input.path);
    RecordReader header_reader(*head, input.format, config_.max_record_bytes);
    RawRecord raw;
    while (header_reader.next(raw) && raw.kind == RawRecord::Kind::empty) {
    }
    if (raw.kind != RawRecord::Kind::record)
      throw error("the CSV header line does not fit in " + std::to_string(lookahead_bytes) +
                  " bytes");
    mapper.set_header(raw);
  }

  if (start.bytes_done > 0 && !source->skip_to(start.bytes_done)) {
    // Shorter than its checkpoint with the same first bytes: read it all
    // again; the keys make that harmless. Nothing of it was skipped.
    skipped_.fetch_sub(counted_as_skipped);
    skipped_rejects_.fetch_sub(rejects_counted_as_skipped);
    if (read_once) {
      // Read to its end while skipping: all of it lies inside what was
      // stored (a `head` of an input loaded before). A stream is known by
      // its first 4 KiB only: say what was taken for granted. (Ctrl-C
      // while skipping ends the read too: nothing to say then.)
      if (!stopping()) {
        std::fprintf(stderr,
                     "auditpipe ingest: %s ended at byte %llu, inside the %llu bytes an earlier "
                     "run stored from an input that began with the same 4 KiB: it is taken for "
                     "that input cut short, and nothing is loaded from it (if it holds other "
                     "lines, load it under another --source-name)\n",
                     input.name.c_str(), static_cast<unsigned long long>(source->position()),
                     static_cast<unsigned long long>(start.bytes_done));
      }
      input.input_bytes.store(source->input_bytes_read(), std::memory_order_relaxed);
      return true;
    }
    source = read_ahead(open_byte_source(open_path, interrupt()));
    start = {};
  }
  {
    std::lock_guard lock(input.mutex);
    input.read_from = std::min(input.read_from.value_or(start.bytes_done), start.bytes_done);
  }
  RecordReader reader(*source, input.format, config_.max_record_bytes, start.lines_done + 1);
  Position pos = start;
  std::uint64_t unpublished = 0;
  auto publish = [&] {
    input.input_bytes.store(source->input_bytes_read(), std::memory_order_relaxed);
    std::lock_guard lock(input.mutex);
    input.position = pos;
    unpublished = 0;
  };
  std::string reason;
  RawRecord raw;
  bool more = true;
  // A pipe's bytes cannot be read again, by a rerun either: after a stop
  // (not an abort), the records already read from it are loaded; its read
  // takes no more (open_byte_source's interrupt) and ends.
  const bool stream = !source->input_size().has_value();
  while (!halted(stream)) {
    if (!reader.next(raw)) {
      more = input.follows;
      break;
    }
    // A record without its line end: following, wait for the end; else the
    // input's last record, ended by the end of the input.
    const bool last = raw.kind == RawRecord::Kind::incomplete;
    // Or ended by the stop, in the middle of the line: not a record.
    if (last && stopping()) break;
    if (last && input.follows) break;
    // A file written to within the last seconds may be in the middle of its
    // last line: loading that half now would store it under the key the
    // whole line gets later (which the database then skips). Held back,
    // not checkpointed: the next run loads it whole.
    if (last && recently_written(open_path)) {
      held_back_.fetch_add(1, std::memory_order_relaxed);
      break;
    }
    // A quote never closed took the rest of the input into one field, or a
    // stray one took the lines up to another quote: the line it opened on
    // is rejected, and the lines after it are read again.
    const bool unclosed = !input.follows && reader.ended_in_quotes();
    if (unclosed || reader.stray_quote()) {
      reject_unclosed_quote(
          input, open_path, raw, pos,
          unclosed ? "a quoted field opened on this line is never closed (the input ends first); "
                     "the lines after it are read again as records"
                   : "a quote on this line opens a field that a quote on a later line closes "
                     "with text after it (a stray quote, not a quoted field); the lines after it "
                     "are read again as records");
      input.reframe = true;
      break;
    }
    const std::uint64_t lines =
        raw.line + static_cast<std::uint64_t>(std::count(raw.text.begin(), raw.text.end(), '\n'));
    if (raw.kind == RawRecord::Kind::empty) {
      empty_lines_.fetch_add(1, std::memory_order_relaxed);
    } else if (raw.kind == RawRecord::Kind::too_long) {
      reject(input, raw,
             "the record is longer than " + std::to_string(config_.max_record_bytes) +
                 " bytes (--max-record-bytes)");
      ++pos.rejects;
    } else if (mapper.needs_header()) {
      mapper.set_header(raw);
      // A --map naming a field this header lacks (a typo) would fill its
      // column with NULL without a word.
      if (const auto unread = mapper.unread_columns(); !unread.empty() && !config_.quiet) {
        std::string names;
        for (const std::string& u : unread) names += (names.empty() ? "" : ", ") + u;
        std::fprintf(stderr,
                     "\nauditpipe ingest: %s: no header field for %s: NULL (or the default) in "
                     "every row\n",
                     input.path.c_str(), names.c_str());
      }
    } else {
      DynamicLogger::Record r = acquire(stream);
      if (!r) {
        if (halted(stream)) break;
        throw error(std::string("the pipeline refused a record: ") +
                    std::string(to_string(r.status())));
      }
      reason.clear();
      if (mapper.fill(raw, r, reason)) {
        const Status st =
            r.commit(static_cast<std::int64_t>(source_id), static_cast<std::int64_t>(raw.offset));
        if (st != Status::ok)
          throw error(std::string("the pipeline refused a record: ") + std::string(to_string(st)));
        records_.fetch_add(1, std::memory_order_relaxed);
        ++pos.records_done;
      } else {
        r.reset();
        reject(input, raw, reason);
        ++pos.rejects;
      }
    }
    pos.bytes_done = raw.end_offset;
    pos.lines_done = lines;
    if (last) break;
    if (++unpublished == 256) publish();
  }
  publish();
  return more && !stopping();
}

void Load::checkpoint_now() {
  if (!store_) return;
  struct Pending {
    InputState* input;
    Checkpoint c;
  };
  std::vector<Pending> pending;
  for (const auto& in : inputs_) {
    std::lock_guard lock(in->mutex);
    if (!in->identified || (in->position.bytes_done == in->saved.bytes_done &&
                            in->grown.bytes == in->saved.grown_bytes))
      continue;
    Checkpoint c = in->saved;
    c.grown_bytes = in->grown.bytes;
    c.grown_id = in->grown.id;
    c.bytes_done = in->position.bytes_done;
    c.lines_done = in->position.lines_done;
    c.records_done = in->position.records_done;
    c.rejects = in->position.rejects;
    pending.push_back({in.get(), c});
  }
  if (pending.empty()) return;
  // Rejected lines are on disk, and every record before the positions taken
  // above is stored, before a checkpoint says so.
  rejects_->sync();
  // Up to 30 s, in slices: --give-up-after ends the wait.
  const auto flush_until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!logger_->flush(std::chrono::milliseconds(200))) {
    if (gave_up_.load() || std::chrono::steady_clock::now() >= flush_until) return;
  }
  std::lock_guard db_lock(db_mutex_);
  if (checkpoint_broken_) {
    // The connection died with the server: a new one, or wait for the next turn.
    try {
      reconnect_checkpoints();
      std::fprintf(stderr, "\nauditpipe ingest: checkpoints are written again\n");
    } catch (const checkpoint_failure&) {
      return;
    }
  }
  for (Pending& p : pending) {
    try {
      store_->save(p.c);
    } catch (const std::exception& e) {
      // The next checkpoint tries again, on a new connection; until then a
      // rerun would resend more than it must (the keys keep that harmless).
      if (!checkpoint_broken_)
        std::fprintf(stderr, "\nauditpipe ingest: cannot write a checkpoint (%s); retrying\n",
                     e.what());
      checkpoint_broken_ = true;
      return;
    }
    std::lock_guard lock(p.input->mutex);
    if (p.input->saved.source_id == p.c.source_id) p.input->saved = p.c;
  }
}

void Load::give_up_loop() {
  // Since when the database has stored nothing while its writes fail. On a
  // thread of its own: a checkpoint write waits for the same database.
  std::uint64_t written = 0;
  bool failing = false;
  std::chrono::steady_clock::time_point failing_since{};
  while (!watch_done_.load()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const Stats st = logger_->stats();
    const auto now = std::chrono::steady_clock::now();
    if (st.health == Health::ok || st.written != written) {
      failing = false;
    } else if (!failing) {
      failing = true;
      failing_since = now;
    } else if (now - failing_since >= *config_.give_up_after) {
      {
        std::lock_guard errors(errors_mutex_);
        errors_.push_back("the database stored no row for " +
                          std::to_string(config_.give_up_after->count()) +
                          " s (--give-up-after): " + st.health_reason +
                          "; stopped: run the same command again to continue");
      }
      gave_up_.store(true);
      aborted_.store(true);
      return;
    }
    written = st.written;
  }
}

void Load::checkpoint_loop() {
  std::unique_lock lock(checkpoint_mutex_);
  while (!readers_done_) {
    checkpoint_wake_.wait_for(lock, config_.checkpoint_interval, [this] { return readers_done_; });
    if (readers_done_) break;
    lock.unlock();
    checkpoint_now();
    lock.lock();
  }
}

}  // namespace

int LoadSummary::exit_code() const {
  if (interrupted) return 130;
  if (!errors.empty() || refused > 0 || unwritten > 0 || aborted) return 1;
  return rejects > 0 || held_back > 0 ? 3 : 0;
}

LoadSummary load(const LoadConfig& config, const std::atomic<bool>& stop) {
  return Load(config, stop).run();
}

std::string format_summary(const LoadSummary& s) {
  std::string out;
  char rate[64];
  std::snprintf(
      rate, sizeof rate, "%.1f s, %s rows/s", s.seconds,
      with_commas(static_cast<std::uint64_t>(s.written / std::max(s.seconds, 1e-3))).c_str());
  out += "auditpipe ingest: ";
  out += s.aborted       ? "aborted"
         : s.gave_up     ? "stopped (--give-up-after)"
         : s.interrupted ? "interrupted"
                         : "done";
  out += " in " + std::string(rate) + "\n";
  out += "  inputs    " + with_commas(s.inputs) + " (" + human_bytes(s.input_bytes) + " read)\n";
  out += "  read      " + with_commas(s.records + s.rejects) + " records\n";
  out += "  written   " + with_commas(s.written) + " rows\n";
  out += "  rejected  " + with_commas(s.rejects);
  if (s.rejects > 0) out += " (see " + s.reject_file + ")";
  out += "\n";
  out += "  skipped   " + with_commas(s.skipped) +
         " (stored, or refused by the database, by an earlier run; not read again)\n";
  if (s.skipped_rejects > 0) {
    // A load whose every line was rejected (a --map forgotten), run again
    // with the mistake mended, loaded nothing and said only "skipped 0".
    out += "            and " + with_commas(s.skipped_rejects) +
           " lines an earlier run rejected (in its reject file): to load them with other "
           "options, delete the input's checkpoint first (DELETE FROM the checkpoint table "
           "WHERE source_name = the path given; README, \"Exactly once, resumable\")\n";
  }
  if (s.refused > 0)
    out += "  refused   " + with_commas(s.refused) + " by the database (see " + s.reject_file +
           ".refused)\n";
  if (s.unwritten > 0) out += "  unwritten " + with_commas(s.unwritten) + " (rerun to send them)\n";
  if (s.held_back > 0)
    out += "  held back " + with_commas(s.held_back) +
           " last line(s) without a line end in a file written to seconds ago (the next run "
           "loads them once they are whole)\n";
  if (s.empty_lines > 0) out += "  empty     " + with_commas(s.empty_lines) + " lines skipped\n";
  if (s.repaired_lines > 0)
    out += "  repaired  " + with_commas(s.repaired_lines) + " lines of invalid UTF-8 (U+FFFD)\n";
  if (s.repaired_fields > 0)
    out += "  repaired  " + with_commas(s.repaired_fields) +
           " text fields of invalid UTF-8 (U+FFFD)\n";
  if (s.truncated_fields > 0)
    out += "  truncated " + with_commas(s.truncated_fields) + " text fields cut to their column\n";
  if (s.nul_replaced_fields > 0)
    out += "  replaced  NUL bytes in " + with_commas(s.nul_replaced_fields) +
           " text fields (U+FFFD: the database cannot store them)\n";
  for (const std::string& e : s.errors) out += "  error     " + e + "\n";
  if (s.aborted) out += "  more rejects than --max-rejects: stopped early\n";
  if (s.interrupted) out += "  interrupted: run the same command again to continue\n";
  return out;
}

}  // namespace auditpipe::ingest
