// The `auditpipe` command: its subcommands, parsed with CLI11 (Debian's
// libcli11-dev). Each subcommand lives in its own file; this one only
// dispatches and turns errors into a message and an exit status.
//
// Who may call: the shell.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>

#include "auditpipe/status.h"
#include "auditpipe/version.h"
#include "hidden_arguments.h"
#include "ingest_command.h"
#include "verify_command.h"

int main(int argc, char** argv) {
  CLI::App app{"auditpipe: audit logs into SQL databases, exactly once", "auditpipe"};
  app.set_version_flag("--version", std::string("auditpipe ") + AUDITPIPE_VERSION);
  app.require_subcommand(1);
  auditpipe::cli::IngestCommand ingest(app);
  auditpipe::cli::VerifyCommand verify(app);
  using auditpipe::cli::HiddenArguments;
  HiddenArguments::remember(argc, argv);
  app.failure_message([](const CLI::App* failed, const CLI::Error& e) {
    return HiddenArguments::shown(CLI::FailureMessage::simple(failed, e));
  });
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // CLI11 prints the message (or the help); usage errors exit 2, as is usual.
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (verify.chosen()) return verify.run();  // its own statuses, errors included
  try {
    return ingest.run();
  } catch (const auditpipe::url_error& e) {
    std::fprintf(stderr, "%s\n", HiddenArguments::shown(e.what()).c_str());
    return 2;  // a usage error: nothing was tried
  } catch (const auditpipe::ingest::usage_error& e) {
    std::fprintf(stderr, "%s\n", HiddenArguments::shown(e.what()).c_str());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", HiddenArguments::shown(e.what()).c_str());
    return 1;
  }
}
