// SHA-256 through OpenSSL's libcrypto: a collision between two inputs
// would merge their rows, so the id comes from a real hash, cut to 63 bits
// (source_id is a signed BIGINT). See source_identity.h.
#include "source_identity.h"

#include <openssl/evp.h>

#include <array>
#include <cstring>

#include "auditpipe/status.h"

namespace auditpipe::ingest {

std::int64_t source_id_of(std::string_view prefix, std::int64_t salt) {
  // The domain string keeps these ids apart from any other use of the hash;
  // the length makes a file and its longer continuation differ.
  static constexpr char domain[] = "auditpipe ingest source v1";
  const std::uint64_t length = prefix.size();
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int digest_size = 0;
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  const bool ok = ctx != nullptr && EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr) == 1 &&
                  EVP_DigestUpdate(ctx, domain, sizeof domain) == 1 &&
                  EVP_DigestUpdate(ctx, &length, sizeof length) == 1 &&
                  (salt == 0 || EVP_DigestUpdate(ctx, &salt, sizeof salt) == 1) &&
                  EVP_DigestUpdate(ctx, prefix.data(), prefix.size()) == 1 &&
                  EVP_DigestFinal_ex(ctx, digest.data(), &digest_size) == 1;
  EVP_MD_CTX_free(ctx);
  if (!ok || digest_size < 8) throw error("auditpipe ingest: SHA-256 failed in libcrypto");
  std::uint64_t id = 0;
  std::memcpy(&id, digest.data(), sizeof id);
  return static_cast<std::int64_t>(id & 0x7fff'ffff'ffff'ffffULL);
}

bool starts_as(std::string_view prefix, std::uint64_t bytes, std::int64_t salt, std::int64_t id) {
  return prefix.size() >= bytes && source_id_of(prefix.substr(0, bytes), salt) == id;
}

}  // namespace auditpipe::ingest
