// open_sink(url): the sink for a URL, whichever database it names.
//
//   auditpipe::Logger<AuditRow> logger(auditpipe::open_sink(url));
//
// sqlite://, mysql:// (and mariadb://), postgresql:// (and postgres://),
// as far as this build has the sinks (target auditpipe::open links those
// it has). An unsupported or malformed URL is an auditpipe::error.
#pragma once

#include <memory>
#include <string_view>

#include "auditpipe/sink/sink.h"

namespace auditpipe {

std::shared_ptr<Sink> open_sink(std::string_view url);

}  // namespace auditpipe
