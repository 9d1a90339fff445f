// See verify_command.h.
#include "verify_command.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <future>
#include <limits>
#include <map>
#include <optional>
#include <vector>

#include "auditpipe/database.h"
#include "auditpipe/sink/seal.h"
#include "auditpipe/sink/seal_read_back.h"
#include "auditpipe/sink/url.h"
#include "auditpipe/status.h"
#include "hidden_arguments.h"
#include "read_only_database.h"
#include "validators.h"

namespace auditpipe::cli {
namespace {

constexpr const char* description =
    R"(Checks a table written with sealing on (URL option seal=hmac or seal=hash)
against its seals in <table>_seals: recomputes every seal's digest from the
rows read back, checks the chain from seal 1, and names, with their keys, the
rows changed, deleted or inserted, and seals removed or reordered. With
--anchor (the latest seal_no and digest published outside the database) it
also catches the newest rows and seals cut off together. The rows writers
noted in <table>_unsealed (a start, to seal late; a spill replay, until its
seal is stored) are named too, as not yet sealed; a note there without the
key's MAC is tampering.)";

constexpr const char* footer = R"(
EXIT STATUS
  0    every row and seal verifies
  1    tampering found (each finding on standard output)
  2    usage error (an option, or the URL itself: malformed, an unknown
       option or scheme)
  3    no tampering, but rows stored after the last seal ("not yet sealed":
       a run that stopped between storing rows and sealing them, or rows
       appended by someone else: run again later; if it stays, investigate),
       or late seals (such rows, sealed by the next start: check them, then
       give --accept-late SEALNO), or rows a writer noted to seal later
  4    could not verify (connection, missing table, a companion table the
       account may not read, unreadable key file;
       no seal verifies with the key given while every row matches its
       seal's fingerprint: the wrong key, or none for a seal=hmac table))";

/// A bad argument: exit status 2, before anything is read.
struct UsageError : error {
  using error::error;
};

std::int64_t to_int(std::string_view s, const char* what) {
  std::int64_t v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) {
    throw error("auditpipe verify: " + std::string(what) + " '" + std::string(s) +
                "' is not an integer");
  }
  return v;
}

struct Seal {
  bool checked = true;      ///< false: made before --since, its rows trusted
  bool malformed = false;   ///< its ranges are not ranges (reported)
  bool unreadable = false;  ///< a count or time is not a number (reported); its rows placed
  bool late = false;        ///< sealed by a start, not by the run that stored its rows
  std::int64_t no = 0;
  std::string ranges;
  std::int64_t row_count = 0;
  std::string prev, digest;
  std::int64_t sealed_at = 0;
  // What the rows read back give.
  std::optional<seal::RowsDigest> hash;
  // With a key: the digest a seal recomputed without it (seal=hash) has, to
  // name such a seal "forged" rather than merely not verifying.
  std::optional<seal::RowsDigest> plain;
  std::int64_t rows = 0;
  std::vector<std::pair<std::int64_t, seal::SeqRun>> gaps;  ///< (source_id, keys) missing
  std::string row_hashes;  ///< each key's fingerprint, 8 hex digits, in key order
  std::vector<std::pair<std::int64_t, std::int64_t>> changed;  ///< the first keys that differ
  std::int64_t changed_count = 0;
};

struct Range {
  std::int64_t lo, hi;
  std::size_t seal;
  std::optional<std::int64_t> last;  ///< the last seq seen in it, none before any
  std::int64_t base;                 ///< lo's position among the seal's keys (its row_hashes entry)
};

/// Adds the runs of one source's part of seal `seal` to `out`; `base` is
/// the position of the part's first key among the seal's keys.
void add_runs(std::string_view items, std::size_t seal, std::int64_t base,
              std::vector<Range>& out) {
  for (const seal::SeqRun& run : seal::parse_runs(items)) {
    out.push_back({run.lo, run.hi, seal, std::nullopt, base});
    base = seal::add_keys(base, seal::run_keys(run.lo, run.hi));
  }
}

/// The seal_no after `no`. A seal_no is the table's to read, so an edited
/// one may be the largest there is, which has none after it: the next seal
/// then reads as out of order (adding 1 overflowed).
std::int64_t seal_after(std::int64_t no) {
  return no == std::numeric_limits<std::int64_t>::max() ? no : no + 1;
}

/// Numbers `first` to `last` (seal numbers, seqs) for a message: "5-7";
/// "-4 to 1" where the first is negative, which "-4-1" would garble; "5"
/// for one.
std::string span_text(std::int64_t first, std::int64_t last) {
  if (first == last) return std::to_string(first);
  return std::to_string(first) + (first < 0 ? " to " : "-") + std::to_string(last);
}

/// A seal's ranges for a message: the first 80 characters.
std::string shown(const std::string& ranges) {
  return ranges.size() <= 80 ? ranges : ranges.substr(0, 77) + "...";
}

/// A find's runs of seqs ("a-b,c", as a writer stores them) for a message:
/// negative ends as span_text() shows them ("-9 to -5", not "-9--5"); a
/// text that does not parse (a forged find) as it is.
std::string runs_shown(const std::string& runs) {
  std::string text;
  try {
    for (const seal::SeqRun& run : seal::parse_runs(runs)) {
      text += (text.empty() ? "" : ",") + span_text(run.lo, run.hi);
    }
  } catch (const std::exception&) {
    text = runs;
  }
  return shown(text);
}

std::int64_t parse_since(std::string s) {
  if (!s.empty() && (s.back() == 'Z' || s.back() == 'z') && s.find('T') != std::string::npos) {
    s.pop_back();  // ISO 8601's UTC mark: the time is UTC already
  }
  if (!s.empty() && s.find_first_not_of("0123456789") == std::string::npos) {
    std::int64_t v = 0;
    const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec == std::errc() && v <= INT64_MAX / 1000000) return v * 1000000;
  }
  std::tm tm{};
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, sec = 0, used = -1;
  // The whole text, or nothing: "2026-12-02garbage" is not a date.
  if (std::sscanf(s.c_str(), "%4d-%2d-%2d%n", &y, &mo, &d, &used) != 3 ||
      (static_cast<std::size_t>(used) != s.size() &&
       (std::sscanf(s.c_str(), "%4d-%2d-%2d%*1[T ]%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &sec,
                    &used) != 6 ||
        static_cast<std::size_t>(used) != s.size())) ||
      mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60) {
    throw UsageError("auditpipe verify: --since '" + s +
                     "': give epoch seconds or YYYY-MM-DD[THH:MM:SS] (UTC)");
  }
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = sec;
  const std::time_t t = timegm(&tm);
  std::tm back{};
  gmtime_r(&t, &back);
  if (back.tm_year != y - 1900 || back.tm_mon != mo - 1 || back.tm_mday != d) {
    throw UsageError("auditpipe verify: --since '" + s + "': no such date");
  }
  return static_cast<std::int64_t>(t) * 1000000;
}

class Findings {
 public:
  explicit Findings(std::size_t max) : max_(max) {}
  void tampered(const std::string& line) { add(line, tampered_); }
  void unsealed(const std::string& line) { add(line, unsealed_); }
  void late(const std::string& line) { add(line, late_); }
  std::size_t tampered_count() const { return tampered_; }
  std::size_t unsealed_count() const { return unsealed_; }
  std::size_t late_count() const { return late_; }

 private:
  void add(const std::string& line, std::size_t& counter) {
    ++counter;
    if (++shown_ <= max_) {
      std::printf("%s\n", line.c_str());
    } else if (shown_ == max_ + 1) {
      std::printf("... (more findings not shown; --max-findings)\n");
    }
  }
  std::size_t max_, shown_ = 0, tampered_ = 0, unsealed_ = 0, late_ = 0;
};

/// µs since the epoch as YYYY-MM-DD HH:MM:SS UTC.
std::string utc_text(std::int64_t us) {
  const std::time_t t = static_cast<std::time_t>(us / 1000000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &tm);
  return buf;
}

/// The chain's newest seals a crash's unsealed rows may lie among (as far
/// as a start reads, to seal them late).
constexpr std::size_t recent_seals = 1024;

/// Whether a source's sealed keys (its seals' `runs`, sorted by lo; a batch
/// sealed twice counted once) are at least 9 in 10 of the keys from its
/// first to its last: a producer's seqs (0, 1, 2, ...), not `auditpipe
/// ingest`'s byte offsets (half of them at most, for lines of one byte).
bool dense_keys(const std::vector<Range>& runs) {
  if (runs.empty()) return false;
  // In long double, which holds any seq exactly: keys span all of int64.
  const long double first = static_cast<long double>(runs.front().lo);
  long double sealed = 0;
  long double counted_to = first - 1;  // the highest key counted
  for (const Range& r : runs) {
    const long double lo = std::max(static_cast<long double>(r.lo), counted_to + 1);
    const long double hi = static_cast<long double>(r.hi);
    if (hi >= lo) sealed += hi - lo + 1;
    counted_to = std::max(counted_to, hi);
  }
  return 10 * sealed >= 9 * (counted_to - first + 1);
}

/// Whether merged `runs` hold `seq`.
bool runs_hold(const std::vector<seal::SeqRun>& runs, std::int64_t seq) {
  auto it = std::upper_bound(runs.begin(), runs.end(), seq,
                             [](std::int64_t v, const seal::SeqRun& r) { return v < r.lo; });
  return it != runs.begin() && std::prev(it)->hi >= seq;
}

std::string key_text(std::int64_t sid, std::int64_t seq) {
  return "(source_id " + std::to_string(sid) + ", seq " + std::to_string(seq) + ")";
}

/// The finds starts kept in `name` (<table>_unsealed): none where there is
/// no such table (a table sealed before finds were kept, or made by hand
/// without it). Throws auditpipe::error where it exists but cannot be read:
/// a forged find there is tampering, so not reading it is not a clean bill.
std::vector<std::vector<std::optional<std::string>>> read_finds(Database& db,
                                                                const std::string& name) {
  // The catalogue shows only tables the account may read: one it does not
  // show may still be there.
  const bool listed = db.read_schema(name).has_value();
  // Inside verify's snapshot: a failed statement must not end it
  // (PostgreSQL aborts the whole transaction on one).
  db.execute("SAVEPOINT auditpipe_verify_finds");
  try {
    auto finds = db.query("SELECT source_id, after_no, runs, mac FROM " + db.quote(name) +
                          " ORDER BY after_no");
    db.execute("RELEASE SAVEPOINT auditpipe_verify_finds");
    return finds;
  } catch (const std::exception& e) {
    try {
      db.execute("ROLLBACK TO SAVEPOINT auditpipe_verify_finds");
    } catch (const std::exception&) {
      // the error below says what matters
    }
    if (!listed) {
      const std::string why = e.what();
      // Missing, in each database's words. (MariaDB refuses a table the
      // account may not read whether or not it exists: that is no answer.)
      for (const char* missing : {"doesn't exist", "does not exist", "no such table"}) {
        if (why.find(missing) != std::string::npos) return {};
      }
    }
    throw error("auditpipe verify: cannot read " + name +
                ", where a start keeps the rows it found unsealed (a forged find there is "
                "tampering): grant the verifying account SELECT on it as on the table and its "
                "seals: " +
                e.what());
  }
}

}  // namespace

VerifyCommand::VerifyCommand(CLI::App& app) {
  command_ = app.add_subcommand("verify", description);
  command_->footer(footer);
  command_->add_option("URL", url_, "the database (as for ingest)")->required();
  command_->add_option("--table,-t", table_, "the sealed table")
      ->required()
      ->check(
          [](const std::string& value) {
            // --table "$UNSET": said as such, not "no table  in ...".
            return value.empty() ? std::string("is empty: give the sealed table's name")
                                 : std::string();
          },
          "TABLE");
  command_->add_option("--key-file,-k", key_file_,
                       "the seal key (seal=hmac); without it, seals are checked as seal=hash");
  command_
      ->add_option("--anchor", anchor_,
                   "the latest seal published outside the database: a seal_anchor_file, or "
                   "SEALNO:DIGEST")
      ->check(
          [](const std::string& value) {
            // --anchor "$UNSET": no anchor at all, so a cut tail would verify.
            return value.empty() ? std::string(
                                       "is empty: give a seal_anchor_file or "
                                       "SEALNO:DIGEST (an empty one checks nothing)")
                                 : std::string();
          },
          "FILE|SEALNO:DIGEST");
  command_->add_option("--since", since_,
                       "check the seals from the first made at or after TIME (epoch seconds or "
                       "YYYY-MM-DD[THH:MM:SS] UTC) on, trusting the seals before it");
  // Unsigned, yet "-16" converted (wrapped round): a usage error instead.
  const CLI::Validator count(
      [](std::string& value) {
        return value.find('-') == std::string::npos ? std::string() : "a count, not " + value;
      },
      "UINT");
  command_->add_option("--max-findings", max_findings_, "findings printed (default 20)")
      ->check(count);
  command_
      ->add_option("--unsealed-window", unsealed_window_,
                   "rows no seal covers among the keys of their source's last N seals (for "
                   "N of 16 or more, also of its seals among the 256 of the chain from its own "
                   "newest down, where a start looks, up to 8,192 keys; of the chain's newest "
                   "1,024 if its seqs are sparse), above its newest sealed row or of a source no "
                   "seal names are 'not yet sealed' (a crash), not 'inserted' (default 16); 0, "
                   "for writers stopped cleanly: every row no seal covers is 'inserted'")
      ->check(count);
  command_
      ->add_option("--accept-late", accept_late_,
                   "late seals numbered up to SEALNO were checked: no longer reported "
                   "(a late seal covers rows a start found stored and unsealed); SEALNO "
                   "is a seal the table has, so later late seals are still named")
      ->check(whole_number_from_one());
  command_->add_flag("--quiet,-q", quiet_, "no progress line");
}

int VerifyCommand::run() {
  try {
    // The application's URL may be given as it is, sealing options and all:
    // its key file and anchor file are the ones the table was sealed with.
    const seal::SealSettings in_url = seal::settings_in_url(url_);
    // Named before any file is read or connection made (the sink's parser
    // would name it too, but only when verify connects).
    if (const auto why = seal::contradiction(in_url, false)) {
      throw UsageError("auditpipe verify: " + *why);
    }
    std::string key_file = key_file_;
    if (key_file.empty() && in_url.mode == seal::Mode::hmac) {
      key_file = seal::key_file_of(in_url);
      if (key_file.empty()) {
        throw UsageError(
            "auditpipe verify: the URL says seal=hmac: give --key-file (or seal_key_file= in the "
            "URL, or AUDITPIPE_SEAL_KEY_FILE)");
      }
    }
    if (anchor_.empty()) anchor_ = in_url.anchor_file;
    const seal::Mode mode = key_file.empty() ? seal::Mode::hash : seal::Mode::hmac;
    const std::string key = key_file.empty() ? std::string() : seal::read_key_file(key_file);
    const std::string rows_key = key.empty() ? std::string() : seal::rows_key(key);
    const bool has_since = !since_.empty();
    const std::int64_t since_us = has_since ? parse_since(since_) : 0;
    // The anchor, before anything is read: a seal_anchor_file or SEALNO:DIGEST.
    std::optional<seal::Anchor> anchor;
    if (!anchor_.empty()) {
      const bool is_pair =
          anchor_.find(':') != std::string::npos && anchor_.find('/') == std::string::npos;
      try {
        anchor = is_pair ? seal::parse_anchor(anchor_) : seal::read_anchor_file(anchor_);
      } catch (const error& e) {
        throw UsageError("auditpipe verify: --anchor: " + std::string(e.what()));
      }
      if (!anchor) {
        throw UsageError(
            "auditpipe verify: --anchor '" + anchor_ +
            (is_pair
                 ? "': not SEALNO:DIGEST (64 hex digits)"
                 : "': cannot read it (no such file); give a seal_anchor_file or SEALNO:DIGEST"));
      }
    }
    auto db = ingest::connect_read_only(url_);
    const std::string dialect(db->dialect());
    if (dialect == "postgresql") {
      for (const std::string& set : seal::read_back_settings(dialect, false)) db->execute(set);
      // Every query here is one source's rows in key order, a page at a
      // time: an index scan. Before the table's first ANALYZE (a table
      // just loaded) the planner guesses a handful of rows, takes a bitmap
      // scan and sorts everything after the page's start, for every page:
      // quadratic (1,000,000 rows: 22k rows/s). A session setting, so a
      // read-only account can verify.
      db->execute("SET enable_bitmapscan = off");
      db->execute("SET enable_sort = off");
    }
    // One snapshot for the seals, the notes and the rows: a replayed batch
    // noted, stored, sealed and its note removed between reading the seals
    // and reading the notes read as inserted rows (exit 1) on a live table.
    if (dialect == "postgresql") {
      db->execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
    } else if (dialect == "mysql") {
      db->execute("START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY");
    } else {
      db->execute("BEGIN");
    }
    std::optional<Schema> schema = db->read_schema(table_);
    if (!schema) {
      // PostgreSQL's catalogue shows an account only the columns it may
      // read: a table without SELECT looked missing.
      try {
        db->query("SELECT 1 FROM " + db->quote(table_) + " WHERE 1 = 0");
      } catch (const std::exception& e) {
        const std::string why = e.what();
        if (why.find("permission denied") != std::string::npos ||
            why.find("command denied") != std::string::npos) {
          throw error("auditpipe verify: cannot read " + table_ + " in " + db->describe() +
                      ": grant the verifying account SELECT on it, on " +
                      seal::seals_table(table_) + " and on " + seal::unsealed_table(table_) + ": " +
                      why);
        }
      }
      throw error("auditpipe verify: no table " + table_ + " in " + db->describe());
    }
    const std::string seals_name = db->quote(seal::seals_table(table_));

    // The seals, in chain order (one per stored batch: small next to the rows).
    std::vector<Seal> seals;
    std::vector<std::vector<std::optional<std::string>>> seal_rows;
    try {
      seal_rows = db->query(
          "SELECT seal_no, ranges, row_count, prev_digest, digest, sealed_at, row_hashes FROM " +
          seals_name + " ORDER BY seal_no");
    } catch (const std::exception& e) {
      // With an anchor, a seals table that is gone is the chain cut off
      // whole: what the anchor is there to catch, so a finding (exit 1),
      // not "could not verify" (exit 4) as an emptied one was not either.
      const std::string why = e.what();
      const bool refused = why.find("permission denied") != std::string::npos ||
                           why.find("command denied") != std::string::npos;
      if (anchor && !refused) {
        db.reset();  // PostgreSQL's transaction is aborted: a new session asks
        auto fresh = ingest::connect_read_only(url_);
        if (!fresh->read_schema(seal::seals_table(table_))) {
          std::printf(
              "truncated: the anchor names seal %lld but there is no seals table %s "
              "(every seal was removed)\n",
              static_cast<long long>(anchor->seal_no), seal::seals_table(table_).c_str());
          std::printf("%s: 0 seals: 1 tampering findings\n", table_.c_str());
          std::fflush(stdout);
          return 1;
        }
      }
      throw error("auditpipe verify: cannot read the seals of " + table_ + " (" +
                  seal::seals_table(table_) +
                  "; was it written with seal=hmac or seal=hash?): " + e.what());
    }
    // A number no writer stores (a SQLite seals table takes any value) is
    // the seal rewritten: reported as such with the rest of the table, not
    // "could not verify" (exit 4), which hid every other finding.
    std::vector<std::string> rewritten_seals;
    for (auto& r : seal_rows) {
      Seal s;
      std::string bad;
      const auto number = [&](const std::optional<std::string>& v, const char* what) {
        try {
          return to_int(v.value_or(""), what);
        } catch (const error&) {
          if (bad.empty()) bad = std::string(what) + " '" + shown(v.value_or("NULL")) + "'";
          return std::int64_t{0};
        }
      };
      s.no = number(r[0], "seal_no");
      if (!bad.empty()) s.no = seals.empty() ? 1 : seal_after(seals.back().no);
      s.ranges = r[1].value_or("");
      s.late = seal::is_late(s.ranges);
      s.row_count = number(r[2], "row_count");
      if (s.row_count < 0 && bad.empty()) bad = "row_count '" + std::to_string(s.row_count) + "'";
      s.prev = r[3].value_or("");
      s.digest = r[4].value_or("");
      s.sealed_at = r[5] ? number(r[5], "sealed_at") : 0;
      s.row_hashes = r[6].value_or("");
      if (!bad.empty()) {
        s.unreadable = true;
        rewritten_seals.push_back("rewritten seal: seal " + std::to_string(s.no) + "'s " + bad +
                                  " is not a number auditpipe writes; its rows are not vouched "
                                  "for");
      }
      seals.push_back(std::move(s));
    }
    // --since: the seals from the first one made at or after TIME on, by
    // seal_no (a later seal is checked whatever its sealed_at says); the
    // rows of the older ones are trusted, not read where avoidable.
    std::size_t from = 0;
    if (has_since) {
      while (from < seals.size() && seals[from].sealed_at < since_us) seals[from++].checked = false;
    }
    Findings findings(max_findings_);
    for (const std::string& f : rewritten_seals) findings.tampered(f);
    if (accept_late_ > 0 && (seals.empty() || accept_late_ > seals.back().no)) {
      throw UsageError("auditpipe verify: --accept-late " + std::to_string(accept_late_) +
                       ": the newest seal is " +
                       (seals.empty() ? std::string("none") : std::to_string(seals.back().no)) +
                       "; give the number of the late seal whose rows you checked (a larger one "
                       "would also accept late seals made after it)");
    }

    // Each source's part of every seal's ranges (parsed into runs one source
    // at a time, while its rows stream by); the newest sealed seq per source.
    struct Part {
      std::size_t seal;
      std::string_view items;
      std::int64_t base;  ///< the part's first key's position among the seal's keys
    };
    std::map<std::int64_t, std::vector<Part>> by_source;
    for (std::size_t i = 0; i < seals.size(); ++i) {
      std::int64_t base = 0;
      std::vector<std::pair<std::int64_t, Part>> parts;
      try {
        for (const auto& [sid, items] : seal::split_sources(seals[i].ranges)) {
          parts.push_back({sid, {i, items, base}});
          for (const seal::SeqRun& run : seal::parse_runs(items)) {
            base = seal::add_keys(base, seal::run_keys(run.lo, run.hi));
          }
        }
      } catch (const error&) {
        // Not something auditpipe writes: the seal was edited. Its rows
        // then show as covered by no seal.
        seals[i].malformed = true;
        findings.tampered("seal " + std::to_string(seals[i].no) + ": its ranges '" +
                          shown(seals[i].ranges) + "' are malformed (the seal was rewritten)");
        continue;
      }
      for (auto& [sid, part] : parts) by_source[sid].push_back(part);
    }
    // What writers kept in <table>_unsealed (read before the rows): a row
    // a find with this key's MAC names, covered by no seal, is "not yet
    // sealed" wherever it lies. A batch replayed from the spill directory
    // lies below keys of its sources sealed since, where a crash before its
    // seal left rows otherwise reported as inserted.
    const std::string finds_table = seal::unsealed_table(table_);
    std::vector<std::vector<std::optional<std::string>>> finds = read_finds(*db, finds_table);
    std::map<std::int64_t, std::vector<seal::SeqRun>> kept_runs;  // by source, merged
    const auto find_is_genuine = [&](const std::vector<std::optional<std::string>>& r) {
      return seal::seal_digest(mode, key,
                               seal::unsealed_find_message(finds_table, r[0].value_or(""),
                                                           r[1].value_or(""), r[2].value_or(""))) ==
             r[3].value_or("");
    };
    for (const auto& r : finds) {
      if (!find_is_genuine(r)) continue;
      try {
        const std::int64_t sid = to_int(r[0].value_or(""), "source_id");
        for (const seal::SeqRun& run : seal::parse_runs(r[2].value_or(""))) {
          kept_runs[sid].push_back(run);
        }
      } catch (const error&) {
        // A genuine find always parses; reported below as it is.
      }
    }
    for (auto& [sid, runs] : kept_runs) seal::merge_runs(runs);
    // Whether a seal covers every row of the table a genuine find names (a
    // find's runs join neighbouring rows, and may span keys with none: a
    // sparse source's, a refused record's).
    const auto find_is_sealed = [&](const std::vector<std::optional<std::string>>& r) {
      try {
        const std::string sid = r[0].value_or("");
        const auto it = by_source.find(to_int(sid, "source_id"));
        if (it == by_source.end()) return false;
        std::vector<Range> ranges;
        for (const Part& part : it->second) add_runs(part.items, part.seal, part.base, ranges);
        std::vector<seal::SeqRun> sealed;
        for (const Range& range : ranges) sealed.push_back({range.lo, range.hi});
        seal::merge_runs(sealed);  // sorted, apart
        const auto covered = [&](std::int64_t seq) {
          auto at =
              std::upper_bound(sealed.begin(), sealed.end(), seq,
                               [](std::int64_t k, const seal::SeqRun& run) { return k < run.lo; });
          return at != sealed.begin() && std::prev(at)->hi >= seq;
        };
        for (const seal::SeqRun& run : seal::parse_runs(r[2].value_or(""))) {
          for (const auto& row : db->query("SELECT seq FROM " + db->quote(table_) +
                                               " WHERE source_id = ? AND seq >= ? AND seq <= ?",
                                           {sid, std::to_string(run.lo), std::to_string(run.hi)})) {
            if (!covered(to_int(row[0].value_or(""), "seq"))) return false;
          }
        }
        return true;
      } catch (const error&) {
        return false;  // reported below as it is
      }
    };

    // The select list: every column as text that gives back its exact value.
    const std::string select = seal::read_back_select(
        dialect, schema->columns(), [&](std::string_view name) { return db->quote(name); });
    const std::string table_q = db->quote(table_);
    std::vector<std::int64_t> sources;
    for (auto& r : db->query("SELECT DISTINCT source_id FROM " + table_q + " ORDER BY source_id")) {
      sources.push_back(to_int(r[0].value_or(""), "source_id"));
    }

    const bool terminal = !quiet_ && isatty(STDERR_FILENO) != 0;
    const auto started = std::chrono::steady_clock::now();
    auto last_draw = started;
    std::uint64_t rows_read = 0;
    auto draw = [&](bool final) {
      const auto now = std::chrono::steady_clock::now();
      if (!terminal || (!final && now - last_draw < std::chrono::milliseconds(200))) return;
      last_draw = now;
      const double s = std::chrono::duration<double>(now - started).count();
      std::fprintf(stderr, "\r\033[Kverify %s: %llu rows, %zu seals, %.0f rows/s%s", table_.c_str(),
                   static_cast<unsigned long long>(rows_read), seals.size(),
                   s > 0 ? static_cast<double>(rows_read) / s : 0.0, final ? "\n" : "");
    };

    const std::vector<ColumnSpec>& columns = schema->columns();
    seal::RowEncoder enc;
    std::int64_t inserted = 0, unsealed = 0, kept_unsealed = 0;
    constexpr int page = 20000;
    for (const std::int64_t sid : sources) {
      std::vector<Range> runs;
      std::vector<Range>* ranges = nullptr;
      std::optional<std::int64_t> newest;  // the newest seq sealed for this source, but the tail's
      std::optional<std::int64_t> window_lo;    // the lowest seq the tail's seals hold
      std::optional<std::int64_t> dense_floor;  // uncovered rows below it are inserted
      if (auto it = by_source.find(sid); it != by_source.end()) {
        for (const Part& part : it->second) add_runs(part.items, part.seal, part.base, runs);
        std::sort(runs.begin(), runs.end(),
                  [](const Range& x, const Range& y) { return x.lo < y.lo; });
        // Several writers store a source's batches at once, and each seals
        // its own after its statement: a crash can leave the newest few
        // batches unsealed below rows another writer sealed. Rows no seal
        // covers count as inserted only below what the source's seals
        // older than its own last --unsealed-window seals cover. (Counted
        // in the whole chain, another process sealing the same table
        // pushed a crashed one's unsealed rows out of the window within
        // seconds: "inserted", exit 1, until a start sealed them late.)
        std::vector<std::size_t> of_source;
        for (const Part& part : it->second) of_source.push_back(part.seal);
        std::sort(of_source.begin(), of_source.end());
        of_source.erase(std::unique(of_source.begin(), of_source.end()), of_source.end());
        // Seals from this index on are within the source's window. Where
        // the source's seqs are sparse (auditpipe ingest's byte offsets),
        // also only among the chain's newest recent_seals: between its keys
        // lie free keys a forged row could take, and a start looks no
        // further for rows to seal late (a load run again seals them).
        // Where they are dense (dense_keys(): the producer path's), the
        // free keys from 0 up are a crashed run's holes (or refused
        // records' keys), which no later run fills, and a forged row there
        // is no more hidden than one above the newest sealed key, which is
        // "not yet sealed" at any age: bounded, a crashed process's holes
        // read as inserted (exit 1) once another process sealing the table
        // had stored 1,024 seals.
        std::size_t recent_from = SIZE_MAX;
        if (unsealed_window_ > 0) {
          recent_from = of_source.size() > unsealed_window_
                            ? of_source[of_source.size() - unsealed_window_]
                            : 0;
          // And its seals among the seal::tail_chain_seals of the chain
          // from its own newest one down that seal::TailWindow takes, as a
          // start does when it looks for a crashed run's rows to seal late
          // (unless a narrower window than the default was asked for).
          if (unsealed_window_ >= static_cast<std::size_t>(seal::tail_seals)) {
            std::optional<std::size_t> top;  // the source's newest seal, but late ones
            for (const Range& r : runs) {
              if (!seals[r.seal].late) top = std::max(top.value_or(r.seal), r.seal);
            }
            std::map<std::size_t, std::vector<seal::SeqRun>> runs_of_seal;
            for (const Range& r : runs) {
              if (seals[r.seal].late ||
                  *top - r.seal >= static_cast<std::size_t>(seal::tail_chain_seals)) {
                continue;
              }
              runs_of_seal[r.seal].push_back({r.lo, r.hi});
            }
            seal::TailWindow window;
            for (auto k = runs_of_seal.rbegin(); k != runs_of_seal.rend(); ++k) {
              if (!window.extends(k->second, static_cast<std::int64_t>(*top - k->first) + 1)) {
                break;
              }
              recent_from = std::min(recent_from, k->first);
            }
          }
          if (!dense_keys(runs)) {
            recent_from = std::max(recent_from,
                                   seals.size() > recent_seals ? seals.size() - recent_seals : 0);
          } else {
            // A producer's seqs count from 0: below that (or below its first
            // sealed key, if that is lower) no run left a hole.
            dense_floor = std::min<std::int64_t>(0, runs.front().lo);
          }
        }
        // (Late seals aside, as a start sets them aside: stored long after
        // their rows, they say nothing of where the source's newest are.)
        for (const Range& r : runs) {
          if (seals[r.seal].late) continue;
          if (r.seal >= recent_from) {
            window_lo = std::min(window_lo.value_or(r.lo), r.lo);
          } else {
            newest = std::max(newest.value_or(r.hi), r.hi);
          }
        }
        ranges = &runs;
      }
      // With --since, rows below this source's first key a checked seal
      // covers are the trusted seals' (or inserted among them before TIME):
      // not read. A source no checked seal covers: only what follows its
      // newest sealed key (rows not yet sealed) is read.
      std::optional<std::int64_t> lowest;
      if (has_since && !runs.empty()) {
        std::optional<std::int64_t> checked_lo;
        std::int64_t top = runs.front().hi;
        for (const Range& r : runs) {
          top = std::max(top, r.hi);
          if (seals[r.seal].checked) checked_lo = std::min(checked_lo.value_or(r.lo), r.lo);
        }
        // Above every sealed key (reading the top one again, trusted, where
        // nothing is above it).
        lowest = checked_lo ? *checked_lo : top == INT64_MAX ? top : top + 1;
      }
      std::size_t next_range = 0;
      std::vector<std::size_t> active;  // indexes into *ranges
      auto retire = [&](Range& r) {
        if (seals[r.seal].checked && (!r.last || *r.last < r.hi)) {
          seals[r.seal].gaps.push_back({sid, {r.last ? *r.last + 1 : r.lo, r.hi}});
        }
      };
      std::int64_t first_unsealed = 0, last_unsealed = 0;
      const std::vector<seal::SeqRun>* kept = nullptr;  // what finds name of this source
      if (auto it = kept_runs.find(sid); it != kept_runs.end()) kept = &it->second;
      // One row: digested into every seal whose ranges hold its key.
      auto digest_row = [&](std::span<const std::optional<std::string_view>> row) {
        const std::int64_t seq = to_int(row.back().value_or(""), "seq");
        enc.clear();
        for (std::size_t i = 0; i < columns.size(); ++i) {
          seal::encode_read_back(enc, columns[i].type, row[i]);
        }
        enc.key(sid, seq);
        // The ranges this row falls in (one, unless a batch was sealed twice).
        if (ranges != nullptr) {
          while (next_range < ranges->size() && (*ranges)[next_range].lo <= seq) {
            active.push_back(next_range++);
          }
          std::erase_if(active, [&](std::size_t i) {
            if ((*ranges)[i].hi >= seq) return false;
            retire((*ranges)[i]);
            return true;
          });
        }
        if (active.empty()) {
          // Above a source's newest sealed key (but the window's), or from
          // the lowest key the window's seals hold, or of a source no seal
          // names: a crash's unsealed rows, unless --unsealed-window 0 says
          // the writers stopped cleanly (they seal everything they store).
          // The start looks for rows to seal late in the same place.
          if (kept != nullptr && unsealed_window_ > 0 && runs_hold(*kept, seq)) {
            ++kept_unsealed;
          } else if (unsealed_window_ > 0 &&
                     (!newest || seq > *newest || (window_lo && seq >= *window_lo)) &&
                     !(dense_floor && seq < *dense_floor)) {
            if (unsealed++ == 0) first_unsealed = seq;
            last_unsealed = seq;
          } else {
            // The first few by key; the rest counted in one line at the end.
            if (inserted++ < 5) {
              findings.tampered("inserted: row " + key_text(sid, seq) + " is covered by no seal");
            }
          }
        }
        std::string fingerprint;  // made once, if a seal lists fingerprints
        for (std::size_t i : active) {
          Range& r = (*ranges)[i];
          Seal& s = seals[r.seal];
          if (!s.checked) continue;  // before --since: trusted
          // The row's place among the seal's keys, in unsigned arithmetic: a
          // forged run may span more keys than int64 counts.
          const std::uint64_t listed = s.row_hashes.size() / 8;
          const std::uint64_t past_lo =
              static_cast<std::uint64_t>(seq) - static_cast<std::uint64_t>(r.lo);
          if (static_cast<std::uint64_t>(r.base) < listed &&
              past_lo < listed - static_cast<std::uint64_t>(r.base)) {
            const auto at =
                static_cast<std::size_t>(static_cast<std::uint64_t>(r.base) + past_lo) * 8;
            if (fingerprint.empty()) {
              seal::append_fingerprint(fingerprint, seal::fingerprint(enc.bytes()));
            }
            if (s.row_hashes.compare(at, 8, fingerprint) != 0 && s.changed_count++ < 10) {
              s.changed.push_back({sid, seq});
            }
          }
          // Keys skipped since the last row (seq > last + 1, not overflowing
          // at int64's ends): deleted.
          if (r.last ? seq > *r.last && !seal::follows(*r.last, seq) : seq > r.lo) {
            s.gaps.push_back({sid, {r.last ? *r.last + 1 : r.lo, seq - 1}});
          }
          r.last = seq;
          if (!s.hash) s.hash.emplace(rows_key);
          s.hash->add(enc.bytes());
          if (mode == seal::Mode::hmac) {
            if (!s.plain) s.plain.emplace();
            s.plain->add(enc.bytes());
          }
          ++s.rows;
        }
        ++rows_read;
        if ((rows_read & 1023) == 0) draw(false);
      };
      const std::string source_query = "SELECT " + select + " FROM " + table_q +
                                       " WHERE source_id = " + std::to_string(sid) +
                                       (lowest ? " AND seq >= " + std::to_string(*lowest) : "");
      if (dialect == "mysql") {
        // Streamed from the server in one query: no page is held, and the
        // server sends rows while they are digested.
        db->query_each(source_query + " ORDER BY seq", {}, digest_row);
      } else {
        // Paged (the others read a result whole), the next page read on
        // another thread (the one connection is only ever used by one at
        // a time) while this one is digested.
        using Page = std::vector<std::vector<std::optional<std::string>>>;
        auto fetch = [&](std::optional<std::int64_t> after_seq) {
          std::string sql = source_query;
          if (after_seq) sql += " AND seq > " + std::to_string(*after_seq);
          sql += " ORDER BY seq LIMIT " + std::to_string(page);
          return db->query(sql);
        };
        std::future<Page> next = std::async(std::launch::async, fetch, std::nullopt);
        std::vector<std::optional<std::string_view>> views;
        for (;;) {
          Page rows = next.get();
          const bool last_page = rows.size() < static_cast<std::size_t>(page);
          if (!last_page) {
            next = std::async(std::launch::async, fetch,
                              std::optional(to_int(rows.back().back().value_or(""), "seq")));
          }
          for (const auto& row : rows) {
            views.clear();
            for (const auto& v : row) {
              views.emplace_back(v ? std::optional<std::string_view>(*v) : std::nullopt);
            }
            digest_row(views);
          }
          if (last_page) break;
        }
      }
      if (ranges != nullptr) {
        for (std::size_t i : active) retire((*ranges)[i]);
        for (std::size_t i = next_range; i < ranges->size(); ++i) retire((*ranges)[i]);
      }
      // An unsealed run: one line for it, with its end.
      if (unsealed > 0) {
        findings.unsealed("not yet sealed: source_id " + std::to_string(sid) + ": " +
                          std::to_string(unsealed) + " rows, seq " +
                          span_text(first_unsealed, last_unsealed) +
                          " (covered by no seal yet, where the newest seals reach: "
                          "--unsealed-window)");
        unsealed = 0;
      }
      if (kept_unsealed > 0) {
        findings.unsealed("not yet sealed: source_id " + std::to_string(sid) + ": " +
                          std::to_string(kept_unsealed) + " rows covered by no seal yet that " +
                          finds_table + " names (below)");
        kept_unsealed = 0;
      }
    }
    // Sources with seals but no rows at all.
    for (auto& [sid, parts] : by_source) {
      if (std::binary_search(sources.begin(), sources.end(), sid)) continue;
      std::vector<Range> runs;
      for (const Part& part : parts) add_runs(part.items, part.seal, part.base, runs);
      for (Range& r : runs) {
        seals[r.seal].gaps.push_back({sid, {r.lo, r.hi}});
      }
    }
    draw(true);
    if (inserted > 5) {
      findings.tampered("inserted: " + std::to_string(inserted) +
                        " rows in all are covered by no seal (inside the keys the seals cover)");
    }

    // Every seal: its rows, its digest, its link.
    // The window's first seal links to the last one trusted (as stored):
    // seals deleted at the window's start break that link.
    std::string prev = from == 0 ? seal::genesis_digest(table_) : seals[from - 1].digest;
    std::int64_t expected_no = from == 0 ? 1 : seal_after(seals[from - 1].no);
    // Seals whose digest fails with every row as its fingerprints say: held
    // back, since all of them failing means the key (or the mode) is wrong.
    std::vector<std::string> unexplained;
    std::size_t forged = 0;
    std::size_t late_accepted = 0;
    for (std::size_t at = from; at < seals.size(); ++at) {
      Seal& s = seals[at];
      const std::string where = "seal " + std::to_string(s.no) + " (" + shown(s.ranges) + ")";
      const std::size_t tampered_before = findings.tampered_count();
      const std::size_t unexplained_before = unexplained.size();
      // The rows whose fingerprint is not the sealed one, by key.
      std::string changed_keys;
      for (std::size_t i = 0; i < s.changed.size(); ++i) {
        changed_keys += (i ? ", " : "") + std::string("source_id ") +
                        std::to_string(s.changed[i].first) + " seq " +
                        std::to_string(s.changed[i].second);
      }
      if (s.changed_count > static_cast<std::int64_t>(s.changed.size())) {
        changed_keys += ", ... (" + std::to_string(s.changed_count) + " in all)";
      }
      if (s.no != expected_no) {
        if (s.no > expected_no) {
          findings.tampered("seals removed: seal_no " + span_text(expected_no, s.no - 1) +
                            " missing before seal " + std::to_string(s.no));
        } else {
          findings.tampered("seals reordered: seal " + std::to_string(s.no) + " out of order");
        }
      }
      if (s.prev != prev) {
        findings.tampered("chain broken at " + where +
                          ": its prev_digest is not the previous seal's digest (seals removed, "
                          "reordered or rewritten)");
      }
      if (s.malformed || s.unreadable) {  // reported above
        prev = s.digest;
        expected_no = seal_after(s.no);
        continue;
      }
      const std::string rows_hex =
          s.hash ? s.hash->final_hex() : seal::RowsDigest(rows_key).final_hex();
      const std::string message =
          seal::seal_message(s.prev, s.no, s.sealed_at, s.ranges, s.row_count, rows_hex);
      // SHA-256 over the rows: seal=hash's rows digest, and every seal's of
      // the v3 form (made before seal=hmac hashed with Poly1305).
      std::optional<std::string> plain_hex;
      const auto plain = [&]() -> const std::string& {
        if (!plain_hex) {
          plain_hex = mode == seal::Mode::hash ? rows_hex
                      : s.plain                ? s.plain->final_hex()
                                               : seal::RowsDigest().final_hex();
        }
        return *plain_hex;
      };
      const auto verifies = [&] {
        return seal::seal_digest(mode, key, message) == s.digest ||
               seal::seal_digest(mode, key,
                                 seal::seal_message(s.prev, s.no, s.sealed_at, s.ranges,
                                                    s.row_count, plain(), 3)) == s.digest;
      };
      // Every key of the seal's ranges was sealed (they list exactly the
      // keys stored), so a count that is not the ranges' is the seal's own
      // field rewritten, not rows deleted or inserted (a new user's edit
      // of row_count was reported as an inserted row that did not exist).
      const bool count_rewritten = s.rows != s.row_count && s.gaps.empty() && !verifies();
      if (count_rewritten) {
        findings.tampered("rewritten seal: " + where + " says " + std::to_string(s.row_count) +
                          " rows, but its ranges hold " + std::to_string(s.rows) +
                          ", none missing, and its digest does not verify (its row count or "
                          "ranges were changed)");
        if (!changed_keys.empty()) {
          findings.tampered("changed: " + changed_keys + " of " + where +
                            " differ from what was sealed");
        }
      } else if (s.rows < s.row_count) {
        std::string keys;
        for (std::size_t i = 0; i < s.gaps.size() && i < 10; ++i) {
          const auto& [gap_sid, gap] = s.gaps[i];
          keys += (i ? ", " : " ") + std::string("source_id ") + std::to_string(gap_sid) + " seq " +
                  span_text(gap.lo, gap.hi);
        }
        if (s.gaps.size() > 10) keys += ", ...";
        findings.tampered("deleted: " + std::to_string(s.row_count - s.rows) + " of " +
                          std::to_string(s.row_count) + " rows of " + where + " missing" +
                          (keys.empty() ? "" : ":" + keys));
        if (!changed_keys.empty()) {
          findings.tampered("changed: " + changed_keys + " of " + where +
                            " differ from what was sealed");
        }
      } else if (s.rows > s.row_count) {
        // More rows than sealed in ranges that list the sealed keys: rows
        // inserted at keys a seal's ranges hold, or the ranges widened.
        findings.tampered("inserted: " + std::to_string(s.rows - s.row_count) +
                          " rows more than sealed inside the ranges of " + where +
                          (verifies() ? std::string()
                                      : " (or its ranges were rewritten: its digest does not "
                                        "verify)"));
      } else if (!verifies()) {
        if (mode == seal::Mode::hmac &&
            seal::seal_digest(seal::Mode::hash, {},
                              seal::seal_message(s.prev, s.no, s.sealed_at, s.ranges, s.row_count,
                                                 plain())) == s.digest) {
          findings.tampered("forged seal: " + where +
                            " was recomputed without the key (plain SHA-256)");
          ++forged;
        } else if (!changed_keys.empty()) {
          findings.tampered("changed: " + changed_keys + " of " + where +
                            " differ from what was sealed");
        } else {
          unexplained.push_back(
              "changed: rows of " + where +
              " differ from what was sealed (or the seal was rewritten" +
              (mode == seal::Mode::hash ? "; sealed with a key? give --key-file" : "") + ")");
        }
      }
      // A late seal that verifies still vouches for rows auditpipe did not
      // write itself: named until the operator has looked at them.
      if (s.late && findings.tampered_count() == tampered_before &&
          unexplained.size() == unexplained_before) {
        if (s.no <= accept_late_) {
          ++late_accepted;
        } else {
          findings.late("sealed late: " + where + ", " + std::to_string(s.row_count) +
                        " rows sealed at " + utc_text(s.sealed_at) +
                        " by a start that found them stored and covered by no seal (a run that "
                        "stopped between storing and sealing them, or rows someone added); "
                        "check them, then give --accept-late " +
                        std::to_string(s.no));
        }
      }
      prev = s.digest;
      expected_no = seal_after(s.no);
    }

    // Every seal checked failing its digest with every row as its
    // fingerprints say: the key (or the mode) is the likelier mistake. Alone,
    // that is "could not verify" (exit 4), not tampering; beside other
    // findings the seals are reported with them.
    const std::size_t checked = seals.size() - from;
    const std::string key_hint =
        mode == seal::Mode::hmac
            ? "is --key-file the key the table was sealed with (seal_key_file=)?"
            : "the table was sealed with a key (seal=hmac): give --key-file";
    const bool no_seal_verifies = checked > 0 && unexplained.size() == checked;
    if (no_seal_verifies) {
      std::printf("hint: no seal verifies, yet every row matches its seal's fingerprint: %s\n",
                  key_hint.c_str());
    } else if (checked > 0 && forged == checked) {
      std::printf(
          "hint: every seal is plain SHA-256: if the table was written with seal=hash, verify "
          "it without --key-file (then nothing proves who made the seals)\n");
    }

    // The anchor: the newest seal published outside the database.
    if (anchor) {
      // Not a structured binding: clang 14 cannot capture one in a lambda.
      const std::int64_t no = anchor->seal_no;
      const auto& digest = anchor->digest;
      const std::int64_t last = seals.empty() ? 0 : seals.back().no;
      if (last < no) {
        findings.tampered("truncated: the anchor names seal " + std::to_string(no) +
                          " but the seals end at " + std::to_string(last) +
                          " (the newest seals were removed; the rows they covered went with "
                          "them, or are named here as covered by no seal)");
      } else {
        auto it =
            std::find_if(seals.begin(), seals.end(), [&](const Seal& s) { return s.no == no; });
        if (it != seals.end() && it->digest != digest) {
          findings.tampered("anchor mismatch: seal " + std::to_string(no) +
                            "'s digest is not the anchor's (the chain was rewritten)");
        }
      }
    }

    // What writers kept of rows stored and covered by no seal
    // (<table>_unsealed): a start, of those it found; a writer replaying
    // the spill directory, of the batch it stores until its seal is. A
    // find with this key's MAC waits for the next start, which seals late
    // what no seal covers yet and removes it. One without was written by
    // someone else, to have rows of their choosing sealed late: auditpipe
    // ignores it and leaves it as evidence.
    for (auto& r : finds) {
      const std::string sid = r[0].value_or(""), after = r[1].value_or("");
      const std::string runs = r[2].value_or(""), mac = r[3].value_or("");
      const std::string what = finds_table + ": source_id " + sid + " seq " + runs_shown(runs) +
                               " (after seal " + after + ")";
      if (find_is_genuine(r)) {
        // Its rows all sealed since (by the writer that kept it, a replay
        // that ran again, or a late seal, which is named on its own): it
        // keeps nothing unsealed, and the next start removes it.
        if (find_is_sealed(r)) continue;
        findings.unsealed("kept by a writer: " + what +
                          ": rows stored before their seal (found unsealed by a start, or "
                          "replayed from a spill directory); the next start seals late those no "
                          "seal covers yet");
        continue;
      }
      const std::string message = seal::unsealed_find_message(finds_table, sid, after, runs);
      const bool keyless =
          mode == seal::Mode::hmac && seal::seal_digest(seal::Mode::hash, {}, message) == mac;
      const std::string line =
          "forged find: " + what + ": " +
          (keyless ? "its MAC was computed without the key (plain SHA-256)"
                   : std::string("its MAC is not ") +
                         (mode == seal::Mode::hmac ? "the key's" : "the SHA-256 of its columns")) +
          ": not written by auditpipe, and no start acts on it";
      // With a wrong key every find fails as every seal does: held back.
      if (no_seal_verifies) {
        unexplained.push_back(line);
      } else {
        findings.tampered(line);
      }
    }

    // The held-back seals: with any other finding (the anchor's too) they
    // are reported with it.
    if (!no_seal_verifies || findings.tampered_count() > 0) {
      for (const std::string& line : unexplained) findings.tampered(line);
    }
    const std::size_t bad = findings.tampered_count();
    if (bad == 0 && no_seal_verifies) {
      std::printf(
          "%s: %llu rows, %zu seals: not verified: no seal's digest matches %s, while every "
          "row matches its seal's fingerprint (the wrong key, or every seal rewritten)\n",
          table_.c_str(), static_cast<unsigned long long>(rows_read), checked,
          mode == seal::Mode::hmac ? "with the key given" : "without a key (seal=hash)");
      std::fflush(stdout);
      return 4;
    }
    std::string verdict;
    if (bad > 0) {
      verdict = std::to_string(bad) + " tampering findings";
    } else {
      verdict = "verified";
      if (findings.unsealed_count() > 0) verdict += "; some rows not yet sealed";
      if (findings.late_count() > 0) {
        verdict += "; " + std::to_string(findings.late_count()) + " late seals to check";
      }
      if (late_accepted > 0) {
        verdict += " (" + std::to_string(late_accepted) + " late seals accepted: --accept-late)";
      }
    }
    std::printf("%s: %llu rows, %zu seals%s: %s\n", table_.c_str(),
                static_cast<unsigned long long>(rows_read), checked,
                from > 0 ? (" (" + std::to_string(from) + " older trusted: --since)").c_str() : "",
                verdict.c_str());
    std::fflush(stdout);
    if (bad > 0) return 1;
    return findings.unsealed_count() > 0 || findings.late_count() > 0 ? 3 : 0;
  } catch (const UsageError& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "%s\n", HiddenArguments::shown(e.what()).c_str());
    return 2;
  } catch (const url_error& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "%s\n", HiddenArguments::shown(e.what()).c_str());
    return 2;
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "%s\n", HiddenArguments::shown(e.what()).c_str());
    return 4;
  }
}

}  // namespace auditpipe::cli
