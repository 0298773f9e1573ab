// DumpPickleValue: a value of a PickleDocument as canonical text, which a Python program can print
// for the value Python's own unpickler builds (formats/cpython_pickle_oracle.py does, for the
// differential test of the reader against CPython): equal text, equal values.
//
//   None, True, False, 12, -3          as Python writes them
//   float:3ff0000000000000             a float by its IEEE-754 bits
//   'text', b'bytes', bytearray(b'x')  str by its UTF-8 bytes; printable ASCII but ' and \ as is,
//                                      every other byte \xHH
//   (), (a,), (a, b)   [a, b]   {k: v, k2: v2}
//   set(), {a, b}   frozenset(), frozenset({a, b})   elements in the order of their text
//   module.Class(field=v, ..., 'extra'=v)   an object: every declared field (None when unset),
//                                      then its extra attributes in the order they were set
//   global:module.name                 a class, function or constant of the whitelist
//   persid(v)                          what BINPERSID received
// A list, dict, set, bytearray, persistent id or object (but an enum member) met more than once
// (shared, or in a cycle) is "#N=" followed by its text where first met and "#N" after, N
// counting from 1 in the order they are first met. A value nested deeper than 64 levels is "...";
// the text stops past 1 MiB (the memo can share a value into an exponentially long text).
#pragma once

#include <string>

#include "formats/pickle_value.h"

namespace ckptspec {

std::string DumpPickleValue(const PickleDocument& doc, PyValue value);

}  // namespace ckptspec
