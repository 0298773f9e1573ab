// The watchdog that ends adapter rank groups when the process that started them ends, however it
// ends: SIGKILL and a crash included, which leave that process no moment to clean up
// (cleanup_registry.h cleans up on the signals that can be caught).
//
// How: the first time a process registers a rank's process group, it forks a watchdog process and
// keeps one end of a socket pair to it. Only that process holds the end: it is close-on-exec (no
// rank inherits it) and closed in every child forked afterwards (a pthread_atfork handler). The
// process sends the watchdog each group it starts and each group it has killed; when the
// watchdog's end reads end of file, every holder of the other end has ended (the kernel closes a
// dead process's descriptors, whatever killed it), and the watchdog sends SIGKILL to every group
// still on its list, then exits. A descriptor belongs to the process, not to a thread, so which
// thread started the watchdog or a rank does not matter (unlike PR_SET_PDEATHSIG, which fires when
// the forking thread ends).
//
// Contracts:
//  - The caller holds the cleanup registry's lock (the functions are not thread-safe otherwise).
//  - EnsureWatchdog(groups) makes sure this process has a live watchdog: when it has none (none
//    yet, a fork of the process that started it, or the one it had stopped answering: killed,
//    stopped, or too slow to take a message within a second), it starts a fresh one (killing the
//    old one first, so that it cannot act) and sends it `groups`. 0, or an error number
//    (socketpair, fork, or the new one's failure to take the list).
//  - WatchGroup(pgid) adds a group, UnwatchGroup(pgid) removes one; WatchGroup returns 0 or an
//    error number (then call EnsureWatchdog with every group, this one included, and try again).
//    Unwatch a group once it has been sent SIGKILL (its members are dying and cannot start new
//    ones), before reaping it, so that the watchdog never holds the number of a group that ended.
//  - The watchdog is in a process group of its own (a signal to ckptspec's group, a Ctrl-C or a
//    kill of that group, does not reach it), ignores SIGINT, SIGQUIT, SIGHUP, SIGTERM and
//    SIGPIPE, and holds no descriptor but its end of the pair (stdin, stdout and stderr are
//    /dev/null). It is a child of this process: WatchdogPid() names it so that it is not taken for
//    an adapter's leftover.
//  - Limits: a process that left its rank's group (setsid, setpgid: a daemon) is not reached; nor is
//    a group started in the instant between the spawn and its message when the process is killed
//    right then; the watchdog itself can be killed with SIGKILL by anyone with the user's rights
//    (the groups are unwatched until the next EnsureWatchdog); at most kMaxWatchedGroups groups
//    at once (a spawn beyond is refused by the registry).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <set>

namespace ckptspec {

inline constexpr size_t kMaxWatchedGroups = size_t{1} << 16;

int EnsureWatchdog(const std::set<pid_t>& groups);
int WatchGroup(pid_t pgid);
void UnwatchGroup(pid_t pgid);
// -1 when this process has none.
pid_t WatchdogPid();

}  // namespace ckptspec
