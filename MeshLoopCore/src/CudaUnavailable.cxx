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
Status run(const Loop<T>&,
  const Permutation*,
  const std::vector<std::int32_t>&,
  DeviceCache&,
  double*)
{
  return Status(ErrorCode::BackendUnavailable, "MeshLoopCore was built without CUDA");
}

MESHLOOP_CUDA_RUN(float);
MESHLOOP_CUDA_RUN(double);

} // namespace cuda
} // namespace detail
} // namespace meshloop
