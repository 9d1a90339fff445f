// read_only_url(): the URL for looking at a database that must already be
// there. A SQLite file is opened read-only (the SQLite URL option
// read_only=1), so a mistyped path is reported instead of created and a
// copy on read-only media can be read; server URLs are returned unchanged
// (their users need no such option), as is a URL that says read_only itself.
//
// Who may call: `auditpipe verify` (it only reads) and the loader (when the
// table must exist because no schema file was given).
#pragma once

#include <string>

namespace auditpipe::ingest {

std::string read_only_url(const std::string& url);

}  // namespace auditpipe::ingest
