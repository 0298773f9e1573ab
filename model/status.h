// Status: the result of an operation that can fail, in the style of LevelDB.
//
// Contract: functions that can fail on bad input return a Status (and write results through out
// parameters); they never assert and never throw. Status is [[nodiscard]] (and the build makes an
// ignored result an error): a caller checks it, returns it, or says IgnoreError(). A non-OK Status carries a code and a message
// that names what is wrong (the field and the value, the file, the key, the ranks).
#pragma once

#include <string>
#include <utility>

namespace ckptspec {

class [[nodiscard]] Status {
 public:
  enum class Code {
    kOk = 0,
    kInvalidArgument,     // the caller's input is malformed or inconsistent
    kNotFound,            // a named thing (file, key, rank) does not exist
    kCorruption,          // stored data fails an integrity check
    kIOError,             // the environment failed an operation
    kNotSupported,        // valid input this implementation does not handle
    kFailedPrecondition,  // the operation is not allowed in the current state
    kOutOfMemory,         // the process could not allocate what the operation needs (not a
                          // fault of the input: commands report it as an error, exit code 2)
  };

  Status() = default;
  static Status OK() { return Status(); }
  static Status InvalidArgument(std::string msg) {
    return Status(Code::kInvalidArgument, std::move(msg));
  }
  static Status NotFound(std::string msg) { return Status(Code::kNotFound, std::move(msg)); }
  static Status Corruption(std::string msg) { return Status(Code::kCorruption, std::move(msg)); }
  static Status IOError(std::string msg) { return Status(Code::kIOError, std::move(msg)); }
  static Status NotSupported(std::string msg) {
    return Status(Code::kNotSupported, std::move(msg));
  }
  static Status FailedPrecondition(std::string msg) {
    return Status(Code::kFailedPrecondition, std::move(msg));
  }
  static Status OutOfMemory(std::string msg) { return Status(Code::kOutOfMemory, std::move(msg)); }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }

  // "OK", or the code's name, a colon and the message: "InvalidArgument: tp=3 does not divide ...".
  std::string ToString() const;

  // Returns a copy whose message is prefixed with `context` and ": ".
  Status WithContext(const std::string& context) const;

  // Drops the Status on purpose: for best-effort steps whose failure has nowhere to go (cleanup
  // after an error already being returned). Every use says why in a comment beside it.
  void IgnoreError() const {}

 private:
  Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}
  Code code_ = Code::kOk;
  std::string message_;
};

const char* StatusCodeName(Status::Code code);

}  // namespace ckptspec

// Returns early from the enclosing function when `expr` yields a non-OK Status.
#define CKPTSPEC_RETURN_IF_ERROR(expr)                   \
  do {                                                   \
    ::ckptspec::Status ckptspec_status_ = (expr);        \
    if (!ckptspec_status_.ok()) return ckptspec_status_; \
  } while (0)
