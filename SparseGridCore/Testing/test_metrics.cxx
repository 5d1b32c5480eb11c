// computeErrorMetrics against hand computations and an independent long-double loop.
#include "reference.h"

#include <sparsegrid/sparsegrid.h>

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace
{
using sparsegrid::ErrorMetrics;

TEST(Metrics, HandComputedExample)
{
  // errors 0.5, 0, 0, 0, -1: max 1; rmse = sqrt((0.25 + 1) / 5) = 0.5; range 5 - 1 = 4;
  // psnr = 20 log10(4 / 0.5) = 20 log10(8) = 18.0617997...
  const double reference[] = { 1, 2, 3, 4, 5 };
  const double approx[] = { 1.5, 2, 3, 4, 4 };
  const ErrorMetrics m = sparsegrid::computeErrorMetrics(reference, approx, 5);
  // All inputs are exact binary numbers; 1e-12 allows for the square root and log10 rounding.
  EXPECT_NEAR(m.maxAbsError, 1.0, 1e-12);
  EXPECT_NEAR(m.rmse, 0.5, 1e-12);
  EXPECT_NEAR(m.range, 4.0, 1e-12);
  EXPECT_NEAR(m.psnr, 18.061799739838872, 1e-9);
  EXPECT_EQ(m.count, 5u);
}

TEST(Metrics, ExactApproximationHasInfinitePsnr)
{
  const float reference[] = { -2.f, 0.f, 7.f };
  const ErrorMetrics m = sparsegrid::computeErrorMetrics(reference, reference, 3);
  EXPECT_EQ(m.maxAbsError, 0.0);
  EXPECT_EQ(m.rmse, 0.0);
  EXPECT_EQ(m.range, 9.0);
  EXPECT_TRUE(std::isinf(m.psnr) && m.psnr > 0) << m.psnr;
  EXPECT_EQ(m.count, 3u);
}

TEST(Metrics, ReferenceStride)
{
  // The reference is a 3-component array; component 0 is compared (stride 3). Other components
  // hold huge values that would dominate range and errors if read.
  const double reference[] = { 0, 1e9, -1e9, 2, 1e9, -1e9, 10, 1e9, -1e9 };
  const float approx[] = { 1.f, 2.f, 7.f };
  const ErrorMetrics m = sparsegrid::computeErrorMetrics(reference, approx, 3, 3);
  // errors 1, 0, -3: max 3, rmse sqrt(10 / 3), range 10
  EXPECT_NEAR(m.maxAbsError, 3.0, 1e-12);
  EXPECT_NEAR(m.rmse, std::sqrt(10.0 / 3.0), 1e-12);
  EXPECT_NEAR(m.range, 10.0, 1e-12);
  EXPECT_NEAR(m.psnr, 20.0 * std::log10(10.0 / std::sqrt(10.0 / 3.0)), 1e-9);
  EXPECT_EQ(m.count, 3u);
}

template<typename R, typename A>
void randomAgainstLongDouble(std::uint64_t seed)
{
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> u(3.0, 10.0), e(0.0, 0.01);
  const std::size_t n = 100000;
  std::vector<R> reference(n);
  std::vector<A> approx(n);
  for (std::size_t k = 0; k < n; ++k)
  {
    reference[k] = static_cast<R>(u(rng));
    approx[k] = static_cast<A>(reference[k] + e(rng));
  }
  long double maxErr = 0, sum2 = 0, lo = reference[0], hi = reference[0];
  for (std::size_t k = 0; k < n; ++k)
  {
    const long double d = static_cast<long double>(approx[k]) - reference[k];
    maxErr = std::max(maxErr, std::fabs(d));
    sum2 += d * d;
    lo = std::min<long double>(lo, reference[k]);
    hi = std::max<long double>(hi, reference[k]);
  }
  const double rmse = static_cast<double>(std::sqrt(sum2 / n));
  const double range = static_cast<double>(hi - lo);
  const ErrorMetrics m = sparsegrid::computeErrorMetrics(reference.data(), approx.data(), n);
  // max and range are exact (differences of two floats/doubles, possibly rounded once in
  // double); the sum of 1e5 squares in double loses at most ~1e5 * eps relative (naive summation
  // bound): 1e-10 relative covers both, and 1e-8 dB for the PSNR.
  EXPECT_NEAR(
    m.maxAbsError, static_cast<double>(maxErr), 1e-12 * static_cast<double>(maxErr) + 1e-300);
  EXPECT_NEAR(m.rmse, rmse, 1e-10 * rmse);
  EXPECT_NEAR(m.range, range, 1e-12 * range);
  EXPECT_NEAR(m.psnr, 20.0 * std::log10(range / rmse), 1e-8);
  EXPECT_EQ(m.count, n);
}

TEST(Metrics, RandomDoubleDouble)
{
  randomAgainstLongDouble<double, double>(1);
}
TEST(Metrics, RandomFloatFloat)
{
  randomAgainstLongDouble<float, float>(2);
}
TEST(Metrics, RandomDoubleFloat)
{
  randomAgainstLongDouble<double, float>(3);
}
TEST(Metrics, RandomFloatDouble)
{
  randomAgainstLongDouble<float, double>(4);
}

} // namespace
