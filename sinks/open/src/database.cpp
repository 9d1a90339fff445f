// auditpipe::Database (auditpipe/database.h): the connection a URL's sink
// makes (its connect_database()), chosen by scheme among the sinks this
// build has, with read_schema() and statements over it. Every message has
// the URL's password masked, whatever the database or a server said.
#include "auditpipe/database.h"

#include <utility>

#include "auditpipe/sink/sql_database.h"
#include "auditpipe/sink/url.h"
#include "auditpipe/status.h"
#include "registered_sinks.h"

namespace auditpipe {

namespace {

class SqlBackedDatabase final : public Database {
 public:
  explicit SqlBackedDatabase(SqlDatabaseConnection c) : c_(std::move(c)) {}

  std::optional<Schema> read_schema(std::string_view table, std::uint32_t unbounded_text_bytes,
                                    bool require_key) override {
    try {
      return read_table_schema(*c_.connection, *c_.dialect, table, unbounded_text_bytes,
                               require_key, c_.table_location);
    } catch (const std::exception& e) {
      throw error(mask(e.what()));
    }
  }

  void execute(std::string_view sql, const std::vector<std::string>& params) override {
    run(sql, params);
  }

  std::vector<std::vector<std::optional<std::string>>> query(
      std::string_view sql, const std::vector<std::string>& params) override {
    return run(sql, params);
  }

  void query_each(std::string_view sql, const std::vector<std::string>& params,
                  const std::function<void(Row)>& on_row) override {
    try {
      c_.connection->query_each(sql, params, on_row);
    } catch (const std::exception& e) {
      throw error(failed(sql, e));
    }
  }

  std::string quote(std::string_view identifier) const override {
    return c_.dialect->quote(identifier);
  }
  std::string_view dialect() const noexcept override { return c_.dialect->name; }
  std::string describe() const override { return c_.redacted_url; }

 private:
  std::string mask(std::string text) const { return hide_secret(std::move(text), c_.password); }

  std::vector<std::vector<std::optional<std::string>>> run(std::string_view sql,
                                                           const std::vector<std::string>& params) {
    try {
      return c_.connection->query_rows(sql, params);
    } catch (const std::exception& e) {
      throw error(failed(sql, e));
    }
  }

  std::string failed(std::string_view sql, const std::exception& e) const {
    // The statement's start, to tell which one failed; never the parameters.
    constexpr std::size_t shown = 120;
    const std::string head(sql.substr(0, shown));
    return mask("auditpipe: statement failed on " + c_.redacted_url + ": " + e.what() +
                " (in: " + head + (sql.size() > shown ? "..." : "") + ")");
  }

  SqlDatabaseConnection c_;
};

}  // namespace

namespace {
const std::vector<open_detail::DatabaseScheme>& database_schemes() {
  static const std::vector<open_detail::DatabaseScheme> schemes = [] {
    std::vector<open_detail::DatabaseScheme> s;
    open_detail::register_built_databases(s);
    return s;
  }();
  return schemes;
}
// Made as the library loads (see open.cpp's registry).
[[maybe_unused]] const auto& database_schemes_made_at_load = database_schemes();
}  // namespace

std::unique_ptr<Database> Database::connect(std::string_view url) {
  for (const auto& s : database_schemes()) {
    if (!has_scheme(url, s.scheme)) continue;
    // The sink's own messages mask the password already; a server's
    // message may still echo a user name equal to it.
    const std::string password = [&] {
      try {
        return parse_url(url).password.value_or("");
      } catch (...) {
        return std::string();  // the sink's parser says what is wrong
      }
    }();
    try {
      return std::make_unique<SqlBackedDatabase>(s.connect(url));
    } catch (const unreachable& e) {
      throw unreachable(hide_secret(e.what(), password));
    } catch (const url_error& e) {
      throw url_error(hide_secret(e.what(), password));
    } catch (const std::exception& e) {
      throw error(hide_secret(e.what(), password));
    }
  }
  std::string supported;
  for (const auto& s : database_schemes()) {
    if (s.listed) supported += " " + std::string(s.scheme) + "://";
  }
  throw url_error("auditpipe: no database for '" + redact_url(url) +
                  "' in this build (supported:" + supported + ")");
}

}  // namespace auditpipe
