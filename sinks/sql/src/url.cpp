#include "auditpipe/sink/url.h"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>

#include "auditpipe/status.h"

namespace auditpipe {

namespace {

std::vector<std::string> secrets_in(std::string_view text);

[[noreturn]] void malformed(std::string_view text, const std::string& why) {
  std::string reason = why;
  if (reason.rfind("auditpipe: ", 0) == 0) reason.erase(0, 11);
  // The reason may quote a piece of the text (a port, an option) that is
  // part of a password the parser could not place: masked too.
  std::string message = "auditpipe: malformed URL '" + redact_url(text) + "': " + reason;
  for (const std::string& secret : secrets_in(text))
    message = hide_secret(std::move(message), secret);
  throw url_error(message);
}

// Query keys whose values are secrets (`?password=`, `?sslpassword=`,
// `?api_token=`...): masked wherever a URL is shown.
bool is_secret_key(std::string_view key) {
  std::string lower(key);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (std::string_view word : {"pass", "pwd", "secret", "token"}) {
    if (lower.find(word) != std::string::npos) return true;
  }
  return false;
}

// Where the query starts in `rest` (the text after "//"): at the first '?'
// that follows a '/' or an '@', since a '?' before both can only be part
// of a password (`u:S3?cr3t@host/db`).
std::size_t query_start(std::string_view rest) {
  for (std::size_t k = rest.find('?'); k != std::string_view::npos; k = rest.find('?', k + 1)) {
    if (rest.substr(0, k).find_first_of("/@") != std::string_view::npos) return k;
  }
  return rest.size();
}

// The '@' that ends the user part of `rest`: the last one before the
// query, so a password may hold '@', '/', '?', '#' or ':' unescaped.
std::size_t userinfo_end(std::string_view rest) {
  return rest.substr(0, query_start(rest)).rfind('@');
}

// Where the user part of `text` starts: after "://", or at the start of
// text with no "//" (`user:pw@host/db`, `mysql:user:pw@host/db`).
std::size_t authority_begin(std::string_view text) {
  const auto start = text.find("://");
  return start == std::string_view::npos ? 0 : start + 3;
}

// The password and secret option values `text` holds (raw and, where they
// decode, percent-decoded), as far as they can be found in text that may
// not parse: what every message about the text must not show.
std::vector<std::string> secrets_in(std::string_view text) {
  std::vector<std::string> out;
  auto add = [&](std::string_view raw) {
    if (raw.empty()) return;
    out.emplace_back(raw);
    try {
      std::string decoded = percent_decode(raw);
      if (decoded != raw && !decoded.empty()) out.push_back(std::move(decoded));
    } catch (const error&) {
    }
  };
  const std::size_t begin = authority_begin(text);
  const std::string_view rest = text.substr(begin);
  // The user part as the parser finds it, and up to the last '@' of all
  // (text that does not parse may have a password holding both '/' and '?').
  for (const std::size_t at : {userinfo_end(rest), rest.rfind('@')}) {
    if (at == std::string_view::npos) continue;
    const std::string_view userinfo = rest.substr(0, at);
    if (const auto colon = userinfo.find(':'); colon != std::string_view::npos) {
      add(userinfo.substr(colon + 1));
    } else if (begin == 0) {
      add(userinfo);  // no scheme: a lone word before '@' may be anything
    }
  }
  // Secret options anywhere: `?password=...`, `&token=...`.
  for (std::size_t i = text.find_first_of("?&"); i != std::string_view::npos;
       i = text.find_first_of("?&", i + 1)) {
    const auto item = text.substr(i + 1, text.find('&', i + 1) - (i + 1));
    const auto eq = item.find('=');
    if (eq != std::string_view::npos && is_secret_key(item.substr(0, eq))) {
      add(item.substr(eq + 1));
    }
  }
  return out;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool valid_scheme(std::string_view s) {
  if (s.empty() || !std::isalpha(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '-' || c == '.';
  });
}

UrlHost parse_host(std::string_view whole, std::string_view item) {
  UrlHost h;
  std::string_view port_text;
  bool has_port = false;
  if (!item.empty() && item.front() == '[') {
    const auto close = item.find(']');
    if (close == std::string_view::npos) malformed(whole, "unterminated '[' in host");
    h.host = std::string(item.substr(1, close - 1));
    const auto rest = item.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') malformed(whole, "unexpected text after ']' in host");
      port_text = rest.substr(1);
      has_port = true;
    }
  } else {
    const auto colon = item.rfind(':');
    if (colon != std::string_view::npos) {
      port_text = item.substr(colon + 1);
      has_port = true;
      item = item.substr(0, colon);
    }
    h.host = percent_decode(item);
  }
  if (h.host.empty()) malformed(whole, "empty host name");
  if (has_port) {
    unsigned value = 0;
    const auto* end = port_text.data() + port_text.size();
    const auto [ptr, ec] = std::from_chars(port_text.data(), end, value);
    if (port_text.empty() || ec != std::errc() || ptr != end || value == 0 || value > 65535) {
      malformed(whole, "port '" + std::string(port_text) + "' is not a number from 1 to 65535");
    }
    h.port = static_cast<std::uint16_t>(value);
  }
  return h;
}

}  // namespace

std::string percent_decode(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out.push_back(text[i]);
      continue;
    }
    if (i + 2 >= text.size() || hex_value(text[i + 1]) < 0 || hex_value(text[i + 2]) < 0) {
      throw url_error("bad percent-escape (a '%' must be followed by two hex digits)");
    }
    const char c = static_cast<char>(hex_value(text[i + 1]) * 16 + hex_value(text[i + 2]));
    // Every part goes to a C API, where it would end there (and a message
    // naming it would end there too, its reason lost).
    if (c == '\0') throw url_error("a NUL byte (%00) cannot be part of a URL");
    out.push_back(c);
    i += 2;
  }
  return out;
}

void throw_with_accepted_form(std::string_view text, const std::string& message,
                              std::string_view form) {
  std::string out = message + "; the accepted form is " + std::string(form);
  for (const std::string& secret : secrets_in(text)) out = hide_secret(std::move(out), secret);
  throw url_error(out);
}

std::string hide_secret(std::string text, std::string_view secret) {
  constexpr std::string_view mask = "***";
  // A secret of nothing but '*' cannot be told from the masks themselves;
  // masking it would grow every earlier mask (threefold for "*", again at
  // each message that quotes another), without end.
  if (secret.find_first_not_of('*') == std::string_view::npos) return text;
  // Only where it stands on its own: a password "p" (or "postgres") left
  // every "p" of "auditpipe" (or of "postgresql://") masked, the message
  // unreadable and the password plain to see from what was missing. A
  // secret is quoted or delimited wherever a message shows it.
  const auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  for (auto at = text.find(secret); at != std::string::npos;) {
    const std::size_t end = at + secret.size();
    const bool alone = (at == 0 || !word(text[at - 1]) || !word(secret.front())) &&
                       (end == text.size() || !word(text[end]) || !word(secret.back()));
    if (!alone) {
      at = text.find(secret, at + 1);
      continue;
    }
    text.replace(at, secret.size(), mask);
    at = text.find(secret, at + mask.size());
  }
  return text;
}

bool has_scheme(std::string_view url, std::string_view scheme) {
  if (url.size() <= scheme.size() || url[scheme.size()] != ':') return false;
  for (std::size_t i = 0; i < scheme.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(url[i])) != scheme[i]) return false;
  }
  return true;
}

std::string_view url_query(std::string_view text) {
  const std::string_view rest = text.substr(authority_begin(text));
  const std::size_t q = has_scheme(text, "sqlite") ? rest.find('?') : query_start(rest);
  return q >= rest.size() ? std::string_view() : rest.substr(q + 1);
}

std::string redact_url(std::string_view text) {
  std::string out(text);
  const std::size_t begin = authority_begin(text);
  const std::string_view rest = text.substr(begin);
  // Up to the last '@' of all: more than the parser may take as the user
  // part, never less.
  const std::size_t at = rest.rfind('@');
  if (at != std::string_view::npos) {
    const auto colon = rest.substr(0, at).find(':');
    if (colon != std::string_view::npos) {
      out = std::string(text.substr(0, begin + colon + 1)) + "***" +
            std::string(text.substr(begin + at));
    }
  }
  for (const std::string& secret : secrets_in(text)) out = hide_secret(std::move(out), secret);
  return out;
}

static Url parse_url_unchecked(std::string_view text) {
  Url url;
  const auto colon = text.find(':');
  if (colon == std::string_view::npos) malformed(text, "no scheme (expected e.g. mysql://...)");
  const auto scheme = text.substr(0, colon);
  if (!valid_scheme(scheme)) malformed(text, "invalid scheme '" + std::string(scheme) + "'");
  url.scheme.resize(scheme.size());
  std::transform(scheme.begin(), scheme.end(), url.scheme.begin(), [](char c) {
    return static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  });
  std::string_view rest = text.substr(colon + 1);
  if (rest.substr(0, 2) != "//") malformed(text, "expected '//' after '" + url.scheme + ":'");
  rest.remove_prefix(2);

  // The user part first: it ends at the last '@' before the query, so a
  // password may hold any character (the parts after it may not hold '@').
  if (const auto at = userinfo_end(rest); at != std::string_view::npos) {
    const auto userinfo = rest.substr(0, at);
    rest.remove_prefix(at + 1);
    const auto sep = userinfo.find(':');
    url.user = percent_decode(userinfo.substr(0, sep));
    if (sep != std::string_view::npos) url.password = percent_decode(userinfo.substr(sep + 1));
    if (url.user.empty()) malformed(text, "empty user name before '@'");
  }
  if (rest.find('#') != std::string_view::npos) malformed(text, "fragments ('#') are not allowed");
  std::string_view query_text;
  if (const auto q = rest.find('?'); q != std::string_view::npos) {
    query_text = rest.substr(q + 1);
    rest = rest.substr(0, q);
  }
  std::string_view authority = rest;
  if (const auto slash = rest.find('/'); slash != std::string_view::npos) {
    authority = rest.substr(0, slash);
    url.path = percent_decode(rest.substr(slash + 1));
  }
  if (!authority.empty()) {
    std::size_t begin = 0;
    while (begin <= authority.size()) {
      auto end = authority.find(',', begin);
      if (end == std::string_view::npos) end = authority.size();
      const auto item = authority.substr(begin, end - begin);
      if (item.empty()) malformed(text, "empty entry in the host list");
      url.hosts.push_back(parse_host(text, item));
      begin = end + 1;
    }
  }
  url.query = parse_query(query_text);
  return url;
}

std::vector<std::pair<std::string, std::string>> parse_query(std::string_view text) {
  std::vector<std::pair<std::string, std::string>> out;
  std::size_t begin = 0;
  while (begin < text.size()) {
    auto end = text.find('&', begin);
    if (end == std::string_view::npos) end = text.size();
    const auto item = text.substr(begin, end - begin);
    if (!item.empty()) {
      const auto eq = item.find('=');
      if (eq == 0) throw url_error("query option without a name");
      std::string key = percent_decode(item.substr(0, eq));
      // Which of two values was meant is a guess: refused, not the last taken.
      for (const auto& earlier : out)
        if (earlier.first == key) throw url_error("option '" + key + "' is given twice");
      out.emplace_back(std::move(key), eq == std::string_view::npos
                                           ? std::string()
                                           : percent_decode(item.substr(eq + 1)));
    }
    begin = end + 1;
  }
  return out;
}

Url parse_url(std::string_view text) {
  // Not quoted: the message would end at the NUL.
  if (text.find('\0') != std::string_view::npos)
    throw url_error("auditpipe: malformed URL: a NUL byte cannot be part of a URL");
  try {
    return parse_url_unchecked(text);
  } catch (const error& e) {
    const std::string_view what = e.what();
    if (what.find("malformed URL") != std::string_view::npos) throw;
    malformed(text, std::string(what));
  }
}

std::optional<std::string> Url::option(std::string_view key) const {
  std::optional<std::string> value;
  for (const auto& [k, v] : query) {
    if (k == key) value = v;
  }
  return value;
}

std::string Url::redacted() const {
  // Built with append(): GCC 12 warns falsely (-Wrestrict) on chains of
  // operator+ here.
  std::string out;
  out.append(scheme).append("://");
  if (!user.empty()) {
    out.append(user);
    if (password) out.append(":***");
    out.push_back('@');
  }
  for (std::size_t i = 0; i < hosts.size(); ++i) {
    if (i) out.push_back(',');
    const bool v6 = hosts[i].host.find(':') != std::string::npos;
    if (v6) out.push_back('[');
    out.append(hosts[i].host);
    if (v6) out.push_back(']');
    if (hosts[i].port) out.append(":").append(std::to_string(*hosts[i].port));
  }
  out.push_back('/');
  out.append(path);
  for (std::size_t i = 0; i < query.size(); ++i) {
    out.push_back(i ? '&' : '?');
    out.append(query[i].first);
    if (!query[i].second.empty()) {
      out.append("=").append(is_secret_key(query[i].first) ? "***" : query[i].second);
    }
  }
  // A password may equal the user, the host or an option's value.
  return masked(std::move(out));
}

std::string Url::masked(std::string text) const {
  if (password) text = hide_secret(std::move(text), *password);
  for (const auto& [key, value] : query) {
    if (is_secret_key(key)) text = hide_secret(std::move(text), value);
  }
  return text;
}

std::uint64_t url_number(const Url& url, std::string_view key, std::string_view value,
                         std::uint64_t min, std::uint64_t max) {
  std::uint64_t v = 0;
  const auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
  if (value.empty() || ec != std::errc() || p != value.data() + value.size() || v < min ||
      v > max) {
    throw url_error(url.masked("auditpipe: bad URL '" + url.redacted() + "': option " +
                               std::string(key) + "='" + std::string(value) +
                               "' is not a whole number from " + std::to_string(min) + " to " +
                               std::to_string(max)));
  }
  return v;
}

std::string password_from_file(const Url& url, const std::string& path) {
  if (url.password) {
    throw url_error(url.masked("auditpipe: bad URL '" + url.redacted() +
                               "': a password and password_file= both; give one"));
  }
  const std::string where =
      "auditpipe: password file '" + path + "' (password_file= of " + url.redacted() + ")";
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw error(where + ": " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) throw error(where + " is not a file");
  if ((st.st_mode & S_IROTH) != 0)
    throw error(where + " is readable by everyone: chmod o-r (better 0400) it first");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw error(where + ": cannot be read: " + std::strerror(errno));
  std::string password;
  if (!std::getline(in, password)) {
    throw error(where + " is empty");
  }
  if (!password.empty() && password.back() == '\r') password.pop_back();
  if (password.empty()) throw error(where + ": its first line is empty");
  return password;
}

Url parse_sink_url(std::string_view text, std::span<const std::string_view> schemes,
                   std::initializer_list<std::string_view> known,
                   std::span<const std::string_view> also) {
  Url url = parse_url(text);
  if (std::find(schemes.begin(), schemes.end(), url.scheme) == schemes.end()) {
    std::string expected = std::string(schemes.front()) + "://";
    if (schemes.size() > 1) {
      expected += " (or";
      for (std::size_t i = 1; i < schemes.size(); ++i) {
        expected += (i == 1 ? " " : ", ") + std::string(schemes[i]) + "://";
      }
      expected += ")";
    }
    throw url_error(url.masked("auditpipe: bad URL '" + url.redacted() + "': the scheme must be " +
                               expected + ", not " + url.scheme + "://"));
  }
  require_known_options(url, known, also);
  return url;
}

std::size_t url_choice(const Url& url, std::string_view key, std::string_view value,
                       std::span<const std::string_view> choices) {
  for (std::size_t i = 0; i < choices.size(); ++i) {
    if (choices[i] == value) return i;
  }
  std::string list;
  for (std::size_t i = 0; i < choices.size(); ++i) {
    list += (i == 0 ? "" : i + 1 == choices.size() ? " or " : ", ") + std::string(choices[i]);
  }
  throw url_error(url.masked("auditpipe: bad URL '" + url.redacted() + "': " + std::string(key) +
                             " must be " + list + ", not '" + std::string(value) + "'"));
}

bool apply_pool_option(const Url& url, std::string_view key, std::string_view value,
                       ConnectionPoolOptions& pool, std::optional<std::size_t>& pool_size) {
  using std::chrono::milliseconds;
  constexpr std::uint64_t day_ms = 86'400'000;
  auto ms = [&](std::uint64_t min, std::uint64_t max) {
    return milliseconds(url_number(url, key, value, min, max));
  };
  if (key == "pool_size")
    pool_size = url_number(url, key, value, 1, 1024);
  else if (key == "min_idle")
    pool.min_idle = url_number(url, key, value, 0, 1024);
  else if (key == "connection_timeout_ms")
    pool.connection_timeout = ms(1, day_ms);
  else if (key == "idle_timeout_ms")
    pool.idle_timeout = ms(0, day_ms);
  else if (key == "max_lifetime_ms")
    pool.max_lifetime = ms(0, 30 * day_ms);
  else if (key == "keepalive_ms")
    pool.keepalive_interval = ms(0, day_ms);
  else if (key == "validation_ms")
    pool.validation_threshold = ms(0, day_ms);
  else if (key == "leak_detection_ms")
    pool.leak_detection_threshold = ms(0, day_ms);
  else
    return false;
  return true;
}

void check_pool_options(const Url& url, const ConnectionPoolOptions& pool,
                        std::optional<std::size_t> pool_size) {
  if (pool_size && pool.min_idle && *pool.min_idle > *pool_size) {
    throw url_error(url.masked(
        "auditpipe: bad URL '" + url.redacted() + "': min_idle=" + std::to_string(*pool.min_idle) +
        " is more than pool_size=" + std::to_string(*pool_size) + ", the most the pool opens"));
  }
}

void require_known_options(const Url& url, std::initializer_list<std::string_view> known,
                           std::span<const std::string_view> also) {
  for (const auto& [key, value] : url.query) {
    if (std::find(known.begin(), known.end(), key) == known.end() &&
        std::find(also.begin(), also.end(), key) == also.end()) {
      std::string list;
      for (auto k : known) list += (list.empty() ? "" : ", ") + std::string(k);
      for (auto k : also) list += (list.empty() ? "" : ", ") + std::string(k);
      throw url_error(url.masked("auditpipe: unknown option '" + key + "' in URL '" +
                                 url.redacted() + "' (known: " + list + ")"));
    }
  }
}

}  // namespace auditpipe
