// The checkpoint table in each dialect (see checkpoint_store.h). Values are
// bound as parameters, never spliced into the statement: a source name is
// a path the user chose.
#include "checkpoint_store.h"

#include <chrono>
#include <string_view>

#include "auditpipe/status.h"
#include "source_identity.h"

namespace auditpipe::ingest {
namespace {

constexpr std::string_view checkpoint_columns =
    "target_table, source_id, source_name, prefix_bytes, bytes_done, lines_done, records_done, "
    "rejects, salt, grown_bytes, grown_id, updated_at";

std::uint64_t to_u64(const std::optional<std::string>& v) {
  return v ? std::stoull(*v) : 0;
}

std::string now_text() {
  // Milliseconds: candidates() orders by it, and a rotated input's
  // successor is often written within the same second as its last save.
  return std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count());
}

}  // namespace

CheckpointStore::CheckpointStore(Database& db, std::string target_table,
                                 std::string checkpoint_table)
    : db_(db),
      target_table_(std::move(target_table)),
      checkpoint_table_(std::move(checkpoint_table)) {
  const bool mysql = db_.dialect() == "mysql";
  const std::string t = db_.quote(checkpoint_table_);
  // The name is a path: MySQL keys cannot be that long, and need not be (the
  // key is the table and the id).
  const std::string name_type = mysql ? "VARCHAR(1024)" : "TEXT";
  const std::string integer = db_.dialect() == "sqlite" ? "INTEGER" : "BIGINT";
  // Created only where it cannot be read: a loader's account that may use
  // the table but not create tables (CREATE on the schema, on PostgreSQL)
  // was refused though the table was there.
  std::string unread;
  try {
    db_.query("SELECT target_table FROM " + t + " WHERE 1 = 0");
  } catch (const error& e) {
    unread = e.what();
  }
  if (!unread.empty()) {
    try {
      db_.execute("CREATE TABLE IF NOT EXISTS " + t + " (target_table VARCHAR(64) NOT NULL, " +
                  "source_id " + integer + " NOT NULL, source_name " + name_type + " NOT NULL, " +
                  "prefix_bytes " + integer + " NOT NULL, bytes_done " + integer + " NOT NULL, " +
                  "lines_done " + integer + " NOT NULL, records_done " + integer + " NOT NULL, " +
                  "rejects " + integer + " NOT NULL, salt " + integer + " NOT NULL DEFAULT 0, " +
                  "grown_bytes " + integer + " NOT NULL DEFAULT 0, grown_id " + integer +
                  " NOT NULL DEFAULT 0, updated_at " + integer + " NOT NULL, " +
                  "PRIMARY KEY (target_table, source_id))");
    } catch (const error& e) {
      throw error("auditpipe ingest: cannot create the checkpoint table " + checkpoint_table_ +
                  " on " + db_.describe() + ": " + e.what() + " (nor read it: " + unread +
                  "; a loader needs SELECT, INSERT, UPDATE and DELETE on it, and CREATE where "
                  "it is not there yet)");
    }
  }
  // A table from before a column was added: given it (the table is this
  // program's own bookkeeping).
  auto has_column = [&](const char* column) {
    try {
      db_.query(std::string("SELECT ") + column + " FROM " + t + " WHERE 1 = 0");
      return true;
    } catch (const error&) {
      return false;
    }
  };
  for (const char* added : {"salt", "grown_bytes", "grown_id"}) {
    if (has_column(added)) continue;
    try {
      db_.execute("ALTER TABLE " + t + " ADD COLUMN " + added + " " + integer +
                  " NOT NULL DEFAULT 0");
    } catch (const error& e) {
      // Another load may have added it meanwhile.
      if (!has_column(added))
        throw error("auditpipe ingest: cannot add column " + std::string(added) +
                    " to the checkpoint table " + checkpoint_table_ + " on " + db_.describe() +
                    ": " + e.what());
    }
  }
  upsert_ = "INSERT INTO " + t + " (" + std::string(checkpoint_columns) +
            ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";
  static constexpr std::string_view updated[] = {
      "source_name", "prefix_bytes", "bytes_done",  "lines_done", "records_done",
      "rejects",     "salt",         "grown_bytes", "grown_id",   "updated_at"};
  upsert_ +=
      mysql ? " ON DUPLICATE KEY UPDATE " : " ON CONFLICT (target_table, source_id) DO UPDATE SET ";
  for (std::size_t i = 0; i < std::size(updated); ++i) {
    if (i > 0) upsert_ += ", ";
    const std::string c(updated[i]);
    upsert_ += c + (mysql ? " = VALUES(" + c + ")" : " = excluded." + c);
  }
}

std::vector<Checkpoint> CheckpointStore::select(const std::string& where,
                                                const std::vector<std::string>& params) {
  const auto rows = db_.query(
      "SELECT source_id, source_name, prefix_bytes, bytes_done, lines_done, records_done, "
      "rejects, salt, grown_bytes, grown_id FROM " +
          db_.quote(checkpoint_table_) + " WHERE target_table = ? AND " + where,
      params);
  std::vector<Checkpoint> out;
  for (const auto& r : rows) {
    if (r.size() < 10) continue;
    Checkpoint c;
    c.source_id = static_cast<std::int64_t>(to_u64(r[0]));
    c.source_name = r[1].value_or("");
    c.prefix_bytes = to_u64(r[2]);
    c.bytes_done = to_u64(r[3]);
    c.lines_done = to_u64(r[4]);
    c.records_done = to_u64(r[5]);
    c.rejects = to_u64(r[6]);
    c.salt = r[7] ? std::stoll(*r[7]) : 0;
    c.grown_bytes = to_u64(r[8]);
    c.grown_id = r[9] ? std::stoll(*r[9]) : 0;
    c.stored = true;
    out.push_back(std::move(c));
  }
  return out;
}

std::vector<Checkpoint> CheckpointStore::candidates(const std::string& source_name) {
  return select("(source_name = ? OR prefix_bytes < ?) ORDER BY updated_at DESC",
                {target_table_, source_name, std::to_string(identity_prefix_bytes)});
}

std::optional<Checkpoint> CheckpointStore::find(std::int64_t source_id) {
  auto found = select("source_id = ?", {target_table_, std::to_string(source_id)});
  if (found.empty()) return std::nullopt;
  return std::move(found.front());
}

void CheckpointStore::save(const Checkpoint& c) {
  db_.execute(upsert_, {target_table_, std::to_string(c.source_id), c.source_name,
                        std::to_string(c.prefix_bytes), std::to_string(c.bytes_done),
                        std::to_string(c.lines_done), std::to_string(c.records_done),
                        std::to_string(c.rejects), std::to_string(c.salt),
                        std::to_string(c.grown_bytes), std::to_string(c.grown_id), now_text()});
}

std::size_t CheckpointStore::forget_all() {
  const auto n = select("1 = 1", {target_table_}).size();
  if (n > 0) {
    db_.execute("DELETE FROM " + db_.quote(checkpoint_table_) + " WHERE target_table = ?",
                {target_table_});
  }
  return n;
}

}  // namespace auditpipe::ingest
