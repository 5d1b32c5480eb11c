// The CUDA entry points of a core built without CUDA: they say so, and correlate() falls back.
#include "Internal.h"

namespace correlation
{

bool cudaCompiled()
{
  return false;
}

namespace detail
{

template<typename T>
Status cudaDirect(const Maps<T>&, const DirectOptions&, double*, bool, DirectKernel*)
{
  return { ErrorCode::BackendUnavailable, "CorrelationCore was built without CUDA" };
}
template<typename T>
Status cudaFft(const Maps<T>&, bool, bool, double*, bool)
{
  return { ErrorCode::BackendUnavailable, "CorrelationCore was built without CUDA" };
}

template Status cudaDirect(const Maps<float>&, const DirectOptions&, double*, bool, DirectKernel*);
template Status cudaDirect(const Maps<double>&, const DirectOptions&, double*, bool, DirectKernel*);
template Status cudaFft(const Maps<float>&, bool, bool, double*, bool);
template Status cudaFft(const Maps<double>&, bool, bool, double*, bool);

} // namespace detail
} // namespace correlation
