// auditpipe::open(url): the sink for a URL, whichever database it names.
//
//   auditpipe::Logger<AuditRow> logger(auditpipe::open(url));
//
// sqlite://, mysql:// (and mariadb://), postgresql:// (and postgres://),
// as far as this build has the sinks: target auditpipe::open links every
// sink that was built and registers each (auditpipe/sink/sink_registry.h).
// An unknown scheme or a malformed URL is an auditpipe::error; the error
// for an unknown scheme names the ones this build has.
#pragma once

#include <memory>
#include <string_view>

#include "auditpipe/export.h"
#include "auditpipe/sink/sink.h"

namespace auditpipe {

/// The sink for `url`, chosen by its scheme among the sinks this build has (sqlite://, mysql:// or
/// mariadb://, postgresql:// or postgres://). Throws auditpipe::error for an unknown scheme, naming
/// the supported ones.
AUDITPIPE_EXPORT std::shared_ptr<Sink> open(std::string_view url);

}  // namespace auditpipe
