#include "unique_keys.h"

#include "auditpipe/detail/shown_name.h"
#include "auditpipe/status.h"

namespace auditpipe::sql_detail {

bool is_key_pair(const UniqueKey& key, const std::string& source_id, const std::string& seq) {
  return key.columns == std::set<std::string>{source_id, seq};
}

void require_key_pair(const std::map<std::string, UniqueKey>& keys, const std::string& source_id,
                      const std::string& seq, const std::string& where) {
  const std::map<std::string, UniqueKey>::value_type* unusable = nullptr;
  for (const auto& entry : keys) {
    if (!is_key_pair(entry.second, source_id, seq)) continue;
    if (entry.second.unusable.empty()) return;
    unusable = &entry;
  }
  if (unusable != nullptr) {
    throw error("auditpipe: " + where + " has unique key " +
                detail::shown_catalog_name(unusable->first) + " on (source_id, seq), but it is " +
                unusable->second.unusable +
                ": the idempotent insert's ON CONFLICT (source_id, seq) cannot use it, so a "
                "retried batch could be stored twice or fail for ever. Make it a plain unique "
                "key (or the primary key) on exactly (source_id, seq)");
  }
  throw error("auditpipe: " + where +
              " has no unique key on (source_id, seq); auditpipe needs it so that a retried "
              "batch is never written twice");
}

}  // namespace auditpipe::sql_detail
