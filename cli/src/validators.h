// Checks of command-line values that more than one subcommand takes. Their
// messages say what is wanted in words (CLI::PositiveNumber's printed its
// range as "0.000000 to 1797693134862315708145274237317043567981...").
//
// Called by the subcommands' option set-up (ingest_command.cpp,
// verify_command.cpp).
#pragma once

#include <CLI/CLI.hpp>

#include <charconv>
#include <cstdint>
#include <string>
#include <system_error>

namespace auditpipe::cli {

/// A whole number from 1 up to `most`.
inline CLI::Validator whole_number_from_one(std::uint64_t most = UINT64_MAX) {
  return CLI::Validator(
      [most](std::string& value) {
        std::uint64_t n = 0;
        const char* end = value.data() + value.size();
        const auto [ptr, ec] = std::from_chars(value.data(), end, n);
        if (ec != std::errc() || ptr != end || n == 0 || n > most) {
          return (most == UINT64_MAX ? std::string("a whole number from 1 up")
                                     : "a whole number from 1 to " + std::to_string(most)) +
                 ", not '" + value + "'";
        }
        return std::string();
      },
      most == UINT64_MAX ? "N>=1" : "1<=N<=" + std::to_string(most));
}

}  // namespace auditpipe::cli
