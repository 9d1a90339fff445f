// Logs rows into a SQLite file through the installed auditpipe::sqlite,
// then reads them back with SQLite itself.
//
//   sqlite_consumer <database file>
#include <auditpipe/auditpipe.h>
#include <auditpipe/sqlite/sqlite_sink.h>
#include <sqlite3.h>

#include <cstdint>
#include <cstdio>
#include <string>

static_assert(AUDITPIPE_VERSION_NUMBER == AUDITPIPE_VERSION_MAJOR * 10000 +
                                              AUDITPIPE_VERSION_MINOR * 100 +
                                              AUDITPIPE_VERSION_PATCH);

struct Event {
  std::int64_t id = 0;
  auditpipe::fixed_string<16> what;
};
constexpr auto describe(auditpipe::type_tag<Event>) {
  return auditpipe::table<Event>("events", AUDITPIPE_COLUMN(Event, id),
                                 AUDITPIPE_COLUMN(Event, what));
}

constexpr int rows = 5;

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: sqlite_consumer <database file>\n");
    return 2;
  }
  const std::string path = argv[1];
  std::remove(path.c_str());
  try {
    auditpipe::Logger<Event> logger(auditpipe::sqlite::open("sqlite://" + path));
    for (int i = 0; i < rows; ++i) {
      auto r = logger.acquire();
      r->id = i;
      r->what = "installed";
      if (r.commit() != auditpipe::Status::ok) return 3;
    }
    const auto report = logger.close();
    if (!report.drained || report.stats.written != rows) return 4;
  } catch (const auditpipe::error& e) {  // thrown inside the library: typeinfo must match
    std::fprintf(stderr, "auditpipe::error: %s\n", e.what());
    return 5;
  }
  // Bad URLs are refused by the library with auditpipe::error.
  try {
    auditpipe::sqlite::open("postgresql://nowhere/x");
    return 6;
  } catch (const auditpipe::error&) {
  }

  sqlite3* db = nullptr;
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) return 7;
  sqlite3_stmt* stmt = nullptr;
  sqlite3_prepare_v2(db, "SELECT count(*), sum(id) FROM events WHERE what = 'installed'", -1, &stmt,
                     nullptr);
  int count = -1, sum = -1;
  if (stmt != nullptr && sqlite3_step(stmt) == SQLITE_ROW) {
    count = sqlite3_column_int(stmt, 0);
    sum = sqlite3_column_int(stmt, 1);
  }
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  std::printf("sqlite_consumer (auditpipe %s): %d rows in %s\n", AUDITPIPE_VERSION, count,
              path.c_str());
  return count == rows && sum == rows * (rows - 1) / 2 ? 0 : 8;
}
