// UnsealedFinds: `<table>_unsealed`, where a start keeps the rows it found
// stored and not sealed until it has sealed them late (SealWriter's grace
// of 5 s), and a writer replaying the spill directory keeps a batch's keys
// until its seal is stored (rows older than their sources' sealed ones,
// which `auditpipe verify` would otherwise take for inserted ones if a
// crash left them unsealed). A start killed within the grace otherwise loses what it found,
// and the next start, reading only the chain's newest seals, may no longer
// look as far back as those rows (a busy run stores thousands of seals in
// its first seconds): they stayed "not yet sealed" for good. The next
// start reads what is kept here, and seals late those of the rows that no
// seal stored since covers; the finds are removed once their late seal is
// stored. Each find carries a MAC of what it says (the seals' digest
// function: HMAC with seal=hmac's key), so that someone who can write the
// database but has no key cannot have rows of their own sealed late by
// writing a find for them; a find without a valid MAC is ignored.
//
// Who may call: SealWriter only, on the connection it was given.
//
// Thread safety: no state but its settings: any thread, each on its own
// connection (SealWriter's prepare(), the thread that seals late, the
// writer replaying the spill directory).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
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
    std::string mac;  ///< as stored: what forget() names it by
  };

  /// A digest of a message (hex, at most 64 characters).
  using Mac = std::function<std::string(std::string_view message)>;

  /// `text_type`: the column type for a find's runs (a large batch's
  /// byte-offset seqs are many runs); `mac`: what signs each find.
  UnsealedFinds(const SqlDialect& dialect, const std::string& table, std::string text_type,
                Mac mac);

  /// Creates the table (`create_table`) if it is missing. Without it (a
  /// schema managed by hand), finds are kept in memory only: says so once
  /// (info) and returns false. Never throws.
  bool open(SqlConnection& c, bool create_table, const std::string& where) const noexcept;

  /// What earlier starts kept, oldest first, but finds whose MAC is not
  /// theirs (counted in `forged`). Throws auditpipe::error.
  std::vector<Find> load(SqlConnection& c, std::size_t& forged) const;
  /// Keeps `finds`, setting their macs: up to 1,000 in one statement (all
  /// or none of them). Throws auditpipe::error.
  void keep(SqlConnection& c, std::vector<Find>& finds) const;
  /// Removes `find` (load()'s or keep()'s), and no forged find beside it.
  /// Throws auditpipe::error.
  void forget(SqlConnection& c, const Find& find) const;

  /// The table's name, for messages.
  const std::string& name() const { return name_; }

 private:
  /// What a find's MAC is computed over.
  std::string message(const std::string& source_id, const std::string& after_no,
                      const std::string& runs) const;

  const SqlDialect& dialect_;
  std::string name_;    ///< `<table>_unsealed`
  std::string quoted_;  ///< as the dialect quotes it
  std::string text_type_;
  Mac mac_;
};

}  // namespace auditpipe
