// CollectingSink: a Sink double that remembers every (source_id, seq) it is
// given, for tests of the pipeline alone. It can be told to fail, to refuse
// chosen records, to hold writes until released, or to take time per record.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "auditpipe/sink/sink.h"

namespace testing_support {

class CollectingSink : public auditpipe::Sink {
 public:
  using Key = std::pair<std::int64_t, std::int64_t>;

  void open(const auditpipe::TableDescriptor& table, const auditpipe::SinkContext&) override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (fail_open_) throw auditpipe::error("test sink: refusing to open");
    table_ = &table;
    opened_ = true;
  }

  auditpipe::WriteResult write(const auditpipe::Batch& batch) noexcept override {
    // A database whose writes take time in proportion to their rows; slept
    // outside the lock, so writers overlap as on a real server.
    if (const auto d = delay_per_record_.load(); d.count() != 0) {
      std::this_thread::sleep_for(d * static_cast<long>(batch.records.size()));
    }
    std::unique_lock<std::mutex> lock(mutex_);
    ++attempts_;
    gate_cv_.wait(lock, [&] { return !held_; });
    if (successes_left_ == 0) {
      return auditpipe::WriteResult::transient_error("test sink: gone after its last success");
    }
    if (transient_failures_ > 0) {
      --transient_failures_;
      return permanent_ ? auditpipe::WriteResult::permanent_error("test sink: permission denied")
                        : auditpipe::WriteResult::transient_error("test sink: induced failure");
    }
    if (refuse_) {
      for (const auto& r : batch.records) {
        if (refuse_(r)) return auditpipe::WriteResult::rejection("test sink: refused record");
      }
    }
    for (const auto& r : batch.records) {
      keys_.emplace_back(r.source_id, r.seq);
      if (keep_bytes_) {
        rows_.emplace_back(r.data, r.data + batch.table.record_size);
      }
    }
    batch_sizes_.push_back(batch.records.size());
    if (successes_left_ > 0) --successes_left_;
    written_cv_.notify_all();
    return auditpipe::WriteResult::success();
  }

  void close() noexcept override {
    if (on_close_) on_close_();
    std::lock_guard<std::mutex> lock(mutex_);
    closed_ = true;
  }

  std::string describe() const override { return description_; }

  // Like a pooled sink: figures while open, none once closed.
  std::optional<auditpipe::ConnectionPoolStats> connection_pool_stats() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!opened_ || closed_) return std::nullopt;
    auditpipe::ConnectionPoolStats s;
    s.created = 3;
    s.idle = 3;
    return s;
  }

  // Setup.
  void keep_bytes() { keep_bytes_ = true; }
  // What describe() says (a database's URL); before the logger opens it.
  void describe_as(std::string description) { description_ = std::move(description); }
  void delay_per_record(std::chrono::microseconds d) { delay_per_record_ = d; }
  void fail_open(bool on = true) {
    std::lock_guard<std::mutex> lock(mutex_);
    fail_open_ = on;
  }
  void fail_next(int n) {
    std::lock_guard<std::mutex> lock(mutex_);
    transient_failures_ = n;
  }
  // The next n writes fail as a configuration the sink cannot write with.
  void fail_permanently_next(int n) {
    std::lock_guard<std::mutex> lock(mutex_);
    transient_failures_ = n;
    permanent_ = true;
  }
  // The next n writes succeed; every one after them fails as transient.
  void fail_after(int n) {
    std::lock_guard<std::mutex> lock(mutex_);
    successes_left_ = n;
  }
  void refuse_if(std::function<bool(const auditpipe::RecordRef&)> f) { refuse_ = std::move(f); }
  // Called as close() begins (set before the logger closes).
  void on_close(std::function<void()> f) { on_close_ = std::move(f); }
  void hold() {
    std::lock_guard<std::mutex> lock(mutex_);
    held_ = true;
  }
  void release() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      held_ = false;
    }
    gate_cv_.notify_all();
  }

  // Results.
  std::vector<Key> keys() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return keys_;
  }
  std::vector<std::vector<std::byte>> rows() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return rows_;
  }
  std::vector<std::size_t> batch_sizes() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return batch_sizes_;
  }
  std::size_t attempts() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return attempts_;
  }
  bool opened() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return opened_;
  }
  bool closed() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return closed_;
  }

 private:
  mutable std::mutex mutex_;
  std::condition_variable gate_cv_;
  std::condition_variable written_cv_;
  const auditpipe::TableDescriptor* table_ = nullptr;
  bool opened_ = false;
  bool closed_ = false;
  bool held_ = false;
  std::atomic<std::chrono::microseconds> delay_per_record_{std::chrono::microseconds(0)};
  std::string description_ = "test://collecting";
  bool keep_bytes_ = false;
  bool permanent_ = false;
  bool fail_open_ = false;
  int transient_failures_ = 0;
  int successes_left_ = -1;  // -1: no limit
  std::size_t attempts_ = 0;
  std::function<bool(const auditpipe::RecordRef&)> refuse_;
  std::function<void()> on_close_;
  std::vector<Key> keys_;
  std::vector<std::vector<std::byte>> rows_;
  std::vector<std::size_t> batch_sizes_;
};

}  // namespace testing_support
