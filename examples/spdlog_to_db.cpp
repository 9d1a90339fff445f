// spdlog_to_db: an existing spdlog logger, routed into a database table.
//
//   spdlog_to_db [url]     (default sqlite:///tmp/spdlog_to_db.db; mysql:// and
//                           postgresql:// URLs work the same)
//
// The application keeps logging with spdlog as it always has; one extra
// sink commits every message into auditpipe, which writes them to the
// table log_events in batches. The console keeps its copy.
#include <auditpipe/auditpipe.h>
#include <auditpipe/open.h>
#include <auditpipe/sink/url.h>
#include <auditpipe/spdlog/from_spdlog.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <memory>
#include <string>

int main(int argc, char** argv) {
  const std::string url = argc > 1 ? argv[1] : "sqlite:///tmp/spdlog_to_db.db";
  try {
    using auditpipe::spdlog_bridge::LogRecord;
    auto audit = std::make_shared<auditpipe::Logger<LogRecord>>(auditpipe::open(url));
    auto to_db = std::make_shared<auditpipe::spdlog_bridge::from_spdlog_mt>(audit);

    // The application's logger, as it was, plus the database.
    auto payments = std::make_shared<spdlog::logger>(
        "payments",
        spdlog::sinks_init_list{std::make_shared<spdlog::sinks::stdout_color_sink_mt>(), to_db});
    spdlog::register_logger(payments);

    spdlog::get("payments")->info("payment {} accepted: {} EUR", 1001, 25.5);
    SPDLOG_LOGGER_WARN(payments, "refund {} over the limit ({} EUR)", 1002, 1200);
    payments->error("card {} declined: '{}'", "**** 4242",
                    "insufficient funds; DROP TABLE log_events");
    payments->flush();  // waits (boundedly) until the messages are in the database

    const auto report = audit->close();
    std::printf(
        "spdlog_to_db: %llu messages written to %s (table log_events), %llu not committed\n",
        static_cast<unsigned long long>(report.stats.written), auditpipe::redact_url(url).c_str(),
        static_cast<unsigned long long>(to_db->not_committed()));
    spdlog::drop("payments");
    return report.drained ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "spdlog_to_db: %s\n", e.what());
    return 1;
  }
}
