// Two pieces of work at once, with their exceptions kept: the readers of untrusted input split
// their work over two threads, and an allocation that fails in either must reach the caller's
// handler as std::bad_alloc (a named error), not end the process (std::terminate, which an
// exception leaving a thread's function calls).
#pragma once

#include <functional>

namespace ckptspec {

// Runs `beside` on a thread of its own while the calling thread runs `here`, and returns when both
// are done. An exception thrown by either is rethrown here once both have finished: `here`'s
// when both throw. When no thread can be started, `beside` runs first, on this thread.
void RunBeside(const std::function<void()>& beside, const std::function<void()>& here);

}  // namespace ckptspec
