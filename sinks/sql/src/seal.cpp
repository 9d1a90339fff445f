// Sealing's digests, canonical row bytes and key file (auditpipe/sink/seal.h).
#include "auditpipe/sink/seal.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/params.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "auditpipe/sink/sql_dialect.h"
#include "auditpipe/sink/url.h"
#include "auditpipe/status.h"
#include "common/crc32c.h"

namespace auditpipe::seal {

bool is_url_option(std::string_view key) {
  return key == "seal" || key == "seal_key_file" || key == "seal_anchor_file";
}

std::optional<std::string> apply_url_option(SealSettings& settings, std::string_view key,
                                            const std::string& value) {
  if (key == "seal") {
    if (value == "none") {
      settings.mode = Mode::none;
    } else if (value == "hash") {
      settings.mode = Mode::hash;
    } else if (value == "hmac") {
      settings.mode = Mode::hmac;
    } else {
      return "seal must be none, hash or hmac (got '" + value + "')";
    }
  } else if (value.empty()) {
    // An empty path would switch the key or the anchor off without a word
    // (an unset variable in a script).
    return std::string(key) + " is empty: give the file's path, or leave the option out";
  } else if (key == "seal_key_file") {
    settings.key_file = value;
  } else if (key == "seal_anchor_file") {
    settings.anchor_file = value;
  }
  return std::nullopt;
}

SealSettings settings_in_url(std::string_view url) {
  SealSettings settings;
  for (const auto& [key, value] : parse_query(url_query(url))) {
    if (!is_url_option(key)) continue;
    if (const auto why = apply_url_option(settings, key, value)) {
      throw url_error("auditpipe: " + *why);
    }
  }
  return settings;
}

std::optional<std::string> contradiction(const SealSettings& settings, bool migrate_add_columns) {
  if (settings.mode == Mode::none && !settings.key_file.empty()) {
    return "seal_key_file is given but sealing is off: add seal=hmac, or drop it";
  }
  if (settings.mode == Mode::none && !settings.anchor_file.empty()) {
    return "seal_anchor_file is given but sealing is off: add seal=hmac (or seal=hash), or drop "
           "it";
  }
  if (settings.mode == Mode::hash && !settings.key_file.empty()) {
    return "seal_key_file is for seal=hmac; seal=hash uses no key (the key file would be "
           "ignored)";
  }
  if (settings.mode != Mode::none && migrate_add_columns) {
    // The rows sealed before would read back with the new columns' NULLs,
    // which their seals do not hold: every one would fail verification.
    return "migrate=add_columns and seal= together are refused: columns added to a sealed table "
           "make its earlier seals fail verification; seal a new table instead";
  }
  return std::nullopt;
}

std::string key_file_of(const SealSettings& settings) {
  if (!settings.key_file.empty()) return settings.key_file;
  const char* env = std::getenv("AUDITPIPE_SEAL_KEY_FILE");
  return env != nullptr ? env : "";
}

void check_files(const SealSettings& settings) {
  if (settings.mode == Mode::hmac) (void)read_sealing_key(key_file_of(settings));
  if (!settings.anchor_file.empty()) check_anchor_file(settings.anchor_file);
}

void check_anchor_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw error("auditpipe: seal anchor file '" + path + "' is a directory");
  }
  const std::string probe = path + ".probe." + std::to_string(::getpid());
  std::FILE* f = std::fopen(probe.c_str(), "w");
  if (f == nullptr) {
    throw error("auditpipe: seal anchor file '" + path + "': cannot write beside it (" +
                std::strerror(errno) + ")");
  }
  std::fclose(f);
  std::remove(probe.c_str());
}

std::optional<Anchor> parse_anchor(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.remove_suffix(1);
  const std::size_t sep = text.find_first_of(": ");
  if (sep == std::string_view::npos || text.size() - sep - 1 != 64) return std::nullopt;
  Anchor anchor;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + sep, anchor.seal_no);
  if (ec != std::errc() || end != text.data() + sep || anchor.seal_no < 1) return std::nullopt;
  anchor.digest = std::string(text.substr(sep + 1));
  for (char& c : anchor.digest) {
    if (c >= 'A' && c <= 'F') c = static_cast<char>(c - 'A' + 'a');  // as stored
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return std::nullopt;
  }
  return anchor;
}

std::optional<Anchor> read_anchor_file(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "r");
  if (f == nullptr) {
    if (errno == ENOENT) return std::nullopt;
    throw error("auditpipe: seal anchor file '" + path + "': cannot read it (" +
                std::strerror(errno) + ")");
  }
  char line[256] = {};
  const bool read = std::fgets(line, sizeof line, f) != nullptr;
  std::fclose(f);
  std::optional<Anchor> anchor = read ? parse_anchor(line) : std::nullopt;
  if (!anchor) {
    throw error("auditpipe: seal anchor file '" + path +
                "' holds no anchor ('SEALNO DIGEST', as a sealing writer writes it)");
  }
  return anchor;
}

std::string read_key_file(const std::string& path) {
  if (path.empty()) {
    throw error(
        "auditpipe: seal=hmac needs a key file: seal_key_file=/path or "
        "AUDITPIPE_SEAL_KEY_FILE");
  }
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    throw error("auditpipe: seal key file '" + path + "': " + std::strerror(errno));
  }
  if (!S_ISREG(st.st_mode)) throw error("auditpipe: seal key file '" + path + "' is not a file");
  if ((st.st_mode & S_IROTH) != 0) {
    throw error("auditpipe: seal key file '" + path +
                "' is readable by everyone: chmod o-r (better 0400) it first");
  }
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    // (libstdc++ opens with open(2), whose errno says why: a service
    // account that may not read the file is the usual cause.)
    const int why = errno;
    throw error("auditpipe: cannot read seal key file '" + path +
                "': " + (why != 0 ? std::strerror(why) : "open failed"));
  }
  std::ostringstream s;
  s << in.rdbuf();
  std::string key = s.str();
  if (key.empty()) throw error("auditpipe: seal key file '" + path + "' is empty");
  return key;
}

std::string read_sealing_key(const std::string& path) {
  std::string key = read_key_file(path);
  if (key.size() < min_sealing_key_bytes) {
    throw error("auditpipe: seal key file '" + path + "' holds " + std::to_string(key.size()) +
                " bytes; a sealing key needs at least " + std::to_string(min_sealing_key_bytes) +
                " (make one with head -c 32 /dev/urandom)");
  }
  return key;
}

std::string seals_table(std::string_view table) {
  return std::string(table) + "_seals";
}

std::string seal_insert_statement(const SqlDialect& dialect, std::string_view table) {
  return "INSERT INTO " + dialect.quote(seals_table(table)) +
         " (seal_no, ranges, row_count, prev_digest, digest, sealed_at, row_hashes) VALUES "
         "(?, ?, ?, ?, ?, ?, ?)" +
         (dialect.idempotent_insert == SqlDialect::IdempotentInsert::on_duplicate_key_update
              ? " ON DUPLICATE KEY UPDATE seal_no = seal_no"
              : " ON CONFLICT (seal_no) DO NOTHING RETURNING seal_no");
}

std::string seals_insert_refused(std::string_view where, std::string_view why,
                                 bool on_duplicate_key_update) {
  return "auditpipe: seal=: this user may not store seals in the seals table " +
         std::string(where) + " (" + std::string(why) +
         "), so every seal would fail and the rows stay not yet sealed: grant it SELECT and "
         "INSERT on it" +
         (on_duplicate_key_update ? ", and UPDATE (the seals' insert ends in ON DUPLICATE KEY "
                                    "UPDATE seal_no = seal_no)"
                                  : "");
}

std::string unsealed_table(std::string_view table) {
  return std::string(table) + "_unsealed";
}

std::string unsealed_find_message(std::string_view unsealed_table, std::string_view source_id,
                                  std::string_view after_no, std::string_view runs) {
  std::string m = "auditpipe-unsealed\n";
  for (const std::string_view part : {unsealed_table, source_id, after_no}) {
    m += part;
    m += '\n';
  }
  m += runs;
  return m;
}

std::string to_hex(std::string_view bytes) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out.push_back(digits[c >> 4]);
    out.push_back(digits[c & 15]);
  }
  return out;
}

namespace {

// Fetched once. With EVP_sha256(), every EVP_DigestInit_ex looks the
// implementation up again, under a lock all threads share: per row, that
// was twice the cost of the hashing itself.
const EVP_MD* sha256() {
  static const EVP_MD* md = [] {
    const EVP_MD* fetched = EVP_MD_fetch(nullptr, "SHA256", nullptr);
    return fetched != nullptr ? fetched : EVP_sha256();
  }();
  return md;
}

// Fetched once, as sha256() above.
EVP_MAC* poly1305() {
  static EVP_MAC* mac = EVP_MAC_fetch(nullptr, "POLY1305", nullptr);
  return mac;
}

std::string hmac_sha256_raw(std::string_view key, std::string_view message) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  if (HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
           reinterpret_cast<const unsigned char*>(message.data()), message.size(), md,
           &n) == nullptr) {
    throw error("auditpipe: HMAC-SHA-256 failed (libcrypto)");
  }
  return {reinterpret_cast<const char*>(md), n};
}

}  // namespace

struct Sha256::Impl {
  EVP_MD_CTX* ctx = nullptr;
};

Sha256::Sha256() : impl_(std::make_unique<Impl>()) {
  impl_->ctx = EVP_MD_CTX_new();
  if (impl_->ctx == nullptr || EVP_DigestInit_ex2(impl_->ctx, sha256(), nullptr) != 1) {
    throw error("auditpipe: SHA-256 unavailable (libcrypto)");
  }
}
Sha256::~Sha256() {
  if (impl_ && impl_->ctx) EVP_MD_CTX_free(impl_->ctx);
}
Sha256::Sha256(Sha256&&) noexcept = default;
Sha256& Sha256::operator=(Sha256&& o) noexcept {
  if (this != &o) {
    if (impl_ && impl_->ctx) EVP_MD_CTX_free(impl_->ctx);
    impl_ = std::move(o.impl_);
  }
  return *this;
}
void Sha256::update(std::string_view bytes) {
  EVP_DigestUpdate(impl_->ctx, bytes.data(), bytes.size());
}
std::string Sha256::final_hex() {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_DigestFinal_ex(impl_->ctx, md, &n);
  return to_hex({reinterpret_cast<const char*>(md), n});
}

std::string genesis_digest(std::string_view table) {
  Sha256 h;
  h.update("auditpipe-seal-genesis:");
  h.update(table);
  return h.final_hex();
}

std::string seal_message(std::string_view prev_digest, std::int64_t seal_no, std::int64_t sealed_at,
                         std::string_view ranges, std::int64_t row_count,
                         std::string_view rows_digest_hex, int version) {
  std::string m = "auditpipe-seal-v" + std::to_string(version) + '\n';
  m += prev_digest;
  m += '\n';
  m += std::to_string(seal_no);
  m += '\n';
  m += std::to_string(sealed_at);
  m += '\n';
  m += ranges;
  m += '\n';
  m += std::to_string(row_count);
  m += '\n';
  m += rows_digest_hex;
  return m;
}

std::string seal_digest(Mode mode, std::string_view key, std::string_view message) {
  if (mode == Mode::hmac) return to_hex(hmac_sha256_raw(key, message));
  Sha256 h;
  h.update(message);
  return h.final_hex();
}

std::string rows_key(std::string_view seal_key) {
  return hmac_sha256_raw(seal_key, "auditpipe-seal-rows-key");
}

struct RowsDigest::Impl {
  std::optional<Sha256> sha;
  EVP_MAC_CTX* mac = nullptr;
  ~Impl() {
    if (mac != nullptr) EVP_MAC_CTX_free(mac);
  }
};

RowsDigest::RowsDigest() : RowsDigest(std::string_view{}) {}

RowsDigest::RowsDigest(std::string_view rows_key) : impl_(std::make_unique<Impl>()) {
  if (rows_key.empty()) {
    impl_->sha.emplace();
    return;
  }
  if (rows_key.size() != 32) throw error("auditpipe: a rows key is 32 bytes (seal::rows_key)");
  impl_->mac = poly1305() != nullptr ? EVP_MAC_CTX_new(poly1305()) : nullptr;
  if (impl_->mac == nullptr ||
      EVP_MAC_init(impl_->mac, reinterpret_cast<const unsigned char*>(rows_key.data()),
                   rows_key.size(), nullptr) != 1) {
    throw error(
        "auditpipe: seal=hmac needs Poly1305 from libcrypto, which its configuration does not "
        "offer (a FIPS-only provider?); seal=hash needs only SHA-256");
  }
}

RowsDigest::~RowsDigest() = default;
RowsDigest::RowsDigest(RowsDigest&&) noexcept = default;
RowsDigest& RowsDigest::operator=(RowsDigest&&) noexcept = default;

void RowsDigest::add(std::string_view row_bytes) {
  if (impl_->mac != nullptr) {
    EVP_MAC_update(impl_->mac, reinterpret_cast<const unsigned char*>(row_bytes.data()),
                   row_bytes.size());
  } else {
    impl_->sha->update(row_bytes);
  }
}

std::string RowsDigest::final_hex() {
  if (impl_->mac == nullptr) return impl_->sha->final_hex();
  unsigned char tag[16];
  std::size_t n = 0;
  EVP_MAC_final(impl_->mac, tag, &n, sizeof tag);
  return to_hex({reinterpret_cast<const char*>(tag), n});
}

std::uint32_t fingerprint(std::string_view row_bytes) noexcept {
  return internal::crc32c(row_bytes.data(), row_bytes.size());
}

void append_fingerprint(std::string& out, std::uint32_t fingerprint) {
  static constexpr char digits[] = "0123456789abcdef";
  char b[8];
  for (int i = 7; i >= 0; --i, fingerprint >>= 4) b[i] = digits[fingerprint & 15];
  out.append(b, 8);
}

namespace {

std::int64_t range_number(std::string_view s, std::string_view whole) {
  std::int64_t v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || p != s.data() + s.size()) {
    throw error("auditpipe: a seal's ranges '" + std::string(whole.substr(0, 200)) +
                "' are malformed");
  }
  return v;
}

}  // namespace

std::vector<std::pair<std::int64_t, std::string_view>> split_sources(std::string_view ranges) {
  std::vector<std::pair<std::int64_t, std::string_view>> out;
  std::string_view text = ranges;
  if (is_late(text)) text.remove_prefix(late_prefix.size());
  while (!text.empty()) {
    const std::size_t end = std::min(text.find(';'), text.size());
    const std::string_view part = text.substr(0, end);
    text = end < text.size() ? text.substr(end + 1) : std::string_view{};
    const std::size_t colon = part.find(':');
    if (colon == std::string_view::npos) range_number({}, ranges);
    out.push_back({range_number(part.substr(0, colon), ranges), part.substr(colon + 1)});
  }
  return out;
}

std::vector<SeqRun> parse_runs(std::string_view items) {
  std::vector<SeqRun> out;
  std::string_view text = items;
  while (!text.empty()) {
    const std::size_t end = std::min(text.find(','), text.size());
    const std::string_view item = text.substr(0, end);
    text = end < text.size() ? text.substr(end + 1) : std::string_view{};
    const std::size_t dash = item.find('-', 1);  // not a negative seq's sign
    const std::int64_t lo = range_number(item.substr(0, dash), items);
    const std::int64_t hi =
        dash == std::string_view::npos ? lo : range_number(item.substr(dash + 1), items);
    if (hi < lo) range_number({}, items);
    out.push_back({lo, hi});
  }
  return out;
}

std::int64_t merge_runs(std::vector<SeqRun>& runs) {
  std::sort(runs.begin(), runs.end(), [](const SeqRun& a, const SeqRun& b) { return a.lo < b.lo; });
  std::size_t out = 0;
  for (const SeqRun& run : runs) {
    if (out > 0 && joins(runs[out - 1].hi, run.lo)) {
      runs[out - 1].hi = std::max(runs[out - 1].hi, run.hi);
    } else {
      runs[out++] = run;
    }
  }
  runs.resize(out);
  std::int64_t seqs = 0;
  for (const SeqRun& run : runs) seqs = add_keys(seqs, run_keys(run.lo, run.hi));
  return seqs;
}

void RowEncoder::float64(double v) {
  // -0.0 as 0.0: SQLite and MariaDB store it as 0, and verify encodes what
  // they give back.
  if (v == 0) v = 0.0;
  char* p = room(9);
  *p++ = '\1';
  const auto bits = std::bit_cast<std::uint64_t>(v);
  for (int i = 0; i < 8; ++i) *p++ = static_cast<char>((bits >> (8 * i)) & 0xff);
  done(p);
}

void RowEncoder::grow(std::size_t n) {
  buf_.resize(std::max({buf_.size() * 2, size_ + n, std::size_t{512}}));
}

}  // namespace auditpipe::seal
