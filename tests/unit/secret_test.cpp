// No password in any message that needs no server: hostile passwords
// (every URL-reserved character, spaces, quotes, backslash, non-ASCII, a
// password equal to the user or the host name), raw and percent-encoded,
// in the user part and as `?password=`, for every scheme, no scheme and an
// unknown one, through parse errors, auditpipe::open() errors, describe(),
// Url::redacted() and redact_url(), and Database::connect() errors. (Connect errors on the real
// server: mysql_hostile_test.cpp.)
#include <gtest/gtest.h>

#include <cctype>

#include <string>
#include <vector>

#include "auditpipe/database.h"
#include "auditpipe/open.h"
#include "auditpipe/sink/url.h"
#include "auditpipe/status.h"

namespace {

const std::vector<std::string> hostile_passwords = {"S3/cr3t",
                                                    "S3?cr3t",
                                                    "S3#cr3t",
                                                    "S3@cr3t",
                                                    "S3:cr3t",
                                                    "S3%cr3t",
                                                    "S3%41cr3t",
                                                    "S3 cr 3t",
                                                    "S3'cr\"3t",
                                                    "S3\\cr3t",
                                                    "S3,cr3t",
                                                    "S3&cr=3t",
                                                    "S3cr3t-\xC3\xA9\xE2\x9C\x93\xF0\x9F\x98\x80",
                                                    "S3/cr?3t#x",
                                                    "S3@cr/3t@x",
                                                    "pwuser" /* the user */,
                                                    "dbhost" /* the host */,
                                                    "p@ss:w/rd?#",
                                                    "%2F%3F%23%40",
                                                    "S3cr3t%"};

std::string percent_encode(const std::string& s) {
  static const char hex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

// The URLs a user could write with `password`: in the user part or as an
// option, raw or encoded, with and without each kind of mistake.
std::vector<std::string> urls_with(const std::string& scheme, const std::string& password) {
  std::vector<std::string> forms;
  const std::string prefix = scheme.empty() ? "" : scheme + "://";
  for (const std::string& pw : {password, percent_encode(password)}) {
    forms.push_back(prefix + "pwuser:" + pw + "@dbhost:3306/audit");
    forms.push_back(prefix + "pwuser@dbhost:3306/audit?password=" + pw);
  }
  std::vector<std::string> out;
  for (const std::string& f : forms) {
    out.push_back(f);
    const bool has_query = f.find("?password=") != std::string::npos;
    out.push_back(f + (has_query ? "&" : "?") + "colour=blue");            // unknown option
    out.push_back(f + (has_query ? "&" : "?") + "write_path=fast");        // bad value
    out.push_back(f + (has_query ? "&" : "?") + "connect_timeout=never");  // bad number
    std::string bad_port = f;
    bad_port.replace(bad_port.find(":3306"), 5, ":notaport");
    out.push_back(bad_port);
    std::string no_db = f;
    no_db.erase(no_db.find("/audit"), 6);
    out.push_back(no_db);
    std::string bad_escape = f;
    bad_escape.replace(bad_escape.find("/audit"), 6, "/au%zzdit");
    out.push_back(bad_escape);
  }
  return out;
}

// Whether `text` shows the password, raw or encoded.
bool shows(const std::string& text, const std::string& password) {
  return text.find(password) != std::string::npos ||
         text.find(percent_encode(password)) != std::string::npos;
}

const std::vector<std::string> schemes = {"mysql",  "mariadb", "postgresql", "postgres",
                                          "sqlite", "",        "oracle",     "MySQL"};

// A raw '&' in `?password=` starts another option: no parser can tell that
// the rest was meant as the password, so only the part before it is one.
bool identifiable(const std::string& url, const std::string& password) {
  return !(url.find("?password=" + password) != std::string::npos &&
           password.find('&') != std::string::npos);
}

TEST(Secret, NoPasswordInAnyParseErrorOrRedactedForm) {
  for (const std::string& password : hostile_passwords) {
    for (const std::string& scheme : schemes) {
      for (const std::string& url : urls_with(scheme, password)) {
        if (!identifiable(url, password)) continue;
        EXPECT_FALSE(shows(auditpipe::redact_url(url), password))
            << url << " -> " << auditpipe::redact_url(url);
        try {
          const auditpipe::Url u = auditpipe::parse_url(url);
          EXPECT_FALSE(shows(u.redacted(), password)) << url << " -> " << u.redacted();
        } catch (const auditpipe::error& e) {
          EXPECT_FALSE(shows(e.what(), password)) << url << " -> " << e.what();
        }
      }
    }
  }
}

void expect_no_password_from_open(const std::vector<std::string>& which) {
  for (const std::string& password : hostile_passwords) {
    for (const std::string& scheme : which) {
      for (const std::string& url : urls_with(scheme, password)) {
        if (!identifiable(url, password)) continue;
        try {
          const auto sink = auditpipe::open(url);
          EXPECT_FALSE(shows(sink->describe(), password)) << url << " -> " << sink->describe();
        } catch (const auditpipe::error& e) {
          EXPECT_FALSE(shows(e.what(), password)) << url << " -> " << e.what();
        }
      }
    }
  }
}

TEST(Secret, NoPasswordInAnyOpenErrorOrDescribe) {
  expect_no_password_from_open(
      {"mysql", "mariadb", "postgresql", "postgres", "", "oracle", "MySQL"});
}

// SQLite URLs take no user part; one given by mistake is refused, and its
// password shown nowhere.
TEST(Secret, NoPasswordFromTheSqliteSink) {
  expect_no_password_from_open({"sqlite"});
}

// auditpipe::Database::connect() parses with the sinks' own parsers: every
// URL open() refuses it refuses too, and without the password. (The URLs
// open() takes would connect: a wrong password on the real servers is in
// database_test.cpp.)
TEST(Secret, NoPasswordInAnyDatabaseConnectError) {
  for (const std::string& password : hostile_passwords) {
    for (const std::string& scheme : schemes) {
      for (const std::string& url : urls_with(scheme, password)) {
        if (!identifiable(url, password)) continue;
        try {
          (void)auditpipe::open(url);
          continue;
        } catch (const auditpipe::error&) {
        }
        try {
          (void)auditpipe::Database::connect(url);
          ADD_FAILURE() << "connected: " << url;
        } catch (const auditpipe::error& e) {
          EXPECT_FALSE(shows(e.what(), password)) << url << " -> " << e.what();
        }
      }
    }
  }
}

// The password is found by the last '@' before the query, so reserved
// characters in it parse as the user meant.
TEST(Secret, APasswordWithReservedCharactersParsesWhole) {
  for (const std::string password :
       {"S3/cr3t", "S3?cr3t", "S3#cr3t", "S3@cr3t", "S3:cr3t", "S3?cr/3t#x", "S3@cr/3t@x"}) {
    const std::string url = "mysql://pwuser:" + password + "@dbhost:3306/audit?tls=required";
    const auditpipe::Url u = auditpipe::parse_url(url);
    EXPECT_EQ(u.user, "pwuser") << url;
    EXPECT_EQ(u.password.value_or(""), password) << url;
    ASSERT_EQ(u.hosts.size(), 1u) << url;
    EXPECT_EQ(u.hosts[0].host, "dbhost") << url;
    EXPECT_EQ(u.path, "audit") << url;
    EXPECT_EQ(u.option("tls"), "required") << url;
    EXPECT_EQ(u.redacted(), "mysql://pwuser:***@dbhost:3306/audit?tls=required");
  }
  // An '@' in an option's value stays in the option.
  const auditpipe::Url u = auditpipe::parse_url("mysql://u:pw@h/db?tls_ca=/etc/a@b.pem");
  EXPECT_EQ(u.password.value_or(""), "pw");
  EXPECT_EQ(u.hosts.at(0).host, "h");
  EXPECT_EQ(u.option("tls_ca"), "/etc/a@b.pem");
}

TEST(Secret, TheIssuesExamplesAreMasked) {
  auto open_error = [](const std::string& url) {
    try {
      (void)auditpipe::open(url);
    } catch (const auditpipe::error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  const std::string no_scheme = open_error("pwuser:S3cr3t-Pw@db:3306/audit");
  EXPECT_NE(no_scheme.find("no sink for 'pwuser:***@db:3306/audit'"), std::string::npos)
      << no_scheme;
  const std::string option = open_error("mysql://pwuser@db/audit?password=S3cr3t-Pw");
  EXPECT_NE(option.find("password=***"), std::string::npos) << option;
  EXPECT_EQ(option.find("S3cr3t-Pw"), std::string::npos) << option;
}

}  // namespace
