#include "cli/worker_pool.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <set>

namespace ckptspec {
namespace {

PropertyOutcome Numbered(size_t i) {
  PropertyOutcome o;
  o.property = "P" + std::to_string(i);
  o.verdict = i % 3 == 0 ? Verdict::kFail : Verdict::kPass;
  o.cases = static_cast<int>(i);
  usleep(static_cast<useconds_t>((i * 7919) % 5 * 1000));  // finish out of order
  return o;
}

TEST(WorkerPool, OutcomesComeBackInTaskOrderForAnyNumberOfWorkers) {
  for (int jobs : {1, 2, 3, 8, 40}) {
    SCOPED_TRACE(jobs);
    std::set<size_t> reported;
    const std::vector<PropertyOutcome> outcomes =
        RunInWorkers(25, jobs, Numbered, [&](size_t i, const PropertyOutcome& o) {
          EXPECT_EQ(o.cases, static_cast<int>(i));
          reported.insert(i);
        });
    ASSERT_EQ(outcomes.size(), 25u);
    EXPECT_EQ(reported.size(), 25u);
    for (size_t i = 0; i < outcomes.size(); ++i) {
      EXPECT_EQ(outcomes[i].property, "P" + std::to_string(i));
      EXPECT_EQ(outcomes[i].cases, static_cast<int>(i));
    }
  }
}

// The task runs in another process: what it changes here is not seen by the caller.
TEST(WorkerPool, TasksRunInWorkerProcesses) {
  const pid_t caller = getpid();
  int touched = 0;
  const std::vector<PropertyOutcome> outcomes = RunInWorkers(
      4, 2,
      [&](size_t) {
        ++touched;
        PropertyOutcome o;
        o.message = getpid() == caller ? "caller" : "worker";
        return o;
      },
      [](size_t, const PropertyOutcome&) {});
  for (const PropertyOutcome& o : outcomes) EXPECT_EQ(o.message, "worker");
  EXPECT_EQ(touched, 0);
}

// A worker that dies gives its task an error naming how; the other tasks still run.
TEST(WorkerPool, AWorkerThatDiesGivesItsTaskAnErrorAndTheRestGoOn) {
  const std::vector<PropertyOutcome> outcomes = RunInWorkers(
      6, 2,
      [](size_t i) {
        if (i == 2) raise(SIGKILL);
        if (i == 4) _exit(3);
        return Numbered(i);
      },
      [](size_t, const PropertyOutcome&) {});
  ASSERT_EQ(outcomes.size(), 6u);
  EXPECT_EQ(outcomes[2].verdict, Verdict::kError);
  EXPECT_EQ(outcomes[2].message,
            "the worker process running it died of signal 9 (" + std::string(strsignal(9)) + ")");
  EXPECT_EQ(outcomes[4].verdict, Verdict::kError);
  EXPECT_EQ(outcomes[4].message,
            "the worker process running it exited with code 3 without an outcome");
  for (size_t i : {0, 1, 3, 5}) EXPECT_EQ(outcomes[i].property, "P" + std::to_string(i)) << i;
}

}  // namespace
}  // namespace ckptspec
