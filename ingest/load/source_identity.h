// The identity of an input, for exactly-once loading: a source_id derived
// from the input's own first bytes, so that the same file loaded again (by
// another path, after a crash, after it grew) gets the same id, and each
// record's seq (its byte offset) the same key.
//
// Who may call: the loader (loader.cpp), the checkpoint store.
//
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace auditpipe::ingest {

/// How many leading bytes (of the decompressed input) identify it. A file
/// shorter than this when first seen is identified by what it had then;
/// the checkpoint keeps that length so a grown file still matches.
inline constexpr std::size_t identity_prefix_bytes = 4096;

/// A non-negative id from SHA-256 of `prefix` (its length included) and
/// `salt`: 0 for an input seen first, else the id of another input whose
/// first bytes were the same (a rotated log's successor that starts as it
/// did), so that the two never share keys.
std::int64_t source_id_of(std::string_view prefix, std::int64_t salt = 0);

/// Whether `prefix` starts with the `bytes` bytes whose source_id_of(.., salt)
/// is `id`: false when it is shorter than that.
bool starts_as(std::string_view prefix, std::uint64_t bytes, std::int64_t salt, std::int64_t id);

}  // namespace auditpipe::ingest
