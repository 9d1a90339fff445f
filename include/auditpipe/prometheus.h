// Stats in the Prometheus text exposition format (version 0.0.4), for a
// /metrics endpoint:
//
//   std::string body = auditpipe::to_prometheus(logger.stats(), {{"logger", "payments"}});
//   // serve with Content-Type: text/plain; version=0.0.4
//
// Names start with auditpipe_, counters end in _total, units are in the name
// (_seconds, _bytes, _records, _connections), histograms have cumulative
// _bucket{le=...} series with +Inf, _sum and _count. Every series of one
// call carries the given labels (values escaped as the format requires).
//
// Several loggers on one page (one /metrics endpoint for a process with an
// orders logger and a payments logger): the vector overload writes each
// family's HELP and TYPE once, followed by one series per logger, told
// apart by the labels each was given:
//
//   std::string body = auditpipe::to_prometheus({{orders.stats(), {{"logger", "orders"}}},
//                                                {payments.stats(), {{"logger", "payments"}}}});
//
// Thread safety: a pure function.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "auditpipe/export.h"
#include "auditpipe/stats.h"

namespace auditpipe {

/// Labels added to every series of a page: name, value pairs.
using MetricLabels = std::vector<std::pair<std::string, std::string>>;

/// One logger's stats and the labels that tell its series from another's.
struct LabeledStats {
  Stats stats;          ///< the logger's stats, as Logger::stats() returns them
  MetricLabels labels;  ///< added to each of its series
};

/// Throws auditpipe::error if a label name is not a valid Prometheus label
/// name, is reserved or given twice, or a value is not valid UTF-8.
AUDITPIPE_EXPORT std::string to_prometheus(const Stats& stats, const MetricLabels& labels = {});

/// Every logger's series on one page, families in the single-logger order.
/// Throws auditpipe::error as above for any logger's labels, and when two
/// loggers have the same label set (in any order; two loggers without labels
/// included): their series would collide, and Prometheus refuses the page.
AUDITPIPE_EXPORT std::string to_prometheus(const std::vector<LabeledStats>& loggers);

/// A one-line summary of the stats, as the periodic log line has it.
AUDITPIPE_EXPORT std::string summary_line(const Stats& stats);

}  // namespace auditpipe
