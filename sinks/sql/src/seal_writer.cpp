// See seal_writer.h.
#include "seal_writer.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>
#include <unistd.h>

#include "auditpipe/diagnostics.h"
#include "auditpipe/schema.h"
#include "auditpipe/sink/seal_read_back.h"
#include "auditpipe/sink/sql_database.h"
#include "auditpipe/sink/sql_sink.h"
#include "auditpipe/status.h"
#include "auditpipe/table.h"
#include "digest_thread.h"

namespace auditpipe {

namespace {

/// The seals checked for a crashed run's tail: as many as verify's default
/// --unsealed-window, since writers finish their batches out of order
/// (and more, seal::TailWindow's).
using seal::tail_seals;

/// Sources whose tail is counted at start (each one indexed range query).
constexpr std::size_t tail_sources = 1024;

/// Seals older than the newest tail_seals read at start, a page at a time,
/// for keys they seal at or above a source's lowest seq in the newest ones;
/// and the most of them read.
constexpr int older_seals_page = 64;
constexpr int older_seals_max = 1024;

/// Sources of older runs are checked too, where their newest seals lie
/// within this many of the chain's newest: a run killed while the start
/// before it waited to seal late (late_grace) leaves a crashed run's
/// unsealed rows below its own seals, and the next start has to find them
/// there. The rest of the seals read (older_seals_max) is the margin for
/// keys sealed out of order below those seals.
constexpr int older_runs_seals = older_seals_max / 2;

/// Rows a start found covered by none of the seals it read, while older
/// ones were left unread: the seals this far below those read (an indexed
/// range of seal_no, a pattern on each) are looked through for their keys
/// first. A spill replay's seals of older seqs, stored after the live
/// records' seals, put those more than older_seals_max deep: the next
/// start warned of them, and sealed rows that were sealed late.
/// Fewer where seals list many keys (the byte offsets of a load from
/// files): about deeper_seals_bytes of their ranges, as the seals read
/// averaged.
constexpr std::int64_t deeper_seals = 16384;
constexpr std::int64_t deeper_seals_bytes = 64 << 20;

/// Sources of a crashed run without a seal among those read at start, or
/// with their newest seals too deep among them: up to this many are looked
/// up with a pattern search each, more in one pass
/// over the seals, unseen_sources_page seals a page (fewer where their
/// ranges are long: about unseen_sources_page_bytes a page).
constexpr std::size_t few_unseen_sources = 2;
constexpr std::size_t unseen_sources_page = 1024;
constexpr std::size_t unseen_sources_page_bytes = 4 << 20;

/// The most rows one start seals late: more is not a crashed run's tail
/// (at most max_pending batches and those in flight), and is only warned of.
constexpr std::int64_t late_rows_max = 1 << 20;

/// How long rows found unsealed at start wait before they are sealed late:
/// another process sealing the table stores the seals of the batches it
/// has stored within this (one insert each, 64 at most waiting), and its
/// rows are then not sealed twice.
constexpr std::chrono::milliseconds late_grace{5000};

std::string big_text(const SqlDialect& dialect) {
  // MySQL's TEXT holds 64 KiB, less than the ranges and fingerprints of a
  // large batch of byte-offset seqs; its text_type gives MEDIUMTEXT here.
  return dialect.text_type != nullptr ? dialect.text_type((1u << 24) - 1, 0) : std::string("TEXT");
}

/// A condition on a seals table's ranges that holds where a seal names
/// `source_id` (first, after another source, or first in a late seal's
/// ranges), with the parameters naming_params() gives; a source id cannot
/// match another's, since ':' and ';' end it.
constexpr const char* names_source = "(ranges LIKE ? OR ranges LIKE ? OR ranges LIKE ?)";
std::vector<std::string> naming_params(std::int64_t source_id) {
  const std::string id = std::to_string(source_id);
  return {id + ":%", "%;" + id + ":%", std::string(seal::late_prefix) + id + ":%"};
}

/// The newest seal's number, read back to continue the chain from. Seals
/// are numbered from 1 up; one the table says is above 2^62 (or not a
/// number) was edited there, and numbering on from it would overflow.
std::int64_t newest_seal_no(const std::string& text, std::string_view table) {
  std::int64_t no = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), no);
  if (ec != std::errc() || end != text.data() + text.size() || no > INT64_MAX / 2) {
    throw error("auditpipe: seal=: the newest seal of " + std::string(table) + " has seal_no '" +
                text.substr(0, 40) +
                "', which auditpipe does not write (seals count from 1): the seals table was "
                "edited; auditpipe verify reports how");
  }
  return no;
}

/// One source's keys, fed in ascending order, as the runs a seal's ranges
/// list for it ("0-499,612"): runs of consecutive seqs.
class SourceRuns {
 public:
  void add(std::int64_t seq) {
    if (open_ && seal::follows(hi_, seq)) {
      hi_ = seq;
      return;
    }
    close();
    lo_ = hi_ = seq;
    open_ = true;
  }
  /// Appends "sid:runs" to `ranges` (after a ';' if it holds another
  /// source's), if any key was added.
  void append_to(std::string& ranges, std::int64_t sid) {
    close();
    if (part_.empty()) return;
    if (!ranges.empty()) ranges += ';';
    ranges += std::to_string(sid) + ':' + part_;
  }

 private:
  void close() {
    if (!open_) return;
    if (!part_.empty()) part_ += ',';
    part_ += std::to_string(lo_);
    if (hi_ != lo_) part_ += '-' + std::to_string(hi_);
    open_ = false;
  }
  std::string part_;
  std::int64_t lo_ = 0, hi_ = 0;
  bool open_ = false;
};

/// Whether seqs, asked in ascending order, fall in any of some runs (which
/// may overlap: a batch sealed twice): one sweep over them by first seq.
class AscendingCoverage {
 public:
  explicit AscendingCoverage(std::vector<seal::SeqRun> runs) : runs_(std::move(runs)) {
    std::sort(runs_.begin(), runs_.end(),
              [](const seal::SeqRun& a, const seal::SeqRun& b) { return a.lo < b.lo; });
  }
  bool covers(std::int64_t seq) {
    // A run skipped ends below this seq, so below every later one too.
    while (next_ < runs_.size() && runs_[next_].hi < seq) ++next_;
    return next_ < runs_.size() && runs_[next_].lo <= seq;
  }

 private:
  std::vector<seal::SeqRun> runs_;
  std::size_t next_ = 0;
};

// Whether the query runs: the probe of a table that may not exist yet.
bool answers(SqlConnection& c, const std::string& query) {
  try {
    c.query_rows(query, {});
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

// Rows are read back as verify reads them (PostgreSQL: in UTC, every float
// digit), in a transaction of their own so that the settings end with it:
// begun here where the dialect has settings, rolled back unless committed.
class ReadBackTransaction {
 public:
  ReadBackTransaction(SqlConnection& c, const SqlDialect& dialect) : c_(c) {
    const std::vector<std::string> settings = seal::read_back_settings(dialect.name, true);
    if (settings.empty()) return;
    c_.query_rows("BEGIN", {});
    open_ = true;
    for (const std::string& set : settings) c_.query_rows(set, {});
  }
  ~ReadBackTransaction() {
    if (!open_) return;
    try {
      c_.query_rows("ROLLBACK", {});
    } catch (const std::exception&) {
      // The connection is broken: the pool replaces it.
    }
  }
  ReadBackTransaction(const ReadBackTransaction&) = delete;
  ReadBackTransaction& operator=(const ReadBackTransaction&) = delete;
  void commit() {
    if (!open_) return;
    open_ = false;
    c_.query_rows("COMMIT", {});
  }

 private:
  SqlConnection& c_;
  bool open_ = false;
};

// One row as read_back_select() gives it (its columns, then seq), as the
// writer encoded it when it sealed it.
void encode_row(seal::RowEncoder& enc, const std::vector<ColumnSpec>& columns,
                const std::vector<std::optional<std::string>>& row, std::int64_t source_id,
                std::int64_t seq) {
  enc.clear();
  for (std::size_t i = 0; i < columns.size(); ++i) {
    seal::encode_read_back(enc, columns[i].type,
                           row[i] ? std::optional<std::string_view>(*row[i]) : std::nullopt);
  }
  enc.key(source_id, seq);
}

}  // namespace

SealWriter::SealWriter(const SqlDialect& dialect, const seal::SealSettings& settings,
                       const TableDescriptor& table, std::string table_location)
    : dialect_(dialect),
      settings_(settings),
      table_(table),
      table_location_(std::move(table_location)),
      finds_(dialect, std::string(table.name), big_text(dialect), [this](std::string_view message) {
        return seal::seal_digest(settings_.mode, key_, message);
      }) {
  if (settings_.mode == seal::Mode::hmac) {
    key_ = seal::read_sealing_key(seal::key_file_of(settings_));
    rows_key_ = seal::rows_key(key_);
    // Made once now so that a libcrypto without Poly1305 (a FIPS-only
    // configuration) refuses the open, not every batch's seal later.
    (void)seal::RowsDigest(rows_key_);
  }
  // Refused now, not with every seal later: the anchor is what catches a
  // cut-off tail, and a path it cannot be written to would leave none.
  if (!settings_.anchor_file.empty()) seal::check_anchor_file(settings_.anchor_file);
  const std::string seals = dialect_.quote(seal::seals_table(table_.name));
  // Idempotent: a seal whose insert failed ambiguously (stored, the answer
  // lost) is inserted again without an error, and the read-back finds it.
  // Where the insert says whether it stored the row (RETURNING: PostgreSQL,
  // SQLite), the read-back runs only when it did not; MySQL has no such
  // answer to ON DUPLICATE KEY UPDATE, so it reads back every seal.
  insert_ = seal::seal_insert_statement(dialect_, table_.name);
  returning_ = dialect_.idempotent_insert == SqlDialect::IdempotentInsert::on_conflict_do_nothing;
  // Plain: a conflict fails the whole statement, so a group is stored
  // whole or not at all, never with a gap in its chain.
  group_inserts_.resize(group_max + 1);
  for (std::size_t n = 2; n <= group_max; ++n) {
    std::string& g = group_inserts_[n];
    g = "INSERT INTO " + seals +
        " (seal_no, ranges, row_count, prev_digest, digest, sealed_at, row_hashes) VALUES ";
    for (std::size_t i = 0; i < n; ++i)
      g += i == 0 ? "(?, ?, ?, ?, ?, ?, ?)" : ", (?, ?, ?, ?, ?, ?, ?)";
  }
  read_back_ = "SELECT digest FROM " + seals + " WHERE seal_no = ?";
  newest_query_ = "SELECT seal_no, digest FROM " + seals + " ORDER BY seal_no DESC LIMIT 1";
}

SealWriter::~SealWriter() {
  stop_storer();
}

void SealWriter::prepare(SqlConnection& c, bool create_table) {
  const std::vector<ColumnSpec> columns = check_columns(c);
  // Sealing reads the table back (a crashed run's unsealed rows at the next
  // start, a batch's rows whose keys were stored already): an account that
  // may only insert is refused here, not met at the first such batch and
  // retried for good.
  // Each check here names a cause (a grant, a column) only while the
  // connection is there: one lost meanwhile is an outage, said as such
  // (throw_if_lost), which the start's retries report.
  try {
    c.query_rows("SELECT * FROM " + dialect_.quote(table_.name) + " WHERE 1 = 0", {});
  } catch (const std::exception& e) {
    throw_if_lost(c, e);
    throw error("auditpipe: seal=: table " + std::string(table_.name) + " " + table_location_ +
                " cannot be read by this user, and a sealing writer reads rows back (those a "
                "crash left unsealed, at the next start; those a batch finds stored already): "
                "grant it SELECT on the table (" +
                e.what() + ")");
  }
  {
    detail::MutexLock lock(mutex_);
    columns_ = columns;
  }
  const std::string seals = dialect_.quote(seal::seals_table(table_.name));
  const std::string probe =
      "SELECT seal_no, ranges, row_count, prev_digest, digest, sealed_at, row_hashes FROM " +
      seals + " WHERE seal_no = 0";
  const bool found = answers(c, probe);
  if (create_table && !found) {
    const std::string text = big_text(dialect_);
    const std::string create =
        "CREATE TABLE IF NOT EXISTS " + seals + " (seal_no BIGINT NOT NULL PRIMARY KEY, ranges " +
        text +
        " NOT NULL, row_count BIGINT NOT NULL, prev_digest VARCHAR(64) NOT NULL, digest "
        "VARCHAR(64) NOT NULL, sealed_at BIGINT NOT NULL, row_hashes " +
        text + " NOT NULL)";
    try {
      c.execute_ddl(create);
    } catch (const std::exception&) {
      // Processes starting at once all create it; IF NOT EXISTS is not
      // atomic everywhere (PostgreSQL: a unique violation on pg_type). The
      // second try finds the table, or fails for the real reason.
      try {
        c.execute_ddl(create);
      } catch (const std::exception& e) {
        throw_if_lost(c, e);
        throw error("auditpipe: seal=: cannot create the seals table " + seals + " " +
                    table_location_ + ": " + e.what() +
                    " (if it exists already, this user may not read it: grant it SELECT and "
                    "INSERT on it" +
                    seals_update_grant() + ")");
      }
    }
    // Only where the probe found no table, which this start created: the
    // change takes PostgreSQL's strongest table lock, which every start
    // would otherwise queue for behind other processes' seal inserts. Best
    // effort: without it seals are stored as well, compressed in vain.
    if (!dialect_.uncompressed_storage.empty()) {
      try {
        c.execute_ddl("ALTER TABLE " + seals + " ALTER COLUMN row_hashes " +
                      std::string(dialect_.uncompressed_storage));
      } catch (const std::exception& e) {
        diagnostics()->debug("auditpipe: {}'s fingerprints stay compressible: {}", seals, e.what());
      }
    }
  }
  std::vector<std::vector<std::optional<std::string>>> newest;
  try {
    if (!found) c.query_rows(probe, {});  // again, for what is wrong with the table
    newest = c.query_rows(newest_query_, {});
  } catch (const std::exception& e) {
    throw_if_lost(c, e);
    throw error("auditpipe: seal=: the seals table " + seals + " " + table_location_ +
                " is missing or lacks columns (seal_no, ranges, row_count, prev_digest, digest, "
                "sealed_at, row_hashes): " +
                e.what());
  }
  // Seals are stored by this account: one that could read the seals table
  // but not write it started, and every seal failed, its rows "not yet
  // sealed" for good. Asked of the catalog where the dialect can (a write
  // at start would wait for a lock others hold on the table); MySQL's sink
  // prepares the seals' insert instead (seal::seals_insert_refused).
  if (!dialect_.insert_privilege_query.empty()) {
    const auto rows =
        c.catalog_rows(dialect_.insert_privilege_query, seal::seals_table(table_.name));
    if (rows.empty() || (rows[0].at(0) != "t" && rows[0].at(0) != "1")) {
      throw error(seal::seals_insert_refused(seals + " " + table_location_, "it lacks INSERT on it",
                                             false));
    }
  }
  // Before this start is ready: a refusal holds for every later try too (a
  // start while the server was down met it at the first contact, and the
  // next try went on to seal with the wrong key or mode).
  check_newest_seal(c, seals, columns);
  check_anchor(c, seals);
  {
    detail::MutexLock lock(mutex_);
    if (ready_) return;
    ready_ = true;
    if (newest.empty() || !newest[0][0] || !newest[0][1]) {
      newest_no_ = 0;
      newest_digest_ = seal::genesis_digest(table_.name);
    } else {
      newest_no_ = newest_seal_no(*newest[0][0], table_.name);
      newest_digest_ = *newest[0][1];
    }
  }
  const bool kept = finds_.open(c, create_table, table_location_);
  {
    detail::MutexLock lock(mutex_);
    finds_kept_ = kept;
  }
  try {
    check_tail(c, seals, columns);
  } catch (const std::exception& e) {
    diagnostics()->warn("auditpipe: could not check {} for unsealed rows: {}", table_.name,
                        e.what());
  }
  recovered_ = {};
}

void SealWriter::check_newest_seal(SqlConnection& c, const std::string& seals,
                                   const std::vector<ColumnSpec>& columns) const {
  const auto newest = c.query_rows(
      "SELECT seal_no, ranges, row_count, prev_digest, digest, sealed_at, row_hashes FROM " +
          seals + " ORDER BY seal_no DESC LIMIT 1",
      {});
  if (newest.empty() || newest[0].size() < 7) return;
  for (const auto& v : newest[0])
    if (!v) return;  // not a seal any writer makes: verify's to report
  const auto& f = newest[0];
  std::int64_t no = 0, row_count = 0, sealed_at = 0;
  std::vector<std::pair<std::int64_t, std::vector<seal::SeqRun>>> parts;
  try {
    no = std::stoll(*f[0]);
    row_count = std::stoll(*f[2]);
    sealed_at = std::stoll(*f[5]);
    for (const auto& [sid, items] : seal::split_sources(*f[1]))
      parts.emplace_back(sid, seal::parse_runs(items));
  } catch (const std::exception&) {
    return;  // likewise
  }
  const std::string data = dialect_.quote(table_.name);
  const std::string select =
      "SELECT " +
      seal::read_back_select(dialect_.name, columns,
                             [&](std::string_view name) { return dialect_.quote(name); }) +
      " FROM " + data + " WHERE source_id = ? AND seq >= ? AND seq <= ? ORDER BY seq";
  // As it is sealed now (v4), and in the earlier form (v3: SHA-256 over the
  // rows in both modes).
  seal::RowsDigest now(rows_key_);
  seal::RowsDigest v3;
  std::string fingerprints;
  std::int64_t rows = 0;
  seal::RowEncoder enc;
  try {
    ReadBackTransaction read_back(c, dialect_);
    const bool late = seal::is_late(*f[1]);
    for (const auto& [sid, runs] : parts) {
      if (runs.empty()) continue;
      // A batch's seal: one query per source over its span, not one per
      // run (the ingest tool's seqs are byte offsets, a run of one row
      // each); its rows lie among a few other batches' at most. A late
      // seal's runs may lie far apart, among many sealed rows: one each.
      std::vector<seal::SeqRun> spans = runs;
      if (!late) {
        spans = {runs.front()};
        for (const seal::SeqRun& run : runs) {
          spans[0].lo = std::min(spans[0].lo, run.lo);
          spans[0].hi = std::max(spans[0].hi, run.hi);
        }
      }
      AscendingCoverage sealed(runs);
      for (const seal::SeqRun& span : spans) {
        for (const auto& row : c.query_rows(
                 select, {std::to_string(sid), std::to_string(span.lo), std::to_string(span.hi)})) {
          if (row.empty() || !row.back()) continue;
          const std::int64_t seq = std::stoll(*row.back());
          if (!sealed.covers(seq)) continue;  // another seal's, between this one's runs
          encode_row(enc, columns, row, sid, seq);
          now.add(enc.bytes());
          v3.add(enc.bytes());
          seal::append_fingerprint(fingerprints, seal::fingerprint(enc.bytes()));
          ++rows;
        }
      }
    }
    read_back.commit();
  } catch (const std::exception& e) {
    // The check was not made: this try fails, and the next checks again.
    // Passing it let a start with another key seal its rows (after an
    // outage: the moment the server came back), breaking the chain for good.
    // A connection that died is an outage; one still alive met a statement
    // timeout, a lock or a cancel, and the pool's next connection tries.
    const bool lost = !c.ping();
    throw error(
        "auditpipe: seal=: " +
        std::string(lost ? "the connection was lost while reading back" : "could not read back") +
        " the rows of the newest seal of " + std::string(table_.name) + " " + table_location_ +
        " (seal " + std::to_string(no) + ") to check this logger's key against it: " + e.what() +
        (lost ? "" : "; the start waits until they can be read"));
  }
  if (rows != row_count || fingerprints != *f[6]) {
    diagnostics()->warn(
        "auditpipe: {} {}: the rows of its newest seal ({}) are not as they were sealed; run "
        "auditpipe verify",
        table_.name, table_location_, no);
    return;
  }
  const std::string& prev = *f[3];
  const std::string& ranges = *f[1];
  if (seal::seal_digest(
          settings_.mode, key_,
          seal::seal_message(prev, no, sealed_at, ranges, row_count, now.final_hex())) == *f[4] ||
      seal::seal_digest(
          settings_.mode, key_,
          seal::seal_message(prev, no, sealed_at, ranges, row_count, v3.final_hex(), 3)) == *f[4]) {
    return;
  }
  throw error(
      "auditpipe: seal=: the newest seal of " + std::string(table_.name) + " " + table_location_ +
      " (seal " + std::to_string(no) + ") does not verify with this logger's " +
      (settings_.mode == seal::Mode::hmac ? "seal=hmac key (" + seal::key_file_of(settings_) + ")"
                                          : std::string("seal=hash (no key)")) +
      ", though its rows are as it sealed them: the table is sealed with another key "
      "or mode, or that seal was edited since (auditpipe verify with the table's key "
      "tells which), and seals made with this one would fail verification for good. Open "
      "it with the seal= and key it is sealed with (a new key needs a new table)");
}

void SealWriter::check_anchor(SqlConnection& c, const std::string& seals) const {
  if (settings_.anchor_file.empty()) return;
  const std::optional<seal::Anchor> anchor = seal::read_anchor_file(settings_.anchor_file);
  if (!anchor) return;  // none yet: the first seal writes it
  const auto named = c.query_rows("SELECT digest FROM " + seals + " WHERE seal_no = ?",
                                  {std::to_string(anchor->seal_no)});
  if (!named.empty() && !named[0].empty() && named[0][0] && *named[0][0] == anchor->digest) return;
  const auto newest = c.query_rows("SELECT MAX(seal_no) FROM " + seals, {});
  const std::string last =
      newest.empty() || newest[0].empty() || !newest[0][0] ? "0" : *newest[0][0];
  const std::string what =
      named.empty()
          ? std::string(table_.name) + " " + table_location_ + " has no seal " +
                std::to_string(anchor->seal_no) + " (its seals end at " + last +
                "): seals were removed since, with their rows or without"
          : "seal " + std::to_string(anchor->seal_no) + " of " + std::string(table_.name) + " " +
                table_location_ + " has another digest: the chain was rewritten since";
  throw error("auditpipe: seal=: the seal anchor file " + settings_.anchor_file + " names seal " +
              std::to_string(anchor->seal_no) + ", and " + what +
              " (by someone who can write the database, a restore from a backup, a failover to "
              "a server that had not received them, or tables dropped and made anew). auditpipe "
              "verify --anchor " +
              settings_.anchor_file +
              " shows what is missing. This start would rewrite the anchor and hide it: keep "
              "the file as evidence, move it away, and start again to seal on from the table as "
              "it is");
}

std::string SealWriter::seals_update_grant() const {
  return dialect_.idempotent_insert == SqlDialect::IdempotentInsert::on_duplicate_key_update
             ? ", and UPDATE (its insert ends in ON DUPLICATE KEY UPDATE)"
             : "";
}

void SealWriter::throw_if_lost(SqlConnection& c, const std::exception& e) const {
  if (c.ping()) return;
  throw error("auditpipe: seal=: table " + std::string(table_.name) + " " + table_location_ +
              ": the connection was lost while the start checked it: " + e.what());
}

std::vector<ColumnSpec> SealWriter::check_columns(SqlConnection& c) {
  std::optional<Schema> schema;
  std::string why;
  try {
    schema = read_table_schema(c, dialect_, table_.name, 1024, false, table_location_);
  } catch (const std::exception& e) {
    throw_if_lost(c, e);
    why = e.what();
  }
  std::string record, table;
  for (const Column& col : table_.columns)
    record += (record.empty() ? "" : ", ") + std::string(col.name);
  bool same = schema && schema->columns().size() == table_.columns.size();
  if (schema) {
    for (std::size_t i = 0; i < schema->columns().size(); ++i) {
      const std::string& name = schema->columns()[i].name;
      table += (i ? ", " : "") + name;
      // As the table check matches them: ignoring ASCII case.
      same = same && i < table_.columns.size() && detail::same_name(name, table_.columns[i].name);
    }
  }
  if (same) return schema->columns();
  throw error("auditpipe: seal=: table " + std::string(table_.name) + " " + table_location_ +
              (schema ? " has the columns (" + table + ")" : " cannot be read back: " + why) +
              ", not exactly the record's in its order (" + record +
              "): verify reads a row's values in the table's order, so its seals would not "
              "verify; seal a table whose columns are the record's (one the sink creates)");
}

void SealWriter::expect_recovered(std::span<const RecordRef> keys) {
  recovered_.clear();
  recovered_.reserve(keys.size());
  for (const RecordRef& k : keys) recovered_.emplace_back(k.source_id, k.seq);
}

std::int64_t SealWriter::recovered_from(std::int64_t source_id, std::int64_t seq) const {
  const auto from = std::lower_bound(recovered_.begin(), recovered_.end(),
                                     std::pair<std::int64_t, std::int64_t>{source_id, seq});
  const auto end = std::partition_point(from, recovered_.end(),
                                        [&](const auto& key) { return key.first == source_id; });
  return end - from;
}

void SealWriter::check_unsealed_table(SqlConnection& c) {
  const std::string data = dialect_.quote(table_.name);
  // A run killed before its first seal was stored left rows its durable
  // pool kept: they are written again first (skipped by key) and sealed
  // then. Which rows are there is read up to one more than the pool
  // recovered, so a large table costs no more than a small one.
  const auto rows = c.query_rows(
      "SELECT source_id, seq FROM " + data + " LIMIT " + std::to_string(recovered_.size() + 1), {});
  if (rows.empty()) return;
  std::size_t foreign = 0;
  for (const auto& row : rows) {
    if (!row[0] || !row[1]) {
      ++foreign;
      continue;
    }
    const std::pair<std::int64_t, std::int64_t> key{std::stoll(*row[0]), std::stoll(*row[1])};
    foreign += !std::binary_search(recovered_.begin(), recovered_.end(), key);
  }
  if (foreign == 0) {
    diagnostics()->info(
        "auditpipe: {} {} holds {} rows and no seals yet; they are among the {} records the "
        "durable pool recovered, which are written again first and sealed",
        table_.name, table_location_, rows.size(), recovered_.size());
    return;
  }
  diagnostics()->warn(
      "auditpipe: {} {} holds rows but no seals yet (rows stored before sealing was "
      "turned on, or by a run that stopped before its first seal): no seal covers them, "
      "and auditpipe verify reports them as not yet sealed, or as inserted where they fall "
      "among keys sealed later (seal a new table instead)",
      table_.name, table_location_);
}

struct SealWriter::LateRows {
  std::string select;  ///< the table's columns as read back, then seq
  std::int64_t rows = 0;
  std::int64_t sealed_meanwhile = 0;  ///< found unsealed at start, sealed since
  std::string ranges;
  std::string row_hashes;
  seal::RowsDigest digest;
  seal::RowEncoder enc;
  const std::vector<ColumnSpec>* columns = nullptr;
};

void SealWriter::check_tail(SqlConnection& c, const std::string& seals,
                            const std::vector<ColumnSpec>& columns) {
  const std::string data = dialect_.quote(table_.name);
  const std::string page_query = "SELECT seal_no, ranges FROM " + seals +
                                 " WHERE seal_no < ? ORDER BY seal_no DESC LIMIT " +
                                 std::to_string(older_seals_page);
  std::vector<std::vector<std::optional<std::string>>> page =
      c.query_rows(page_query, {std::to_string(INT64_MAX)});
  if (page.empty()) {
    check_unsealed_table(c);
    return;
  }
  // The chain's newest seal_no, for a seal's depth where seals are read
  // out of the chain's order.
  const std::int64_t newest_no = page[0][0] ? std::stoll(*page[0][0]) : 0;
  // Per source, the lowest seq among its newest seals and the keys sealed
  // from there on. Writers finish batches out of order, so a crashed run's
  // unsealed rows may sit below sealed ones; counting the rows from that
  // lowest seq on finds them.
  struct Span {
    std::int64_t lo = INT64_MAX;
    int seals = 0;                      ///< its seals read so far, newest first, but late ones
    std::int64_t keys = 0;              ///< distinct keys in covered (check_source)
    std::vector<seal::SeqRun> covered;  ///< what the seals read hold from lo on
    std::vector<seal::SeqRun> late;     ///< what late seals read hold
    bool older_run = false;             ///< first seen below the newest tail_seals
    int tail_depth = 0;                 ///< seals read down to its last newest one
    seal::TailWindow window;            ///< its seals that count as newest past tail_seals
    /// The chain depth of its newest seal (not a late one): the window's
    /// depth counts from there (seal::TailWindow).
    std::optional<std::int64_t> window_top;
    /// The highest key of its seals read below the window (not late ones):
    /// rows above it that no seal covers are a crash's, as verify counts.
    std::optional<std::int64_t> below_hi;
  };
  std::map<std::int64_t, Span> spans;
  // The sources checked: those of the chain's newest seals, and the other
  // sources of their runs (a logger's sources are its base plus a producer
  // index below 2^16): a producer the scheduler held back may have no seal
  // among the newest, and rows in the batches a crashed run left unsealed.
  // Sources of older runs, and their run-mates, join as the pages below are
  // read (older_runs_seals).
  std::set<std::int64_t> bases;
  std::vector<std::int64_t> older_sources;  ///< joined below the newest seals
  std::map<std::int64_t, std::vector<seal::SeqRun>> late_elsewhere;
  bool capped = false;
  // A source joins (once), taking what late seals read so far hold of it.
  const auto join = [&](std::int64_t sid, bool older_run) {
    auto [it, added] = spans.try_emplace(sid);
    if (!added) return it;
    it->second.older_run = older_run;
    if (const auto late = late_elsewhere.find(sid); late != late_elsewhere.end()) {
      it->second.late = std::move(late->second);
      late_elsewhere.erase(late);
    }
    return it;
  };
  // The sources in the table of the run `sid` belongs to, each one indexed
  // range query (those that join: into `added`, if given).
  const auto join_run_mates = [&](std::int64_t sid, bool older_run,
                                  std::vector<std::int64_t>* added = nullptr) {
    const std::int64_t base = sid & ~std::int64_t{0xffff};
    if (!bases.insert(base).second) return;
    std::int64_t from = base;
    for (;;) {
      if (spans.size() >= tail_sources) {
        capped = true;
        return;
      }
      const auto next = c.query_rows("SELECT source_id FROM " + data +
                                         " WHERE source_id >= ? AND source_id <= ? ORDER BY "
                                         "source_id LIMIT 1",
                                     {std::to_string(from), std::to_string(base | 0xffff)});
      if (next.empty() || !next[0][0]) return;
      const std::int64_t mate = std::stoll(*next[0][0]);
      if (added != nullptr && spans.find(mate) == spans.end()) added->push_back(mate);
      join(mate, older_run);
      if (mate == (base | 0xffff)) return;
      from = mate + 1;
    }
  };
  for (std::size_t i = 0; i < page.size() && i < static_cast<std::size_t>(tail_seals); ++i) {
    if (!page[i][1]) continue;
    for (const auto& [sid, items] : seal::split_sources(*page[i][1])) join(sid, false);
  }
  std::vector<std::int64_t> newest_sources;
  for (const auto& entry : spans) newest_sources.push_back(entry.first);
  for (const std::int64_t sid : newest_sources) join_run_mates(sid, false);
  // Seals newest first, a page at a time: each source's newest tail_seals
  // set its lowest seq; older ones count the keys they hold from there on
  // (the same out-of-order finish puts such keys into older seals: without
  // them a clean restart would warn of rows that are sealed). Up to the
  // chain's start or older_seals_max seals, not until a page holds none of
  // those: a batch whose statement took long is sealed after many others,
  // and a page further back can hold keys above the lowest seq again.
  // One seal, `items` its runs of the span's source, newest first: each
  // source's newest seals (tail_seals, and seal::tail_chain_seals deep)
  // set its lowest seq; older ones count the keys they hold from there on.
  // (Parsed first: a malformed seal throws before it changes the span.)
  const auto count_seal = [](Span& span, std::string_view items, bool late_seal, int depth,
                             std::int64_t chain_depth) {
    const std::vector<seal::SeqRun> runs = seal::parse_runs(items);
    if (late_seal) {
      span.late.insert(span.late.end(), runs.begin(), runs.end());
      return;
    }
    // (Every seal is fed to the window, newest first, as verify feeds it.)
    if (!span.window_top) span.window_top = chain_depth;
    const bool extends = span.window.extends(runs, chain_depth - *span.window_top + 1);
    const bool newest = span.seals++ < tail_seals || extends;
    if (newest) span.tail_depth = depth;
    for (const seal::SeqRun& run : runs) {
      if (newest) {
        span.lo = std::min(span.lo, run.lo);
        span.covered.push_back(run);
      } else {
        span.below_hi = std::max(span.below_hi.value_or(run.hi), run.hi);
        if (run.hi >= span.lo) span.covered.push_back({std::max(run.lo, span.lo), run.hi});
      }
    }
  };
  bool whole_chain = false;
  int read = 0;
  std::int64_t oldest_read = 0;   ///< the oldest seal read, if not the whole chain
  std::int64_t ranges_bytes = 0;  ///< of the seals read
  for (;;) {
    for (std::size_t i = 0; i < page.size(); ++i) {
      const auto& row = page[i];
      if (!row[1]) continue;
      ranges_bytes += static_cast<std::int64_t>(row[1]->size());
      const int depth = read + static_cast<int>(i) + 1;
      // A late seal was stored long after its rows (a start after a
      // crash), and its keys sit between those of seals far older: it
      // says nothing of where a source's newest rows are, so it does not
      // set the lowest seq; its keys count as sealed from there on.
      const bool late_seal = seal::is_late(*row[1]);
      for (const auto& [sid, items] : seal::split_sources(*row[1])) {
        auto it = spans.find(sid);
        if (it == spans.end()) {
          // A late seal is stored after the seals of its rows' run: kept
          // for that run's sources, which may join below.
          if (late_seal) {
            for (const seal::SeqRun& run : seal::parse_runs(items))
              late_elsewhere[sid].push_back(run);
            continue;
          }
          // Newest first: a source first seen here has no newer seal.
          if (depth > older_runs_seals) continue;
          if (spans.size() >= tail_sources) {
            capped = true;
            continue;
          }
          it = join(sid, true);
          older_sources.push_back(sid);
        }
        count_seal(it->second, items, late_seal, depth, depth);
      }
    }
    read += static_cast<int>(page.size());
    if (page.size() < static_cast<std::size_t>(older_seals_page) || !page.back()[0]) {
      whole_chain = true;
      break;
    }
    if (read >= older_seals_max) {
      oldest_read = std::stoll(*page.back()[0]);
      break;
    }
    page = c.query_rows(page_query, {*page.back()[0]});
  }
  if (capped) {
    diagnostics()->info(
        "auditpipe: {} {}: the runs whose seals are among the newest {} have more than {} "
        "sources; the rest (of the older runs) are not checked for unsealed rows at this start",
        table_.name, table_location_, read, tail_sources);
  }
  std::map<std::int64_t, std::vector<seal::SeqRun>> candidates;
  std::int64_t found = 0;
  // Counts the rows of a source from span.lo on that the seals read do not
  // cover; those no other process is sealing become candidates.
  const auto check_source = [&](std::int64_t sid, Span& span) {
    // Rows are looked for from the lowest key of the window's seals, or
    // from just above the seals read below it where that is lower, as
    // verify counts "not yet sealed": a batch stored just below the
    // window's oldest seal. (The seals below hold no key from there on.)
    if (span.below_hi && *span.below_hi < span.lo) span.lo = *span.below_hi + 1;
    for (const seal::SeqRun& run : span.late) {
      if (run.hi < span.lo) continue;
      span.covered.push_back({std::max(run.lo, span.lo), run.hi});
    }
    // Keys held by several seals (a batch sealed twice: retried, or
    // written again from a durable pool) count once.
    span.keys = seal::merge_runs(span.covered);
    const auto n =
        c.query_rows("SELECT COUNT(*) FROM " + data + " WHERE source_id = ? AND seq >= ?",
                     {std::to_string(sid), std::to_string(span.lo)});
    const std::int64_t unsealed = (n.empty() || !n[0][0] ? 0 : std::stoll(*n[0][0])) - span.keys;
    if (unsealed <= 0) return;
    // A durable pool keeps a record until its seal is stored: the rows of
    // its last run that no seal covers are among what it recovered, and
    // are written again first (skipped by key) and sealed then.
    const std::int64_t pooled = recovered_from(sid, span.lo);
    if (pooled >= unsealed) {
      // From the first recovered key: span.lo is only where the count
      // began (0 for a source with no seal read), which the line gave.
      const auto first_pooled =
          std::lower_bound(recovered_.begin(), recovered_.end(),
                           std::pair<std::int64_t, std::int64_t>{sid, span.lo});
      diagnostics()->info(
          "auditpipe: {} {}: {} rows of source_id {} from seq {} on are covered by none of its "
          "newest seals; the durable pool recovered {} records of that source from there on, "
          "which are written again first and sealed",
          table_.name, table_location_, unsealed, sid, first_pooled->second, pooled);
      return;
    }
    // (Counted first: more than a start seals late are not read at all.)
    const std::vector<seal::SeqRun> covered = span.covered;
    auto [runs, count] = unsealed > late_rows_max
                             ? std::pair<std::vector<seal::SeqRun>, std::int64_t>{{}, unsealed}
                             : uncovered(c, sid, span.lo, covered);
    if (count > 0 && !whole_chain && unsealed <= late_rows_max) {
      const std::int64_t per_seal = std::max<std::int64_t>(1, ranges_bytes / std::max(read, 1));
      const std::int64_t depth =
          std::clamp<std::int64_t>(deeper_seals_bytes / per_seal, older_seals_max, deeper_seals);
      std::vector<seal::SeqRun> deeper = sealed_below(c, sid, oldest_read, depth);
      if (!deeper.empty()) {
        deeper.insert(deeper.end(), covered.begin(), covered.end());
        std::tie(runs, count) = uncovered(c, sid, span.lo, std::move(deeper));
      }
    }
    if (count == 0) return;
    if (found + count > late_rows_max) {
      diagnostics()->warn(
          "auditpipe: {} {}: {} rows of source_id {} from seq {} on are covered by none of its "
          "newest seals, more than one start seals late ({}), and are not sealed; auditpipe "
          "verify reports them as not yet sealed or as inserted.",
          table_.name, table_location_, count, sid, span.lo, late_rows_max);
      return;
    }
    found += count;
    const std::int64_t first = runs.front().lo;
    candidates.emplace(sid, std::move(runs));
    // Sealed late, not left so: they could not be told from rows someone
    // inserted once newer seals pile up above them, and a change made to
    // them later would go unseen. Not at once: another process may be
    // storing their seals right now.
    diagnostics()->warn(
        "auditpipe: {} {}: {} rows of source_id {} from seq {} on are covered by no seal (a run "
        "that stopped between storing rows and sealing them, another process still sealing "
        "them, or rows someone added); unless a seal covers them within {} ms, they are "
        "sealed then, from what the table holds, by a seal marked late, which auditpipe verify "
        "names until it is accepted (--accept-late)",
        table_.name, table_location_, count, sid, first, late_grace.count());
  };
  // Sources with rows and no seal among those read, while older seals
  // were not read: their seals may be older (a durable pool keeps its
  // base, so a producer that logged long ago is such a source at every
  // clean start), or they have none at all (a producer the scheduler held
  // back until its run crashed).
  std::vector<std::int64_t> no_seal_read;
  // An older run's sources whose newest seals reach too close to the last
  // seal read: keys sealed out of order may lie below it, unread. Checked
  // below against every seal that names them, if their run left rows
  // unsealed.
  std::vector<std::int64_t> too_deep;
  for (auto& [sid, span] : spans) {
    if (span.older_run && !whole_chain && span.tail_depth > read - older_runs_seals) {
      too_deep.push_back(sid);
      continue;
    }
    if (span.seals == 0) {
      // A source with rows and no seal: all of them unsealed if the whole
      // chain was read.
      // (Late seals read only: the same, they may hold some of its keys.)
      if (!whole_chain) {
        no_seal_read.push_back(sid);
        continue;
      }
      span.lo = INT64_MIN;
    }
    check_source(sid, span);
  }
  // Every seal naming one of `sources`, newest first, counted into a span
  // each, as far as the main pass counts: a source's newest tail_seals and
  // older_seals_max seals below them (all, for a source with fewer).
  // Up to few_unseen_sources: a pattern search each (the database
  // evaluates every pattern on every seal it reads, a scan of the table
  // each: 0.6 s per million seals on MariaDB here); more (a crash while
  // many producers' seals were held up): one pass over the seals instead
  // of one each. A seal whose ranges do not parse is verify's to report,
  // and skipped here.
  const auto count_seals_naming = [&](const std::set<std::int64_t>& sources) {
    std::map<std::int64_t, Span> counted;  // every one of them, with a seal or none
    for (const std::int64_t sid : sources) counted.try_emplace(sid);
    int depth = 0;
    // (`chain_depth`: the seal's place in the chain, where `depth` counts
    // only those read here.)
    const auto take = [&](const std::string& ranges, std::optional<std::int64_t> only,
                          std::int64_t chain_depth) {
      const bool late_seal = seal::is_late(ranges);
      ++depth;
      for (const auto& [sid, items] : seal::split_sources(ranges)) {
        if (only ? sid != *only : sources.count(sid) == 0) continue;
        count_seal(counted[sid], items, late_seal, depth, chain_depth);
      }
    };
    if (sources.size() > few_unseen_sources) {
      const auto all_counted = [&] {
        for (const std::int64_t sid : sources) {
          const Span& span = counted[sid];
          if (span.seals < tail_seals || depth - span.tail_depth < older_seals_max) return false;
        }
        return true;
      };
      each_seal(c, seals, [&](const std::string& ranges) {
        take(ranges, std::nullopt, depth + 1);
        return depth % older_seals_page != 0 || !all_counted();
      });
      return counted;
    }
    for (const std::int64_t sid : sources) {
      depth = 0;
      for (const auto& row : c.query_rows("SELECT ranges, seal_no FROM " + seals + " WHERE " +
                                              names_source + " ORDER BY seal_no DESC LIMIT " +
                                              std::to_string(tail_seals + older_seals_max),
                                          naming_params(sid))) {
        if (!row[0] || !row[1]) continue;
        try {
          // Its place in the chain, as the main pass counts it (seal_no
          // counts from 1 without gaps), for the window: these are not
          // consecutive seals.
          // (A seal_no edited above the newest, or far below: not a place
          // in the chain the window counts.)
          const std::int64_t no = std::stoll(*row[1]);
          if (no > newest_no) continue;
          const std::uint64_t below =
              static_cast<std::uint64_t>(newest_no) - static_cast<std::uint64_t>(no);
          take(*row[0], sid,
               below >= static_cast<std::uint64_t>(INT64_MAX)
                   ? INT64_MAX
                   : static_cast<std::int64_t>(below) + 1);
        } catch (const error&) {
          // verify's to report (above)
        } catch (const std::logic_error&) {
          // (a seal_no that is not a number: verify's to report too)
        }
      }
    }
    return counted;
  };
  // Whether a source's run left rows unsealed.
  const auto crashed = [&](std::int64_t sid) {
    const std::int64_t base = sid & ~std::int64_t{0xffff};
    const auto mate = candidates.lower_bound(base);
    return mate != candidates.end() && mate->first <= (base | 0xffff);
  };
  // The other sources of an older run that left rows unsealed: one not
  // among the seals read may have no seal at all (a producer held back
  // until the crash). Only then (an indexed probe each, paid for nothing
  // at a clean start); it may also have seals deeper than the pages
  // counted for older runs, so each goes to the scan below.
  for (const std::int64_t sid : older_sources) {
    if (crashed(sid)) join_run_mates(sid, true, &no_seal_read);
  }
  // Such sources of a run that left rows unsealed, and those skipped above
  // for their deep seals, are counted against the seals naming them (down
  // to the chain's start if need be): without any, all their rows are
  // unsealed (a producer held back until the crash); a source whose newest
  // seals lie deep is as likely to have rows unsealed (its last batches
  // waited behind a run-mate's), and the start after, seeing its run among
  // the newest, would seal them late a second time. Only then: at a clean
  // start the search would be paid for nothing. (A run is known to have
  // left rows unsealed from the sources counted above only: one whose
  // unsealed rows all lie in such sources is not looked at, and the rows
  // found here do not bring in more of their run's sources.)
  std::set<std::int64_t> of_crashed_runs;
  const auto look_up_if_crashed = [&](const std::vector<std::int64_t>& sources,
                                      const std::string& why_unchecked) {
    for (const std::int64_t sid : sources) {
      if (crashed(sid)) {
        of_crashed_runs.insert(sid);
      } else {
        diagnostics()->debug("auditpipe: {} {}: source_id {} {}: not checked for unsealed rows",
                             table_.name, table_location_, sid, why_unchecked);
      }
    }
  };
  look_up_if_crashed(no_seal_read,
                     "(a source of a run whose seals are among the newest) has "
                     "rows, and none of the newest " +
                         std::to_string(read) + " seals covers any");
  look_up_if_crashed(too_deep, "(of an older run) has its newest seals too deep among the newest " +
                                   std::to_string(read) + " to be counted there");
  if (!of_crashed_runs.empty()) {
    for (auto& [sid, span] : count_seals_naming(of_crashed_runs)) {
      if (span.seals == 0) span.lo = INT64_MIN;
      check_source(sid, span);
    }
  }
  std::int64_t newest = 0;
  bool kept = false;
  {
    detail::MutexLock lock(mutex_);
    newest = newest_no_;
    kept = finds_kept_;
  }
  std::map<std::int64_t, std::int64_t> after;
  for (const auto& [sid, runs] : candidates) after[sid] = newest;
  std::vector<UnsealedFinds::Find> finds;
  if (kept) {
    const std::map<std::int64_t, std::vector<seal::SeqRun>> own = candidates;
    // Earlier starts' first: this start's own finds are kept below.
    add_kept_finds(c, candidates, after, finds);
    try {
      std::vector<UnsealedFinds::Find> own_finds;
      for (const auto& [sid, runs] : own) own_finds.push_back({sid, newest, runs, {}});
      finds_.keep(c, own_finds);
      for (UnsealedFinds::Find& find : own_finds) finds.push_back(std::move(find));
    } catch (const std::exception& e) {
      diagnostics()->warn(
          "auditpipe: {} {}: could not keep the rows found unsealed in {} ({}): a start killed "
          "before it seals them late leaves them to the next one, which may not look that far "
          "back",
          table_.name, table_location_, finds_.name(), e.what());
    }
  }
  if (candidates.empty()) return;
  detail::MutexLock lock(mutex_);
  late_candidates_ = std::move(candidates);
  late_columns_ = columns;
  late_after_ = std::move(after);
  late_finds_ = std::move(finds);
  late_due_ = std::chrono::steady_clock::now() + late_grace;
}

void SealWriter::forget_finds(SqlConnection& c,
                              const std::vector<UnsealedFinds::Find>& finds) const {
  try {
    for (const UnsealedFinds::Find& find : finds) finds_.forget(c, find);
  } catch (const std::exception& e) {
    diagnostics()->debug("auditpipe: {}: could not remove finds whose rows are sealed: {}",
                         finds_.name(), e.what());
  }
}

void SealWriter::each_seal(SqlConnection& c, const std::string& seals,
                           const std::function<bool(const std::string&)>& visit) const {
  const std::string page_query =
      "SELECT seal_no, ranges FROM " + seals + " WHERE seal_no < ? ORDER BY seal_no DESC LIMIT ";
  std::size_t page_rows = unseen_sources_page;
  std::string below = std::to_string(INT64_MAX);
  for (;;) {
    const auto page = c.query_rows(page_query + std::to_string(page_rows), {below});
    std::size_t bytes = 0;
    for (const auto& row : page) {
      if (!row[1]) continue;
      bytes += row[1]->size();
      try {
        if (!visit(*row[1])) return;
      } catch (const error&) {
        // A seal whose ranges do not parse is verify's to report; whatever
        // source it may name is looked for in the others.
      }
    }
    if (page.size() < page_rows || !page.back()[0]) return;
    below = *page.back()[0];
    // Seals of loads from files list every row's offset: their pages are
    // kept to about unseen_sources_page_bytes.
    if (bytes > unseen_sources_page_bytes) {
      page_rows = std::max<std::size_t>(16, page_rows * unseen_sources_page_bytes / bytes);
    }
  }
}

std::vector<seal::SeqRun> SealWriter::keys_sealed(SqlConnection& c, std::int64_t source_id,
                                                  const std::string& seal_nos,
                                                  std::vector<std::string> params,
                                                  bool skip_malformed) const {
  const std::string seals = dialect_.quote(seal::seals_table(table_.name));
  const std::vector<std::string> naming = naming_params(source_id);
  params.insert(params.end(), naming.begin(), naming.end());
  std::vector<seal::SeqRun> keys;
  for (const auto& row : c.query_rows(
           "SELECT ranges FROM " + seals + " WHERE " + seal_nos + " AND " + names_source, params)) {
    if (!row[0]) continue;
    try {
      for (const auto& [part_sid, items] : seal::split_sources(*row[0])) {
        if (part_sid != source_id) continue;
        for (const seal::SeqRun& r : seal::parse_runs(items)) keys.push_back(r);
      }
    } catch (const error&) {
      if (!skip_malformed) throw;
      // verify's to report
    }
  }
  return keys;
}

std::vector<seal::SeqRun> SealWriter::sealed_since(SqlConnection& c, std::int64_t source_id,
                                                   std::int64_t after) const {
  return keys_sealed(c, source_id, "seal_no > ?", {std::to_string(after)}, false);
}

std::vector<seal::SeqRun> SealWriter::sealed_below(SqlConnection& c, std::int64_t source_id,
                                                   std::int64_t below, std::int64_t depth) const {
  return keys_sealed(c, source_id, "seal_no < ? AND seal_no >= ?",
                     {std::to_string(below),
                      std::to_string(below < INT64_MIN + depth ? INT64_MIN : below - depth)},
                     true);
}

void SealWriter::add_kept_finds(SqlConnection& c,
                                std::map<std::int64_t, std::vector<seal::SeqRun>>& candidates,
                                std::map<std::int64_t, std::int64_t>& after,
                                std::vector<UnsealedFinds::Find>& merged_finds) {
  std::vector<UnsealedFinds::Find> finds;
  std::size_t forged = 0;
  try {
    finds = finds_.load(c, forged);
  } catch (const std::exception& e) {
    diagnostics()->warn(
        "auditpipe: {} {}: could not read {} ({}): rows earlier starts found "
        "unsealed and did not seal late are not looked at",
        table_.name, table_location_, finds_.name(), e.what());
    return;
  }
  if (forged > 0) {
    // Not sealed, not removed: what someone wrote there is evidence.
    diagnostics()->warn(
        "auditpipe: {} {}: {} of the finds in {} do not carry this key's MAC (written by "
        "someone else, or with another key): ignored",
        table_.name, table_location_, forged, finds_.name());
  }
  std::map<std::int64_t, std::vector<UnsealedFinds::Find>> found_by_source;
  for (UnsealedFinds::Find& f : finds) found_by_source[f.source_id].push_back(std::move(f));
  const std::string data = dialect_.quote(table_.name);
  for (auto& [sid, of_source] : found_by_source) {
    // Every run found of the source, after the oldest seal any was found after.
    UnsealedFinds::Find find{sid, INT64_MAX, {}, {}};
    for (const UnsealedFinds::Find& f : of_source) {
      find.after_no = std::min(find.after_no, f.after_no);
      find.runs.insert(find.runs.end(), f.runs.begin(), f.runs.end());
    }
    // The rows still in those runs that no seal stored since covers (nor a
    // durable pool recovered): a late seal stored meanwhile does.
    AscendingCoverage sealed_keys(sealed_since(c, sid, find.after_no));
    std::sort(find.runs.begin(), find.runs.end(),
              [](const seal::SeqRun& a, const seal::SeqRun& b) { return a.lo < b.lo; });
    std::vector<seal::SeqRun> runs;
    std::int64_t count = 0;
    std::optional<std::int64_t> scanned_to;  // runs found twice are read once
    for (const seal::SeqRun& run : find.runs) {
      if (scanned_to && run.hi <= *scanned_to) continue;
      // Above what was read: *scanned_to < run.hi here, so + 1 fits.
      const std::int64_t lo = scanned_to ? std::max(run.lo, *scanned_to + 1) : run.lo;
      scanned_to = run.hi;
      for (const auto& row :
           c.query_rows("SELECT seq FROM " + data +
                            " WHERE source_id = ? AND seq >= ? AND seq <= ? ORDER BY seq",
                        {std::to_string(sid), std::to_string(lo), std::to_string(run.hi)})) {
        if (!row[0]) continue;
        const std::int64_t seq = std::stoll(*row[0]);
        if (sealed_keys.covers(seq) ||
            std::binary_search(recovered_.begin(), recovered_.end(),
                               std::pair<std::int64_t, std::int64_t>{sid, seq})) {
          continue;
        }
        if (!runs.empty() && seal::follows(runs.back().hi, seq)) {
          runs.back().hi = seq;
        } else {
          runs.push_back({seq, seq});
        }
        ++count;
      }
    }
    if (count == 0) {
      // Unless another process may be about to store those rows: a writer
      // replaying its spill directory notes a batch's keys before its
      // statement, after the seal it knows as newest. Left to a later start.
      std::int64_t newest = 0;
      {
        detail::MutexLock lock(mutex_);
        newest = newest_no_;
      }
      std::erase_if(of_source, [newest](const UnsealedFinds::Find& f) {
        // (after_no + max_pending >= newest, where a forged after_no may
        // lie near int64's top)
        return f.after_no >= newest ||
               static_cast<std::uint64_t>(newest) - static_cast<std::uint64_t>(f.after_no) <=
                   max_pending;
      });
      forget_finds(c, of_source);
      continue;
    }
    for (UnsealedFinds::Find& f : of_source) merged_finds.push_back(std::move(f));
    diagnostics()->warn(
        "auditpipe: {} {}: {} rows of source_id {} from seq {} on were noted covered by no seal "
        "(after seal {}) by an earlier run that stopped before they were sealed (a start that "
        "found them, or a writer replaying the spill directory); unless a "
        "seal covers them within {} ms, they are sealed then, by a seal marked late, which "
        "auditpipe verify names until it is accepted (--accept-late)",
        table_.name, table_location_, count, sid, runs.front().lo, find.after_no,
        late_grace.count());
    // With this start's own finds of the source, if any: a row in either
    // was unsealed as of the older seal, and seals since then are checked.
    std::vector<seal::SeqRun>& merged = candidates[sid];
    merged.insert(merged.end(), runs.begin(), runs.end());
    seal::merge_runs(merged);
    const auto own = after.find(sid);
    after[sid] = own == after.end() ? find.after_no : std::min(own->second, find.after_no);
  }
}

std::pair<std::vector<seal::SeqRun>, std::int64_t> SealWriter::uncovered(
    SqlConnection& c, std::int64_t source_id, std::int64_t lo,
    std::vector<seal::SeqRun> covered) const {
  const std::string data = dialect_.quote(table_.name);
  AscendingCoverage sealed_keys(std::move(covered));
  const auto keys =
      c.query_rows("SELECT seq FROM " + data + " WHERE source_id = ? AND seq >= ? ORDER BY seq",
                   {std::to_string(source_id), std::to_string(lo)});
  // The uncovered rows as runs of neighbouring rows (no covered row between),
  // each read back in one query when sealed late.
  std::vector<seal::SeqRun> runs;
  std::int64_t count = 0;
  bool extends = false;
  for (const auto& row : keys) {
    if (!row[0]) continue;
    const std::int64_t seq = std::stoll(*row[0]);
    const bool sealed = sealed_keys.covers(seq);
    const bool pooled = std::binary_search(recovered_.begin(), recovered_.end(),
                                           std::pair<std::int64_t, std::int64_t>{source_id, seq});
    if (sealed || pooled) {
      extends = false;
      continue;
    }
    if (extends) {
      runs.back().hi = seq;
    } else {
      runs.push_back({seq, seq});
    }
    extends = true;
    ++count;
  }
  return {std::move(runs), count};
}

void SealWriter::add_late_rows(SqlConnection& c, std::int64_t source_id,
                               const std::vector<seal::SeqRun>& runs,
                               const std::vector<seal::SeqRun>& sealed_since,
                               LateRows& late) const {
  const std::string data = dialect_.quote(table_.name);
  // `runs` ascend, and each one's rows are read in seq order.
  AscendingCoverage sealed_keys(sealed_since);
  SourceRuns keys;  // the seal's keys exactly
  for (const seal::SeqRun& run : runs) {
    const auto rows =
        c.query_rows(late.select + " FROM " + data +
                         " WHERE source_id = ? AND seq >= ? AND seq <= ? ORDER BY seq",
                     {std::to_string(source_id), std::to_string(run.lo), std::to_string(run.hi)});
    for (const auto& row : rows) {
      if (row.empty() || !row.back()) continue;
      const std::int64_t seq = std::stoll(*row.back());
      if (sealed_keys.covers(seq)) {
        ++late.sealed_meanwhile;
        continue;
      }
      encode_row(late.enc, *late.columns, row, source_id, seq);
      late.digest.add(late.enc.bytes());
      seal::append_fingerprint(late.row_hashes, seal::fingerprint(late.enc.bytes()));
      ++late.rows;
      keys.add(seq);
    }
  }
  keys.append_to(late.ranges, source_id);
}

void SealWriter::seal_late_when_due(SqlConnection& c, bool wait) noexcept {
  using Clock = std::chrono::steady_clock;
  if (wait) {
    Clock::time_point due;
    {
      detail::MutexLock lock(mutex_);
      if (late_candidates_.empty()) return;
      due = late_due_;
    }
    // close(): the run was shorter than the grace; what another process
    // still sealing them needs is given all the same.
    std::this_thread::sleep_until(due);
  }
  std::map<std::int64_t, std::vector<seal::SeqRun>> candidates;
  std::vector<ColumnSpec> columns;
  std::map<std::int64_t, std::int64_t> after;
  std::vector<UnsealedFinds::Find> finds;
  {
    detail::MutexLock lock(mutex_);
    if (late_candidates_.empty() || Clock::now() < late_due_) return;
    candidates = late_candidates_;
    columns = late_columns_;
    after = late_after_;
    finds = late_finds_;
  }
  // Kept until the late seal is queued: a failed read is tried again later
  // (its rows would otherwise be left to a start that may no longer look
  // that far back).
  const auto done = [&] {
    detail::MutexLock lock(mutex_);
    late_candidates_.clear();
    late_columns_.clear();
    late_finds_.clear();
  };
  try {
    LateRows late;
    late.digest = seal::RowsDigest(rows_key_);
    late.columns = &columns;
    late.select = "SELECT " + seal::read_back_select(
                                  dialect_.name, columns,
                                  [&](std::string_view name) { return dialect_.quote(name); });
    {
      ReadBackTransaction read_back(c, dialect_);
      for (const auto& [sid, runs] : candidates) {
        // What seals stored since the find hold of this source: another
        // process that was still sealing these rows has done so by now.
        add_late_rows(c, sid, runs, sealed_since(c, sid, after[sid]), late);
      }
      read_back.commit();
    }
    done();
    if (late.sealed_meanwhile > 0) {
      diagnostics()->info(
          "auditpipe: {}: {} of the rows found unsealed at start were sealed meanwhile (sent "
          "again and sealed by this process, as a rerun of a load does, or by another process "
          "sealing this table)",
          table_.name, late.sealed_meanwhile);
    }
    // Once their rows are sealed (or found sealed meanwhile), the finds
    // kept of them go.
    if (late.rows == 0) {
      forget_finds(c, finds);
      return;
    }
    diagnostics()->warn(
        "auditpipe: {} {}: {} rows found unsealed at start are sealed late ({}), by a seal "
        "that auditpipe verify names until it is accepted (--accept-late)",
        table_.name, table_location_, late.rows,
        // (Keys far apart make a run each: a line of kilobytes, else.)
        late.ranges.size() <= 200 ? late.ranges : late.ranges.substr(0, 197) + "...");
    if (seal_late(c, late)) forget_finds(c, finds);
  } catch (const std::exception& e) {
    detail::MutexLock lock(mutex_);
    late_due_ = Clock::now() + late_grace;
    diagnostics()->warn(
        "auditpipe: {}: the rows found unsealed at start could not be read back to be sealed "
        "late ({}); tried again in {} ms",
        table_.name, e.what(), late_grace.count());
  }
}

bool SealWriter::seal_late(SqlConnection& c, LateRows& late) {
  BatchSeal s;
  s.ranges = std::string(seal::late_prefix) + late.ranges;
  s.row_count = late.rows;
  s.rows_digest = late.digest.final_hex();
  s.row_hashes = std::move(late.row_hashes);
  std::uint64_t ticket = 0;
  {
    detail::MutexLock lock(mutex_);
    pending_.push_back(std::move(s));
    ticket = ++queued_;
  }
  // A failed statement keeps it pending, stored before any later seal.
  return !stored_by(c, ticket).has_value();
}

std::optional<std::string> SealWriter::backlog(SqlConnection& c) noexcept {
  {
    detail::MutexLock lock(mutex_);
    if (pending_.size() < max_pending) return std::nullopt;
  }
  store_pending(c, {max_pending, UINT64_MAX});
  detail::MutexLock lock(mutex_);
  // Another thread is storing them, and only behind (several writers
  // finishing small batches faster than one connection stores their
  // seals): wait for it to catch up rather than refuse the batch, which
  // the writer would report as a failed write and retry after a pause.
  const auto deadline = std::chrono::steady_clock::now() + backlog_wait;
  ++progress_waiters_;
  while (storing_ && pending_.size() >= max_pending) {
    if (progress_cv_.wait_until(mutex_, deadline) == std::cv_status::timeout) break;
  }
  --progress_waiters_;
  if (pending_.size() < max_pending) return std::nullopt;
  return "auditpipe: the seals of " + std::to_string(pending_.size()) + " batches of " +
         std::string(table_.name) + " wait to be stored (" +
         (last_error_.empty() ? std::string("they are stored more slowly than batches are written")
                              : last_error_) +
         "); batches are held until their rows can be sealed";
}

SealWriter::BatchSeal SealWriter::digest(const Batch& batch) const {
  std::vector<const RecordRef*> records;
  records.reserve(batch.records.size());
  for (const RecordRef& r : batch.records) records.push_back(&r);
  const auto by_key = [](const RecordRef* a, const RecordRef* b) {
    return a->source_id != b->source_id ? a->source_id < b->source_id : a->seq < b->seq;
  };
  // One producer's batch is in key order already.
  if (!std::is_sorted(records.begin(), records.end(), by_key)) {
    std::stable_sort(records.begin(), records.end(), by_key);
  }
  BatchSeal out;
  out.row_hashes.reserve(records.size() * 8);
  // The rows are encoded one after another and hashed 64 KiB at a time:
  // one row per call, Poly1305 took several times longer per byte.
  constexpr std::size_t hash_every = 64 * 1024;
  seal::RowEncoder enc;
  seal::RowsDigest digest(rows_key_);
  // The seal's keys, exactly: per source, its seqs as runs ("sid:0-499"
  // for the dense seqs of the producer path; "sid:0,118,240" for byte
  // offsets). A source's records are not contiguous across batches (the
  // ingest tool's and several writers' batches interleave), so a min-max
  // range would not tell the verifier which rows a seal holds.
  std::string& ranges = out.ranges;
  std::int64_t sid = 0, lo = 0, hi = -2;
  bool open_run = false;
  auto close_run = [&] {
    if (!open_run) return;
    ranges += std::to_string(lo);
    if (hi != lo) ranges += '-' + std::to_string(hi);
  };
  // The records are read once, here and by the batch's statement at once:
  // fetched ahead, they are read from cache instead of memory.
  constexpr std::size_t ahead = 2;
  const std::uint32_t record_size = batch.table.record_size;
  for (std::size_t i = 0; i < records.size(); ++i) {
    const RecordRef* r = records[i];
    if (i + ahead < records.size()) {
      const std::byte* next = records[i + ahead]->data;
      for (std::uint32_t at = 0; at < record_size; at += 64) __builtin_prefetch(next + at);
    }
    // A key twice in one batch: the table keeps the first (the insert is
    // idempotent), so the seal does.
    if (i > 0 && records[i - 1]->source_id == r->source_id && records[i - 1]->seq == r->seq) {
      continue;
    }
    if (enc.bytes().size() >= hash_every) {
      digest.add(enc.bytes());
      enc.clear();
    }
    const std::size_t row_at = enc.bytes().size();
    for (const Column& col : batch.table.columns) {
      if (is_null(r->data, col)) {
        enc.null();
      } else if (col.type == ColumnType::float64) {
        enc.float64(read_float64(r->data, col));
      } else if (col.type == ColumnType::text) {
        enc.text(read_text(r->data, col));
      } else {
        enc.integer(read_integer(r->data, col));
      }
    }
    enc.key(r->source_id, r->seq);
    seal::append_fingerprint(out.row_hashes, seal::fingerprint(enc.bytes().substr(row_at)));
    ++out.row_count;
    if (open_run && r->source_id == sid && seal::follows(hi, r->seq)) {
      hi = r->seq;
      continue;
    }
    close_run();
    if (!open_run || r->source_id != sid) {
      if (open_run) ranges += ';';
      ranges += std::to_string(r->source_id) + ':';
    } else {
      ranges += ',';
    }
    open_run = true;
    sid = r->source_id;
    lo = hi = r->seq;
  }
  close_run();
  digest.add(enc.bytes());
  out.rows_digest = digest.final_hex();
  return out;
}

namespace {

/// A batch's keys, per source as sorted runs.
std::map<std::int64_t, std::vector<seal::SeqRun>> runs_by_source(const Batch& batch) {
  std::vector<std::pair<std::int64_t, std::int64_t>> keys;
  keys.reserve(batch.records.size());
  for (const RecordRef& r : batch.records) keys.emplace_back(r.source_id, r.seq);
  std::sort(keys.begin(), keys.end());
  std::map<std::int64_t, std::vector<seal::SeqRun>> out;
  for (const auto& [sid, seq] : keys) {
    std::vector<seal::SeqRun>& runs = out[sid];
    if (!runs.empty() && seal::joins(runs.back().hi, seq)) {
      runs.back().hi = std::max(runs.back().hi, seq);
    } else {
      runs.push_back({seq, seq});
    }
  }
  return out;
}

/// `from` less the keys of `remove` (both sorted, disjoint runs).
std::vector<seal::SeqRun> without(const std::vector<seal::SeqRun>& from,
                                  const std::vector<seal::SeqRun>& remove) {
  std::vector<seal::SeqRun> out;
  std::size_t k = 0;
  for (seal::SeqRun run : from) {
    bool left = true;  // some of `run` is not removed
    while (k < remove.size() && remove[k].hi < run.lo) ++k;
    for (std::size_t m = k; m < remove.size() && remove[m].lo <= run.hi; ++m) {
      if (remove[m].lo > run.lo) out.push_back({run.lo, remove[m].lo - 1});
      if (remove[m].hi >= run.hi) {
        left = false;
        break;
      }
      run.lo = std::max(run.lo, remove[m].hi + 1);  // below run.hi, so + 1 fits
    }
    if (left) out.push_back(run);
  }
  return out;
}

}  // namespace

SealWriter::StoredSeal SealWriter::digest_stored(SqlConnection& c, const Batch& batch,
                                                 const BatchSeal& as_sent) const {
  std::vector<ColumnSpec> columns;
  {
    detail::MutexLock lock(mutex_);
    columns = columns_;
  }
  // The batch's keys, each once, in the order digest() fingerprinted them.
  std::vector<std::pair<std::int64_t, std::int64_t>> keys;
  keys.reserve(batch.records.size());
  for (const RecordRef& r : batch.records) keys.emplace_back(r.source_id, r.seq);
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  const std::string select =
      "SELECT " + seal::read_back_select(dialect_.name, columns,
                                         [&](std::string_view n) { return dialect_.quote(n); });
  const std::string data = dialect_.quote(table_.name);
  StoredSeal out;
  BatchSeal& seal = out.seal;
  seal::RowsDigest digest(rows_key_);
  seal::RowEncoder enc;
  std::string fingerprint;
  std::size_t next_key = 0;
  std::int64_t read = 0;
  {
    ReadBackTransaction read_back(c, dialect_);
    for (const auto& [sid, runs] : runs_by_source(batch)) {
      SourceRuns sealed;
      for (const seal::SeqRun& run : runs) {
        for (const auto& row :
             c.query_rows(select + " FROM " + data +
                              " WHERE source_id = ? AND seq >= ? AND seq <= ? ORDER BY seq",
                          {std::to_string(sid), std::to_string(run.lo), std::to_string(run.hi)})) {
          if (row.empty() || !row.back()) continue;
          const std::int64_t seq = std::stoll(*row.back());
          while (next_key < keys.size() && keys[next_key] < std::pair{sid, seq}) ++next_key;
          if (next_key == keys.size() || keys[next_key] != std::pair{sid, seq}) continue;
          ++read;
          encode_row(enc, columns, row, sid, seq);
          fingerprint.clear();
          seal::append_fingerprint(fingerprint, seal::fingerprint(enc.bytes()));
          if (as_sent.row_hashes.compare(next_key * 8, 8, fingerprint) != 0) {
            // Not what this batch sent: a row stored before under the key
            // (its own seal covers it), or one put there by someone else
            // (which verify then reports). Not this batch's to vouch for.
            ++out.kept;
            continue;
          }
          digest.add(enc.bytes());
          seal.row_hashes += fingerprint;
          ++seal.row_count;
          sealed.add(seq);
        }
      }
      sealed.append_to(seal.ranges, sid);
    }
    read_back.commit();
  }
  seal.rows_digest = digest.final_hex();
  out.missing = static_cast<std::int64_t>(keys.size()) - read;
  return out;
}

void SealWriter::keep_replayed(SqlConnection& c, const Batch& batch) noexcept {
  std::int64_t after = 0;
  {
    detail::MutexLock lock(mutex_);
    if (!finds_kept_) return;
    after = newest_no_;
  }
  std::vector<UnsealedFinds::Find> finds;
  for (auto& [sid, runs] : runs_by_source(batch)) {
    finds.push_back({sid, after, std::move(runs), {}});
  }
  {
    // A batch tried again (its statement failed, or its seal was not
    // stored) is noted already: noted once, not once per try while a
    // server refuses it for hours.
    detail::MutexLock lock(mutex_);
    for (const ReplayNote& note : replay_notes_) {
      std::erase_if(finds, [&note](const UnsealedFinds::Find& f) {
        return note.find.source_id == f.source_id && note.find.runs == f.runs;
      });
    }
  }
  if (finds.empty()) return;
  try {
    finds_.keep(c, finds);
  } catch (const std::exception& e) {
    // Stored all the same: a replay held up by its note (a full disk, a
    // table without the grant) would hold up every batch behind it. A
    // crash before its seal then leaves rows verify calls inserted until
    // the next start seals them late.
    bool first = false;
    {
      detail::MutexLock lock(mutex_);
      first = !note_failure_told_;
      note_failure_told_ = true;
    }
    if (first) {
      diagnostics()->warn(
          "auditpipe: {} {}: could not note a replayed batch's keys in {} before storing it "
          "({}); replayed batches are stored without (a crash before their seal leaves rows "
          "auditpipe verify reports as inserted until the next start seals them late)",
          table_.name, table_location_, finds_.name(), e.what());
    }
    return;
  }
  detail::MutexLock lock(mutex_);
  for (UnsealedFinds::Find& find : finds) {
    std::vector<seal::SeqRun> unsettled = find.runs;
    replay_notes_.push_back({std::move(find), std::move(unsettled)});
  }
}

void SealWriter::settle_replayed(SqlConnection& c, const Batch& batch) noexcept {
  std::vector<UnsealedFinds::Find> done;
  {
    detail::MutexLock lock(mutex_);
    if (replay_notes_.empty()) return;
  }
  const auto settled = runs_by_source(batch);
  {
    detail::MutexLock lock(mutex_);
    for (ReplayNote& note : replay_notes_) {
      const auto it = settled.find(note.find.source_id);
      if (it != settled.end()) note.unsettled = without(note.unsettled, it->second);
    }
    for (auto it = replay_notes_.begin(); it != replay_notes_.end();) {
      if (!it->unsettled.empty()) {
        ++it;
        continue;
      }
      done.push_back(std::move(it->find));
      it = replay_notes_.erase(it);
    }
  }
  for (const UnsealedFinds::Find& find : done) {
    try {
      finds_.forget(c, find);
    } catch (const std::exception& e) {
      // Left there, verify names it ("kept by a writer", exit 3) until a
      // start removes it.
      diagnostics()->warn(
          "auditpipe: {} {}: could not remove a replayed batch's note from {} (its rows are "
          "sealed; the writer's account needs DELETE there): {}",
          table_.name, table_location_, finds_.name(), e.what());
    }
  }
}

std::uint64_t SealWriter::seal(SqlConnection& c, BatchSeal batch_seal) noexcept {
  std::uint64_t ticket = 0;
  batch_seal.queued_at = std::chrono::steady_clock::now();
  {
    detail::MutexLock lock(mutex_);
    pending_.push_back(std::move(batch_seal));
    ticket = ++queued_;
    if (storer_running_) {
      storer_cv_.notify_one();
      return ticket;
    }
  }
  store_pending(c);
  seal_late_when_due(c, false);
  return ticket;
}

std::optional<std::string> SealWriter::stored_by(SqlConnection& c, std::uint64_t ticket) noexcept {
  for (;;) {
    {
      detail::MutexLock lock(mutex_);
      // The thread storing now stores this seal too, unless a statement
      // fails: it notifies after each seal, and when it stops either way.
      ++progress_waiters_;
      while (storing_ && stored_ < ticket) progress_cv_.wait(mutex_);
      --progress_waiters_;
      if (stored_ >= ticket) return std::nullopt;
    }
    bool stored = false;
    try {
      stored = store_pending(c, {1, ticket});
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    detail::MutexLock lock(mutex_);
    if (stored_ >= ticket) return std::nullopt;
    // Failed, here or on the thread that was storing as this one looked.
    if (!stored) return last_error_.empty() ? std::string("the seal was not stored") : last_error_;
    if (pending_.empty()) return std::string("the seal was dropped (the sink is closing)");
  }
}

void SealWriter::start_storer(Lender lend) {
  detail::MutexLock lock(mutex_);
  if (storer_running_ || stop_storer_) return;
  lend_ = std::move(lend);
  try {
    storer_ = std::thread([this] { run_storer(); });
    storer_running_ = true;
  } catch (const std::system_error&) {
    // No thread to be had: the writers store the seals themselves.
  }
}

void SealWriter::stop_storer() noexcept {
  {
    detail::MutexLock lock(mutex_);
    stop_storer_ = true;
    storer_running_ = false;
  }
  storer_cv_.notify_all();
  if (storer_.joinable()) storer_.join();
  std::vector<std::unique_ptr<DigestThread>> idle;
  {
    detail::MutexLock lock(digest_mutex_);
    idle.swap(idle_digest_threads_);
  }
  // ended here, outside the lock
}

std::unique_ptr<DigestThread> SealWriter::take_digest_thread() noexcept {
  {
    detail::MutexLock lock(digest_mutex_);
    if (!idle_digest_threads_.empty()) {
      std::unique_ptr<DigestThread> kept = std::move(idle_digest_threads_.back());
      idle_digest_threads_.pop_back();
      return kept;
    }
  }
  try {
    return std::make_unique<DigestThread>(*this);
  } catch (const std::exception&) {
    return nullptr;  // no thread (or memory) to be had
  }
}

void SealWriter::give_back(std::unique_ptr<DigestThread> thread) noexcept {
  detail::MutexLock lock(digest_mutex_);
  try {
    idle_digest_threads_.push_back(std::move(thread));
  } catch (const std::bad_alloc&) {
    // ended as it goes out of scope
  }
}

void SealWriter::run_storer() {
  using Clock = std::chrono::steady_clock;
  // After a failed statement: 100 ms, doubling to 5 s, so that an outage
  // costs a warning every few seconds instead of a statement per batch.
  // With no connection idle (every one busy writing), another look soon.
  constexpr std::chrono::milliseconds first_pause{100}, longest_pause{5000}, busy_pause{20};
  std::chrono::milliseconds pause = first_pause;
  Clock::time_point retry_at{};
  for (;;) {
    {
      detail::MutexLock lock(mutex_);
      for (;;) {
        if (stop_storer_) return;
        // Late sealing once due, and (like the pending seals) not before
        // the pause after a failure or a busy pool.
        const bool late_waits = !late_candidates_.empty();
        const Clock::time_point late_at = std::max(late_due_, retry_at);
        if (late_waits && Clock::now() >= late_at) break;
        const Clock::time_point now = Clock::now();
        if (!pending_.empty() && !storing_ && now >= retry_at && group_due_locked(now)) break;
        Clock::time_point until = Clock::time_point::max();
        if (!pending_.empty() && !storing_) {
          until = std::max(retry_at, pending_.front().queued_at + linger);
        }
        if (late_waits) until = std::min(until, late_at);
        if (until == Clock::time_point::max()) {
          storer_cv_.wait(mutex_);
        } else {
          storer_cv_.wait_until(mutex_, until);
        }
      }
    }
    bool lent = false, stored = true;
    try {
      lent = lend_([&](SqlConnection& c) {
        seal_late_when_due(c, false);
        return stored = store_pending(c);
      });
    } catch (const std::exception&) {
      // The pool is cancelled or closed: close() stops this thread next,
      // and reports what is pending with the last statement's error.
      lent = true;
      stored = false;
    }
    if (!lent) {
      retry_at = Clock::now() + busy_pause;
    } else if (!stored) {
      retry_at = Clock::now() + pause;
      pause = std::min(pause * 2, longest_pause);
    } else {
      pause = first_pause;
    }
  }
}

bool SealWriter::store_pending(SqlConnection& c, const Enough& enough) {
  const auto done_locked = [&]() AUDITPIPE_REQUIRES(mutex_) {
    return pending_.size() < enough.pending_below || stored_ >= enough.stored_through;
  };
  {
    detail::MutexLock lock(mutex_);
    if (storing_ || done_locked()) return true;
    storing_ = true;
  }
  for (;;) {
    // Only this thread pops, and a deque keeps the front's address while
    // others push at the back.
    std::vector<BatchSeal*> group;
    std::size_t waiting = 0;
    {
      detail::MutexLock lock(mutex_);
      if (done_locked()) {
        storing_ = false;
        storer_cv_.notify_all();
        note_progress_locked();
        return true;
      }
      waiting = pending_.size();
      std::size_t bytes = 0;
      for (BatchSeal& p : pending_) {
        if (group.size() == group_max ||
            (!group.empty() && bytes + p.row_hashes.size() > group_bytes))
          break;
        group.push_back(&p);
        bytes += p.row_hashes.size();
      }
    }
    if (group.size() >= 2 && store_group(c, group)) {
      detail::MutexLock lock(mutex_);
      pending_.erase(pending_.begin(),
                     pending_.begin() + static_cast<std::ptrdiff_t>(group.size()));
      last_error_.clear();
      note_progress_locked();
      continue;
    }
    BatchSeal* const front = group.front();
    try {
      store_one(c, *front);
    } catch (const std::exception& e) {
      // Kept, and stored before any later seal: the chain never skips.
      detail::MutexLock lock(mutex_);
      storing_ = false;
      storer_cv_.notify_all();
      note_progress_locked();
      last_error_ = e.what();
      diagnostics()->warn("auditpipe: a seal of {} not stored yet ({} batches pending): {}",
                          table_.name, waiting, e.what());
      return false;
    }
    detail::MutexLock lock(mutex_);
    pending_.pop_front();
    last_error_.clear();
    note_progress_locked();
  }
}

void SealWriter::note_progress_locked() {
  // Nobody waits in all but a backlog: no system call per seal then.
  if (progress_waiters_ != 0) progress_cv_.notify_all();
}

bool SealWriter::group_due_locked(std::chrono::steady_clock::time_point now) const {
  // Someone waits for a seal (a durable pool's writer, a backlog), or
  // enough gathered, or the oldest has waited long enough.
  return progress_waiters_ > 0 || pending_.size() >= group_max ||
         now >= pending_.front().queued_at + linger;
}

std::int64_t SealWriter::now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::pair<std::int64_t, std::string> SealWriter::chain_end() const {
  detail::MutexLock lock(mutex_);
  return {newest_no_ + 1, newest_digest_};
}

std::string SealWriter::link(BatchSeal& p, std::int64_t no, const std::string& prev,
                             std::int64_t now) const {
  // The same seal_no as a try before: the same sealed_at, so the same
  // digest, which the read-back then recognises as this seal's.
  if (p.tried_no != no) p.tried_at = now;
  p.tried_no = no;
  return seal::seal_digest(
      settings_.mode, key_,
      seal::seal_message(prev, no, p.tried_at, p.ranges, p.row_count, p.rows_digest));
}

void SealWriter::note_stored(std::int64_t first, std::int64_t last, const std::string& digest) {
  {
    detail::MutexLock lock(mutex_);
    newest_no_ = last;
    newest_digest_ = digest;
    stored_ += static_cast<std::uint64_t>(last - first + 1);
    if (publish_tells(first, last)) told_no_ = last;
  }
  publish(first, last, digest);
}

bool SealWriter::store_group(SqlConnection& c, const std::vector<BatchSeal*>& group) {
  const auto [first, first_prev] = chain_end();
  const std::int64_t now = now_us();
  std::vector<std::string> params;
  params.reserve(7 * group.size());
  std::string prev = first_prev, digest;
  for (std::size_t i = 0; i < group.size(); ++i) {
    BatchSeal& p = *group[i];
    const std::int64_t no = first + static_cast<std::int64_t>(i);
    digest = link(p, no, prev, now);
    params.insert(params.end(), {std::to_string(no), p.ranges, std::to_string(p.row_count), prev,
                                 digest, std::to_string(p.tried_at), p.row_hashes});
    prev = digest;
  }
  try {
    c.query_rows(group_inserts_[group.size()], params);
  } catch (const std::exception& e) {
    diagnostics()->debug(
        "auditpipe: {} seals of {} in one statement failed ({}): stored one at a time",
        group.size(), table_.name, e.what());
    return false;
  }
  note_stored(first, first + static_cast<std::int64_t>(group.size()) - 1, digest);
  return true;
}

void SealWriter::store_one(SqlConnection& c, BatchSeal& p) {
  for (int attempt = 0;; ++attempt) {
    const auto [no, prev] = chain_end();
    const std::string digest = link(p, no, prev, now_us());
    const auto inserted =
        c.query_rows(insert_, {std::to_string(no), p.ranges, std::to_string(p.row_count), prev,
                               digest, std::to_string(p.tried_at), p.row_hashes});
    bool stored = returning_ && !inserted.empty();
    if (!stored) {
      const auto back = c.query_rows(read_back_, {std::to_string(no)});
      stored = !back.empty() && back[0][0] == digest;
    }
    if (stored) {
      note_stored(no, no, digest);
      return;
    }
    // Another process sealing this table stored seal `no` first: continue
    // the chain from the table's newest seal.
    if (attempt >= 1000) {
      throw error("auditpipe: seal " + std::to_string(no) + " of " + std::string(table_.name) +
                  ": 1000 tries lost to other processes sealing the table");
    }
    const auto newest = c.query_rows(newest_query_, {});
    if (newest.empty() || !newest[0][0] || !newest[0][1]) {
      throw error("auditpipe: seal " + std::to_string(no) + " of " + std::string(table_.name) +
                  " was not stored, and the seals table is empty");
    }
    detail::MutexLock lock(mutex_);
    newest_no_ = newest_seal_no(*newest[0][0], table_.name);
    newest_digest_ = *newest[0][1];
    if (!told_of_others_) {
      told_of_others_ = true;
      diagnostics()->info(
          "auditpipe: another process also seals {}: this one's seals continue its chain "
          "(from seal {})",
          table_.name, newest_no_);
    }
  }
}

std::string SealWriter::anchor_tmp() const {
  // Several processes may seal one table with one anchor file: each its
  // own temporary file, renamed over the anchor atomically.
  return settings_.anchor_file + ".tmp." + std::to_string(::getpid());
}

bool SealWriter::publish_tells(std::int64_t first, std::int64_t no) {
  return no / 1000 != (first - 1) / 1000;
}

void SealWriter::publish(std::int64_t first, std::int64_t no, const std::string& digest) {
  if (publish_tells(first, no)) {
    diagnostics()->info("auditpipe: {} sealed through seal {} digest {}", table_.name, no, digest);
  }
  if (settings_.anchor_file.empty()) return;
  const std::string tmp = anchor_tmp();
  // The errno of the step that failed, taken right there: a stream's
  // failure left an unrelated one ("Inappropriate ioctl for device").
  int failed = 0;
  if (std::FILE* f = std::fopen(tmp.c_str(), "w"); f == nullptr) {
    failed = errno;
  } else {
    if (std::fprintf(f, "%lld %s\n", static_cast<long long>(no), digest.c_str()) < 0)
      failed = errno != 0 ? errno : EIO;
    if (std::fclose(f) != 0 && failed == 0) failed = errno != 0 ? errno : EIO;
    if (failed == 0 && std::rename(tmp.c_str(), settings_.anchor_file.c_str()) != 0) failed = errno;
    if (failed != 0) std::remove(tmp.c_str());
  }
  note_anchor_write(failed);
}

void SealWriter::note_anchor_write(int failed) {
  const auto now = std::chrono::steady_clock::now();
  std::uint64_t failures = 0;
  bool say = false;
  {
    detail::MutexLock lock(mutex_);
    if (failed == 0) {
      failures = anchor_failures_;
      anchor_failures_ = 0;
      say = failures > 0;
    } else {
      failures = ++anchor_failures_;
      // Every seal tries (up to ten a second): said once a minute.
      say = failures == 1 || now - anchor_warned_at_ >= std::chrono::minutes(1);
      if (say) anchor_warned_at_ = now;
    }
  }
  if (!say) return;
  if (failed == 0) {
    diagnostics()->info("auditpipe: seal anchor file {} written again ({} writes had failed)",
                        settings_.anchor_file, failures);
  } else {
    diagnostics()->warn(
        "auditpipe: cannot write seal anchor file {}: {} ({} failed in a row; said at most once a "
        "minute until a write succeeds)",
        settings_.anchor_file, std::strerror(failed), failures);
  }
}

void SealWriter::close(SqlConnection* idle) noexcept {
  {
    detail::MutexLock lock(mutex_);
    if (closed_) return;  // the sink's destructor closes it again
    closed_ = true;
  }
  if (idle != nullptr) {
    seal_late_when_due(*idle, true);
    store_pending(*idle);
  }
  detail::MutexLock lock(mutex_);
  if (!late_candidates_.empty()) {
    diagnostics()->warn(
        "auditpipe: {}: the rows found unsealed at start were not sealed late (no connection "
        "at close); the next start looks for them again",
        table_.name);
  }
  if (stored_ > 0 && told_no_ != newest_no_) {  // not said twice
    diagnostics()->info("auditpipe: {} sealed through seal {} digest {}", table_.name, newest_no_,
                        newest_digest_);
  }
  if (!pending_.empty()) {
    diagnostics()->warn(
        "auditpipe: {} seals of {} could not be stored ({}): their rows are stored, not yet "
        "sealed (auditpipe verify reports them so)",
        pending_.size(), table_.name, last_error_);
  }
}

SealStats SealWriter::stats() const {
  detail::MutexLock lock(mutex_);
  SealStats s;
  s.newest = static_cast<std::uint64_t>(newest_no_);
  s.stored = stored_;
  s.pending = pending_.size();
  return s;
}

}  // namespace auditpipe
