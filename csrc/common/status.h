// Status: the error value every core function returns; exceptions exist only at the Python edge.
#pragma once

#include <string>
#include <utility>

namespace lightcc {

// Codes map onto Python exceptions in bindings/: kInvalidArgument -> ValueError,
// kPreconditionFailed -> ValueError (e.g. "not initialised"), everything else ->
// LightCCInternalError (a RuntimeError).
enum class StatusCode : int {
  kOk = 0,
  kInvalidArgument = 1,    // caller's fault: bad dtype, non-contiguous, duplicate name
  kPreconditionFailed = 2, // wrong state: not initialised, shut down
  kMismatch = 3,           // ranks disagreed on an op (dtype/shape/op/root/scale)
  kPeerFailure = 4,        // a peer died, closed, or sent something malformed
  kTimeout = 5,            // no progress within LIGHTCC_TIMEOUT
  kSystemError = 6,        // a syscall failed
  kAborted = 7,            // work cancelled by shutdown
  kInternal = 8,           // a bug in lightcc
  kCancelled = 9,          // the waiting caller was interrupted (a signal for the Python edge)
};

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status OK() { return Status(); }
  static Status InvalidArgument(std::string m) { return {StatusCode::kInvalidArgument, std::move(m)}; }
  static Status PreconditionFailed(std::string m) { return {StatusCode::kPreconditionFailed, std::move(m)}; }
  static Status Mismatch(std::string m) { return {StatusCode::kMismatch, std::move(m)}; }
  static Status PeerFailure(std::string m) { return {StatusCode::kPeerFailure, std::move(m)}; }
  static Status Timeout(std::string m) { return {StatusCode::kTimeout, std::move(m)}; }
  static Status SystemError(std::string m) { return {StatusCode::kSystemError, std::move(m)}; }
  static Status Aborted(std::string m) { return {StatusCode::kAborted, std::move(m)}; }
  static Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }
  static Status Cancelled(std::string m) { return {StatusCode::kCancelled, std::move(m)}; }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // Prefixes context ("rank 1, tensor 'grad.fc1': ") while keeping the code.
  Status withContext(const std::string& context) const {
    if (ok()) return *this;
    return Status(code_, context + ": " + message_);
  }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

// Returns early from the enclosing function when `expr` yields a non-OK Status.
#define LIGHTCC_RETURN_IF_ERROR(expr)          \
  do {                                         \
    ::lightcc::Status _lcc_st = (expr);        \
    if (!_lcc_st.ok()) return _lcc_st;         \
  } while (0)

// Builds "syscall failed: strerror(errno)" messages in one place.
std::string errnoMessage(const std::string& what, int err);

}  // namespace lightcc
