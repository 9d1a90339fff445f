// make_line_sink (line_sink.h): records as logfmt lines through a spdlog
// logger.
#include "auditpipe/spdlog/line_sink.h"

#include <spdlog/sinks/sink.h>
#include <spdlog/spdlog.h>

#include <cmath>
#include <string>

#include "auditpipe/detail/text_escape.h"

namespace auditpipe::spdlog_bridge {

using detail::append_number;

namespace {

// A logfmt value: quoted, with the backslash escapes, \" and \0.
constexpr detail::EscapeTable logfmt_escapes =
    detail::backslash_escapes.with('"', "\\\"").with('\0', "\\0");

void append_quoted(std::string& out, std::string_view text) {
  out += '"';
  detail::append_escaped(out, text, logfmt_escapes);
  out += '"';
}

class LineSink final : public Sink {
 public:
  LineSink(std::shared_ptr<::spdlog::logger> logger, ::spdlog::level::level_enum level)
      : logger_(std::move(logger)), level_(level) {}

  void open(const TableDescriptor&, const SinkContext&) override {}

  WriteResult write(const Batch& batch) noexcept override {
    if (!logger_->should_log(level_)) return WriteResult::success();  // the logger's own filter
    try {
      std::string line;
      for (const RecordRef& r : batch.records) {
        line.assign(batch.table.name);
        line += " source_id=";
        append_number(line, r.source_id);
        line += " seq=";
        append_number(line, r.seq);
        for (const Column& c : batch.table.columns) {
          line += ' ';
          line += c.name;
          line += '=';
          // Unquoted: a text "null" is quoted, as every text is.
          if (is_null(r.data, c)) {
            line += "null";
            continue;
          }
          switch (c.type) {
            case ColumnType::text:
              append_quoted(line, read_text(r.data, c));
              break;
            case ColumnType::float64: {
              const double v = read_float64(r.data, c);
              if (std::isfinite(v))
                append_number(line, v);
              else
                line += std::isnan(v) ? "NaN" : v > 0 ? "Inf" : "-Inf";
              break;
            }
            case ColumnType::timestamp: {
              char buf[32];
              line.append(buf, timestamp{read_integer(r.data, c)}.format(buf, 'T'));
              line += 'Z';
              break;
            }
            case ColumnType::boolean:
              line += read_integer(r.data, c) ? "true" : "false";
              break;
            default:
              append_number(line, read_integer(r.data, c));
              break;
          }
        }
        // To the sinks themselves: the logger's log() and flush() catch
        // what a sink throws (a full disk) and report it on stderr only,
        // and the batch counted as written was not.
        const ::spdlog::details::log_msg msg(logger_->name(), level_, line);
        for (const auto& sink : logger_->sinks()) {
          if (sink->should_log(level_)) sink->log(msg);
        }
      }
      for (const auto& sink : logger_->sinks()) sink->flush();
      return WriteResult::success();
    } catch (const std::exception& e) {
      return WriteResult::transient_error(e.what());
    }
  }

  std::string describe() const override { return "spdlog logger '" + logger_->name() + "'"; }

 private:
  std::shared_ptr<::spdlog::logger> logger_;
  ::spdlog::level::level_enum level_;
};

}  // namespace

std::shared_ptr<Sink> make_line_sink(std::shared_ptr<::spdlog::logger> logger,
                                     ::spdlog::level::level_enum level) {
  return std::make_shared<LineSink>(std::move(logger), level);
}

}  // namespace auditpipe::spdlog_bridge
