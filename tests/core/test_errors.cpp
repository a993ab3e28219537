// The fatal handler (core/errors.h): whatever escapes where no caller can catch it — a worker
// thread, a noexcept destructor, std::terminate itself — ends the process with one line,
// "bench: <who>failed: <what>" (LibTorch's message without its stack), the hook's record, and
// exit status 1. Each case runs in a child process (a death test) and holds on every CPU.
#include <gtest/gtest.h>

#include <c10/util/Exception.h>

#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>

#include "test_util.h"
#include "trainbench/core/errors.h"

namespace trainbench {
namespace {

// The whole of stderr, one line: no "terminate called", no "frame #", nothing after it.
std::string one_line_(const std::string& who, const std::string& what) {
  return "^bench: " + who + "failed: " + what + "\n$";
}

class FatalHandler : public ::testing::Test {
 protected:
  // A fork of this process (its one thread) runs each case, so a hook writes where the parent
  // reads.
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "fast"); }
};

TEST_F(FatalHandler, AnExceptionThatEscapesAWorkerThreadIsOneLineAndExitOne) {
  EXPECT_EXIT(
      {
        install_fatal_handler("");
        std::thread([] { throw RunError("the worker's error"); }).join();
      },
      ::testing::ExitedWithCode(1), one_line_("", "the worker's error"));
}

// As LibTorch's errors reach it: c10::Error's what() carries the C++ stack; the line does not.
TEST_F(FatalHandler, ALibTorchErrorFromANoexceptDestructorLosesItsStack) {
  struct ThrowsOnDestruction {
    ~ThrowsOnDestruction() noexcept(false) { TORCH_CHECK(false, "raw_deallocate failed"); }
  };
  EXPECT_EXIT(
      {
        install_fatal_handler("rank 1: ");
        // A noexcept function: the exception cannot leave it, std::terminate is called.
        [&]() noexcept { ThrowsOnDestruction t; }();
      },
      ::testing::ExitedWithCode(1), one_line_("rank 1: ", "raw_deallocate failed"));
}

TEST_F(FatalHandler, TerminateWithNoExceptionSaysSo) {
  EXPECT_EXIT(
      {
        install_fatal_handler("");
        std::terminate();
      },
      ::testing::ExitedWithCode(1),
      one_line_("", "std::terminate was called with no exception in flight"));
}

// The hook gets the line's message (a run records summary.json with it); a hook that throws
// is ignored, and the handler still exits with its one line.
TEST_F(FatalHandler, TheHookRecordsTheErrorAndAThrowingHookChangesNothing) {
  testing::TempDir dir;
  const std::string file = dir / "record";
  EXPECT_EXIT(
      {
        install_fatal_handler("");
        set_fatal_hook([file](const std::string& what) { std::ofstream(file) << what; });
        std::thread([] { throw std::runtime_error("recorded"); }).join();
      },
      ::testing::ExitedWithCode(1), one_line_("", "recorded"));
  EXPECT_EQ(testing::read_file(file), "recorded");
  EXPECT_EXIT(
      {
        install_fatal_handler("");
        set_fatal_hook([](const std::string&) { throw std::runtime_error("the hook's own"); });
        std::thread([] { throw std::runtime_error("first"); }).join();
      },
      ::testing::ExitedWithCode(1), one_line_("", "first"));
}

}  // namespace
}  // namespace trainbench
