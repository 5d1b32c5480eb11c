// Error metrics and input checks.
#include "Internal.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace sparsegrid
{

template<typename R, typename A>
ErrorMetrics computeErrorMetrics(const R* reference,
  const A* approx,
  std::size_t n,
  std::size_t referenceStride)
{
  ErrorMetrics m;
  m.count = n;
  if (n == 0 || !reference || !approx)
  {
    return m;
  }
  double sumSq = 0, lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (std::size_t i = 0; i < n; ++i)
  {
    const double r = static_cast<double>(reference[i * referenceStride]);
    const double e = std::abs(static_cast<double>(approx[i]) - r);
    m.maxAbsError = std::max(m.maxAbsError, e);
    sumSq += e * e;
    lo = std::min(lo, r);
    hi = std::max(hi, r);
  }
  m.rmse = std::sqrt(sumSq / static_cast<double>(n));
  m.range = hi - lo;
  if (m.rmse == 0)
  {
    m.psnr = std::numeric_limits<double>::infinity();
  }
  else if (m.range == 0)
  {
    m.psnr = -std::numeric_limits<double>::infinity();
  }
  else
  {
    m.psnr = 20.0 * std::log10(m.range / m.rmse);
  }
  return m;
}

template<typename T>
Status checkFinite(const T* data, std::size_t n, const char* what, std::size_t stride)
{
  std::size_t bad = 0, first = 0;
  for (std::size_t i = 0; i < n; ++i)
  {
    if (!std::isfinite(data[i * stride]))
    {
      if (bad == 0)
      {
        first = i;
      }
      ++bad;
    }
  }
  if (bad == 0)
  {
    return Status::Ok();
  }
  return Status(ErrorCode::NonFinite,
    std::string(what) + " holds " + std::to_string(bad) +
      " non-finite value(s) (NaN or Inf); the first is at index " + std::to_string(first));
}

template ErrorMetrics computeErrorMetrics<float, float>(const float*,
  const float*,
  std::size_t,
  std::size_t);
template ErrorMetrics computeErrorMetrics<double, double>(const double*,
  const double*,
  std::size_t,
  std::size_t);
template ErrorMetrics computeErrorMetrics<float, double>(const float*,
  const double*,
  std::size_t,
  std::size_t);
template ErrorMetrics computeErrorMetrics<double, float>(const double*,
  const float*,
  std::size_t,
  std::size_t);
template Status checkFinite<float>(const float*, std::size_t, const char*, std::size_t);
template Status checkFinite<double>(const double*, std::size_t, const char*, std::size_t);

} // namespace sparsegrid
