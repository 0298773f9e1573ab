#include "cli/worker_pool.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <new>
#include <string>

#include "cli/outcome_wire.h"
#include "targets/process/cleanup_registry.h"

namespace ckptspec {
namespace {

constexpr uint64_t kNoMoreTasks = UINT64_MAX;

bool WriteAll(int fd, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

// False at end of file or on an error before n bytes.
bool ReadAll(int fd, void* data, size_t n) {
  char* p = static_cast<char*>(data);
  while (n > 0) {
    const ssize_t r = read(fd, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

struct Worker {
  pid_t pid = -1;
  int tasks = -1;    // the parent writes task numbers here
  int results = -1;  // and reads outcomes here
  bool busy = false;
  size_t task = 0;  // when busy
};

// A worker's exit code when its task ran out of memory.
constexpr int kWorkerOutOfMemory = 99;

// The worker's loop: read a task number, run it, write its outcome as (length, bytes). Nothing
// may unwind out of it: the fork copied the parent's stack, which is not the worker's to return to.
[[noreturn]] void WorkerMain(int tasks, int results,
                             const std::function<PropertyOutcome(size_t)>& run) {
  uint64_t task;
  while (ReadAll(tasks, &task, sizeof(task)) && task != kNoMoreTasks) {
    std::string bytes;
    try {
      bytes = EncodeOutcome(run(static_cast<size_t>(task)));
    } catch (const std::bad_alloc&) {
      _exit(kWorkerOutOfMemory);  // the parent names it (HowItEnded)
    }
    const uint64_t size = bytes.size();
    if (!WriteAll(results, &size, sizeof(size)) || !WriteAll(results, bytes.data(), bytes.size())) {
      _exit(1);
    }
  }
  _exit(0);
}

// Forks a worker; its pipes' other ends (and every other worker's) are closed in it. False when
// a pipe or the fork fails.
bool StartWorker(const std::vector<Worker>& others,
                 const std::function<PropertyOutcome(size_t)>& run, Worker* out) {
  const pid_t parent = getpid();
  int to_worker[2], from_worker[2];
  if (pipe2(to_worker, O_CLOEXEC) != 0) return false;
  if (pipe2(from_worker, O_CLOEXEC) != 0) {
    close(to_worker[0]);
    close(to_worker[1]);
    return false;
  }
  const pid_t pid = fork();
  if (pid < 0) {
    for (int fd : {to_worker[0], to_worker[1], from_worker[0], from_worker[1]}) close(fd);
    return false;
  }
  if (pid == 0) {
    // The worker dies with its parent (the kernel sends SIGKILL when the thread that forked it
    // ends: the caller's, which stays in RunInWorkers until every worker is reaped). The parent
    // may have ended before the signal was asked for: then nobody waits for this worker.
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent) _exit(1);
    RestoreTerminationSignals();  // blocked in the parent for a thread the fork did not copy
    close(to_worker[1]);
    close(from_worker[0]);
    for (const Worker& w : others) {
      if (w.tasks >= 0) close(w.tasks);
      if (w.results >= 0) close(w.results);
    }
    WorkerMain(to_worker[0], from_worker[1], run);
  }
  close(to_worker[0]);
  close(from_worker[1]);
  out->pid = pid;
  out->tasks = to_worker[1];
  out->results = from_worker[0];
  out->busy = false;
  return true;
}

// Closes the worker's pipes (a live worker then reads the end of its tasks and exits) and waits
// for it; its wait status, or -1 when it could not be waited for.
int StopWorker(Worker* w) {
  if (w->tasks >= 0) close(w->tasks);
  if (w->results >= 0) close(w->results);
  w->tasks = w->results = -1;
  int status = -1;
  if (w->pid > 0) {
    pid_t r;
    while ((r = waitpid(w->pid, &status, 0)) < 0 && errno == EINTR) {
    }
    if (r < 0) status = -1;
  }
  w->pid = -1;
  return status;
}

// How a worker that stopped answering ended, for its task's error outcome.
std::string HowItEnded(Worker* w) {
  const int status = StopWorker(w);
  if (status == -1) return "the worker process could not be waited for";
  if (WIFSIGNALED(status)) {
    return std::string("the worker process running it died of signal ") +
           std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) + ")";
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == kWorkerOutOfMemory) {
    return "the worker process running it ran out of memory";
  }
  if (WIFEXITED(status)) {
    return "the worker process running it exited with code " + std::to_string(WEXITSTATUS(status)) +
           " without an outcome";
  }
  return "the worker process running it stopped";
}

}  // namespace

std::vector<PropertyOutcome> RunInWorkers(
    size_t count, int jobs, const std::function<PropertyOutcome(size_t)>& run,
    const std::function<void(size_t, const PropertyOutcome&)>& done) {
  std::vector<PropertyOutcome> outcomes(count);
  if (count == 0) return outcomes;
  // A worker that died must not take the caller with it through a write to its pipe.
  struct sigaction ignore {
  }, previous{};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &ignore, &previous);

  size_t next = 0, finished = 0;
  std::vector<Worker> workers;
  auto fail = [&](size_t task, const std::string& why) {
    PropertyOutcome& o = outcomes[task];
    o.verdict = Verdict::kError;
    o.message = why;
    ++finished;
    done(task, o);
  };
  // Hands `w` its next task, or tells it there is none; false when the worker is gone.
  auto hand_out = [&](Worker* w) {
    const uint64_t task = next < count ? next : kNoMoreTasks;
    if (!WriteAll(w->tasks, &task, sizeof(task))) return false;
    if (task != kNoMoreTasks) {
      w->busy = true;
      w->task = next++;
    }
    return true;
  };
  const size_t wanted = std::min<size_t>(count, static_cast<size_t>(std::max(jobs, 1)));
  for (size_t i = 0; i < wanted; ++i) {
    Worker w;
    if (!StartWorker(workers, run, &w)) break;
    workers.push_back(w);
    hand_out(&workers.back());
  }
  while (finished < count) {
    std::vector<pollfd> fds;
    std::vector<size_t> which;
    for (size_t i = 0; i < workers.size(); ++i) {
      if (workers[i].busy) {
        fds.push_back(pollfd{workers[i].results, POLLIN, 0});
        which.push_back(i);
      }
    }
    if (fds.empty()) {
      // No worker could be started (or every one died idle): what is left runs here, one at a
      // time -- the same outcomes, only slower.
      while (next < count) {
        const size_t task = next++;
        outcomes[task] = run(task);
        ++finished;
        done(task, outcomes[task]);
      }
      break;
    }
    if (poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (size_t k = 0; k < fds.size(); ++k) {
      if (fds[k].revents == 0) continue;
      Worker& w = workers[which[k]];
      uint64_t size = 0;
      std::string bytes;
      bool ok = ReadAll(w.results, &size, sizeof(size)) && size < (uint64_t{1} << 32);
      if (ok) {
        bytes.resize(static_cast<size_t>(size));
        ok = ReadAll(w.results, bytes.data(), bytes.size());
      }
      PropertyOutcome outcome;
      Status decoded = ok ? DecodeOutcome(bytes, &outcome) : Status::OK();
      const size_t task = w.task;
      w.busy = false;
      if (!ok || !decoded.ok()) {
        fail(task, ok ? decoded.message() : HowItEnded(&w));
        if (w.pid > 0) (void)StopWorker(&w);  // its outcome did not decode
        Worker fresh;                         // the tasks left go on in a fresh worker
        if (next < count && StartWorker(workers, run, &fresh)) {
          w = fresh;
          hand_out(&w);
        }
        continue;
      }
      outcomes[task] = std::move(outcome);
      ++finished;
      done(task, outcomes[task]);
      hand_out(&w);
    }
  }
  for (Worker& w : workers) {
    if (w.pid > 0) {
      if (w.tasks >= 0 && !w.busy) {
        const uint64_t stop = kNoMoreTasks;
        WriteAll(w.tasks, &stop, sizeof(stop));
      }
      (void)StopWorker(&w);
    }
  }
  sigaction(SIGPIPE, &previous, nullptr);
  return outcomes;
}

}  // namespace ckptspec
