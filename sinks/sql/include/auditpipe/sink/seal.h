// Tamper-evident sealing (README, Tamper-evident tables): the canonical
// bytes of a row, the digests that chain seals, and the key file. The SQL
// sink skeleton seals what it stores with these; `auditpipe verify`
// recomputes the same bytes from what it reads back.
//
// A seal covers the rows of one stored batch, described by key ranges
// ("sid:min-max;sid:min-max"): rows_digest = a hash of the rows' canonical
// bytes, in (source_id, seq) order (RowsDigest: Poly1305 under a key derived
// from the seal key with seal=hmac, SHA-256 with seal=hash); digest =
// HMAC-SHA-256(key, message) with a key (seal=hmac), SHA-256(message) without (seal=hash), where
// message is seal_message(prev_digest, seal_no, sealed_at, ranges, row_count, rows_digest).
//
// Who may call: the SQL sink skeleton and the verify command.
//
// Thread safety: free functions are pure; a Sha256 is one thread's.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "auditpipe/export.h"

namespace auditpipe {
struct SqlDialect;
}

namespace auditpipe::seal {

/// How a sink seals what it stores (URL option seal=).
enum class Mode {
  none,  ///< no sealing
  hash,  ///< plain SHA-256: catches accidents and naive edits, not someone who recomputes
  hmac,  ///< HMAC-SHA-256 with a key the database never sees
};

/// The sealing a sink's URL asks for.
struct AUDITPIPE_EXPORT SealSettings {
  Mode mode = Mode::none;   ///< seal=none|hash|hmac
  std::string key_file;     ///< seal_key_file=, else env AUDITPIPE_SEAL_KEY_FILE (hmac)
  std::string anchor_file;  ///< seal_anchor_file=: "seal_no digest", rewritten atomically
};

/// True if URL option `key` is one of sealing's: seal, seal_key_file,
/// seal_anchor_file.
AUDITPIPE_EXPORT bool is_url_option(std::string_view key);

/// Applies sealing's URL option `key`=`value` (is_url_option(key)): what is
/// wrong with the value, without the URL (the caller's message names it),
/// or nothing.
AUDITPIPE_EXPORT std::optional<std::string> apply_url_option(SealSettings& settings,
                                                             std::string_view key,
                                                             const std::string& value);

/// The sealing options of the query of `url` (other options ignored).
/// Throws auditpipe::url_error for a malformed query or a bad value.
AUDITPIPE_EXPORT SealSettings settings_in_url(std::string_view url);

/// What in `settings` (and migrate=add_columns, `migrate_add_columns`)
/// contradicts itself, a URL's options alone being at fault: a key or an
/// anchor file with sealing off, a key file with seal=hash, columns added
/// to a sealed table. Empty if nothing. Sinks refuse it as a url_error
/// when they parse their URL, before connecting.
AUDITPIPE_EXPORT std::optional<std::string> contradiction(const SealSettings& settings,
                                                          bool migrate_add_columns);

/// The key file seal=hmac reads: `settings.key_file` (seal_key_file=),
/// else the environment's AUDITPIPE_SEAL_KEY_FILE, else empty.
AUDITPIPE_EXPORT std::string key_file_of(const SealSettings& settings);

/// Sealing's files, checked before anything connects: seal=hmac's key
/// file (read_key_file), and the anchor file (check_anchor_file). Throws
/// auditpipe::error naming the file.
AUDITPIPE_EXPORT void check_files(const SealSettings& settings);

/// That a seal_anchor_file at `path` can be written: not a directory, and
/// a file can be made beside it (it is rewritten through one, renamed over
/// it). Throws auditpipe::error naming the file.
AUDITPIPE_EXPORT void check_anchor_file(const std::string& path);

/// A published seal: a seal_anchor_file's "SEALNO DIGEST", or verify's
/// --anchor SEALNO:DIGEST.
struct AUDITPIPE_EXPORT Anchor {
  std::int64_t seal_no = 0;  ///< 1 or more
  std::string digest;        ///< 64 hex digits
};

/// `text` read as an anchor ("SEALNO DIGEST" or "SEALNO:DIGEST", a line
/// end after it ignored), or nothing if it is not one.
AUDITPIPE_EXPORT std::optional<Anchor> parse_anchor(std::string_view text);

/// The anchor a seal_anchor_file at `path` holds, or nothing if there is no
/// file there. Throws auditpipe::error naming the file if it cannot be read
/// or holds no anchor.
AUDITPIPE_EXPORT std::optional<Anchor> read_anchor_file(const std::string& path);

/// The key file's bytes. Throws auditpipe::error for a missing, unreadable,
/// empty or world-readable file (the message names the file, never the key).
AUDITPIPE_EXPORT std::string read_key_file(const std::string& path);

/// The fewest bytes read_sealing_key() takes.
inline constexpr std::size_t min_sealing_key_bytes = 16;

/// read_key_file() for sealing: also refuses a key shorter than
/// min_sealing_key_bytes (a 1-byte key was taken, and its seals are as
/// good as unkeyed to anyone who tries 256 keys). verify reads any key, so
/// that a table sealed before can still be checked.
AUDITPIPE_EXPORT std::string read_sealing_key(const std::string& path);

/// The companion table of `table`: `<table>_seals`.
AUDITPIPE_EXPORT std::string seals_table(std::string_view table);

/// The statement that stores one seal in `table`'s seals table, seven `?`
/// (seal_no, ranges, row_count, prev_digest, digest, sealed_at,
/// row_hashes), idempotent as `dialect` can: ON DUPLICATE KEY UPDATE
/// seal_no = seal_no, or ON CONFLICT (seal_no) DO NOTHING RETURNING seal_no
/// (which says whether it stored the row).
AUDITPIPE_EXPORT std::string seal_insert_statement(const SqlDialect& dialect,
                                                   std::string_view table);

/// The open's refusal of a user who may not store seals in the seals table
/// `where` (its quoted name and location), `why` saying what the server or
/// catalog said: the grants it needs, UPDATE too where the seals' insert
/// ends in ON DUPLICATE KEY UPDATE (`on_duplicate_key_update`, MySQL).
AUDITPIPE_EXPORT std::string seals_insert_refused(std::string_view where, std::string_view why,
                                                  bool on_duplicate_key_update);

/// Where a start keeps the rows it found stored and covered by no seal
/// until it has sealed them late: `<table>_unsealed`.
AUDITPIPE_EXPORT std::string unsealed_table(std::string_view table);

/// What a kept find's MAC (seal_digest) is computed over: the finds
/// table's name (a find copied from another table is not one) and the
/// find's columns as stored.
AUDITPIPE_EXPORT std::string unsealed_find_message(std::string_view unsealed_table,
                                                   std::string_view source_id,
                                                   std::string_view after_no,
                                                   std::string_view runs);

/// The previous digest of the first seal: hex SHA-256 of "auditpipe-seal-genesis:" + table.
AUDITPIPE_EXPORT std::string genesis_digest(std::string_view table);

/// What a seal's digest is computed over. `sealed_at` (µs since the epoch)
/// is in it because `verify --since` chooses seals by it. `version` 3 is
/// the form whose rows digest was SHA-256 in both modes (before Poly1305
/// with seal=hmac); verify still accepts its seals.
AUDITPIPE_EXPORT std::string seal_message(std::string_view prev_digest, std::int64_t seal_no,
                                          std::int64_t sealed_at, std::string_view ranges,
                                          std::int64_t row_count, std::string_view rows_digest_hex,
                                          int version = 4);

/// A seal's digest (hex): HMAC-SHA-256(key, message) for Mode::hmac,
/// SHA-256(message) for Mode::hash.
AUDITPIPE_EXPORT std::string seal_digest(Mode mode, std::string_view key, std::string_view message);

/// An incremental SHA-256 (OpenSSL's libcrypto).
class AUDITPIPE_EXPORT Sha256 {
 public:
  Sha256();
  ~Sha256();
  /// Takes `other`'s state; `other` is then spent.
  Sha256(Sha256&& other) noexcept;
  /// Takes `other`'s state; `other` is then spent.
  Sha256& operator=(Sha256&& other) noexcept;
  /// Adds bytes.
  void update(std::string_view bytes);
  /// The digest of everything added, as hex; the object is then spent.
  std::string final_hex();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// A row's fingerprint: CRC-32C of its canonical bytes (RowEncoder's, one
/// row). A seal lists its rows' fingerprints in key order (column
/// row_hashes), so that verify can name the row that changed; the seal's
/// digest, not the fingerprints, proves it, so a checksum the CPU computes
/// in a few cycles per word does, where a second SHA-256 per row would
/// double sealing's cost.
AUDITPIPE_EXPORT std::uint32_t fingerprint(std::string_view row_bytes) noexcept;

/// Appends `fingerprint` as 8 hex digits.
AUDITPIPE_EXPORT void append_fingerprint(std::string& out, std::uint32_t fingerprint);

/// The key a seal=hmac table's rows digests are computed under:
/// HMAC-SHA-256(seal_key, "auditpipe-seal-rows-key"), 32 raw bytes.
AUDITPIPE_EXPORT std::string rows_key(std::string_view seal_key);

/// A seal's rows_digest: a hash of its rows' canonical bytes, one row after
/// another in (source_id, seq) order (each row's bytes delimit themselves,
/// given the table's columns), as hex.
///
/// Without a key (seal=hash): SHA-256. With rows_key() (seal=hmac):
/// Poly1305 under that key, used as a universal hash: two different row
/// sequences give one digest with probability below 2^-80 for a batch of
/// 100 MB, for someone who does not know the key (Bernstein, "The
/// Poly1305-AES message-authentication code"). The key is the same for every
/// seal, which a one-time authenticator must not do when its tags are
/// shown; this digest never is: it goes only into the message that
/// HMAC-SHA-256 seals, and is neither stored nor logged. It is the hashing
/// sealing spends most of its CPU on, and Poly1305 takes several times less
/// than SHA-256 (README, Tamper-evident tables).
class AUDITPIPE_EXPORT RowsDigest {
 public:
  /// SHA-256 (seal=hash).
  RowsDigest();
  /// Poly1305 under `rows_key` (seal=hmac): rows_key() of the seal key;
  /// SHA-256 when `rows_key` is empty (seal=hash).
  explicit RowsDigest(std::string_view rows_key);
  ~RowsDigest();
  /// Takes `other`'s state; `other` is then spent.
  RowsDigest(RowsDigest&& other) noexcept;
  /// Takes `other`'s state; `other` is then spent.
  RowsDigest& operator=(RowsDigest&& other) noexcept;
  /// The next row's bytes (or several rows', one after another: the digest
  /// is of the bytes' concatenation, whatever the calls). Hashing 64 KiB at
  /// a time is several times faster per byte than one row at a time.
  void add(std::string_view row_bytes);
  /// The digest, as hex; the object is then spent.
  std::string final_hex();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// A late seal's ranges begin with this: rows a run stored and did not
/// seal (it stopped between the two), sealed by the next start from what
/// the table held then, so that they are not mistaken for inserted rows
/// later and a change made to them afterwards is caught. verify names
/// every late seal: it vouches for rows auditpipe did not write itself.
inline constexpr std::string_view late_prefix = "late:";

/// Whether `ranges` are a late seal's.
inline bool is_late(std::string_view ranges) noexcept {
  return ranges.starts_with(late_prefix);
}

/// One source's part of a seal's ranges: ("sid:a-b,c;sid2:..." gives
/// (sid, "a-b,c"), then (sid2, ...)), in the text's order; a late seal's
/// prefix is skipped. Throws auditpipe::error if malformed.
AUDITPIPE_EXPORT std::vector<std::pair<std::int64_t, std::string_view>> split_sources(
    std::string_view ranges);

/// A run of seqs in one source's part: lo..hi, both included.
struct SeqRun {
  std::int64_t lo;  ///< first seq
  std::int64_t hi;  ///< last seq
  /// Equal when both ends are.
  bool operator==(const SeqRun&) const = default;
};

// Keys are any int64 a caller gives (DynamicLogger's commit(source_id,
// seq)), its ends included, so stepping past a run's end must not go
// through them: these say what `hi + 1` and `hi - lo + 1` would without
// overflowing.

/// Whether `seq` comes right after `hi` (seq == hi + 1).
constexpr bool follows(std::int64_t hi, std::int64_t seq) noexcept {
  return seq > hi && seq - 1 == hi;
}

/// Whether a run from `lo` joins one ending at `hi` (lo <= hi + 1).
constexpr bool joins(std::int64_t hi, std::int64_t lo) noexcept {
  return lo <= hi || follows(hi, lo);
}

/// The keys lo to hi (lo <= hi), at most INT64_MAX: a forged run may span
/// all of int64.
constexpr std::int64_t run_keys(std::int64_t lo, std::int64_t hi) noexcept {
  const std::uint64_t n = static_cast<std::uint64_t>(hi) - static_cast<std::uint64_t>(lo);
  return n >= static_cast<std::uint64_t>(INT64_MAX) ? INT64_MAX : static_cast<std::int64_t>(n) + 1;
}

/// a + b of counts (both >= 0), at most INT64_MAX.
constexpr std::int64_t add_keys(std::int64_t a, std::int64_t b) noexcept {
  return a > INT64_MAX - b ? INT64_MAX : a + b;
}

/// Where a crashed run's unsealed rows are looked for (by a start, to seal
/// them late) and reported as not yet sealed rather than inserted (by
/// verify): from the lowest key of a source's newest seals, its newest
/// tail_seals (verify's default --unsealed-window) and also those among
/// the tail_chain_seals seals of the chain from its own newest one down,
/// up to the first (newest first) past which its seals hold more than
/// tail_keys_max keys or reach further than tail_keys_max below its
/// highest key. A writer held off its core (or in a slow statement) while
/// the others store batch after batch stores its batch late, and a crash
/// then leaves those rows below many more of their source's seals than 16
/// (seen: a batch of 7 rows below 28 sealed batches of its source, under a
/// sanitizer on two busy cores). Counted from the source's own newest
/// seal, not the chain's: another process's seals stored above a crashed
/// run's do not move its window (seen: a run killed within its start's
/// grace stored 250 seals above such a batch, which then read as inserted
/// and the start after left it). The caps bound the rows a start counts,
/// and keep a seal of old seqs (a spill replayed late) from taking the
/// window down to them.
inline constexpr int tail_seals = 16;
inline constexpr int tail_chain_seals = 256;
inline constexpr std::int64_t tail_keys_max = 8192;

/// Whether each of a source's seals, fed newest first (not late ones),
/// extends its window past its newest 16 (above). The start and verify
/// both decide with this, so that they agree.
class TailWindow {
 public:
  /// `runs`: the seal's keys of this source; `depth`: its place in the
  /// chain counted from the source's newest seal (not a late one), 1 for
  /// that seal.
  bool extends(const std::vector<SeqRun>& runs, std::int64_t depth) noexcept {
    for (const SeqRun& run : runs) {
      keys_ = std::min(keys_ + count(run.lo, run.hi), tail_keys_max + 1);
      if (!hi_ || run.hi > *hi_) hi_ = run.hi;
    }
    for (const SeqRun& run : runs) {
      if (count(run.lo, *hi_) > tail_keys_max) closed_ = true;
    }
    if (keys_ > tail_keys_max) closed_ = true;
    return !closed_ && depth <= tail_chain_seals;
  }

 private:
  /// The keys lo to hi, counted up to tail_keys_max + 1 (a forged run may
  /// span 2^64).
  static std::int64_t count(std::int64_t lo, std::int64_t hi) noexcept {
    const std::uint64_t n = static_cast<std::uint64_t>(hi) - static_cast<std::uint64_t>(lo);
    return n >= static_cast<std::uint64_t>(tail_keys_max) ? tail_keys_max + 1
                                                          : static_cast<std::int64_t>(n) + 1;
  }
  std::int64_t keys_ = 0;
  std::optional<std::int64_t> hi_;
  bool closed_ = false;
};

/// The runs of one source's part ("a-b,c"), in order. Throws auditpipe::error if malformed.
AUDITPIPE_EXPORT std::vector<SeqRun> parse_runs(std::string_view items);

/// Sorts `runs` and joins those that overlap or touch (a batch sealed
/// twice); returns how many seqs they hold.
AUDITPIPE_EXPORT std::int64_t merge_runs(std::vector<SeqRun>& runs);

/// `bytes` as lower-case hex.
AUDITPIPE_EXPORT std::string to_hex(std::string_view bytes);

/// Appends canonical bytes of one row's values to a buffer, in descriptor
/// order: a NULL is byte 0; a value is byte 1 and then integers (booleans,
/// timestamps in µs) as a zigzag varint (LEB128 of (v << 1) ^ (v >> 63)),
/// float64 as its IEEE bits (8 bytes LE; -0.0 as 0.0), text as a varint length and its
/// bytes. The row ends with key(): source_id and seq, zigzag varints. Short
/// where the values are small: every byte is hashed, and the hash is most
/// of what sealing costs.
class AUDITPIPE_EXPORT RowEncoder {
 public:
  /// A NULL value.
  void null() {
    char* p = room(1);
    *p++ = '\0';
    done(p);
  }
  /// An integer, boolean or timestamp value.
  void integer(std::int64_t v) {
    char* p = room(1 + max_varint);
    *p++ = '\1';
    done(zigzag(p, v));
  }
  /// A float64 value.
  void float64(double v);
  /// A text value.
  void text(std::string_view v) {
    char* p = room(1 + max_varint + v.size());
    *p++ = '\1';
    p = varint(p, v.size());
    if (!v.empty()) std::memcpy(p, v.data(), v.size());
    done(p + v.size());
  }
  /// The row's key, after its values.
  void key(std::int64_t source_id, std::int64_t seq) {
    char* p = room(2 * max_varint);
    done(zigzag(zigzag(p, source_id), seq));
  }
  /// The bytes so far.
  std::string_view bytes() const noexcept { return {buf_.data(), size_}; }
  /// Empties the buffer (keeps its capacity).
  void clear() noexcept { size_ = 0; }

 private:
  // Bytes are written through a pointer into room made beforehand: appended
  // to a string one call at a time (a capacity check and a copy each), the
  // encoding took nearly twice as long (bench/sink_ceiling, sealed, perf).
  static constexpr std::size_t max_varint = 10;
  char* room(std::size_t n) {
    if (buf_.size() - size_ < n) grow(n);
    return buf_.data() + size_;
  }
  void grow(std::size_t n);
  void done(const char* end) noexcept { size_ = static_cast<std::size_t>(end - buf_.data()); }
  static char* varint(char* p, std::uint64_t v) noexcept {
    while (v >= 0x80) {
      *p++ = static_cast<char>((v & 0x7f) | 0x80);
      v >>= 7;
    }
    *p++ = static_cast<char>(v);
    return p;
  }
  static char* zigzag(char* p, std::int64_t v) noexcept {
    return varint(p, (static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63));
  }
  std::vector<char> buf_;
  std::size_t size_ = 0;
};

}  // namespace auditpipe::seal
