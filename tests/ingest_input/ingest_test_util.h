// Helpers for the ingest input tests: files in a temp dir, compressed with
// the real gzip/zstd commands, and reading a ByteSource to its end.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "input/byte_source.h"
#include "temp_dir.h"

namespace ingest_test {

inline void write_file(const std::string& path, const std::string& data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
  ASSERT_TRUE(out.good()) << path;
}

inline void append_file(const std::string& path, const std::string& data) {
  std::ofstream out(path, std::ios::binary | std::ios::app);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
  ASSERT_TRUE(out.good()) << path;
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Runs a shell command; fails the test if it fails.
inline void run(const std::string& command) {
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
}

// Everything the source gives, in reads of `chunk` bytes.
inline std::string drain(auditpipe::ingest::ByteSource& s, std::size_t chunk = 4096) {
  std::string out, buf(chunk, '\0');
  for (;;) {
    const std::size_t n = s.read(buf.data(), buf.size());
    if (n == 0) return out;
    out.append(buf.data(), n);
  }
}

// Deterministic text lines, `count` of them.
inline std::string lines(std::size_t count, const std::string& tag = "line") {
  std::string out;
  for (std::size_t i = 0; i < count; ++i)
    out += "{\"" + tag + "\":" + std::to_string(i) + ",\"pad\":\"" +
           std::string(i % 50, static_cast<char>('a' + i % 26)) + "\"}\n";
  return out;
}

}  // namespace ingest_test
