// Built when no CUDA compiler was found: the backend reports itself unusable, so every call runs
// on the CPU (and strict calls fail with BackendUnavailable).
#include "Internal.h"

namespace meshloop
{
namespace detail
{
namespace cuda
{

void release(void*) {}

template<typename T>
Status run(Operation,
  const Mapping&,
  const Permutation*,
  const Plan&,
  const std::vector<std::int32_t>&,
  const T*,
  const T*,
  int,
  T*,
  const ExecutionOptions&,
  DeviceCache&,
  double*)
{
  return Status(ErrorCode::BackendUnavailable, "MeshLoopCore was built without CUDA");
}

template Status run<float>(Operation,
  const Mapping&,
  const Permutation*,
  const Plan&,
  const std::vector<std::int32_t>&,
  const float*,
  const float*,
  int,
  float*,
  const ExecutionOptions&,
  DeviceCache&,
  double*);
template Status run<double>(Operation,
  const Mapping&,
  const Permutation*,
  const Plan&,
  const std::vector<std::int32_t>&,
  const double*,
  const double*,
  int,
  double*,
  const ExecutionOptions&,
  DeviceCache&,
  double*);

} // namespace cuda
} // namespace detail
} // namespace meshloop
