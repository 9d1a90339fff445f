// DestinationMark: which database a spill directory's or a durable pool's
// records were kept for. Their files record the table's layout, not where
// it lives, so a logger given another logger's directory or pool file (a
// copied configuration) wrote that logger's records into its own database
// without a word. A small file beside them names the database the sink's
// describe() names (without the password's mask and the options that do not
// say where the server is); a start that finds records
// kept for another destination warns, naming both, and writes them where
// it writes (a failover to another host is also a new destination, and
// must not lose them).
//
// Used by the pipeline at start, once the sink is opened.
//
// Thread safety: one thread.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string_view>

namespace auditpipe::internal {

// Compares `mark`'s destination with `destination` where `waiting` records
// are kept (`what` names their place for the warning), then records
// `destination` in it. A mark that cannot be written is warned of and let
// go: it only serves a warning.
void check_destination_mark(const std::filesystem::path& mark, std::string_view destination,
                            std::uint64_t waiting, std::string_view what);

}  // namespace auditpipe::internal
