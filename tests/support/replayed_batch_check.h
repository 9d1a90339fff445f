// check_replayed_batch_held(): sealing, with records spilled and then
// replayed while newer ones of the same producer were stored and sealed
// (an outage: records that find room in the pool go first, the spill
// directory every other turn). A replayed batch whose seal is not stored
// yet (a crash there; here the seals table refuses inserts) lies below
// keys of its source that older seals cover. `auditpipe verify` must call
// those rows "not yet sealed", as the writer noted them in
// audit_log_unsealed before storing them, not "inserted" (exit 1, which it
// said for them before); once the seals are stored nothing is left noted.
// Run on whichever real server a test names, through its own triggers
// (ReplayHold): the MariaDB fault tests and the PostgreSQL sink's.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "audit_row.h"
#include "auditpipe/logger.h"
#include "eventually.h"
#include "temp_dir.h"
#include "verify_run.h"

namespace testing_support {

// The server's statements that hold writes up. `hold_rows`: refuse, as a
// deadlock or serialization failure (retried, nothing stored), every row
// whose message_id lies in a range of the table replay_gate (lo, hi), and
// `release_rows` undoes that; `hold_seals`: refuse every insert into
// audit_log_seals; `release_seals` undoes that.
struct ReplayHold {
  std::vector<std::string> hold_rows;
  std::string release_rows;
  std::vector<std::string> hold_seals;
  std::string release_seals;
};

// The replay held up on a logger's records: ReplayGate's constructor makes
// the gate table and `hold_rows`; spill() logs records while every one is
// refused, so that those past the pool spill, then lets the pool's through;
// log_fresh() logs more, each group stored before the next; release() lets
// the replay through. Records from one thread: one source.
template <typename Probe>
class ReplayGate {
 public:
  explicit ReplayGate(const ReplayHold& hold) : release_rows_(hold.release_rows) {
    Probe().exec("DROP TABLE IF EXISTS replay_gate");
    Probe().exec("CREATE TABLE replay_gate (lo BIGINT NOT NULL, hi BIGINT NOT NULL)");
    for (const std::string& sql : hold.hold_rows) Probe().exec(sql);
  }
  ~ReplayGate() {
    Probe().exec(release_rows_);
    Probe().exec("DROP TABLE IF EXISTS replay_gate");
  }
  ReplayGate(const ReplayGate&) = delete;
  ReplayGate& operator=(const ReplayGate&) = delete;

  // message_id 0 to count - 1 (payload "spilled"); returns how many
  // spilled: the last ones, as no slot came back (the pool's go first).
  std::uint64_t spill(auditpipe::Logger<AuditRow>& run, int count) {
    using namespace std::chrono_literals;
    Probe().exec("INSERT INTO replay_gate VALUES (0, " + std::to_string(count - 1) + ")");
    for (int i = 0; i < count; ++i) {
      auto r = run.acquire();
      EXPECT_TRUE(r);
      if (!r) return 0;
      r->message_id = i;
      r->payload = "spilled";
      EXPECT_EQ(r.commit(), auditpipe::Status::ok);
    }
    const std::uint64_t spilled = run.stats().spilled;
    EXPECT_GE(spilled + 64, static_cast<std::uint64_t>(count)) << "the pool holds 64";
    first_spilled_ = count - static_cast<std::int64_t>(spilled);
    Probe().exec("UPDATE replay_gate SET lo = " + std::to_string(first_spilled_));
    // Their slots back first: a record finding the pool full spills too.
    EXPECT_TRUE(eventually([&] { return run.stats().pool_in_use == 0; }, 30s));
    return spilled;
  }
  // `groups` of `per` records (message_id from 1,000,000 on, payload
  // "fresh"), each stored (not flush(): that waits for the spilled records
  // too) before the next.
  void log_fresh(auditpipe::Logger<AuditRow>& run, int groups, int per) {
    using namespace std::chrono_literals;
    const std::string stored = "SELECT COUNT(*) FROM audit_log WHERE message_id >= 1000000";
    for (int g = 0; g < groups; ++g) {
      for (int i = 0; i < per; ++i) {
        auto r = run.acquire();
        ASSERT_TRUE(r);
        r->message_id = 1'000'000 + fresh_++;
        r->payload = "fresh";
        ASSERT_EQ(r.commit(), auditpipe::Status::ok);
      }
      ASSERT_TRUE(eventually([&] { return Probe().scalar(stored) == fresh_; }, 30s));
    }
  }
  void release() { Probe().exec("DELETE FROM replay_gate"); }
  // The spilled records' rows in the table, counted.
  std::string spilled_rows(int count) const {
    return "SELECT COUNT(*) FROM audit_log WHERE message_id >= " + std::to_string(first_spilled_) +
           " AND message_id < " + std::to_string(count);
  }

 private:
  std::string release_rows_;
  std::int64_t first_spilled_ = 0;
  long long fresh_ = 0;
};

// `url`: the sealed table's (audit_log, fresh); `plain_url` the same
// without options, for verify; `key` the key file.
template <typename Probe>
void check_replayed_batch_held(
    const std::string& url, const std::string& plain_url, const std::string& key,
    const TempDir& dir, const ReplayHold& hold,
    const std::function<std::shared_ptr<auditpipe::Sink>(const std::string&)>& open) {
  using namespace std::chrono_literals;
  auditpipe::Options o;
  o.capacity = 64;
  o.batch_size = 32;
  o.spill_path = dir.path() / "spill";
  o.spill_segment_bytes = 64 * 1024;
  o.overflow = auditpipe::Overflow::spill;
  o.writers = 2;  // writer 1 stores fresh records while writer 0's replay is held
  o.retry_backoff_max = 50ms;
  o.flush_interval = 10ms;
  auditpipe::Logger<AuditRow> run(open(url), o);
  ReplayGate<Probe> gate(hold);
  constexpr int first = 2000;
  std::uint64_t spilled = 0;
  std::thread([&] {
    spilled = gate.spill(run, first);
    gate.log_fresh(run, 40, 8);
  }).join();
  if (::testing::Test::HasFailure()) return;
  ASSERT_EQ(run.stats().spilled, spilled) << "fresh records spilled: the test proves nothing";
  // Seals refused from here on; the replay let through.
  for (const std::string& sql : hold.hold_seals) Probe().exec(sql);
  gate.release();
  const std::string replayed_rows = gate.spilled_rows(first);
  ASSERT_TRUE(eventually([&] { return Probe().scalar(replayed_rows) > 0; }, 60s));
  const VerifyRun held = run_verify(plain_url, "audit_log", "--key-file " + key);
  EXPECT_EQ(held.status, 3) << held.out;
  EXPECT_EQ(held.out.find("inserted"), std::string::npos) << held.out;
  EXPECT_NE(held.out.find("kept by a writer: audit_log_unsealed"), std::string::npos) << held.out;
  EXPECT_NE(held.out.find("rows covered by no seal yet that audit_log_unsealed names"),
            std::string::npos)
      << held.out;

  Probe().exec(hold.release_seals);
  EXPECT_TRUE(eventually([&] { return run.stats().spill_bytes == 0; }, 60s));
  EXPECT_TRUE(run.close().drained);
  EXPECT_EQ(Probe().scalar(replayed_rows), static_cast<long long>(spilled));
  EXPECT_EQ(Probe().scalar("SELECT COUNT(*) FROM audit_log"), first + 320);
  EXPECT_EQ(Probe().scalar("SELECT COUNT(*) FROM (SELECT DISTINCT source_id, seq FROM "
                           "audit_log) k"),
            first + 320);
  EXPECT_EQ(Probe().scalar("SELECT COUNT(*) FROM audit_log_unsealed"), 0);
  const VerifyRun after = run_verify(plain_url, "audit_log", "--key-file " + key);
  EXPECT_EQ(after.status, 0) << after.out;
}

}  // namespace testing_support
