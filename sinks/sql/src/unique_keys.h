// The unique keys of an existing table, read from the dialect's
// unique_keys_query, and the check that one of them is the (source_id,
// seq) key the idempotent insert names. Private to auditpipe::sql: the
// table check and Database::read_schema call it.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

namespace auditpipe::sql_detail {

struct UniqueKey {
  std::set<std::string> columns;
  // Why an INSERT ... ON CONFLICT cannot name it (partial, deferrable, over
  // an expression, not valid); empty if it can.
  std::string unusable;
};

// By key name, so that messages come in a fixed order. `rows`: the query's
// (key, column[, why unusable]) rows, columns as `column_key` spells them.
template <class ColumnKey>
std::map<std::string, UniqueKey> unique_keys(const std::vector<std::vector<std::string>>& rows,
                                             ColumnKey column_key) {
  std::map<std::string, UniqueKey> keys;
  for (const auto& row : rows) {
    UniqueKey& key = keys[row.at(0)];
    key.columns.insert(column_key(row.at(1)));
    if (row.size() > 2 && !row[2].empty()) key.unusable = row[2];
  }
  return keys;
}

// Whether `key` is exactly the pair, usable or not.
bool is_key_pair(const UniqueKey& key, const std::string& source_id, const std::string& seq);

// Throws auditpipe::error naming `where` unless a usable key is exactly
// {source_id, seq}: without it a retried batch could be stored twice, or
// (a key ON CONFLICT cannot name) retried for ever.
void require_key_pair(const std::map<std::string, UniqueKey>& keys, const std::string& source_id,
                      const std::string& seq, const std::string& where);

}  // namespace auditpipe::sql_detail
