// The process-wide record of what the adapter harness has running and on disk, so that nothing it
// made outlives ckptspec: the process groups of live adapter ranks and the harness's temporary
// directories.
//
// Contracts:
//  - Registration is thread-safe. Subprocess registers each rank's process group for as long as
//    it lives (forking under the registry's lock, so a signal never finds a process started but
//    not yet recorded); the adapter targets register their temporary directories.
//  - InstallTerminationCleanup() must be called by main() before any thread is started: it blocks
//    SIGINT, SIGTERM and SIGHUP in the calling thread (so in every thread started later) and
//    starts a thread that waits for them. On one, that thread kills every registered process
//    group and every leftover child (below), reaps them, removes every registered directory
//    (never following a symbolic link), and then ends the process by the same signal, with its
//    default action. Registration blocks from then on. Processes started by Subprocess get the
//    default signal mask back before exec.
//  - FindLeftoverChildren() lists the children of this process (a child subreaper: the orphans of
//    adapter processes are reparented to it) that are still running and are not a rank process
//    (the leader of a registered process group): what adapters left behind, including an orphan
//    still in a rank's group. Zombies among them are reaped on the way and not listed.
//    Attribution is by elimination: with several adapter groups alive at once, a leftover is
//    reported by the group that is reset or shut down next.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace ckptspec {

// Forks a process (fork(2)) under the registry's lock and records `pid` as the leader of a
// process group of its own before the lock is released. Returns fork's value; the child must
// only call async-signal-safe functions (it is expected to setpgid(0, 0) and exec).
pid_t ForkRegisteredGroup();
// Forgets a process group once its members are all killed and reaped.
void UnregisterProcessGroup(pid_t pgid);

void RegisterTempDir(const std::string& path);
void UnregisterTempDir(const std::string& path);

void InstallTerminationCleanup();

struct LeftoverProcess {
  pid_t pid = 0;
  std::string name;  // the command name (/proc/PID/comm)
};
std::vector<LeftoverProcess> FindLeftoverChildren();
// SIGKILL to each (and to its process group when it leads one), then reaps it.
void KillLeftovers(const std::vector<LeftoverProcess>& leftovers);
// "2 processes: 4242 (sleep), 4250 (python3)".
std::string DescribeLeftovers(const std::vector<LeftoverProcess>& leftovers);

}  // namespace ckptspec
