// Creating or checking the audit table for any SQL sink (table_check.h).
#include "table_check.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "auditpipe/diagnostics.h"
#include "auditpipe/status.h"

namespace auditpipe::sql_detail {

namespace {

std::string lower(std::string_view name) {
  std::string s(name);
  std::transform(s.begin(), s.end(), s.begin(), [](char ch) {
    return static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  });
  return s;
}

// Whether `type` is one of the '|'-separated `accepted` (empty: any).
bool accepted(std::string_view accepted, std::string_view type) {
  if (accepted.empty()) return true;
  while (true) {
    const std::size_t bar = accepted.find('|');
    if (accepted.substr(0, bar) == type) return true;
    if (bar == std::string_view::npos) return false;
    accepted.remove_prefix(bar + 1);
  }
}

std::string listed(std::string_view accepted) {
  std::string out;
  for (char ch : accepted) out += ch == '|' ? std::string(", ") : std::string(1, ch);
  return out;
}

}  // namespace

void create_or_check_table(SqlConnection& c, const SqlDialect& dialect, const SqlTableText& text,
                           const TableDescriptor& table, const SqlSinkSettings& settings) {
  const std::string name(table.name);
  const std::string where = "table " + name + " " + settings.table_location;
  // The catalog's rows; its failures name the table too.
  auto catalog = [&](std::string_view query) {
    try {
      return c.catalog_rows(query, name);
    } catch (const std::exception& e) {
      throw error("auditpipe: cannot inspect " + where + ": " + e.what());
    }
  };
  std::vector<std::vector<std::string>> existing = catalog(dialect.table_columns_query());
  if (existing.empty()) {
    if (!settings.create_table) {
      throw error("auditpipe: " + where + " does not exist (and create_table=false)");
    }
    try {
      c.execute_ddl(text.create_table);
      return;
    } catch (const std::exception& e) {
      // Loggers (or processes) starting at once all find no table and all
      // create it; IF NOT EXISTS does not make that atomic everywhere
      // (PostgreSQL: a unique violation on pg_type, or "already exists").
      // A table that is there now was made by another opener: it is
      // checked like any existing one.
      existing = catalog(dialect.table_columns_query());
      if (existing.empty()) throw error("auditpipe: cannot create " + where + ": " + e.what());
    }
  }

  struct Present {
    std::uint64_t characters = 0;  // a text column's, or 0
    std::string type;              // as accepted_types names it
    std::string declared;          // as the table declares it
  };
  std::map<std::string, Present> present;  // by lower-cased name
  for (const auto& row : existing) {
    present[row.at(0)] = {std::stoull(row.at(1)), row.size() > 2 ? row[2] : "",
                          row.size() > 3 ? row[3] : ""};
  }
  std::set<std::string> written;
  std::string missing;
  auto need = [&](std::string_view column) {
    const std::string key = lower(column);
    written.insert(key);
    if (!present.count(key)) missing += (missing.empty() ? "" : ", ") + std::string(column);
  };
  for (const Column& col : table.columns) need(col.name);
  need(source_id_column);
  need(seq_column);
  if (!missing.empty()) {
    throw error("auditpipe: " + where + " lacks the columns the record needs: " + missing);
  }
  std::string mistyped;
  auto check_type = [&](std::string_view column, std::string_view kind, std::string_view allowed) {
    const Present& p = present[lower(column)];
    if (accepted(allowed, p.type)) return;
    mistyped += (mistyped.empty() ? "" : "; ") + std::string(column) + " is " +
                (p.declared.empty() ? p.type : p.declared) + " but the record's " +
                std::string(kind) + " needs " + listed(allowed);
  };
  for (const Column& col : table.columns)
    check_type(col.name, to_string(col.type), dialect.accepted_types_of(col));
  check_type(source_id_column, "key", dialect.key_accepted_types);
  check_type(seq_column, "key", dialect.key_accepted_types);
  if (!mistyped.empty()) {
    throw error("auditpipe: " + where + " has columns of the wrong type: " + mistyped);
  }
  for (const Column& col : table.columns) {
    const std::uint64_t length = present[lower(col.name)].characters;
    if (col.type == ColumnType::text && length != 0 && length < col.max_length) {
      diagnostics()->warn(
          "auditpipe: column {}.{} holds {} characters but records carry up to {} "
          "bytes; longer values will be refused by the server",
          name, col.name, length, col.max_length);
    }
  }

  // Exactly the pair (source_id, seq) must be a unique key: the idempotent
  // insert names it. Where the insert absorbs a conflict on any unique key,
  // no other may cover a written column, or rows conflicting on it would
  // be skipped without a word.
  std::map<std::string, std::set<std::string>> unique_keys;  // by name: messages in a fixed order
  for (const auto& row : catalog(dialect.unique_keys_query))
    unique_keys[row.at(0)].insert(row.at(1));
  const bool others_absorbed =
      dialect.idempotent_insert == SqlDialect::IdempotentInsert::on_duplicate_key_update;
  bool has_key = false;
  for (const auto& [index, columns] : unique_keys) {
    if (columns == std::set<std::string>{lower(seq_column), lower(source_id_column)}) {
      has_key = true;
      continue;
    }
    if (!others_absorbed) continue;
    for (const std::string& column : columns) {
      if (written.count(column)) {
        throw error("auditpipe: " + where + " has unique key " + index + " over column " + column +
                    "; auditpipe's idempotent insert would silently skip rows that conflict on "
                    "it. Drop that key or make it non-unique");
      }
    }
  }
  if (!has_key) {
    throw error("auditpipe: " + where +
                " has no unique key on (source_id, seq); auditpipe needs it so that a retried "
                "batch is never written twice");
  }

  if (!dialect.insert_privilege_query.empty()) {
    const auto rows = catalog(dialect.insert_privilege_query);
    const bool may_insert = !rows.empty() && (rows[0].at(0) == "t" || rows[0].at(0) == "1");
    if (!may_insert) {
      const std::string user = !rows.empty() && rows[0].size() > 1 ? rows[0][1] : "";
      throw error("auditpipe: " + where + ": user " + user +
                  " may not INSERT into it; every batch would fail (GRANT INSERT ON " + name +
                  " TO " + user + ")");
    }
  }
}

}  // namespace auditpipe::sql_detail
