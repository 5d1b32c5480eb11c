// Error metrics and input checks.
#include "Internal.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace sparsegrid
{

void ErrorSums::merge(const ErrorSums& other)
{
  this->maxAbsError = std::max(this->maxAbsError, other.maxAbsError);
  this->maximum = std::max(this->maximum, other.maximum);
  this->negatedMinimum = std::max(this->negatedMinimum, other.negatedMinimum);
  this->squaredErrors += other.squaredErrors;
  this->count += other.count;
}

ErrorMetrics ErrorSums::metrics() const
{
  ErrorMetrics m;
  m.count = this->count;
  if (this->count == 0)
  {
    return m;
  }
  m.maxAbsError = this->maxAbsError;
  m.rmse = std::sqrt(this->squaredErrors / static_cast<double>(this->count));
  m.range = this->maximum + this->negatedMinimum;
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

template<typename R, typename A>
ErrorMetrics computeErrorMetrics(const R* reference,
  const A* approx,
  std::size_t n,
  std::size_t referenceStride)
{
  if (!reference || !approx)
  {
    ErrorMetrics m;
    m.count = n;
    return m;
  }
  ErrorSums sums;
  for (std::size_t i = 0; i < n; ++i)
  {
    sums.add(static_cast<double>(reference[i * referenceStride]), static_cast<double>(approx[i]));
  }
  return sums.metrics();
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
