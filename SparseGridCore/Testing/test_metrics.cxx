// computeErrorMetrics against hand computations and an independent long-double loop; ErrorSums
// (partial sums that pieces merge, as MPI ranks do) against the same loop and against
// computeErrorMetrics of the whole array.
#include "reference.h"

#include <sparsegrid/sparsegrid.h>

#include <gtest/gtest.h>

#include <algorithm>
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

/// Max error, RMSE and range of the reference by an independent loop in long double.
struct Independent
{
  double maxAbsError, rmse, range;
  template<typename R, typename A>
  Independent(const std::vector<R>& reference, const std::vector<A>& approx)
  {
    const std::size_t n = reference.size();
    long double maxErr = 0, sum2 = 0, lo = reference[0], hi = reference[0];
    for (std::size_t k = 0; k < n; ++k)
    {
      const long double d = static_cast<long double>(approx[k]) - reference[k];
      maxErr = std::max(maxErr, std::fabs(d));
      sum2 += d * d;
      lo = std::min<long double>(lo, reference[k]);
      hi = std::max<long double>(hi, reference[k]);
    }
    this->maxAbsError = static_cast<double>(maxErr);
    this->rmse = static_cast<double>(std::sqrt(sum2 / n));
    this->range = static_cast<double>(hi - lo);
  }
};

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
  const Independent expected(reference, approx);
  const double maxErr = expected.maxAbsError, rmse = expected.rmse, range = expected.range;
  const ErrorMetrics m = sparsegrid::computeErrorMetrics(reference.data(), approx.data(), n);
  // max and range are exact (differences of two floats/doubles, possibly rounded once in
  // double); the sum of 1e5 squares in double loses at most ~1e5 * eps relative (naive summation
  // bound): 1e-10 relative covers both, and 1e-8 dB for the PSNR.
  EXPECT_NEAR(m.maxAbsError, maxErr, 1e-12 * maxErr + 1e-300);
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

// An array split into pieces of random sizes, empty ones included (first, last and in between),
// summed per piece and merged in a shuffled order: the metrics of the merged sums equal those
// of the whole (computeErrorMetrics) and an independent long-double loop over the whole.
TEST(Metrics, MergedPiecesEqualTheWhole)
{
  std::mt19937_64 rng(7);
  std::normal_distribution<double> u(-4.0, 25.0), e(0.0, 0.05);
  const std::size_t n = 50000;
  std::vector<double> reference(n);
  std::vector<float> approx(n);
  for (std::size_t k = 0; k < n; ++k)
  {
    reference[k] = u(rng);
    approx[k] = static_cast<float>(reference[k] + e(rng));
  }
  // Piece boundaries: 0 and n twice each (empty first and last pieces), repeated cuts (empty
  // pieces in between), random cuts.
  std::vector<std::size_t> cuts = { 0, 0, n, n, 1234, 1234, 1234 };
  std::uniform_int_distribution<std::size_t> at(0, n);
  for (int k = 0; k < 20; ++k)
  {
    cuts.push_back(at(rng));
  }
  std::sort(cuts.begin(), cuts.end());
  std::vector<sparsegrid::ErrorSums> pieces;
  std::size_t empty = 0;
  for (std::size_t k = 0; k + 1 < cuts.size(); ++k)
  {
    sparsegrid::ErrorSums sums;
    for (std::size_t i = cuts[k]; i < cuts[k + 1]; ++i)
    {
      sums.add(reference[i], static_cast<double>(approx[i]));
    }
    empty += sums.count == 0 ? 1 : 0;
    pieces.push_back(sums);
  }
  ASSERT_GE(empty, 4u);
  std::shuffle(pieces.begin(), pieces.end(), rng);
  sparsegrid::ErrorSums merged;
  for (const auto& piece : pieces)
  {
    merged.merge(piece);
  }
  const ErrorMetrics m = merged.metrics();
  const ErrorMetrics whole = sparsegrid::computeErrorMetrics(reference.data(), approx.data(), n);

  const Independent expected(reference, approx);
  const double maxErr = expected.maxAbsError, rmse = expected.rmse, range = expected.range;
  // Maximum, range and count do not depend on the grouping: equal to the whole's. The sum of
  // squares is grouped differently: the naive summation bound (n eps relative) covers both
  // groupings, 1e-10 relative; 1e-8 dB for the PSNR.
  EXPECT_EQ(m.count, n);
  EXPECT_EQ(m.maxAbsError, whole.maxAbsError);
  EXPECT_EQ(m.range, whole.range);
  EXPECT_NEAR(m.rmse, whole.rmse, 1e-10 * whole.rmse);
  EXPECT_NEAR(m.psnr, whole.psnr, 1e-8);
  EXPECT_NEAR(m.maxAbsError, maxErr, 1e-12 * maxErr);
  EXPECT_NEAR(m.rmse, rmse, 1e-10 * rmse);
  EXPECT_NEAR(m.range, range, 1e-12 * range);
  EXPECT_NEAR(m.psnr, 20.0 * std::log10(range / rmse), 1e-8);
}

// One piece added in computeErrorMetrics' order reproduces it bit for bit; merging empty sums
// changes nothing; no values at all give computeErrorMetrics' empty result.
TEST(Metrics, SumsFollowComputeErrorMetrics)
{
  const double reference[] = { 1, 2, 3, 4, 5 };
  const double approx[] = { 1.5, 2, 3, 4, 4 };
  sparsegrid::ErrorSums sums;
  for (int k = 0; k < 5; ++k)
  {
    sums.add(reference[k], approx[k]);
  }
  sums.merge(sparsegrid::ErrorSums());
  const ErrorMetrics m = sums.metrics();
  const ErrorMetrics whole = sparsegrid::computeErrorMetrics(reference, approx, 5);
  EXPECT_EQ(m.maxAbsError, whole.maxAbsError);
  EXPECT_EQ(m.rmse, whole.rmse);
  EXPECT_EQ(m.range, whole.range);
  EXPECT_EQ(m.psnr, whole.psnr);
  EXPECT_EQ(m.count, 5u);
  // 18.06 dB by hand (HandComputedExample).
  EXPECT_NEAR(m.psnr, 18.061799739838872, 1e-9);

  sparsegrid::ErrorSums none, alsoNone;
  none.merge(alsoNone);
  const ErrorMetrics e = none.metrics();
  const ErrorMetrics empty = sparsegrid::computeErrorMetrics(reference, approx, 0);
  EXPECT_EQ(e.count, 0u);
  EXPECT_EQ(e.maxAbsError, 0.0);
  EXPECT_EQ(e.rmse, 0.0);
  EXPECT_EQ(e.range, 0.0);
  EXPECT_EQ(e.psnr, 0.0);
  EXPECT_EQ(empty.psnr, e.psnr);
  EXPECT_EQ(empty.range, e.range);
}

// The PSNR conventions survive merging: exact pieces give +inf, a constant reference with an
// error -inf (range 0), whichever piece holds the values.
TEST(Metrics, MergedConventions)
{
  sparsegrid::ErrorSums exact, constant, empty;
  exact.add(-2, -2);
  exact.merge(empty);
  sparsegrid::ErrorSums other;
  other.add(7, 7);
  exact.merge(other);
  EXPECT_EQ(exact.metrics().range, 9.0);
  EXPECT_TRUE(std::isinf(exact.metrics().psnr) && exact.metrics().psnr > 0);
  constant.add(3, 3.5);
  empty.merge(constant);
  EXPECT_EQ(empty.metrics().range, 0.0);
  EXPECT_EQ(empty.metrics().rmse, 0.5);
  EXPECT_TRUE(std::isinf(empty.metrics().psnr) && empty.metrics().psnr < 0);
}

} // namespace
