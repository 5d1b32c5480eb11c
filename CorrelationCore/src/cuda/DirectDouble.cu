// The direct kernels for double (one translation unit per type: they compile in parallel).
#include "Direct.cuh"

namespace correlation
{
namespace detail
{

template<typename T>
Status cudaDirect(const Batch& batch,
  const LagWindow& window,
  const T* lefts,
  const T* rights,
  T* out,
  const DirectOptions& direct,
  double* kernelSeconds,
  bool deviceOnlyTiming,
  DirectKernel* kernelUsed)
{
  return cudaDirectImpl(
    batch, window, lefts, rights, out, direct, kernelSeconds, deviceOnlyTiming, kernelUsed);
}

template Status cudaDirect<double>(const Batch&,
  const LagWindow&,
  const double*,
  const double*,
  double*,
  const DirectOptions&,
  double*,
  bool,
  DirectKernel*);

} // namespace detail
} // namespace correlation
