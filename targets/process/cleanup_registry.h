// The process-wide record of what the adapter harness has running and on disk, so that nothing it
// made outlives ckptspec: the process groups of live adapter ranks and the harness's temporary
// directories.
//
// Contracts:
//  - Registration is thread-safe. Subprocess registers each rank's process group for as long as
//    it lives (starting it under the registry's lock, so a signal never finds a process started
//    but not yet recorded); the adapter targets register their temporary directories. The record
//    is the process's own: a process forked from one that registered (a worker of `ckptspec run
//    --jobs`) starts with an empty record.
//  - Every registered group is also watched by the process's watchdog (rank_watchdog.h), which
//    kills the groups still registered when the process ends in a way no code of its own sees
//    (SIGKILL, a crash). A group is registered only once the watchdog runs and has heard of it;
//    one that cannot be watched is killed, reaped, and its spawn fails.
//  - InstallTerminationCleanup() must be called by main() before any thread is started: it blocks
//    SIGINT, SIGTERM, SIGHUP and SIGQUIT in the calling thread (so in every thread started later)
//    and starts a thread that waits for them. On one, that thread kills every registered process
//    group and every child (leftovers, the watchdog, workers), reaps them, removes every
//    registered directory (never following a symbolic link), and then ends the process by the
//    same signal, with its default action. Registration blocks from then on. Processes started by
//    Subprocess get the default signal mask back before exec; a process forked without exec
//    calls RestoreTerminationSignals().
//  - FindLeftoverChildren() lists the children of this process (a child subreaper: the orphans of
//    adapter processes are reparented to it) that are still running and are not a rank process
//    (the leader of a registered process group): what adapters left behind, including an orphan
//    still in a rank's group. Zombies among them are reaped on the way and not listed.
//    Attribution is by elimination: with several adapter groups alive at once, a leftover is
//    reported by the group that is reset or shut down next.
#pragma once

#include <spawn.h>
#include <sys/types.h>

#include <string>
#include <vector>

namespace ckptspec {

// Starts `path` (posix_spawn(3): the child shares the parent's memory until it execs, so no page
// tables are copied) in a process group of its own (POSIX_SPAWN_SETPGROUP is added to `attr`'s
// flags), under the registry's lock, and records the pid as the leader of that group before the
// lock is released. Returns posix_spawn's value (0, or the error number, exec's failure
// included); *pid is the child's on success.
int SpawnRegisteredGroup(const char* path, const posix_spawn_file_actions_t* actions,
                         posix_spawnattr_t* attr, char* const argv[], char* const envp[],
                         pid_t* pid);
// Forgets a process group once its members are all killed and reaped.
void UnregisterProcessGroup(pid_t pgid);

void RegisterTempDir(const std::string& path);
void UnregisterTempDir(const std::string& path);

void InstallTerminationCleanup();

// In a process forked (not exec'd) from one that called InstallTerminationCleanup, whose thread
// waiting for the termination signals the fork did not copy: empties the signal mask and gives
// the termination signals their default action, so that they end the process. Async-signal-safe.
void RestoreTerminationSignals();

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
