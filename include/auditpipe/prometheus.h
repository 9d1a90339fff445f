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

/// Throws auditpipe::error if a label name is not a valid Prometheus label
/// name.
AUDITPIPE_EXPORT std::string to_prometheus(const Stats& stats, const MetricLabels& labels = {});

/// A one-line summary of the stats, as the periodic log line has it.
AUDITPIPE_EXPORT std::string summary_line(const Stats& stats);

}  // namespace auditpipe
