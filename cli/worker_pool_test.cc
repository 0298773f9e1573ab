#include "cli/worker_pool.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <new>
#include <set>
#include <string>
#include <vector>

#include "targets/process/process_test_util.h"

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

// A worker that dies or runs out of memory gives its task an error naming how; the other tasks
// still run.
TEST(WorkerPool, AWorkerThatDiesGivesItsTaskAnErrorAndTheRestGoOn) {
  const std::vector<PropertyOutcome> outcomes = RunInWorkers(
      6, 2,
      [](size_t i) {
        if (i == 1) throw std::bad_alloc();  // must not unwind into the copy of the caller
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
  EXPECT_EQ(outcomes[1].verdict, Verdict::kError);
  EXPECT_EQ(outcomes[1].message, "the worker process running it ran out of memory");
  for (size_t i : {0, 3, 5}) EXPECT_EQ(outcomes[i].property, "P" + std::to_string(i)) << i;
}

// ckptspec blocks the termination signals for its signal thread (cleanup_registry.h), which a
// fork does not copy: a worker gets them back, so that a plain kill ends it.
TEST(WorkerPool, AWorkerEndsByAPlainKill) {
  sigset_t termination, before;
  sigemptyset(&termination);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) sigaddset(&termination, sig);
  ASSERT_EQ(pthread_sigmask(SIG_BLOCK, &termination, &before), 0);
  const std::vector<PropertyOutcome> outcomes = RunInWorkers(
      2, 2,
      [](size_t i) {
        raise(i == 0 ? SIGTERM : SIGINT);
        return Numbered(i);
      },
      [](size_t, const PropertyOutcome&) {});
  ASSERT_EQ(pthread_sigmask(SIG_SETMASK, &before, nullptr), 0);
  ASSERT_EQ(outcomes.size(), 2u);
  EXPECT_EQ(outcomes[0].message, "the worker process running it died of signal 15 (" +
                                     std::string(strsignal(SIGTERM)) + ")");
  EXPECT_EQ(outcomes[1].message, "the worker process running it died of signal 2 (" +
                                     std::string(strsignal(SIGINT)) + ")");
}

// The process that runs the workers is killed outright (SIGKILL: no code of its own runs): its
// workers, busy with tasks that would never end, end within a moment all the same.
TEST(WorkerPool, WorkersEndWhenTheirParentIsKilled) {
  BecomeSubreaper();  // the orphaned workers come here, to be seen and reaped
  int started[2];
  ASSERT_EQ(pipe(started), 0);
  const pid_t parent = fork();
  ASSERT_GE(parent, 0);
  if (parent == 0) {
    close(started[0]);
    (void)RunInWorkers(
        4, 2,
        [&](size_t) {
          const pid_t self = getpid();
          (void)!write(started[1], &self, sizeof(self));
          for (;;) pause();
          return PropertyOutcome();
        },
        [](size_t, const PropertyOutcome&) {});
    _exit(0);
  }
  close(started[1]);
  KillAtScopeEnd parent_killed(parent);
  std::vector<pid_t> workers(2);
  for (pid_t& w : workers) ASSERT_EQ(read(started[0], &w, sizeof(w)), ssize_t{sizeof(w)});
  close(started[0]);
  ASSERT_EQ(kill(parent, SIGKILL), 0);
  ASSERT_EQ(waitpid(parent, nullptr, 0), parent);
  std::vector<pid_t> running = workers;
  for (int i = 0; i < 250 && !running.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ReapEndedChildren();
    running.clear();
    for (pid_t w : workers) {
      if (kill(w, 0) == 0) running.push_back(w);
    }
  }
  EXPECT_TRUE(running.empty()) << running.size() << " workers outlived their parent by 5 s";
  for (pid_t w : running) kill(w, SIGKILL);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ReapEndedChildren();
}

}  // namespace
}  // namespace ckptspec
