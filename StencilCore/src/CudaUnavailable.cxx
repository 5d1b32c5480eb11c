// Built without CUDA: every CUDA entry point reports BackendUnavailable, so callers fall back.
#include "Internal.h"

namespace stencil
{
namespace detail
{
namespace
{
const char* const NotBuilt = "the library was built without the CUDA backend";
}

std::string cudaDeviceNameImpl()
{
  return std::string();
}

template<typename T>
Status cudaImage(const ImageArgs<T>&, std::size_t, const ExecutionOptions&, ExecutionReport&)
{
  return Status(ErrorCode::BackendUnavailable, NotBuilt);
}

template<typename T>
Status cudaColumns(const PreparedTable<T>&,
  const ColumnArgs<T>&,
  const ExecutionOptions&,
  ExecutionReport&)
{
  return Status(ErrorCode::BackendUnavailable, NotBuilt);
}

Status cudaBandwidth(std::size_t, int, double&, double*)
{
  return Status(ErrorCode::BackendUnavailable, NotBuilt);
}

STENCIL_CUDA_ENTRY_POINTS(float);
STENCIL_CUDA_ENTRY_POINTS(double);
} // namespace detail
} // namespace stencil
