// The process tree below a process, read from /proc (Linux): its children, and how much memory it
// and what it started hold. The harness finds what adapters left behind from the first
// (cleanup_registry.h) and bounds what idle ranks keep in memory with the second
// (rank_group_pool.h).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ckptspec {

// The whole of a /proc file (stat gives such files no size, so they are read to the end), or
// false when it cannot be opened or read.
bool ReadProcFile(const std::string& path, std::string* out);

// What the harness reads of a process in /proc/PID/stat.
struct ProcStat {
  std::string name;  // the command name (it may hold spaces and parentheses)
  char state = 0;    // 'R', 'S', 'Z' (a zombie), ...
  pid_t ppid = 0;
  pid_t pgrp = 0;
  // When it started, in clock ticks after boot: with the pid, it names one process (a pid used
  // again names a process that started later).
  uint64_t start_time = 0;
};
// False when process `pid` is gone, cannot be read, or there is no /proc.
bool ReadProcStat(pid_t pid, ProcStat* out);

// The children of process `pid` (of each of its threads: a child belongs to the thread that
// started it, an orphan to the thread that adopted it), from /proc/PID/task/TID/children. A
// process that is gone has none. nullopt when the kernel does not list children
// (CONFIG_PROC_CHILDREN) or there is no /proc.
std::optional<std::vector<pid_t>> ChildPids(pid_t pid);

// The memory that process `pid` and every process below it hold: its children (ChildPids),
// theirs, and so on (an adapter rank is often a shell that started the adapter, which may fork
// workers of its own). Each process counts its resident anonymous and shared-memory pages
// (RssAnon + RssShmem of /proc/PID/status: what its end gives back; pages of files it maps, its
// libraries among them, are left out, as the page cache keeps them), or its whole resident set
// (/proc/PID/statm) on kernels without those lines. Pages a fork shares copy-on-write count once
// per process, so the sum may exceed what the processes free, never fall short of it. Cheap: no
// page table is walked. A process that ends while it is read is left out; at most
// kMaxProcessesInTree processes are read. nullopt when `pid` cannot be read (it is gone, or there
// is no /proc) or the kernel does not list children (CONFIG_PROC_CHILDREN).
std::optional<uint64_t> ResidentTreeBytes(pid_t pid);

inline constexpr int kMaxProcessesInTree = 4096;

}  // namespace ckptspec
