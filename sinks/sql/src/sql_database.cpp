// Reading an existing table back as a runtime schema (auditpipe/sink/sql_database.h).
// Called by auditpipe::Database::read_schema; the dialects' schema_query and
// schema_column() do what differs per database.
#include "auditpipe/sink/sql_database.h"

#include <map>
#include <set>

#include "auditpipe/detail/shown_name.h"
#include "auditpipe/status.h"
#include "unique_keys.h"

namespace auditpipe {

namespace {

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& ch : out) {
    if (ch >= 'A' && ch <= 'Z') ch = static_cast<char>(ch - 'A' + 'a');
  }
  return out;
}

}  // namespace

std::optional<Schema> read_table_schema(SqlConnection& c, const SqlDialect& d,
                                        std::string_view table, std::uint32_t unbounded_text_bytes,
                                        bool require_key, std::string_view location) {
  const std::string name(table);
  const std::string where = "table " + name + " " + std::string(location);
  constexpr std::uint32_t max_text = 16u << 20;  // Schema's limit
  if (unbounded_text_bytes == 0 || unbounded_text_bytes > max_text) {
    throw error("auditpipe: reading " + where +
                ": unbounded_text_bytes=" + std::to_string(unbounded_text_bytes) +
                " must be from 1 to " + std::to_string(max_text));
  }
  if (d.schema_query.empty() || d.schema_column == nullptr) {
    throw error("auditpipe: reading " + where + ": this dialect cannot read schemas");
  }
  std::vector<std::vector<std::optional<std::string>>> rows;
  try {
    rows = c.query_rows(d.schema_query, {name});
  } catch (const std::exception& e) {
    throw error("auditpipe: cannot read the columns of " + where + ": " + e.what());
  }
  if (rows.empty()) return std::nullopt;
  std::vector<ColumnSpec> specs;
  std::string refused;
  bool has_source_id = false, has_seq = false;
  for (const auto& row : rows) {
    CatalogColumn column = d.schema_column(row, unbounded_text_bytes);
    if (column.generated) continue;
    const std::string key = lower(column.name);
    if (key == source_id_column || key == seq_column) {
      (key == source_id_column ? has_source_id : has_seq) = true;
      continue;
    }
    if (!column.spec) {
      refused += (refused.empty() ? "" : "; ") + std::string("column ") +
                 detail::shown_catalog_name(column.name) + " is " +
                 detail::shown_catalog_name(column.declared) + ": " + column.why;
      continue;
    }
    specs.push_back(std::move(*column.spec));
  }
  if (!refused.empty()) {
    throw error("auditpipe: " + where + " has columns no auditpipe column type holds: " + refused);
  }
  if (require_key) {
    if (!has_source_id || !has_seq) {
      throw error("auditpipe: " + where +
                  " has no (source_id, seq) columns: it is not an auditpipe table, whose "
                  "idempotent insert needs them");
    }
    std::vector<std::vector<std::string>> key_rows;
    try {
      key_rows = c.catalog_rows(d.unique_keys_query, name);
    } catch (const std::exception& e) {
      throw error("auditpipe: cannot read the unique keys of " + where + ": " + e.what());
    }
    sql_detail::require_key_pair(
        sql_detail::unique_keys(key_rows, [](const std::string& column) { return column; }),
        std::string(source_id_column), std::string(seq_column), where);
  }
  return Schema(name, std::move(specs));
}

}  // namespace auditpipe
