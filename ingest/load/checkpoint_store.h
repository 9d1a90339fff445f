// CheckpointStore: how far each input has been loaded, kept in the target
// database next to the data (table auditpipe_ingest_checkpoints, or the
// name given), so that a rerun skips what is already stored instead of
// sending it again.
//
// A checkpoint is written only after every record before bytes_done is
// stored (or rejected into the reject file and synced): the loader flushes
// the pipeline first (loader.cpp). Losing one therefore only costs a
// resend, which the (source_id, seq) key makes harmless.
//
// Who may call: the loader, on its checkpoint thread (one Database
// connection, one thread).
//
// Thread safety: none; one thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "auditpipe/database.h"

namespace auditpipe::ingest {

/// One input's progress.
struct Checkpoint {
  std::int64_t source_id = 0;
  std::string source_name;         ///< the path given (or --source-name)
  std::uint64_t prefix_bytes = 0;  ///< the identity prefix's length (source_identity.h)
  std::uint64_t bytes_done = 0;    ///< every record starting before this is stored or rejected
  std::uint64_t lines_done = 0;    ///< lines before bytes_done
  std::uint64_t records_done = 0;  ///< records committed before bytes_done, all runs
  std::uint64_t rejects = 0;       ///< lines rejected before bytes_done, all runs
  std::int64_t salt = 0;           ///< source_identity.h: source_id_of(prefix, salt)
  /// An input identified while shorter than identity_prefix_bytes, seen
  /// longer since: source_id_of(its first grown_bytes bytes, salt). Two
  /// inputs that began with the same short first line (a log and the
  /// successor a copytruncate rotation started) tell apart by it. 0: not seen.
  std::uint64_t grown_bytes = 0;
  std::int64_t grown_id = 0;
  /// Read from the table (an earlier run had it), not made for a new input.
  bool stored = false;
};

class CheckpointStore {
 public:
  /// Creates the checkpoint table if it is missing. Throws auditpipe::error.
  CheckpointStore(Database& db, std::string target_table, std::string checkpoint_table);

  /// The checkpoints an input named `source_name` may have: those recorded
  /// under that name, and those of inputs identified by fewer than
  /// identity_prefix_bytes (they may have grown and moved since), the most
  /// recently written first.
  std::vector<Checkpoint> candidates(const std::string& source_name);
  /// The checkpoint of `source_id` for this target table, if any.
  std::optional<Checkpoint> find(std::int64_t source_id);
  /// Inserts or replaces the checkpoint of c.source_id.
  void save(const Checkpoint& c);
  /// Removes every checkpoint of the target table; how many there were.
  std::size_t forget_all();

  /// The checkpoint table's name, for messages.
  const std::string& table() const noexcept { return checkpoint_table_; }

 private:
  std::vector<Checkpoint> select(const std::string& where, const std::vector<std::string>& params);

  Database& db_;
  std::string target_table_;
  std::string checkpoint_table_;
  std::string upsert_;
};

}  // namespace auditpipe::ingest
