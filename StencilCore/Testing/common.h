/**
 * @file common.h
 * @brief Test helpers: backend parameterisation (CUDA cases skip without a device), comparisons
 * with NaN positions, and the stated tolerances.
 */
#ifndef stencil_test_common_h
#define stencil_test_common_h

#include "stencil/Stencil.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

inline std::string backendName(const testing::TestParamInfo<stencil::Backend>& info)
{
  return stencil::toString(info.param);
}

/// Options that force the backend (strict, so a CUDA case never silently runs on the CPU).
inline stencil::ExecutionOptions optionsFor(stencil::Backend backend)
{
  stencil::ExecutionOptions options;
  options.backend = backend;
  options.strictBackend = true;
  options.threads = 2;
  return options;
}

#define STENCIL_SKIP_WITHOUT_DEVICE(backend)                                                       \
  do                                                                                               \
  {                                                                                                \
    std::string why;                                                                               \
    if ((backend) == stencil::Backend::CUDA && !stencil::cudaAvailable(&why))                      \
    {                                                                                              \
      GTEST_SKIP() << "no usable CUDA device: " << why;                                            \
    }                                                                                              \
  } while (0)

/// |a - b| <= tol at every position, and NaN exactly where the reference is NaN.
template<typename T>
::testing::AssertionResult closeWithNaN(const std::vector<T>& actual,
  const std::vector<double>& expected,
  double tol)
{
  if (actual.size() != expected.size())
  {
    return ::testing::AssertionFailure() << "size " << actual.size() << " vs " << expected.size();
  }
  std::size_t bad = 0;
  std::size_t first = 0;
  double worst = 0;
  for (std::size_t i = 0; i < actual.size(); ++i)
  {
    const bool nanA = std::isnan(static_cast<double>(actual[i]));
    const bool nanE = std::isnan(expected[i]);
    const double diff =
      (nanA || nanE) ? 0 : std::fabs(static_cast<double>(actual[i]) - expected[i]);
    if (nanA != nanE || !(diff <= tol))
    {
      if (bad++ == 0)
      {
        first = i;
      }
      worst = std::max(worst, diff);
    }
  }
  if (bad == 0)
  {
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure()
    << bad << " of " << actual.size() << " values differ (tol " << tol << "), first at " << first
    << ": " << actual[first] << " vs " << expected[first] << ", worst finite diff " << worst;
}

inline double maxAbs(const std::vector<double>& v)
{
  double m = 0;
  for (double x : v)
  {
    if (std::isfinite(x))
    {
      m = std::max(m, std::fabs(x));
    }
  }
  return m;
}

#endif
