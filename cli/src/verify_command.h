// `auditpipe verify`: checks a sealed table against its seals (README,
// Tamper-evident tables): recomputes every seal's digest from the rows read
// back and the chain from seal 1, and names what changed, went missing or
// was added, with the keys involved.
//
// Who may call: main.cpp.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>

#include "auditpipe/sink/seal.h"

namespace auditpipe::cli {

class VerifyCommand {
 public:
  /// Adds the subcommand and its options to `app`.
  explicit VerifyCommand(CLI::App& app);
  /// Whether the command line chose it.
  bool chosen() const { return command_->parsed(); }
  /// Runs it; returns the exit status (0 verified, 1 tampering found, 3 only
  /// rows not yet sealed or late seals, 4 could not verify).
  int run();

 private:
  CLI::App* command_;
  std::string url_;
  std::string table_;
  std::string key_file_;
  std::string anchor_;
  std::string since_;
  std::size_t max_findings_ = 20;
  std::size_t unsealed_window_ = auditpipe::seal::tail_seals;
  std::int64_t accept_late_ = 0;
  bool quiet_ = false;
};

}  // namespace auditpipe::cli
