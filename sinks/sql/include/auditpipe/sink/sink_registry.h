// SinkRegistry: which sink opens a URL, by the URL's scheme. A sink library
// that opens URLs provides its schemes (`url_schemes`) and its factory
// (`open`) in its header; auditpipe::open() (target auditpipe::open) keeps
// one registry with every such sink the build has.
//
// Who may call: auditpipe::open, and anyone keeping a registry of their own.
//
// Thread safety: add() before any open(); open() from any thread after.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "auditpipe/export.h"
#include "auditpipe/sink/sink.h"

namespace auditpipe {

/// Sinks by URL scheme: what auditpipe::open(url) picks from.
class AUDITPIPE_EXPORT SinkRegistry {
 public:
  /// Parses the URL and returns the sink; connecting happens in Sink::open().
  using Factory = std::function<std::shared_ptr<Sink>(std::string_view url)>;

  /// `schemes` are lower case, without "://". The first is the one the
  /// error for an unknown scheme lists; the others are its aliases
  /// (mariadb:// for mysql://).
  void add(std::span<const std::string_view> schemes, Factory factory);

  /// The sink for `url`, by its scheme (in any case). Throws auditpipe::error
  /// for a scheme no sink registered, naming the ones that are (the URL's
  /// password masked), and whatever the sink's factory throws.
  std::shared_ptr<Sink> open(std::string_view url) const;

 private:
  struct Entry {
    std::string scheme;
    Factory factory;
    bool listed;  ///< the first of its sink's schemes
  };
  std::vector<Entry> entries_;
};

}  // namespace auditpipe
