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

template Status cudaImage<float>(const ImageArgs<float>&,
  std::size_t,
  const ExecutionOptions&,
  ExecutionReport&);
template Status cudaImage<double>(const ImageArgs<double>&,
  std::size_t,
  const ExecutionOptions&,
  ExecutionReport&);
template Status cudaColumns<float>(const PreparedTable<float>&,
  const ColumnArgs<float>&,
  const ExecutionOptions&,
  ExecutionReport&);
template Status cudaColumns<double>(const PreparedTable<double>&,
  const ColumnArgs<double>&,
  const ExecutionOptions&,
  ExecutionReport&);
} // namespace detail
} // namespace stencil
