// auditpipe::open(url) (auditpipe/open.h): one registry of the sinks this
// build has, filled once, on first use.
#include "auditpipe/open.h"

#include "auditpipe/sink/sink_registry.h"
#include "registered_sinks.h"

namespace auditpipe {

std::shared_ptr<Sink> open(std::string_view url) {
  static const SinkRegistry registry = [] {
    SinkRegistry r;
    open_detail::register_built_sinks(r);
    return r;
  }();
  return registry.open(url);
}

}  // namespace auditpipe
