// The installed auditpipe::metrics_http from an outside project, without
// httplib.h on its include path: serve a page on a free loopback port,
// fetch it over a plain socket, check a series is there, stop.
#include <arpa/inet.h>
#include <auditpipe/http/metrics_server.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <string>

int main() {
  auditpipe::http::MetricsServer server({{[] { return auditpipe::Stats{}; }, {{"logger", "c"}}}},
                                        {.port = 0});
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(server.port());
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return 1;
  const std::string request = "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  (void)::send(fd, request.data(), request.size(), 0);
  std::string response;
  char buf[4096];
  ssize_t n;
  while ((n = ::recv(fd, buf, sizeof buf, 0)) > 0) response.append(buf, static_cast<size_t>(n));
  ::close(fd);
  server.stop();
  if (response.find("auditpipe_records_written_total{logger=\"c\"} 0") == std::string::npos) {
    std::fprintf(stderr, "no series in:\n%s\n", response.c_str());
    return 1;
  }
  std::printf("served %s\n", server.url().c_str());
  return 0;
}
