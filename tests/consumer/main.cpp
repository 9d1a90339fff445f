// Logs three records through the installed auditpipe and checks they arrive.
#include <auditpipe/auditpipe.h>

#include <cstdio>
#include <memory>
#include <mutex>

#ifdef CONSUMER_HAS_SQLITE
#include <auditpipe/open.h>
#include <auditpipe/sqlite/sqlite_sink.h>
#endif

struct Event {
  std::int64_t id = 0;
  auditpipe::fixed_string<16> what;
};
constexpr auto describe(auditpipe::type_tag<Event>) {
  return auditpipe::table<Event>("events", AUDITPIPE_COLUMN(Event, id),
                                 AUDITPIPE_COLUMN(Event, what));
}

class CountingSink : public auditpipe::Sink {
 public:
  void open(const auditpipe::TableDescriptor&, const auditpipe::SinkContext&) override {}
  auditpipe::WriteResult write(const auditpipe::Batch& b) noexcept override {
    std::lock_guard<std::mutex> lock(mutex);
    count += b.records.size();
    return auditpipe::WriteResult::success();
  }
  std::string describe() const override { return "counting"; }
  std::mutex mutex;
  std::size_t count = 0;
};

int main() {
  auto sink = std::make_shared<CountingSink>();
  {
    auditpipe::Logger<Event> logger(sink);
    for (int i = 0; i < 3; ++i) {
      auto r = logger.acquire();
      r->id = i;
      r->what = "installed";
      if (r.commit() != auditpipe::Status::ok) return 1;
    }
    if (!logger.close().drained) return 2;
  }
  std::printf("consumer: %zu records written\n", sink->count);
  if (sink->count != 3) return 3;
#ifdef CONSUMER_HAS_SQLITE
  // The installed auditpipe::open registers the installed sinks (parsing
  // only: nothing is opened).
  if (auditpipe::open("sqlite://consumer.db")->describe() != "sqlite://consumer.db") return 4;
#endif
  return 0;
}
