// The durable pool's file when it cannot be made: a file its open created
// is removed again, and a file that was there before is left alone.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "auditpipe/status.h"
#include "durable/pool_file.h"
#include "temp_dir.h"

namespace {

using auditpipe::internal::PoolFile;
using testing_support::TempDir;

// More bytes than any disk here holds (16 TiB and more): the allocation fails.
constexpr std::size_t huge_capacity = 0xFFFFFFFEu;
constexpr std::size_t huge_stride = 4096;

std::string open_error(const std::filesystem::path& path) {
  try {
    PoolFile file(path, 42, huge_capacity, huge_stride);
  } catch (const auditpipe::error& e) {
    return e.what();
  }
  return "";
}

TEST(PoolFile, AFileItsOpenMadeAndCouldNotAllocateIsRemoved) {
  TempDir dir;
  const auto path = dir.path() / "pool.dat";
  const std::string e = open_error(path);
  EXPECT_NE(e.find("cannot allocate"), std::string::npos) << e;
  EXPECT_FALSE(std::filesystem::exists(path)) << "a pool that was never made is left behind";
}

TEST(PoolFile, AnEmptyFileThatWasThereBeforeIsLeftAlone) {
  TempDir dir;
  const auto path = dir.path() / "pool.dat";
  std::ofstream(path).close();
  const std::string e = open_error(path);
  EXPECT_NE(e.find("cannot allocate"), std::string::npos) << e;
  EXPECT_TRUE(std::filesystem::exists(path));
  // A small pool then makes it.
  PoolFile small(path, 42, 16, 64);
  EXPECT_FALSE(small.existed());
}

}  // namespace
