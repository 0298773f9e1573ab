// Running out of memory, as every verb reports it: a named error and exit code 2, never an abort.
//
// A failed allocation is std::bad_alloc in the ckptspec binary (cli/throwing_operator_new.cc makes
// it so under mimalloc too). The readers of untrusted input catch it where they can name the
// input ("reading the index of iter_0000010: out of memory"); main catches what is left at the
// top of each verb and prints OutOfMemoryMessage.
#pragma once

#include <string>

namespace ckptspec {

// "ckptspec <verb>: out of memory" and, when the process's address space is limited
// (RLIMIT_AS, `ulimit -v`), " (its address space is limited to <N> MiB)".
std::string OutOfMemoryMessage(const std::string& verb);

}  // namespace ckptspec
