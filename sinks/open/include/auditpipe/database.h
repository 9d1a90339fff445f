// Database: one plain connection to the database a URL names, for tools
// that need more than a sink's writes: reading an existing table's schema,
// and keeping small bookkeeping tables (auditpipe ingest's checkpoints).
//
//   auto db = auditpipe::Database::connect(url);
//   std::optional<auditpipe::Schema> schema = db->read_schema("audit_log");
//
// Same URLs and schemes as auditpipe::open() (the sinks this build has), the
// same connection options (TLS, timeouts, socket, ...); messages never
// contain a password.
//
// Who may call: tools and applications; not the producer path (every call
// is a round trip to the server).
//
// Thread safety: one thread at a time per Database.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "auditpipe/export.h"
#include "auditpipe/schema.h"

namespace auditpipe {

/// One connection for catalog reads and small statements (see the file's comment).
class AUDITPIPE_EXPORT Database {
 public:
  /// Connects. Throws auditpipe::error for a malformed URL or an unknown
  /// scheme (as open() does), auditpipe::unreachable when no server answers,
  /// auditpipe::error with the server's message for anything else.
  static std::unique_ptr<Database> connect(std::string_view url);
  virtual ~Database() = default;

  /// The schema of the existing table `table` (columns in their order,
  /// without source_id and seq), or nullopt if there is no such table.
  /// Column types map back to the narrowest ColumnType that holds them
  /// (BIGINT → int64, DATETIME(6)/timestamp → timestamp, ...); VARCHAR(n)
  /// gives text of at most n characters (max_chars) in 4n bytes (max_length:
  /// what n characters take in UTF-8), unbounded text (TEXT, PostgreSQL text)
  /// `unbounded_text_bytes`; CHAR(n) is refused (it pads). A nullable column is nullable; a column
  /// default is the ColumnSpec's default_value. Throws auditpipe::error naming the table, the
  /// column and its type for a column no ColumnType can hold (BLOB, DECIMAL(30,10), ...), and for a
  /// table without the (source_id, seq) pair when `require_key` is set.
  virtual std::optional<Schema> read_schema(std::string_view table,
                                            std::uint32_t unbounded_text_bytes = 1024,
                                            bool require_key = false) = 0;

  /// Runs one statement. `?` marks positional parameters, bound from
  /// `params` as text (the database converts them to the column's type);
  /// written `?` whatever the database's own notation is. Throws
  /// auditpipe::error with the server's message.
  virtual void execute(std::string_view sql, const std::vector<std::string>& params = {}) = 0;

  /// The rows of a query, every value as text; NULL as nullopt. Parameters
  /// as for execute().
  virtual std::vector<std::vector<std::optional<std::string>>> query(
      std::string_view sql, const std::vector<std::string>& params = {}) = 0;

  /// One row of query_each(): the values as text, NULL as nullopt, valid
  /// only during the call.
  using Row = std::span<const std::optional<std::string_view>>;
  /// The rows of a query, a row at a time: for results too large to hold.
  /// MySQL/MariaDB streams them from the server (the connection takes no
  /// other statement until the last row); the others read the result
  /// whole first. Throws as query(); so does an exception from `on_row`,
  /// which ends it.
  virtual void query_each(std::string_view sql, const std::vector<std::string>& params,
                          const std::function<void(Row)>& on_row) = 0;

  /// `identifier` quoted for this database.
  virtual std::string quote(std::string_view identifier) const = 0;
  /// "mysql", "postgresql" or "sqlite": which dialect statements must be written in.
  virtual std::string_view dialect() const noexcept = 0;
  /// The URL with any password masked, for messages.
  virtual std::string describe() const = 0;
};

}  // namespace auditpipe
