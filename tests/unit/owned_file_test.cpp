// OwnedFile: one holder of a spill directory's lock file or a durable pool
// file at a time, in this process and across processes; and a fork() child,
// with or without fork handlers run, holds nothing of its parent's.
#include "durable/owned_file.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "temp_dir.h"

namespace {

using auditpipe::internal::OwnedFile;
using Taken = OwnedFile::Taken;
using testing_support::TempDir;

TEST(OwnedFile, OneHolderInAProcessUnderAnyNameOfTheFile) {
  TempDir dir;
  const auto path = dir.path() / "lock";
  OwnedFile first;
  ASSERT_EQ(first.take(path, O_CREAT, 0600), Taken::owned);
  std::filesystem::create_symlink(path, dir.path() / "link");
  std::filesystem::create_hard_link(path, dir.path() / "hard");
  OwnedFile second;
  EXPECT_EQ(second.take(path, O_CREAT, 0600), Taken::in_use);
  EXPECT_EQ(second.take(dir.path() / "link", 0, 0), Taken::in_use);
  EXPECT_EQ(second.take(dir.path() / "hard", 0, 0), Taken::in_use);
  // The refusals opened nothing: closing a descriptor of the file would
  // have let go of the first holder's lock, which another process sees.
  const pid_t child = fork();
  ASSERT_NE(child, -1);
  if (child == 0) {
    OwnedFile other;
    _exit(other.take(path, 0, 0) == Taken::in_use ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << "another process took a file this one holds";
  first.release();
  EXPECT_EQ(second.take(dir.path() / "link", 0, 0), Taken::owned);
}

TEST(OwnedFile, AFileAnotherProcessHoldsIsInUseUntilItLetsGo) {
  TempDir dir;
  const auto path = dir.path() / "lock";
  int held[2], go[2];
  ASSERT_EQ(pipe(held), 0);
  ASSERT_EQ(pipe(go), 0);
  const pid_t child = fork();
  ASSERT_NE(child, -1);
  if (child == 0) {
    close(go[1]);
    OwnedFile mine;
    const char c = mine.take(path, O_CREAT, 0600) == Taken::owned ? 'y' : 'n';
    [[maybe_unused]] auto w = write(held[1], &c, 1);
    char wait = 0;
    [[maybe_unused]] auto r = read(go[0], &wait, 1);
    _exit(0);
  }
  char c = 0;
  ASSERT_EQ(read(held[0], &c, 1), 1);
  ASSERT_EQ(c, 'y');
  OwnedFile here;
  EXPECT_EQ(here.take(path, O_CREAT, 0600), Taken::in_use);
  close(go[1]);
  int status = 0;
  waitpid(child, &status, 0);
  EXPECT_EQ(here.take(path, O_CREAT, 0600), Taken::owned);
}

// A child of the holder keeps its copy of the descriptor until it closes
// it: in its fork handler, or, made without handlers (a raw fork system
// call, as some runtimes make children), never. The parent's next holder
// must not wait for it.
void a_child_holds_nothing(bool with_fork_handlers) {
  TempDir dir;
  const auto path = dir.path() / "lock";
  auto first = std::make_unique<OwnedFile>();
  ASSERT_EQ(first->take(path, O_CREAT, 0600), Taken::owned);
  int go[2];
  ASSERT_EQ(pipe(go), 0);
  const pid_t child = with_fork_handlers ? fork() : static_cast<pid_t>(syscall(SYS_fork));
  ASSERT_NE(child, -1);
  if (child == 0) {
    // Only system calls here: no handler ran to make anything else safe.
    close(go[1]);
    char c = 0;
    [[maybe_unused]] auto r = read(go[0], &c, 1);
    _exit(0);
  }
  first.reset();
  OwnedFile next;
  EXPECT_EQ(next.take(path, O_CREAT, 0600), Taken::owned)
      << "the parent's next holder was refused while the child lived";
  close(go[1]);
  int status = 0;
  waitpid(child, &status, 0);
}

TEST(OwnedFile, AForkChildHoldsNothingOfItsParents) {
  a_child_holds_nothing(true);
}

TEST(OwnedFile, AChildMadeWithoutForkHandlersHoldsNothingOfItsParents) {
  a_child_holds_nothing(false);
}

TEST(OwnedFile, AFileThatCannotBeOpenedSaysWhy) {
  TempDir dir;
  OwnedFile file;
  EXPECT_EQ(file.take(dir.path() / "missing" / "lock", O_CREAT, 0600), Taken::failed);
  EXPECT_EQ(file.error(), ENOENT);
  EXPECT_EQ(file.fd(), -1);
}

}  // namespace
