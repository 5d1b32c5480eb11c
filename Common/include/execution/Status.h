/**
 * @file Status.h
 * @brief The one error type of the cores: an ErrorCode and a message meant for users.
 *
 * Every fallible call of SparseGridCore, CorrelationCore, StencilCore and MeshLoopCore returns a
 * Status; nothing prints, throws or exits. The codes are shared by all cores: a core uses the
 * ones that can happen in it.
 */
#ifndef EXECUTION_STATUS_H
#define EXECUTION_STATUS_H

#include <cstddef>
#include <string>
#include <utility>

namespace execution
{

enum class ErrorCode
{
  None = 0,
  InvalidArgument,    ///< a parameter is out of range or inconsistent
  TooLarge,           ///< the request would need more memory than allowed or available
  TooSmall,           ///< the input is too small for the operation (e.g. a stencil's reach)
  NonFinite,          ///< NaN or Inf found in input data
  NotColumnar,        ///< a mesh is not made of columns of layers where columns are required
  Aborted,            ///< the caller's abort callback asked to stop
  BackendUnavailable, ///< the requested backend or algorithm cannot run here
  OutOfDeviceMemory,  ///< the GPU ran out of memory
  Internal            ///< a bug, or an unexpected failure of a system, library or CUDA call
};

/// The code in words, e.g. "invalid argument" (what users read in error messages).
const char* toString(ErrorCode code);

/// names[value] for an enumeration numbered 0, 1, ... in the order of `names`; "unknown" otherwise.
template<typename Enum, std::size_t N>
const char* nameOf(Enum value, const char* const (&names)[N])
{
  const auto index = static_cast<std::size_t>(value);
  return index < N ? names[index] : "unknown";
}

/// Result of every fallible call: ok(), or a code with a message. Cheap when ok.
class [[nodiscard]] Status
{
public:
  Status() = default;
  Status(ErrorCode code, std::string message)
    : Code(code)
    , Message(std::move(message))
  {
  }
  static Status Ok() { return Status(); }
  bool ok() const { return this->Code == ErrorCode::None; }
  explicit operator bool() const { return this->ok(); }
  ErrorCode code() const { return this->Code; }
  const std::string& message() const { return this->Message; }
  /// "code in words: message" (or "ok"), for logs, exceptions and error messages.
  std::string toString() const;

private:
  ErrorCode Code = ErrorCode::None;
  std::string Message;
};

} // namespace execution

#endif
