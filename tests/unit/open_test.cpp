// auditpipe::open(url): every sink the build has is registered, under each
// of its schemes and in any case, and an unknown scheme is an error naming
// the supported ones without the URL's password. Only parsing happens here:
// no database is opened.
#include "auditpipe/open.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "auditpipe/status.h"

namespace {

std::string open_error(const std::string& url) {
  try {
    (void)auditpipe::open(url);
  } catch (const auditpipe::error& e) {
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

}  // namespace
