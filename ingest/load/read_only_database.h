// connect_read_only(): a connection for looking at a database that must
// already be there. A SQLite file is opened read-only (the SQLite URL option
// read_only=1, added unless the URL says read_only itself), so a mistyped
// path is reported instead of created and a copy on read-only media can be
// read; server URLs are used as they are (their users need no such option).
// A URL at fault is reported as given, without the added option.
//
// Who may call: `auditpipe verify` (it only reads) and the loader (when the
// table must exist because no schema file was given).
#pragma once

#include <memory>
#include <string>

#include "auditpipe/database.h"

namespace auditpipe::ingest {

std::unique_ptr<Database> connect_read_only(const std::string& url);

// True for a sqlite: URL (any case): the one kind connect_read_only() changes.
bool is_sqlite_url(const std::string& url);

}  // namespace auditpipe::ingest
