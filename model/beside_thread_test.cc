#include "model/beside_thread.h"

#include <gtest/gtest.h>

#include <atomic>
#include <new>
#include <stdexcept>

namespace ckptspec {
namespace {

TEST(RunBeside, RunsBothAndReturnsWhenBothAreDone) {
  std::atomic<int> done{0};
  RunBeside([&] { done += 1; }, [&] { done += 2; });
  EXPECT_EQ(done.load(), 3);
}

// An allocation failure on the other thread reaches the caller as std::bad_alloc, after the
// caller's own work has finished.
TEST(RunBeside, AnExceptionOnTheOtherThreadIsRethrownHere) {
  bool here_finished = false;
  EXPECT_THROW(RunBeside([] { throw std::bad_alloc(); }, [&] { here_finished = true; }),
               std::bad_alloc);
  EXPECT_TRUE(here_finished);
  bool beside_finished = false;
  EXPECT_THROW(RunBeside([&] { beside_finished = true; }, [] { throw std::bad_alloc(); }),
               std::bad_alloc);
  EXPECT_TRUE(beside_finished);
}

TEST(RunBeside, WhenBothThrowTheCallersExceptionWins) {
  EXPECT_THROW(RunBeside([] { throw std::bad_alloc(); }, [] { throw std::runtime_error("here"); }),
               std::runtime_error);
}

}  // namespace
}  // namespace ckptspec
