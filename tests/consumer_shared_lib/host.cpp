// Loads the consumer's shared library (linked), has it log rows into
// SQLite, and counts them with SQLite itself.
//
//   plugin_host <database file>
#include <sqlite3.h>

#include <cstdio>

extern "C" int audit_plugin_log(const char* path, int rows);

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  std::remove(argv[1]);
  constexpr int rows = 7;
  const int written = audit_plugin_log(argv[1], rows);
  sqlite3* db = nullptr;
  if (sqlite3_open(argv[1], &db) != SQLITE_OK) return 3;
  sqlite3_stmt* stmt = nullptr;
  sqlite3_prepare_v2(db, "SELECT count(*) FROM plugin_events WHERE origin = 'plugin'", -1, &stmt,
                     nullptr);
  int count = -1;
  if (stmt != nullptr && sqlite3_step(stmt) == SQLITE_ROW) count = sqlite3_column_int(stmt, 0);
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  std::printf("plugin_host: plugin wrote %d, table holds %d\n", written, count);
  return written == rows && count == rows ? 0 : 1;
}
