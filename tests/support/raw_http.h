// RawHttp: a plain TCP connection to 127.0.0.1:<port> that sends exactly the
// bytes a test gives and reads exactly one HTTP response back (by its
// Content-Length), so that tests see what is on the wire: a HEAD's missing
// body, two requests on one connection, a client that sends nothing. For
// the metrics server's tests only; it trusts the server's framing.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>

namespace testing_support {

struct RawResponse {
  int status = 0;    // 0: no complete response
  std::string head;  // status line and headers
  std::string body;
  bool has_header(const std::string& line) const {
    return head.find("\r\n" + line + "\r\n") != std::string::npos;
  }
};

class RawHttp {
 public:
  explicit RawHttp(int port) : fd_(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<std::uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  }
  ~RawHttp() { ::close(fd_); }
  RawHttp(const RawHttp&) = delete;
  RawHttp& operator=(const RawHttp&) = delete;

  bool connected() const { return connected_; }
  bool send(const std::string& bytes) {
    return ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) ==
           static_cast<ssize_t>(bytes.size());
  }
  // One response; a HEAD's has no body whatever its Content-Length says.
  // After the body, waits `linger` for stray bytes (a body sent for a
  // HEAD) and appends them to the body.
  RawResponse read_response(bool head_request = false,
                            std::chrono::milliseconds timeout = std::chrono::seconds(10),
                            std::chrono::milliseconds linger = std::chrono::milliseconds(0)) {
    RawResponse r;
    std::size_t end;
    while ((end = buffer_.find("\r\n\r\n")) == std::string::npos) {
      if (!fill(timeout)) return r;
    }
    r.head = buffer_.substr(0, end + 2);
    buffer_.erase(0, end + 4);
    std::size_t length = 0;
    if (const auto at = r.head.find("\r\nContent-Length: "); at != std::string::npos) {
      length = std::strtoul(r.head.c_str() + at + 18, nullptr, 10);
    }
    if (head_request) length = 0;
    while (buffer_.size() < length) {
      if (!fill(timeout)) return r;
    }
    r.body = buffer_.substr(0, length);
    buffer_.erase(0, length);
    if (linger.count() > 0) {
      fill(linger);
      r.body += buffer_;
      buffer_.clear();
    }
    r.status = std::atoi(r.head.c_str() + 9);  // "HTTP/1.1 200"
    return r;
  }
  // True if the server closed the connection within `timeout`.
  bool closed_within(std::chrono::milliseconds timeout) {
    const auto until = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < until) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) > 0) {
        char c;
        if (::recv(fd_, &c, 1, 0) <= 0) return true;
      }
    }
    return false;
  }

 private:
  bool fill(std::chrono::milliseconds timeout) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(timeout.count())) <= 0) return false;
    char buf[4096];
    const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n <= 0) return false;
    buffer_.append(buf, static_cast<std::size_t>(n));
    return true;
  }

  int fd_;
  bool connected_ = false;
  std::string buffer_;
};

}  // namespace testing_support
