// Connection URLs: `scheme://user:password@host:port,host2:port2/path?key=value`.
//
// One parser for every sink with a server (the SQLite sink's file URLs use
// only its percent-decoding and query parsing), so every sink reports a
// malformed URL the same clear way and never prints a password.
// Percent-decoding applies to the user, password, host, path and query; a
// host may be a bracketed IPv6 address or, percent-encoded, a unix socket
// path (`%2Frun%2Fmysqld.sock`).
//
// Thread safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "auditpipe/export.h"
#include "auditpipe/sink/connection_pool.h"
#include "auditpipe/status.h"

namespace auditpipe {

/// One host of a URL.
struct AUDITPIPE_EXPORT UrlHost {
  std::string host;  ///< name, IPv4, IPv6 (no brackets) or a socket path
  /// Unset: the scheme's default.
  std::optional<std::uint16_t> port;
};

/// A parsed database URL, `scheme://user:password@host:port,.../path?option=value`,
/// percent-decoded.
struct AUDITPIPE_EXPORT Url {
  std::string scheme;  ///< lower-cased
  /// Percent-decoded; may be empty.
  std::string user;
  /// Unset when the URL has none; percent-decoded.
  std::optional<std::string> password;
  std::vector<UrlHost> hosts;                              ///< in the order given
  std::string path;                                        ///< without the leading '/'
  std::vector<std::pair<std::string, std::string>> query;  ///< in the order given

  /// The value of a query option, if given (parse_url refuses one given twice).
  std::optional<std::string> option(std::string_view key) const;
  /// The URL as text with the password and secret options (`password=`,
  /// `token=`...) replaced by "***", and so every other place where they
  /// occur (a password equal to the user name hides the user name too).
  std::string redacted() const;
  /// `text` with every occurrence of the password and of secret options'
  /// values replaced by "***": for messages that quote values from the URL
  /// or from a server (which may echo the user name).
  std::string masked(std::string text) const;
};

/// Parses `text`; throws auditpipe::error naming what is wrong (the message
/// shows the URL with its password masked).
AUDITPIPE_EXPORT Url parse_url(std::string_view text);

/// parse_url() for a sink: also throws unless the scheme is one of `schemes`
/// (the sink's url_schemes) and every option is in `known` or `also`
/// (pool_option_names, for a pooled sink).
AUDITPIPE_EXPORT Url parse_sink_url(std::string_view text,
                                    std::span<const std::string_view> schemes,
                                    std::initializer_list<std::string_view> known,
                                    std::span<const std::string_view> also = {});

/// Throws auditpipe::error: `message`, then "; the accepted form is " and
/// `form`, with whatever in `text` could be a password masked in the whole
/// (a password may equal a word of the form, "user" or "host").
[[noreturn]] AUDITPIPE_EXPORT void throw_with_accepted_form(std::string_view text,
                                                            const std::string& message,
                                                            std::string_view form);

/// parse() (a call of parse_sink_url for `text`); its auditpipe::error ends
/// in the URL form the sink accepts ("...; the accepted form is mysql://...").
template <typename Parse>
Url with_accepted_form(std::string_view text, Parse parse, std::string_view form) {
  try {
    return parse();
  } catch (const error& e) {
    throw_with_accepted_form(text, e.what(), form);
  }
}

/// `text` with anything that could be a password masked, for messages about
/// URLs that may not parse: the user part up to the last '@' before the
/// query (with or without a scheme), secret options, and every other
/// occurrence of those values, raw and percent-decoded.
AUDITPIPE_EXPORT std::string redact_url(std::string_view text);

/// `text` with every occurrence of `secret` replaced by "***", where it stands
/// on its own: not where letters or digits go on from its own first or last
/// one (a password "p" leaves "auditpipe" whole). A secret that is empty or
/// only '*' (which the masks themselves spell) is left alone.
AUDITPIPE_EXPORT std::string hide_secret(std::string text, std::string_view secret);

/// Whether `url` begins with `scheme` (lower case) and a colon, the scheme
/// in any case.
AUDITPIPE_EXPORT bool has_scheme(std::string_view url, std::string_view scheme);

/// The query of a sink URL (what follows its '?'), empty if none: the
/// first '?' after a '/' or an '@', so that one in a password is not taken
/// for it; in a sqlite: URL (which has no user part), the first '?'.
AUDITPIPE_EXPORT std::string_view url_query(std::string_view text);

/// Parses `key=value&key2=value2` (percent-decoded), as in a URL's query.
/// Throws auditpipe::error for an option without a name or given twice.
AUDITPIPE_EXPORT std::vector<std::pair<std::string, std::string>> parse_query(
    std::string_view text);

/// Decodes %XX escapes (and nothing else: '+' stays '+'). Throws
/// auditpipe::error on a bad escape.
AUDITPIPE_EXPORT std::string percent_decode(std::string_view text);

/// The query options every pooled sink takes, with ConnectionPool's names.
inline constexpr std::string_view pool_option_names[] = {
    "pool_size",       "min_idle",     "connection_timeout_ms", "idle_timeout_ms",
    "max_lifetime_ms", "keepalive_ms", "validation_ms",         "leak_detection_ms"};

/// Throws auditpipe::error unless every query key of `url` is in `known` or
/// in `also` (pool_option_names, for a pooled sink); the message lists both.
AUDITPIPE_EXPORT void require_known_options(const Url& url,
                                            std::initializer_list<std::string_view> known,
                                            std::span<const std::string_view> also = {});

/// A whole number option from `min` to `max`; throws auditpipe::error naming
/// the option (with the URL's password masked) otherwise.
AUDITPIPE_EXPORT std::uint64_t url_number(const Url& url, std::string_view key,
                                          std::string_view value, std::uint64_t min,
                                          std::uint64_t max);

/// Which of `choices` an option's value is (its index); throws
/// auditpipe::error naming the option and the choices otherwise, with the
/// URL's password masked.
AUDITPIPE_EXPORT std::size_t url_choice(const Url& url, std::string_view key,
                                        std::string_view value,
                                        std::span<const std::string_view> choices);

/// The password in file `path` (URL option `password_file=`): its first
/// line, without the line end. Keeps the password out of the URL, which a
/// command line shows to every user (ps, /proc/PID/cmdline). Throws
/// auditpipe::url_error if `url` has a password too, auditpipe::error if
/// the file cannot be read, is readable by everyone, or is empty.
AUDITPIPE_EXPORT std::string password_from_file(const Url& url, const std::string& path);

/// The values of every SQL sink's `migrate` option: leave a table that lacks
/// the record's columns alone (refused at open, with the ALTER TABLE that
/// would fix it), or add those columns at open (SqlSinkSettings).
inline constexpr std::string_view migrate_names[] = {"none", "add_columns"};

/// If `key` is one of pool_option_names, applies it and returns true.
AUDITPIPE_EXPORT bool apply_pool_option(const Url& url, std::string_view key,
                                        std::string_view value, ConnectionPoolOptions& pool,
                                        std::optional<std::size_t>& pool_size);

/// After every option is applied: throws auditpipe::error for pool options
/// that contradict each other (min_idle above pool_size, which the pool
/// would otherwise lower without a word).
AUDITPIPE_EXPORT void check_pool_options(const Url& url, const ConnectionPoolOptions& pool,
                                         std::optional<std::size_t> pool_size);

}  // namespace auditpipe
