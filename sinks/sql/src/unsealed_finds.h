// UnsealedFinds: `<table>_unsealed`, where a start keeps the rows it found
// stored and not sealed until it has sealed them late (SealWriter's grace
// of 5 s). A start killed within the grace otherwise loses what it found,
// and the next start, reading only the chain's newest seals, may no longer
// look as far back as those rows (a busy run stores thousands of seals in
// its first seconds): they stayed "not yet sealed" for good. The next
// start reads what is kept here, and seals late those of the rows that no
// seal stored since covers; the finds are removed once their late seal is
// stored.
//
// Who may call: SealWriter only, on the connection it was given.
//
// Thread safety: none of its own; SealWriter calls it from one thread at a
// time (its prepare() once, then the thread that seals late).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "auditpipe/sink/seal.h"
#include "auditpipe/sink/sql_dialect.h"

namespace auditpipe {

class SqlConnection;

class UnsealedFinds {
 public:
  /// What one start found of one source: the runs of rows no seal covered,
  /// with the chain's newest seal then (seals after it may cover them).
  struct Find {
    std::int64_t source_id = 0;
    std::int64_t after_no = 0;
    std::vector<seal::SeqRun> runs;
  };

  /// `text_type`: the column type for a find's runs (a large batch's
  /// byte-offset seqs are many runs).
  UnsealedFinds(const SqlDialect& dialect, const std::string& table, std::string text_type);

  /// Creates the table (`create_table`) if it is missing. Without it (a
  /// schema managed by hand), finds are kept in memory only: says so once
  /// (info) and returns false. Never throws.
  bool open(SqlConnection& c, bool create_table, const std::string& where) const noexcept;

  /// What earlier starts kept, oldest first. Throws auditpipe::error.
  std::vector<Find> load(SqlConnection& c) const;
  /// Keeps `find`. Throws auditpipe::error.
  void keep(SqlConnection& c, const Find& find) const;
  /// Removes what is kept of `source_id`. Throws auditpipe::error.
  void forget(SqlConnection& c, std::int64_t source_id) const;

  /// The table's name, for messages.
  const std::string& name() const { return name_; }

 private:
  const SqlDialect& dialect_;
  std::string name_;    ///< `<table>_unsealed`
  std::string quoted_;  ///< as the dialect quotes it
  std::string text_type_;
};

}  // namespace auditpipe
