// Creating or checking the audit table for any SQL sink (table_check.h).
#include "table_check.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "auditpipe/detail/shown_name.h"
#include "auditpipe/diagnostics.h"
#include "auditpipe/status.h"
#include "unique_keys.h"

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
                           const TableDescriptor& table, const SqlSinkSettings& settings,
                           const std::function<void(bool table_exists)>& before_changes) {
  // Column names as the catalog queries give them: exact, or lower-cased.
  const auto name_key = [&](std::string_view n) {
    return dialect.exact_column_names ? std::string(n) : lower(n);
  };
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
      // (A SQLite file has no users to hold privileges.)
      throw error("auditpipe: " + where + " does not exist (and create_table=false)" +
                  (dialect.name == "sqlite"
                       ? std::string()
                       : ", or this user holds no privilege on it (the catalog shows only tables "
                         "a user holds a privilege on)"));
    }
    before_changes(false);
    bool created = false;
    try {
      c.execute_ddl(text.create_table);
      created = true;
    } catch (const std::exception& e) {
      // Loggers (or processes) starting at once all find no table and all
      // create it; IF NOT EXISTS does not make that atomic everywhere
      // (PostgreSQL: a unique violation on pg_type, or "already exists").
      // A table that is there now was made by another opener: it is
      // checked like any existing one.
      existing = catalog(dialect.table_columns_query());
      if (existing.empty()) {
        // (A file has no users: SQLite's catalog hides no table.)
        throw error("auditpipe: cannot create " + where + ": " + e.what() +
                    (dialect.name == "sqlite"
                         ? std::string()
                         : std::string(" (if it exists already, this user holds no privilege on "
                                       "it, and the catalog hides it: grant the user SELECT and "
                                       "INSERT on it)")));
      }
    }
    if (created) {
      // The catalog (information_schema) shows only tables the user holds
      // a privilege on: one made by another role and granted nothing looked
      // absent, CREATE TABLE IF NOT EXISTS left it as it was, and every
      // batch then failed on it (a trial). Made here, it is in the catalog.
      if (catalog(dialect.table_columns_query()).empty()) {
        throw error("auditpipe: " + where +
                    " exists, but this user may not see its columns (the catalog shows only "
                    "tables a user holds a privilege on): grant the user SELECT and INSERT on it");
      }
      return;
    }
  }

  struct Present {
    std::uint64_t characters = 0;  // a text column's, or 0
    std::string type;              // as accepted_types names it
    std::string declared;          // as the table declares it
    bool takes_null = true;        // no NOT NULL
    bool needs_value = false;      // an insert that leaves it out fails
    std::string charset;           // where the catalog says (MySQL), else empty
  };
  std::map<std::string, Present> present;  // by name_key
  auto read_present = [&] {
    present.clear();
    for (const auto& row : existing) {
      present[row.at(0)] = {std::stoull(row.at(1)),          row.size() > 2 ? row[2] : "",
                            row.size() > 3 ? row[3] : "",    row.size() <= 4 || row[4] != "0",
                            row.size() > 5 && row[5] == "1", row.size() > 6 ? row[6] : ""};
    }
  };
  read_present();
  std::set<std::string> written;
  for (const Column& col : table.columns) written.insert(name_key(col.name));
  written.insert(name_key(source_id_column));
  written.insert(name_key(seq_column));
  // Names as the catalog may give them: any text (detail/shown_name.h).
  auto names = [](const std::vector<std::string_view>& list) {
    std::string out;
    for (std::string_view n : list)
      out += (out.empty() ? "" : ", ") + detail::shown_catalog_name(n);
    return out;
  };
  std::vector<std::string_view> missing_keys;
  std::vector<const Column*> missing_columns;
  auto find_missing = [&] {
    missing_keys.clear();
    missing_columns.clear();
    for (const Column& col : table.columns) {
      if (!present.count(name_key(col.name))) missing_columns.push_back(&col);
    }
    for (std::string_view key : {source_id_column, seq_column}) {
      if (!present.count(name_key(key))) missing_keys.push_back(key);
    }
  };
  find_missing();
  std::vector<std::string_view> missing;
  for (const Column* col : missing_columns) missing.push_back(col->name);
  missing.insert(missing.end(), missing_keys.begin(), missing_keys.end());
  // What refuses the table for the columns it has is said before any
  // column is added (migrate=add_columns): a refused open leaves the table
  // as it found it.
  if (dialect.exact_column_names) {
    // The record's names compare ignoring case (table(), Schema); quoted
    // names here do not. Adding "A" beside "a" would make a table whose
    // columns no schema can name apart.
    std::string near;
    for (std::string_view wanted : missing) {
      for (const auto& [column, p] : present) {
        if (lower(column) == lower(wanted)) {
          near += (near.empty() ? "" : ", ") + std::string("the record's ") + std::string(wanted) +
                  " is " + detail::shown_catalog_name(column) + " in the table";
        }
      }
    }
    if (!near.empty()) {
      throw error("auditpipe: " + where + " has columns whose names differ from the record's " +
                  "only in case: " + near + "; quoted names are case-sensitive here, so they " +
                  "are different columns. Name them alike (in the record, or ALTER TABLE ... " +
                  "RENAME COLUMN)");
    }
  }
  if (!missing_keys.empty()) {
    // Without its key the table is not one auditpipe made: adding key
    // columns to rows that exist cannot give them values.
    throw error("auditpipe: " + where + " lacks the columns the record needs: " + names(missing));
  }
  // Columns the insert leaves out must fill themselves: one that cannot
  // would make the server refuse every row, one by one, at write time.
  std::vector<std::string_view> unfillable;
  for (const auto& [column, p] : present) {
    if (!written.count(column) && p.needs_value) unfillable.push_back(column);
  }
  if (!unfillable.empty()) {
    throw error("auditpipe: " + where + " has columns the record does not have that are NOT NULL " +
                "without a default: " + names(unfillable) +
                "; every row would be refused. Give them a DEFAULT, allow NULL in them, or add " +
                "them to the record");
  }
  std::string mistyped;
  auto check_type = [&](std::string_view column, std::string_view kind, std::string_view allowed) {
    const auto p = present.find(name_key(column));
    if (p == present.end() || accepted(allowed, p->second.type))
      return;  // absent: added as it needs
    mistyped += (mistyped.empty() ? "" : "; ") + std::string(column) + " is " +
                detail::shown_catalog_name(p->second.declared.empty() ? p->second.type
                                                                      : p->second.declared) +
                " but the record's " + std::string(kind) + " needs " + listed(allowed);
  };
  for (const Column& col : table.columns)
    check_type(col.name, to_string(col.type), dialect.accepted_types_of(col));
  check_type(source_id_column, "key", dialect.key_accepted_types);
  check_type(seq_column, "key", dialect.key_accepted_types);
  if (!mistyped.empty()) {
    throw error("auditpipe: " + where + " has columns of the wrong type: " + mistyped);
  }
  std::vector<std::string_view> refuse_null;
  for (const Column& col : table.columns) {
    const auto p = present.find(name_key(col.name));
    if (col.nullable && p != present.end() && !p->second.takes_null)
      refuse_null.push_back(col.name);
  }
  if (!refuse_null.empty()) {
    throw error("auditpipe: " + where + " has NOT NULL columns for record members that may be " +
                "NULL (auditpipe::nullable): " + names(refuse_null) +
                "; a NULL would be refused at write time. Drop NOT NULL from them, or make the " +
                "members not nullable");
  }
  // Exactly the pair (source_id, seq) must be a unique key: the idempotent
  // insert names it. Where the insert absorbs a conflict on any unique key,
  // no other may cover a written column, or rows conflicting on it would
  // be skipped without a word.
  const auto keys = unique_keys(catalog(dialect.unique_keys_query),
                                [](const std::string& column) { return column; });
  const bool others_absorbed =
      dialect.idempotent_insert == SqlDialect::IdempotentInsert::on_duplicate_key_update;
  const std::string source_id_key = name_key(source_id_column), seq_key = name_key(seq_column);
  for (const auto& [index, key] : keys) {
    if (is_key_pair(key, source_id_key, seq_key) || !others_absorbed) continue;
    for (const std::string& column : key.columns) {
      if (written.count(column)) {
        throw error("auditpipe: " + where + " has unique key " + detail::shown_catalog_name(index) +
                    " over column " + detail::shown_catalog_name(column) +
                    "; auditpipe's idempotent insert would silently skip rows that conflict on "
                    "it. Drop that key or make it non-unique");
      }
    }
  }
  require_key_pair(keys, source_id_key, seq_key, where);

  if (!dialect.insert_privilege_query.empty()) {
    const auto rows = catalog(dialect.insert_privilege_query);
    const bool may_insert = !rows.empty() && (rows[0].at(0) == "t" || rows[0].at(0) == "1");
    if (!may_insert) {
      const std::string user = !rows.empty() && rows[0].size() > 1 ? rows[0][1] : "";
      throw error("auditpipe: " + where + ": user " + user +
                  " may not INSERT into it; every batch would fail (GRANT INSERT ON " + name +
                  " TO " + user + ")");
    }
    const bool may_read_key = rows[0].size() < 3 || (rows[0][2] != "f" && rows[0][2] != "0");
    if (!may_read_key) {
      throw error("auditpipe: " + where + ": user " + rows[0][1] +
                  " may INSERT into it but not SELECT its key columns (" +
                  std::string(source_id_column) + ", " + std::string(seq_column) +
                  "), which the server requires of the insert that skips a stored key (INSERT "
                  "... ON CONFLICT (source_id, seq) DO NOTHING): a batch that meets a stored key "
                  "(any retry after a lost answer) would fail until granted (GRANT SELECT (" +
                  std::string(source_id_column) + ", " + std::string(seq_column) + ") ON " + name +
                  " TO " + rows[0][1] + ")");
    }
  }
  before_changes(true);
  if (!missing_columns.empty()) {
    std::vector<std::string> statements;
    for (const Column* col : missing_columns) statements.push_back(dialect.add_column(name, *col));
    if (!settings.migrate_add_columns) {
      std::string fix;
      for (const std::string& sql : statements) fix += "\n  " + sql + ";";
      throw error("auditpipe: " + where + " lacks the columns the record needs: " + names(missing) +
                  ". These statements add them (nullable):" + fix +
                  "\nor open with the URL option migrate=add_columns to have auditpipe run them");
    }
    std::string failure;
    for (const std::string& sql : statements) {
      diagnostics()->warn("auditpipe: migrate=add_columns: {} on {}", sql, where);
      try {
        c.execute_ddl(sql);
      } catch (const std::exception& e) {
        // Another opener may have added it first: the catalog decides.
        failure += std::string(failure.empty() ? "" : "; ") + e.what();
      }
    }
    existing = catalog(dialect.table_columns_query());
    read_present();
    find_missing();
    if (!missing_columns.empty()) {
      std::vector<std::string_view> still;
      for (const Column* col : missing_columns) still.push_back(col->name);
      throw error("auditpipe: cannot add the columns " + names(still) + " to " + where + ": " +
                  failure);
    }
  }
  for (const Column& col : table.columns) {
    const Present& p = present[name_key(col.name)];
    const std::uint64_t length = p.characters;
    // MySQL's TEXT types are sized in bytes (TINYTEXT: 255), which are
    // UTF-8's in utf8mb4 and characters in a one-byte set such as latin1;
    // VARCHAR(n) and the others' character types in characters. A record's
    // text that has a limit of characters (a schema read from such a
    // column) is compared in characters there.
    const bool bytes = p.type.find("text") != std::string::npos &&
                       (p.charset.empty() || p.charset.rfind("utf8", 0) == 0);
    const bool in_chars = !bytes && col.max_chars != 0;
    const std::uint64_t carried = in_chars ? col.max_chars : col.max_length;
    if (col.type == ColumnType::text && length != 0 && length < carried) {
      diagnostics()->warn(
          "auditpipe: column {}.{} ({}) holds {} {} but records carry up to {} {}; longer "
          "values will be refused by the server",
          name, col.name, detail::shown_catalog_name(p.declared), length,
          bytes ? "bytes" : "characters", carried, in_chars ? "characters" : "bytes");
    }
    // Text arrives as UTF-8; a column of another character set cannot hold
    // all of it (utf8mb3: no four-byte characters such as emoji).
    if (col.type == ColumnType::text && !p.charset.empty() && p.charset != "utf8mb4") {
      diagnostics()->warn(
          "auditpipe: column {}.{} is in character set {}: text it cannot hold is refused by "
          "the server (the record goes to the dead letters) or, where a server's mode allows, "
          "stored converted; utf8mb4 holds every character",
          name, col.name, detail::shown_catalog_name(p.charset));
    }
  }
}

}  // namespace auditpipe::sql_detail
