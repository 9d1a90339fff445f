// The consumer's shared library: auditpipe inside, one C function outside.
#include <auditpipe/auditpipe.h>
#include <auditpipe/open.h>

#include <cstdint>
#include <string>

struct PluginEvent {
  std::int64_t id = 0;
  auditpipe::fixed_string<16> origin;
};
constexpr auto describe(auditpipe::type_tag<PluginEvent>) {
  return auditpipe::table<PluginEvent>("plugin_events", AUDITPIPE_COLUMN(PluginEvent, id),
                                       AUDITPIPE_COLUMN(PluginEvent, origin));
}

// Logs `rows` rows into the SQLite file at `path`; returns the number the
// logger reports written, or -1 on an error.
extern "C" __attribute__((visibility("default"))) int audit_plugin_log(const char* path, int rows) {
  try {
    auditpipe::Logger<PluginEvent> logger(auditpipe::open(std::string("sqlite://") + path));
    for (int i = 0; i < rows; ++i) {
      auto r = logger.acquire();
      if (!r) return -1;
      r->id = i;
      r->origin = "plugin";
      r.commit();
    }
    return static_cast<int>(logger.close().stats.written);
  } catch (const auditpipe::error&) {
    return -1;
  }
}
