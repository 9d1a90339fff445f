#include "auditpipe/sink/url.h"

#include <gtest/gtest.h>

#include <string>

#include "auditpipe/status.h"

namespace {

using auditpipe::has_scheme;
using auditpipe::parse_url;
using auditpipe::url_query;

std::string error_of(const std::string& url) {
  try {
    parse_url(url);
  } catch (const auditpipe::error& e) {
    return e.what();
  }
  return "";
}

TEST(Url, ParsesEveryPart) {
  const auto u = parse_url(
      "MySQL://au%40dit:p%3Ass@db1:3306,[::1]:3307,db3/audit%20db?charset=utf8mb4&tls=required");
  EXPECT_EQ(u.scheme, "mysql");
  EXPECT_EQ(u.user, "au@dit");
  ASSERT_TRUE(u.password);
  EXPECT_EQ(*u.password, "p:ss");
  ASSERT_EQ(u.hosts.size(), 3u);
  EXPECT_EQ(u.hosts[0].host, "db1");
  EXPECT_EQ(*u.hosts[0].port, 3306);
  EXPECT_EQ(u.hosts[1].host, "::1");
  EXPECT_EQ(*u.hosts[1].port, 3307);
  EXPECT_EQ(u.hosts[2].host, "db3");
  EXPECT_FALSE(u.hosts[2].port);
  EXPECT_EQ(u.path, "audit db");
  EXPECT_EQ(u.option("charset"), "utf8mb4");
  EXPECT_EQ(u.option("tls"), "required");
  EXPECT_FALSE(u.option("missing"));
}

TEST(Url, SchemeAndQueryOfAnyKind) {
  EXPECT_TRUE(has_scheme("SQLite:///x.db", "sqlite"));
  EXPECT_TRUE(has_scheme("mysql://u@h/db", "mysql"));
  EXPECT_FALSE(has_scheme("mysql://u@h/db", "mysq"));
  EXPECT_FALSE(has_scheme("sqlite", "sqlite"));
  EXPECT_EQ(url_query("sqlite:///x.db?seal=hash"), "seal=hash");
  EXPECT_EQ(url_query("sqlite://rel.db?a=1&b=2"), "a=1&b=2");
  EXPECT_EQ(url_query("mysql://u:p?w@h/db?pool_size=2"), "pool_size=2");
  EXPECT_EQ(url_query("postgresql://u:p?w@h/db"), "");
  EXPECT_EQ(url_query("mysql://u@h/db"), "");
}

TEST(Url, SocketPathAsPercentEncodedHost) {
  const auto u = parse_url("mysql://root@%2Frun%2Fmysqld%2Fmysqld.sock/audit");
  ASSERT_EQ(u.hosts.size(), 1u);
  EXPECT_EQ(u.hosts[0].host, "/run/mysqld/mysqld.sock");
  EXPECT_FALSE(u.password);
}

TEST(Url, AnUnescapedAtInThePasswordStillParses) {
  const auto u = parse_url("mysql://user:p@ss@host/db");
  EXPECT_EQ(*u.password, "p@ss");
  EXPECT_EQ(u.hosts[0].host, "host");
}

TEST(Url, MalformedUrlsNameTheProblemAndHideThePassword) {
  EXPECT_NE(error_of("no-scheme").find("no scheme"), std::string::npos);
  EXPECT_NE(error_of("mysql:/host/db").find("'//'"), std::string::npos);
  EXPECT_NE(error_of("mysql://u:secret@host:99999/db").find("port '99999'"), std::string::npos);
  EXPECT_NE(error_of("mysql://u:secret@host:x/db").find("port 'x'"), std::string::npos);
  EXPECT_NE(error_of("mysql://u:secret@h1,,h2/db").find("empty entry"), std::string::npos);
  EXPECT_NE(error_of("mysql://u:secret@host/db?%zz=1").find("percent-escape"), std::string::npos);
  // A NUL decoded into the database or user name cut the message short
  // ("cannot connect to mysql://audit"), its reason lost.
  for (const char* nul :
       {"mysql://u:secret@host/audit%00pipe", "mysql://audit%00pipe:secret@host/db",
        "postgresql://u:secret@host/db?application_name=a%00b"}) {
    const std::string e = error_of(nul);
    EXPECT_NE(e.find("NUL byte"), std::string::npos) << nul << ": " << e;
    EXPECT_EQ(e.find("secret"), std::string::npos) << e;
  }
  EXPECT_NE(error_of(std::string("mysql://u:secret@host/audit\0pipe", 32)).find("NUL byte"),
            std::string::npos);
  EXPECT_NE(error_of("mysql://u:secret@[::1/db").find("'['"), std::string::npos);
  EXPECT_NE(error_of("mysql://u:secret@host/db?pool_size=2&tls=required&pool_size=8")
                .find("option 'pool_size' is given twice"),
            std::string::npos);
  for (const char* bad : {"mysql://u:secret@host:99999/db", "mysql://u:secret@host/db?%zz=1",
                          "mysql://u:secret@h1,,h2/db", "mysql://u:secret@h/db?tls=x&tls=y"}) {
    const std::string message = error_of(bad);
    EXPECT_FALSE(message.empty()) << bad;
    EXPECT_EQ(message.find("secret"), std::string::npos) << message;
    EXPECT_NE(message.find("***"), std::string::npos) << message;
  }
}

// A short password, or one that is a word of the message too, is masked
// where it stands alone, not inside other words: a password "p" had every
// "p" of the message masked ("audit***i***e: unknown o***tion"), which also
// told the reader what it was.
TEST(Url, AShortPasswordIsMaskedWhereItStandsAloneOnly) {
  EXPECT_EQ(auditpipe::hide_secret("user p at auditpipe: 'p', p", "p"),
            "user *** at auditpipe: '***', ***");
  EXPECT_EQ(auditpipe::hide_secret("postgresql://postgres:postgres@h/db", "postgres"),
            "postgresql://***:***@h/db");
  // Where a secret begins (or ends) with other than a letter or digit, what
  // comes before (or after) it does not matter.
  EXPECT_EQ(auditpipe::hide_secret("x/S3/x", "/S3/"), "x***x");
  EXPECT_EQ(auditpipe::hide_secret("xS3/x", "S3/"), "xS3/x");
  EXPECT_EQ(auditpipe::hide_secret("a/b", "a/b"), "***");
  const std::string message = error_of("postgresql://u:p@127.0.0.1:x/db");
  EXPECT_NE(message.find("postgresql://u:***@127.0.0.1:x/db"), std::string::npos) << message;
  EXPECT_NE(message.find("port 'x'"), std::string::npos) << message;
  EXPECT_EQ(message.find(":p@"), std::string::npos) << message;
}

TEST(Url, RedactedNeverShowsThePassword) {
  const auto u = parse_url("postgresql://app:hunter2@localhost:5432/audit?sslmode=require");
  EXPECT_EQ(u.redacted(), "postgresql://app:***@localhost:5432/audit?sslmode=require");
}

// The pool options of `text`, checked together.
std::string pool_error_of(const char* text) {
  const auto u = parse_url(text);
  auditpipe::ConnectionPoolOptions pool;
  std::optional<std::size_t> pool_size;
  for (const auto& [key, value] : u.query)
    auditpipe::apply_pool_option(u, key, value, pool, pool_size);
  try {
    auditpipe::check_pool_options(u, pool, pool_size);
  } catch (const auditpipe::error& e) {
    return e.what();
  }
  return {};
}

TEST(Url, MinIdleAbovePoolSizeIsRefused) {
  const std::string m = pool_error_of("mysql://u:secret@h/db?pool_size=2&min_idle=5");
  EXPECT_NE(m.find("min_idle=5 is more than pool_size=2"), std::string::npos) << m;
  EXPECT_EQ(m.find("secret"), std::string::npos) << m;
  EXPECT_EQ(pool_error_of("mysql://u:secret@h/db?pool_size=5&min_idle=5"), "");
  EXPECT_EQ(pool_error_of("mysql://u:secret@h/db?min_idle=5"), "");  // the sink sizes the pool
}

TEST(Url, UnknownOptionsAreRefusedByName) {
  const auto u = parse_url("mysql://u:secret@h/db?charset=utf8mb4&colour=blue");
  try {
    auditpipe::require_known_options(u, {"charset", "tls"});
    FAIL() << "expected auditpipe::error";
  } catch (const auditpipe::error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("'colour'"), std::string::npos) << m;
    EXPECT_EQ(m.find("secret"), std::string::npos) << m;
  }
}

}  // namespace
