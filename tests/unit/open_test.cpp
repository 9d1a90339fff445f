// auditpipe::open(url): every sink the build has is registered, under each
// of its schemes and in any case, and an unknown scheme is an error naming
// the supported ones without the URL's password. Every refusal here is an
// auditpipe::url_error (the command-line tool's usage error), which
// open_error() alone catches. Only parsing happens here: no database is
// opened.
#include "auditpipe/open.h"

#include <gtest/gtest.h>

#include <cctype>

#include <string>
#include <utility>
#include <vector>

#include "auditpipe/sink/url.h"
#include "auditpipe/status.h"

namespace {

std::string open_error(const std::string& url) {
  try {
    (void)auditpipe::open(url);
  } catch (const auditpipe::url_error& e) {
    return e.what();
  }
  return "";
}

TEST(Open, AnUnknownSchemeNamesTheSupportedOnesAndHidesThePassword) {
  const std::string e = open_error("oracle://scott:Sekr1t-Pw@db/orcl");
  EXPECT_NE(e.find("no sink for 'oracle://scott:***@db/orcl' in this build (supported:" +
                   std::string(AUDITPIPE_TEST_SUPPORTED_SCHEMES) + ")"),
            std::string::npos)
      << e;
  EXPECT_EQ(e.find("Sekr1t-Pw"), std::string::npos) << e;
}

// The seal options are parsed by one function for every sink: a value it
// does not know is the URL's fault there too.
TEST(Open, ASealModeNoSinkKnowsIsAUrlError) {
  std::vector<std::string> urls;
#ifdef AUDITPIPE_TEST_HAVE_SQLITE
  urls.push_back("sqlite:///tmp/open-test.db?seal=sha1");
#endif
#ifdef AUDITPIPE_TEST_HAVE_MYSQL
  urls.push_back("mysql://audit:pw@db:3306/audit?seal=sha1");
#endif
#ifdef AUDITPIPE_TEST_HAVE_POSTGRESQL
  urls.push_back("postgresql://audit:pw@db:5432/audit?seal=sha1");
#endif
  for (const std::string& url : urls) {
    const std::string e = open_error(url);
    EXPECT_NE(e.find("seal must be none, hash or hmac (got 'sha1')"), std::string::npos)
        << url << " -> " << e;
  }
}

// Sealing options that contradict each other are refused with the URL,
// before any connection: a key or an anchor file with sealing off, a key
// with seal=hash, migrate=add_columns with seal=. (They were plain errors
// found once connected, exit 1 in the command-line tool, like an outage.)
TEST(Open, ContradictorySealOptionsAreAUrlError) {
  std::vector<std::string> bases;
#ifdef AUDITPIPE_TEST_HAVE_SQLITE
  bases.push_back("sqlite:///tmp/open-test.db?");
#endif
#ifdef AUDITPIPE_TEST_HAVE_MYSQL
  bases.push_back("mysql://audit:pw@db:3306/audit?");
#endif
#ifdef AUDITPIPE_TEST_HAVE_POSTGRESQL
  bases.push_back("postgresql://audit:pw@db:5432/audit?");
#endif
  const std::pair<std::string, std::string> cases[] = {
      {"seal_key_file=/k", "seal_key_file is given but sealing is off"},
      {"seal=none&seal_anchor_file=/a", "seal_anchor_file is given but sealing is off"},
      {"seal=hash&seal_key_file=/k", "seal_key_file is for seal=hmac"},
      {"seal=hash&migrate=add_columns", "migrate=add_columns and seal= together are refused"},
      // Empty (an unset variable): it published no anchor, without a word.
      {"seal=hash&seal_anchor_file=", "seal_anchor_file is empty"},
      {"seal=hmac&seal_key_file=", "seal_key_file is empty"},
  };
  for (const std::string& base : bases) {
    for (const auto& [query, said] : cases) {
      const std::string e = open_error(base + query);
      EXPECT_NE(e.find(said), std::string::npos) << base + query << " -> " << e;
    }
    EXPECT_EQ(open_error(base + "seal=hmac&seal_key_file=/k&seal_anchor_file=/a"), "") << base;
  }
}

TEST(Open, EachBuiltSinkOpensItsSchemesInAnyCase) {
  struct Case {
    std::string url, described;  // describe() masks the password
  };
  std::vector<Case> cases;
#ifdef AUDITPIPE_TEST_HAVE_SQLITE
  cases.push_back({"sqlite:///tmp/open-test.db", "sqlite:///tmp/open-test.db"});
  cases.push_back({"SQLite:///tmp/open-test.db", "SQLite:///tmp/open-test.db"});
#endif
#ifdef AUDITPIPE_TEST_HAVE_MYSQL
  cases.push_back({"mysql://audit:pw@db:3306/audit", "mysql://audit:***@db:3306/audit"});
  cases.push_back({"MariaDB://audit:pw@db:3306/audit", "mariadb://audit:***@db:3306/audit"});
#endif
#ifdef AUDITPIPE_TEST_HAVE_POSTGRESQL
  cases.push_back({"postgresql://audit:pw@db:5432/audit", "postgresql://audit:***@db:5432/audit"});
  cases.push_back({"postgres://audit:pw@db:5432/audit", "postgres://audit:***@db:5432/audit"});
#endif
  for (const Case& c : cases) {
    const auto sink = auditpipe::open(c.url);
    ASSERT_NE(sink, nullptr) << c.url;
    EXPECT_EQ(sink->describe(), c.described) << c.url;
  }
}

// What the URLs users already write mean, and the clear refusals of the
// rest: parsed only (no server is contacted by open()).
#ifdef AUDITPIPE_TEST_HAVE_POSTGRESQL
TEST(Open, PostgresqlTakesLibpqsSocketDirectoryAndSslmode) {
  for (const char* url : {"postgres://audit:pw@/audit?host=/run/postgresql",
                          "postgresql://audit:pw@/audit?host=/run/postgresql&port=5433",
                          "postgresql://audit@/audit?host=/tmp/a,/tmp/b&port=5433",
                          "postgresql://audit@/audit?host=db1,db2"}) {
    EXPECT_EQ(open_error(url), "") << url;
  }
  const auto sink = auditpipe::open("postgres://audit:pw@/audit?host=/run/postgresql&port=5433");
  EXPECT_EQ(sink->describe(), "postgres://audit:***@/audit?host=/run/postgresql&port=5433");
  for (const char* mode : {"disable", "allow", "prefer", "require", "verify-ca", "verify-full"}) {
    EXPECT_EQ(open_error(std::string("postgres://audit:pw@db/audit?sslmode=") + mode), "") << mode;
  }
  EXPECT_EQ(open_error("postgres://audit:pw@db/audit?sslmode=verify-full&sslrootcert=/ca.pem"), "");
  EXPECT_EQ(open_error("postgres://audit:pw@db/audit?sslrootcert=/ca.pem"), "");
  const struct {
    const char* url;
    const char* expect;
  } refused[] = {
      {"postgresql://audit:Sekr1t-Pw@db/audit?sslmode=sometimes",
       "sslmode must be disable, allow, prefer, require, verify-ca or verify-full, not "
       "'sometimes'"},
      {"postgresql://audit:Sekr1t-Pw@db/audit?sslmode=REQUIRE", "sslmode must be"},
      // A CA with sslmode=disable would be ignored: the connection is plain.
      {"postgresql://audit:Sekr1t-Pw@db/audit?sslmode=disable&sslrootcert=/etc/ssl/ca.pem",
       "sslrootcert is given but sslmode=disable makes a plain connection"},
      {"postgresql://audit:Sekr1t-Pw@db/audit?sslkey=/k.pem&sslmode=disable",
       "sslkey is given but sslmode=disable"},
      {"postgresql://audit:Sekr1t-Pw@db/audit?host=/run/postgresql",
       "a host both before the database and in ?host="},
      {"postgresql://audit:Sekr1t-Pw@db/audit?port=5433", "?port= goes with ?host="},
      {"postgresql://audit:Sekr1t-Pw@/audit?host=/tmp&port=0", "port='0'"},
      {"postgresql://audit:Sekr1t-Pw@/audit?host=/tmp,,/x", "an empty entry in ?host="},
      {"postgresql://audit:Sekr1t-Pw@/audit", "no host (postgresql://user@/database?host="},
      {"postgresql://audit:Sekr1t-Pw@db/audit?colour=blue", "unknown option 'colour'"},
      {"postgresql://audit:Sekr1t-Pw@db/audit?colour=blue",
       "the accepted form is postgresql://user:password@host:port[,host2:port2]/"
       "database?option=value (or postgres://)"},
  };
  for (const auto& c : refused) {
    const std::string e = open_error(c.url);
    EXPECT_NE(e.find(c.expect), std::string::npos) << c.url << " -> " << e;
    EXPECT_EQ(e.find("Sekr1t-Pw"), std::string::npos) << e;
  }
}
#endif

#ifdef AUDITPIPE_TEST_HAVE_MYSQL
TEST(Open, MysqlRefusesUnknownOptionsShowingTheAcceptedForm) {
  EXPECT_EQ(open_error("mariadb://audit:pw@db:3306/audit?tls=required"), "");
  const std::string e = open_error("mariadb://audit:Sekr1t-Pw@db/audit?sslmode=require");
  EXPECT_NE(e.find("unknown option 'sslmode'"), std::string::npos) << e;
  EXPECT_NE(e.find("the accepted form is mysql://user:password@host:port[,host2:port2]/"
                   "database?option=value (or mariadb://)"),
            std::string::npos)
      << e;
  EXPECT_EQ(e.find("Sekr1t-Pw"), std::string::npos) << e;
}
#endif

#ifdef AUDITPIPE_TEST_HAVE_MYSQL
// Host selection on a cluster (docs/scale-out.md).
TEST(Open, MysqlTakesHostsSequentialOrLoadbalance) {
  for (const char* url : {"mysql://audit:pw@db1,db2,db3/audit?hosts=sequential",
                          "mysql://audit:pw@db1,db2,db3/audit?hosts=loadbalance",
                          "mysql://audit:pw@db1/audit?hosts=loadbalance"}) {
    EXPECT_EQ(open_error(url), "") << url;
  }
  const std::string e = open_error("mysql://audit:Sekr1t-Pw@db1,db2/audit?hosts=random");
  EXPECT_NE(e.find("hosts must be sequential or loadbalance, not 'random'"), std::string::npos)
      << e;
}
#endif

#ifdef AUDITPIPE_TEST_HAVE_POSTGRESQL
// libpq's target_session_attrs, passed through (a primary and standbys).
TEST(Open, PostgresqlTakesTargetSessionAttrs) {
  for (const char* attrs : {"any", "read-write", "primary"}) {
    EXPECT_EQ(open_error(std::string("postgresql://audit:pw@db1,db2/audit?target_session_attrs=") +
                         attrs),
              "")
        << attrs;
  }
  const std::string e =
      open_error("postgresql://audit:Sekr1t-Pw@db1,db2/audit?target_session_attrs=writable");
  EXPECT_NE(e.find("target_session_attrs must be any, read-write"), std::string::npos) << e;
}

// A logger only writes: the values that pick a standby (or a read-only
// session) could never store a row. (Readers, auditpipe verify, take them:
// the cluster test pg_session_attrs.)
TEST(Open, PostgresqlRefusesTargetSessionAttrsThatCannotWrite) {
  for (const char* attrs : {"read-only", "standby", "prefer-standby"}) {
    const std::string e = open_error(
        std::string("postgresql://audit:Sekr1t-Pw@db1,db2/audit?target_session_attrs=") + attrs);
    EXPECT_NE(e.find(std::string("target_session_attrs=") + attrs +
                     " asks for a session that cannot write"),
              std::string::npos)
        << attrs << " -> " << e;
    EXPECT_EQ(e.find("Sekr1t-Pw"), std::string::npos) << e;
  }
}
#endif

#if defined(AUDITPIPE_TEST_HAVE_MYSQL) && defined(AUDITPIPE_TEST_HAVE_POSTGRESQL)
// A password that is a word of the accepted form is masked in the form too;
// one that is a letter of it ("o") is masked where it stands alone, and
// the words it is part of are left whole (masking every "o" made the
// message unreadable, and showed what the password was).
TEST(Open, TheAcceptedFormNeverShowsThePassword) {
  const auto is_word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  for (const char* url :
       {"mariadb://audit:user@db/audit?colour=blue", "postgresql://audit:o@db/audit?colour=blue",
        "postgresql://audit:host@db/audit?port=1"}) {
    const std::string m = open_error(url);
    const std::string password = auditpipe::parse_url(url).password.value();
    EXPECT_NE(m.find("auditpipe: "), std::string::npos) << m;  // refused
    for (auto at = m.find(password); at != std::string::npos; at = m.find(password, at + 1)) {
      const std::size_t end = at + password.size();
      EXPECT_TRUE((at > 0 && is_word(m[at - 1])) || (end < m.size() && is_word(m[end])))
          << url << " -> " << m;
    }
  }
}
#endif

#ifdef AUDITPIPE_TEST_HAVE_SQLITE
TEST(Open, SqliteRefusesTheAmbiguousThreeSlashFile) {
  const std::string e = open_error("sqlite:///audit.db");
  EXPECT_NE(e.find("ambiguous: sqlite:///audit.db is /audit.db (a file in the root directory) "
                   "here, but audit.db relative to the working directory in SQLAlchemy"),
            std::string::npos)
      << e;
  EXPECT_EQ(open_error("sqlite:////tmp/open-test.db"), "");
  EXPECT_EQ(open_error("sqlite:///tmp/open-test.db"), "");
  EXPECT_EQ(open_error("sqlite://audit.db"), "");
  EXPECT_EQ(open_error("sqlite:////audit.db"), "");  // says it is /audit.db; not opened here
}

// read_only=1 is for readers (verify, a Database); a sink writes.
TEST(Open, SqliteSinkRefusesReadOnly) {
  const std::string e = open_error("sqlite:///tmp/open-test.db?read_only=1");
  EXPECT_NE(e.find("read_only=1 is for reading"), std::string::npos) << e;
  EXPECT_EQ(open_error("sqlite:///tmp/open-test.db?read_only=0"), "");
  const std::string bad = open_error("sqlite:///tmp/open-test.db?read_only=yes");
  EXPECT_NE(bad.find("read_only must be 0 or 1"), std::string::npos) << bad;
}
#endif

}  // namespace
