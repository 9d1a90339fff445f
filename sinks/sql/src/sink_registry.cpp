// The sink registry (auditpipe/sink/sink_registry.h): URL schemes to sink
// factories, filled by auditpipe::open (or whoever keeps a registry).
#include "auditpipe/sink/sink_registry.h"

#include "auditpipe/sink/url.h"
#include "auditpipe/status.h"

namespace auditpipe {

void SinkRegistry::add(std::span<const std::string_view> schemes, Factory factory) {
  bool first = true;
  for (std::string_view scheme : schemes) {
    entries_.push_back({std::string(scheme), factory, first});
    first = false;
  }
}

std::shared_ptr<Sink> SinkRegistry::open(std::string_view url) const {
  for (const Entry& e : entries_) {
    if (has_scheme(url, e.scheme)) return e.factory(url);
  }
  std::string supported;
  for (const Entry& e : entries_) {
    if (e.listed) supported += " " + e.scheme + "://";
  }
  throw url_error("auditpipe: no sink for '" + redact_url(url) +
                  "' in this build (supported:" + supported + ")");
}

}  // namespace auditpipe
