#include "auditpipe/spdlog/line_sink.h"

#include <spdlog/spdlog.h>

#include <charconv>
#include <cmath>
#include <string>

namespace auditpipe::spdlog_bridge {

namespace {

template <class Number>
void append_number(std::string& out, Number v) {
  char buf[32];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, end);
}

void append_quoted(std::string& out, std::string_view text) {
  out += '"';
  for (char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\0':
        out += "\\0";
        break;
      default:
        out += c;
    }
  }
  out += '"';
}

class LineSink final : public Sink {
 public:
  LineSink(std::shared_ptr<::spdlog::logger> logger, ::spdlog::level::level_enum level)
      : logger_(std::move(logger)), level_(level) {}

  void open(const TableDescriptor&, const SinkContext&) override {}

  WriteResult write(const Batch& batch) noexcept override {
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
        logger_->log(level_, "{}", line);
      }
      logger_->flush();
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
