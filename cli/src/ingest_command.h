// `auditpipe ingest`: its options, its help page, and the run: the load
// itself is ingest/load/loader.h; --infer is answered here.
//
// Who may call: main.cpp.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "loader.h"

namespace auditpipe::cli {

class IngestCommand {
 public:
  /// Adds the subcommand and its options to `app`.
  explicit IngestCommand(CLI::App& app);
  /// Runs it if it was chosen; returns the exit status.
  int run();

 private:
  int infer();

  CLI::App* command_;
  ingest::LoadConfig config_;
  std::vector<std::string> arguments_;
  std::vector<std::string> maps_;
  std::vector<std::string> sets_;
  bool infer_ = false;
  std::size_t infer_lines_ = 1000;
  std::size_t max_rejects_ = 0;
  std::uint64_t give_up_after_ = 0;  ///< seconds
};

}  // namespace auditpipe::cli
