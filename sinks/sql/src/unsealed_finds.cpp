#include "unsealed_finds.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <exception>
#include <string>
#include <utility>

#include <spdlog/spdlog.h>

#include "auditpipe/diagnostics.h"
#include "auditpipe/sink/sql_sink.h"

namespace auditpipe {

namespace {

std::string format_runs(const std::vector<seal::SeqRun>& runs) {
  std::string out;
  for (const seal::SeqRun& run : runs) {
    if (!out.empty()) out += ',';
    out += std::to_string(run.lo);
    if (run.hi != run.lo) out += '-' + std::to_string(run.hi);
  }
  return out;
}

bool to_int64(const std::string& text, std::int64_t& out) {
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size();
}

}  // namespace

UnsealedFinds::UnsealedFinds(const SqlDialect& dialect, const std::string& table,
                             std::string text_type, Mac mac)
    : dialect_(dialect),
      name_(seal::unsealed_table(table)),
      quoted_(dialect.quote(name_)),
      text_type_(std::move(text_type)),
      mac_(std::move(mac)) {}

std::string UnsealedFinds::message(const std::string& source_id, const std::string& after_no,
                                   const std::string& runs) const {
  return seal::unsealed_find_message(name_, source_id, after_no, runs);
}

bool UnsealedFinds::open(SqlConnection& c, bool create_table,
                         const std::string& where) const noexcept {
  const std::string probe =
      "SELECT source_id, after_no, runs, mac FROM " + quoted_ + " WHERE 1 = 0";
  try {
    c.query_rows(probe, {});
    return true;
  } catch (const std::exception&) {
    // Missing (or unreadable): created below, or done without.
  }
  std::string why;
  if (create_table) {
    const std::string create = "CREATE TABLE IF NOT EXISTS " + quoted_ +
                               " (source_id BIGINT NOT NULL, after_no BIGINT NOT NULL, runs " +
                               text_type_ + " NOT NULL, mac VARCHAR(64) NOT NULL)";
    try {
      try {
        c.execute_ddl(create);
      } catch (const std::exception&) {
        // As for the seals table: starts at once may race on creating it.
        c.execute_ddl(create);
      }
      c.query_rows(probe, {});
      return true;
    } catch (const std::exception& e) {
      why = e.what();
    }
  } else {
    why = "it does not exist, and create_table=false";
  }
  diagnostics()->info(
      "auditpipe: {} {}: rows a start finds unsealed are kept in memory only until it seals "
      "them late ({}); a start killed before then leaves them to the next one, which may not "
      "look that far back",
      name_, where, why);
  return false;
}

std::vector<UnsealedFinds::Find> UnsealedFinds::load(SqlConnection& c, std::size_t& forged) const {
  std::vector<Find> finds;
  forged = 0;
  for (const auto& row : c.query_rows(
           "SELECT source_id, after_no, runs, mac FROM " + quoted_ + " ORDER BY after_no", {})) {
    if (row.size() < 4 || !row[0] || !row[1] || !row[2] || !row[3] ||
        mac_(message(*row[0], *row[1], *row[2])) != *row[3]) {
      ++forged;
      continue;
    }
    // A find whose columns do not parse (the table altered by hand) is
    // counted as forged too: one such row must not hide the others.
    Find f;
    if (!to_int64(*row[0], f.source_id) || !to_int64(*row[1], f.after_no)) {
      ++forged;
      continue;
    }
    try {
      f.runs = seal::parse_runs(*row[2]);
    } catch (const std::exception&) {
      ++forged;
      continue;
    }
    f.mac = *row[3];
    finds.push_back(std::move(f));
  }
  return finds;
}

void UnsealedFinds::keep(SqlConnection& c, std::vector<Find>& finds) const {
  // Up to 1,000 finds a statement: 4,000 parameters, under every server's
  // limit (SQLite's is 32,766).
  constexpr std::size_t per_statement = 1000;
  for (std::size_t first = 0; first < finds.size(); first += per_statement) {
    const std::size_t end = std::min(finds.size(), first + per_statement);
    std::string sql = "INSERT INTO " + quoted_ + " (source_id, after_no, runs, mac) VALUES ";
    std::vector<std::string> params;
    params.reserve((end - first) * 4);
    for (std::size_t i = first; i < end; ++i) {
      Find& find = finds[i];
      std::string source_id = std::to_string(find.source_id);
      std::string after_no = std::to_string(find.after_no);
      std::string runs = format_runs(find.runs);
      find.mac = mac_(message(source_id, after_no, runs));
      sql += i == first ? "(?, ?, ?, ?)" : ", (?, ?, ?, ?)";
      params.push_back(std::move(source_id));
      params.push_back(std::move(after_no));
      params.push_back(std::move(runs));
      params.push_back(find.mac);
    }
    c.query_rows(sql, params);
  }
}

void UnsealedFinds::forget(SqlConnection& c, const Find& find) const {
  c.query_rows("DELETE FROM " + quoted_ + " WHERE source_id = ? AND after_no = ? AND mac = ?",
               {std::to_string(find.source_id), std::to_string(find.after_no), find.mac});
}

}  // namespace auditpipe
