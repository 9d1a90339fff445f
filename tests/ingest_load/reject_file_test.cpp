// RejectFile after a killed run: what that run rejected past an input's
// checkpoint is not written again when the rerun reads it again, however
// far back in the file it lies. (Before, only the file's last 16 MiB were
// looked at; a run rejecting 18 MB a second wrote lines two to four times.)
#include "reject_file.h"

#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <string>

#include "temp_dir.h"

namespace {

using auditpipe::ingest::RejectFile;
using testing_support::TempDir;

// The file's lines, and how many distinct (file, offset) they name.
std::pair<std::size_t, std::size_t> lines_and_keys(const std::string& path) {
  std::ifstream in(path);
  std::set<std::string> keys;
  std::size_t lines = 0;
  for (std::string line; std::getline(in, line); ++lines) {
    // {"file":"F","line":N,"offset":O,"source_id":S: they name the record
    keys.insert(line.substr(0, line.find(",\"reason\"")));
  }
  return {lines, keys.size()};
}

constexpr std::uint64_t step = 1000;  // bytes between two rejected records' offsets

constexpr std::int64_t app_id = 7;  // the input's source_id

void reject(RejectFile& file, const char* name, std::uint64_t first, std::uint64_t end,
            std::int64_t source_id = app_id) {
  for (std::uint64_t i = first; i < end; ++i)
    file.add(name, source_id, i + 1, i * step, "not a JSON object", std::string(400, 'x'));
}

TEST(RejectFile, WhatAKilledRunRejectedPastTheCheckpointIsNotWrittenAgain) {
  TempDir dir;
  const std::string path = dir.file("rejects.jsonl");
  constexpr std::uint64_t n = 60000;  // about 28 MB of lines
  {
    // The killed run: its checkpoint was at record 1000; it rejected on to
    // the end of app.log, and other.log's lines came in between.
    RejectFile killed(path);
    reject(killed, "app.log", 0, n / 2);
    reject(killed, "other.log", 0, 100, 8);
    reject(killed, "app.log", n / 2, n);
    killed.sync();
  }
  const auto [before, keys_before] = lines_and_keys(path);
  EXPECT_EQ(before, n + 100);
  EXPECT_EQ(keys_before, before);
  {
    RejectFile rerun(path);
    rerun.resume("app.log", app_id, 1000 * step);
    reject(rerun, "app.log", 1000, n + 10);  // read again from the checkpoint, and 10 new
    rerun.sync();
  }
  const auto [after, keys_after] = lines_and_keys(path);
  EXPECT_EQ(after, n + 110);
  EXPECT_EQ(keys_after, after) << "lines written twice";
}

}  // namespace

namespace {

// The same for a run killed before its first checkpoint moved (the input's
// checkpoint still at 0): a load with many bad lines rejects more than the
// 16 MiB read at open before that.
TEST(RejectFile, WhatARunKilledBeforeItsFirstCheckpointRejectedIsNotWrittenAgain) {
  TempDir dir;
  const std::string path = dir.file("rejects.jsonl");
  constexpr std::uint64_t n = 50000;  // about 23 MB of lines
  {
    RejectFile killed(path);
    reject(killed, "app.log.gz", 0, n);
    killed.sync();
  }
  {
    RejectFile rerun(path);
    rerun.resume("app.log.gz", app_id, 0);
    reject(rerun, "app.log.gz", 0, n + 5);
    rerun.sync();
  }
  const auto [lines, keys] = lines_and_keys(path);
  EXPECT_EQ(lines, n + 5);
  EXPECT_EQ(keys, lines) << "lines written twice";
}

}  // namespace

namespace {

// Only a resumed input's own lines are held back. The next day's app.log
// (another input under the same name) rejecting a line at an offset where
// the day before's did, or the same file loaded into another database
// beside the same reject file (nothing resumed there), has its rejects
// written. Before, both were counted and never written.
TEST(RejectFile, RejectsOfAnotherInputOrOfALoadNotResumedAreWritten) {
  TempDir dir;
  const std::string path = dir.file("rejects.jsonl");
  {
    RejectFile day1(path);
    reject(day1, "app.log", 0, 10, 1);
    day1.sync();
  }
  {
    RejectFile day2(path);
    reject(day2, "app.log", 0, 10, 2);  // new: not resumed
    day2.sync();
  }
  {
    RejectFile other_database(path);
    reject(other_database, "app.log", 0, 10, 2);  // day 2's file again, not resumed there
    other_database.sync();
  }
  {
    RejectFile rerun(path);
    rerun.resume("app.log", 2, 5 * step);  // day 2 resumed: its own lines from 5 on held
    reject(rerun, "app.log", 5, 12, 2);
    rerun.sync();
  }
  const auto [lines, keys] = lines_and_keys(path);
  EXPECT_EQ(lines, 10u + 10u + 10u + 2u);
  EXPECT_EQ(keys, 10u + 10u + 2u);
}

// Lines written before lines named their input still hold a resumed rerun's
// records back (an upgrade between a killed run and its rerun).
TEST(RejectFile, LinesWithoutSourceIdStillHoldTheirFilesRecordsBack) {
  TempDir dir;
  const std::string path = dir.file("rejects.jsonl");
  {
    std::ofstream old(path);
    for (int i = 0; i < 5; ++i)
      old << "{\"file\":\"app.log\",\"line\":" << i + 1 << ",\"offset\":" << i * step
          << ",\"reason\":\"r\",\"text\":\"t\"}\n";
  }
  {
    RejectFile rerun(path);
    rerun.resume("app.log", app_id, 0);
    reject(rerun, "app.log", 0, 7);
    rerun.sync();
  }
  EXPECT_EQ(lines_and_keys(path).first, 7u);
}

}  // namespace
