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
Status cudaDirect(const Batch&,
  const LagWindow&,
  const T*,
  const T*,
  T*,
  const DirectOptions&,
  double*,
  bool,
  DirectKernel*)
{
  return { ErrorCode::BackendUnavailable, "CorrelationCore was built without CUDA" };
}
template<typename T>
Status cudaFft(const Batch&, const LagWindow&, const T*, const T*, T*, bool, bool, double*, bool)
{
  return { ErrorCode::BackendUnavailable, "CorrelationCore was built without CUDA" };
}

template Status cudaDirect<float>(const Batch&,
  const LagWindow&,
  const float*,
  const float*,
  float*,
  const DirectOptions&,
  double*,
  bool,
  DirectKernel*);
template Status cudaDirect<double>(const Batch&,
  const LagWindow&,
  const double*,
  const double*,
  double*,
  const DirectOptions&,
  double*,
  bool,
  DirectKernel*);
template Status cudaFft<float>(const Batch&,
  const LagWindow&,
  const float*,
  const float*,
  float*,
  bool,
  bool,
  double*,
  bool);
template Status cudaFft<double>(const Batch&,
  const LagWindow&,
  const double*,
  const double*,
  double*,
  bool,
  bool,
  double*,
  bool);

} // namespace detail
} // namespace correlation
