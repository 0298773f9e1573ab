// ReadPickle: a reader of the pickle subset that PyTorch checkpoints use, which never runs code.
//
// Accepted: protocols 0 to 5 as Python writes them for data: frames, the memo (PUT/GET and
// MEMOIZE, with CPython's keys: pickle_memo.h), MARK, None/bool/int/float, str, bytes and
// bytearray, tuples, lists, dicts, sets and frozensets (dict keys and set elements as CPython
// holds them: pickle_keys.h), GLOBAL and STACK_GLOBAL of the whitelisted globals
// (pickle_globals.h), REDUCE/NEWOBJ/NEWOBJ_EX/BUILD on them with the meaning the whitelist gives,
// and BINPERSID/PERSID (torch.save's storage references), kept as data. Where CPython's unpickler,
// given classes that behave as the whitelist says, reads a pickle, the reader builds what it
// builds or refuses it as outside the subset (pickle_reader_cpython_test.cc checks it); where
// CPython refuses one, so does the reader, but for memory (a memo key of billions costs CPython
// gigabytes and the reader nothing).
// Refused, each a Status that names the opcode or global and its byte offset. Corruption, where
// CPython refuses too: a byte that is no opcode, a truncated opcode, input without STOP, a stack
// underflow (a MARK is no value), a GET of a memo key never stored, a negative or malformed memo
// key, a str that is not UTF-8, a dict key or set element that is not hashable, an operation on a
// value of the wrong kind. NotSupported, valid pickles outside the subset: any other global
// ("pickle byte 120: global 'os.system' is not allowed"), out-of-band buffers, the extension
// registry, INST/OBJ and the text forms of LONG/FLOAT/STRING/UNICODE, ints beyond 64 bits, INT
// text other than plain decimal, a Python 2 str beyond ASCII, an opcode that runs past the end of
// its frame (CPython's result depends on the file it reads), BUILD on anything but an object,
// item assignment on a list or bytearray, a dict key too costly to compare.
//
// Cost: time linear in the input (two passes: one finds the memo slots that are read back, one
// builds); memory that of the values built (pickle_value.h: nothing is set aside for the input's
// size, so a large pickle of few values costs little beyond its bytes), and at most a small
// multiple of the input, whatever the input: no opcode copies a container, and nothing is
// expanded.
#pragma once

#include <string>

#include "formats/pickle_value.h"
#include "model/status.h"

namespace ckptspec {

struct PickleOptions {
  // When set, an unknown global becomes an opaque class (GlobalRole::kOpaque) whose instances
  // record their arguments and state as data, instead of an error: for listing what a file holds.
  bool permissive = false;
};

// Reads `bytes` into `*doc`, which keeps them (its strings are views into them). Errors:
// Corruption for malformed input, NotSupported for valid pickles outside the subset (a global not
// whitelisted, an opcode not handled); each message starts "pickle byte N: ".
Status ReadPickle(std::string bytes, const PickleOptions& options, PickleDocument* doc);

}  // namespace ckptspec
