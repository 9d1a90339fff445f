// auditpipe::open(url) (auditpipe/open.h): one registry of the sinks this
// build has, filled once, as the library loads.
#include "auditpipe/open.h"

#include "auditpipe/sink/sink_registry.h"
#include "registered_sinks.h"

namespace auditpipe {

namespace {
const SinkRegistry& registry() {
  static const SinkRegistry made = [] {
    SinkRegistry r;
    open_detail::register_built_sinks(r);
    return r;
  }();
  return made;
}
// Made as the library loads, not by the first thread to open a sink: a
// child forked while another thread made it would wait for ever for that
// thread's static initialization at its own first open.
[[maybe_unused]] const SinkRegistry& registry_made_at_load = registry();
}  // namespace

std::shared_ptr<Sink> open(std::string_view url) {
  return registry().open(url);
}

}  // namespace auditpipe
