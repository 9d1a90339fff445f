// What the command prints about its own arguments, with the password of
// any database URL among them masked. Messages echo a mistaken argument
// back (a URL given where a file or a number goes: "--writers: Value
// postgresql://user:pw@... not in range"), and the password went with it.
//
// Who may call: main() once, with its arguments (remember); then whatever
// prints a message to the terminal (shown).
//
// Thread safety: remember() before any other thread starts.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "auditpipe/sink/url.h"

namespace auditpipe::cli {

class HiddenArguments {
 public:
  /// Notes each argument that a URL redaction changes.
  static void remember(int argc, char** argv) {
    for (int i = 1; i < argc; ++i) {
      std::string arg = argv[i];
      std::string masked = redact_url(arg);
      if (masked != arg) pairs().emplace_back(std::move(arg), std::move(masked));
    }
  }

  /// `text` with every remembered argument in its masked form.
  static std::string shown(std::string text) {
    for (const auto& [arg, masked] : pairs()) {
      for (std::size_t at = text.find(arg); at != std::string::npos;
           at = text.find(arg, at + masked.size())) {
        text.replace(at, arg.size(), masked);
      }
    }
    return text;
  }

 private:
  static std::vector<std::pair<std::string, std::string>>& pairs() {
    static std::vector<std::pair<std::string, std::string>> remembered;
    return remembered;
  }
};

}  // namespace auditpipe::cli
