// See seal_writer.h.
#include "seal_writer.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <vector>

#include <spdlog/spdlog.h>

#include "auditpipe/diagnostics.h"
#include "auditpipe/sink/sql_sink.h"
#include "auditpipe/status.h"

namespace auditpipe {

namespace {

/// The seals checked for a crashed run's tail: as many as verify's default
/// --unsealed-window, since writers finish their batches out of order.
constexpr int tail_seals = 16;

/// Sources whose tail is counted at start (each one indexed range query).
constexpr std::size_t tail_sources = 64;

std::string big_text(const SqlDialect& dialect) {
  // MySQL's TEXT holds 64 KiB, less than the ranges and fingerprints of a
  // large batch of byte-offset seqs; its text_type gives MEDIUMTEXT here.
  return dialect.text_type != nullptr ? dialect.text_type((1u << 24) - 1) : std::string("TEXT");
}

}  // namespace

SealWriter::SealWriter(const SqlDialect& dialect, const seal::SealSettings& settings,
                       const TableDescriptor& table, std::string table_location)
    : dialect_(dialect),
      settings_(settings),
      table_(table),
      table_location_(std::move(table_location)) {
  if (settings_.mode == seal::Mode::hmac) {
    std::string key_file = settings_.key_file;
    if (key_file.empty()) {
      if (const char* env = std::getenv("AUDITPIPE_SEAL_KEY_FILE")) key_file = env;
    }
    key_ = seal::read_key_file(key_file);
  }
  const std::string seals = dialect_.quote(seal::seals_table(table_.name));
  // Idempotent: a seal whose insert failed ambiguously (stored, the answer
  // lost) is inserted again without an error, and the read-back finds it.
  // Where the insert says whether it stored the row (RETURNING: PostgreSQL,
  // SQLite), the read-back runs only when it did not; MySQL has no such
  // answer to ON DUPLICATE KEY UPDATE, so it reads back every seal.
  insert_ = "INSERT INTO " + seals +
            " (seal_no, ranges, row_count, prev_digest, digest, sealed_at, row_hashes) VALUES "
            "(?, ?, ?, ?, ?, ?, ?)";
  insert_ += dialect_.idempotent_insert == SqlDialect::IdempotentInsert::on_duplicate_key_update
                 ? " ON DUPLICATE KEY UPDATE seal_no = seal_no"
                 : " ON CONFLICT (seal_no) DO NOTHING RETURNING seal_no";
  returning_ = dialect_.idempotent_insert == SqlDialect::IdempotentInsert::on_conflict_do_nothing;
  read_back_ = "SELECT digest FROM " + seals + " WHERE seal_no = ?";
  newest_query_ = "SELECT seal_no, digest FROM " + seals + " ORDER BY seal_no DESC LIMIT 1";
}

void SealWriter::prepare(SqlConnection& c, bool create_table) {
  const std::string seals = dialect_.quote(seal::seals_table(table_.name));
  if (create_table) {
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
      c.execute_ddl(create);
    }
  }
  std::vector<std::vector<std::optional<std::string>>> newest;
  try {
    c.query_rows(
        "SELECT seal_no, ranges, row_count, prev_digest, digest, sealed_at, row_hashes "
        "FROM " +
            seals + " WHERE seal_no = 0",
        {});
    newest = c.query_rows(newest_query_, {});
  } catch (const std::exception& e) {
    throw error("auditpipe: seal=: the seals table " + seals + " " + table_location_ +
                " is missing or lacks columns (seal_no, ranges, row_count, prev_digest, digest, "
                "sealed_at, row_hashes): " +
                e.what());
  }
  {
    detail::MutexLock lock(mutex_);
    if (ready_) return;
    ready_ = true;
    if (newest.empty() || !newest[0][0] || !newest[0][1]) {
      newest_no_ = 0;
      newest_digest_ = seal::genesis_digest(table_.name);
    } else {
      newest_no_ = std::stoll(*newest[0][0]);
      newest_digest_ = *newest[0][1];
    }
  }
  try {
    check_tail(c, seals);
  } catch (const std::exception& e) {
    diagnostics()->warn("auditpipe: could not check {} for unsealed rows: {}", table_.name,
                        e.what());
  }
}

void SealWriter::check_tail(SqlConnection& c, const std::string& seals) {
  const std::string data = dialect_.quote(table_.name);
  const auto last = c.query_rows(
      "SELECT ranges FROM " + seals + " ORDER BY seal_no DESC LIMIT " + std::to_string(tail_seals),
      {});
  if (last.empty()) {
    if (!c.query_rows("SELECT 1 FROM " + data + " LIMIT 1", {}).empty()) {
      diagnostics()->warn(
          "auditpipe: {} {} holds rows but no seals yet (rows stored before sealing was "
          "turned on, or by a run that stopped before its first seal): no seal covers them, "
          "and auditpipe verify reports them as not yet sealed, or as inserted where they fall "
          "among keys sealed later (seal a new table instead)",
          table_.name, table_location_);
    }
    return;
  }
  // Per source, the lowest seq among the newest seals and the keys they
  // seal from there on. Writers finish batches out of order, so a crashed
  // run's unsealed rows may sit below sealed ones; counting the rows from
  // that lowest seq on finds them, as long as no older seal reaches above
  // it (verify's --unsealed-window makes the same assumption).
  struct Span {
    std::int64_t lo = 0;
    std::int64_t keys = 0;
  };
  std::map<std::int64_t, Span> spans;
  for (const auto& row : last) {
    if (!row[0]) continue;
    for (const auto& [sid, items] : seal::split_sources(*row[0])) {
      for (const seal::SeqRun& run : seal::parse_runs(items)) {
        auto [it, fresh] = spans.emplace(sid, Span{run.lo, 0});
        it->second.lo = std::min(it->second.lo, run.lo);
        it->second.keys += run.hi - run.lo + 1;
      }
    }
  }
  std::size_t checked = 0;
  for (const auto& [sid, span] : spans) {
    if (++checked > tail_sources) break;
    const auto n =
        c.query_rows("SELECT COUNT(*) FROM " + data + " WHERE source_id = ? AND seq >= ?",
                     {std::to_string(sid), std::to_string(span.lo)});
    const std::int64_t unsealed = (n.empty() || !n[0][0] ? 0 : std::stoll(*n[0][0])) - span.keys;
    if (unsealed <= 0) continue;
    // Not sealed here: a row this run does not store itself cannot be told
    // from one someone inserted, and sealing it would vouch for it.
    diagnostics()->warn(
        "auditpipe: {} {}: {} rows of source_id {} from seq {} on are covered by none of its "
        "newest seals, and are not sealed (a run that stopped between storing rows and sealing "
        "them, or one still writing). auditpipe seals only rows it stores itself (a batch "
        "replayed from the spill directory or the durable pool is sealed when stored again), "
        "since it cannot tell the others from rows someone inserted; auditpipe verify reports "
        "them as not yet sealed.",
        table_.name, table_location_, unsealed, sid, span.lo);
  }
}

std::optional<std::string> SealWriter::backlog(SqlConnection& c) noexcept {
  {
    detail::MutexLock lock(mutex_);
    if (pending_.size() < max_pending) return std::nullopt;
  }
  store_pending(c);
  detail::MutexLock lock(mutex_);
  if (pending_.size() < max_pending) return std::nullopt;
  return "auditpipe: the seals of " + std::to_string(pending_.size()) + " batches of " +
         std::string(table_.name) + " wait to be stored (" + last_error_ +
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
    std::sort(records.begin(), records.end(), by_key);
  }
  seal::RowEncoder enc;
  BatchSeal out;
  out.rows.reserve(records.size());
  for (const RecordRef* r : records) {
    enc.clear();
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
    out.rows.push_back({r->source_id, r->seq, seal::row_hash(enc.bytes())});
  }
  return out;
}

SealWriter::Seal SealWriter::merge(const std::vector<const BatchSeal*>& parts) {
  const auto by_key = [](const SealedRow& a, const SealedRow& b) {
    return a.source_id != b.source_id ? a.source_id < b.source_id : a.seq < b.seq;
  };
  std::vector<SealedRow> merged;
  const std::vector<SealedRow>* rows = &parts.front()->rows;
  if (parts.size() > 1) {
    std::size_t n = 0;
    for (const BatchSeal* part : parts) n += part->rows.size();
    merged.reserve(n);
    for (const BatchSeal* part : parts) {
      merged.insert(merged.end(), part->rows.begin(), part->rows.end());
    }
    std::stable_sort(merged.begin(), merged.end(), by_key);
    // A batch stored twice (retried after an answer was lost) holds the
    // same rows; the first is what the table kept.
    merged.erase(std::unique(merged.begin(), merged.end(),
                             [](const SealedRow& a, const SealedRow& b) {
                               return a.source_id == b.source_id && a.seq == b.seq;
                             }),
                 merged.end());
    rows = &merged;
  }
  Seal seal;
  seal.row_hashes.reserve(rows->size() * 8);
  seal::RowsDigest digest;
  // The seal's keys, exactly: per source, its seqs as runs ("sid:0-499"
  // for the dense seqs of the producer path; "sid:0,118,240" for byte
  // offsets). A source's records are not contiguous across seals (the
  // ingest tool's and several writers' batches interleave), so a min-max
  // range would not tell the verifier which rows a seal holds.
  std::string& ranges = seal.ranges;
  std::int64_t sid = 0, lo = 0, hi = -2;
  bool open_run = false;
  auto close_run = [&] {
    if (!open_run) return;
    ranges += std::to_string(lo);
    if (hi != lo) ranges += '-' + std::to_string(hi);
  };
  for (const SealedRow& r : *rows) {
    r.hash.append_fingerprint(seal.row_hashes);
    digest.add(r.hash);
    if (open_run && r.source_id == sid && r.seq == hi + 1) {
      hi = r.seq;
      continue;
    }
    close_run();
    if (!open_run || r.source_id != sid) {
      if (open_run) ranges += ';';
      ranges += std::to_string(r.source_id) + ':';
    } else {
      ranges += ',';
    }
    open_run = true;
    sid = r.source_id;
    lo = hi = r.seq;
  }
  close_run();
  seal.rows_digest = digest.final_hex();
  seal.row_count = static_cast<std::int64_t>(rows->size());
  return seal;
}

void SealWriter::seal(SqlConnection& c, BatchSeal batch_seal) noexcept {
  {
    detail::MutexLock lock(mutex_);
    pending_.push_back(std::move(batch_seal));
  }
  store_pending(c);
}

void SealWriter::store_pending(SqlConnection& c) {
  {
    detail::MutexLock lock(mutex_);
    if (storing_ || pending_.empty()) return;
    storing_ = true;
  }
  for (;;) {
    // The front batches, up to max_seal_rows rows (at least one batch):
    // only this thread pops, and a deque keeps their addresses while
    // others push at the back.
    std::vector<const BatchSeal*> parts;
    std::size_t waiting = 0;
    {
      detail::MutexLock lock(mutex_);
      if (pending_.empty()) {
        storing_ = false;
        return;
      }
      std::size_t rows = 0;
      for (const BatchSeal& b : pending_) {
        if (!parts.empty() && rows + b.rows.size() > max_seal_rows) break;
        parts.push_back(&b);
        rows += b.rows.size();
      }
      waiting = pending_.size();
    }
    try {
      store_one(c, merge(parts));
    } catch (const std::exception& e) {
      // Kept, and stored before any later seal: the chain never skips.
      detail::MutexLock lock(mutex_);
      storing_ = false;
      last_error_ = e.what();
      diagnostics()->warn("auditpipe: a seal of {} not stored yet ({} batches pending): {}",
                          table_.name, waiting, e.what());
      return;
    }
    detail::MutexLock lock(mutex_);
    for (std::size_t i = 0; i < parts.size(); ++i) pending_.pop_front();
    last_error_.clear();
  }
}

void SealWriter::store_one(SqlConnection& c, const Seal& p) {
  for (int attempt = 0;; ++attempt) {
    std::int64_t no = 0;
    std::string prev;
    {
      detail::MutexLock lock(mutex_);
      no = newest_no_ + 1;
      prev = newest_digest_;
    }
    const std::string digest = seal::seal_digest(
        settings_.mode, key_, seal::seal_message(prev, no, p.ranges, p.row_count, p.rows_digest));
    const auto now_us = std::chrono::duration_cast<std::chrono::microseconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
    const auto inserted =
        c.query_rows(insert_, {std::to_string(no), p.ranges, std::to_string(p.row_count), prev,
                               digest, std::to_string(now_us), p.row_hashes});
    bool stored = returning_ && !inserted.empty();
    if (!stored) {
      const auto back = c.query_rows(read_back_, {std::to_string(no)});
      stored = !back.empty() && back[0][0] == digest;
    }
    if (stored) {
      {
        detail::MutexLock lock(mutex_);
        newest_no_ = no;
        newest_digest_ = digest;
        ++stored_;
      }
      publish(no, digest);
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
    newest_no_ = std::stoll(*newest[0][0]);
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

void SealWriter::publish(std::int64_t no, const std::string& digest) {
  if (no % 1000 == 0) {
    diagnostics()->info("auditpipe: {} sealed through seal {} digest {}", table_.name, no, digest);
  }
  if (settings_.anchor_file.empty()) return;
  const std::string tmp = settings_.anchor_file + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << no << ' ' << digest << '\n';
  }
  if (std::rename(tmp.c_str(), settings_.anchor_file.c_str()) != 0) {
    diagnostics()->warn("auditpipe: cannot write seal anchor file {}", settings_.anchor_file);
  }
}

void SealWriter::close(SqlConnection* idle) noexcept {
  {
    detail::MutexLock lock(mutex_);
    if (closed_) return;  // the sink's destructor closes it again
    closed_ = true;
  }
  if (idle != nullptr) store_pending(*idle);
  detail::MutexLock lock(mutex_);
  if (stored_ > 0) {
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
