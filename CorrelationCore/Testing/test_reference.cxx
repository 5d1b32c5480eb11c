// Every algorithm, GPU kernel variant, shape, mode and normalisation against the brute-force
// double reference (reference.h), for float and double, on odd and even sizes.
#include "reference.h"

#include <gtest/gtest.h>

#include <cmath>
#include <ostream>

using namespace correlation;

namespace
{
struct Variant
{
  std::string name;
  Backend backend;
  Algorithm algorithm;
  DirectOptions direct;
  bool cachePlans = true;
  bool deviceOnlyTiming = false;
  bool fftPowerOfTwo = false;
};

void PrintTo(const Variant& v, std::ostream* os)
{
  *os << v.name;
}

std::vector<Variant> cpuVariants()
{
  return { { "cpu_direct", Backend::CPU, Algorithm::Direct, {} },
    { "cpu_fft", Backend::CPU, Algorithm::FFT, {} },
    { "cpu_fft_pow2", Backend::CPU, Algorithm::FFT, {}, true, false, true } };
}

std::vector<Variant> cudaVariants()
{
  DirectOptions baseline;
  baseline.kernel = DirectKernel::Baseline;
  using W = WorkDistribution;
  return { { "cuda_auto_kernel", Backend::CUDA, Algorithm::Direct, DirectOptions{} },
    { "cuda_baseline", Backend::CUDA, Algorithm::Direct, baseline },
    { "cuda_ws_none",
      Backend::CUDA,
      Algorithm::Direct,
      DirectOptions::warpShuffle(W::None, 1, 1, 1) },
    { "cuda_ws_rect_r3",
      Backend::CUDA,
      Algorithm::Direct,
      DirectOptions::warpShuffle(W::Rectangle, 3, 1, 1) },
    { "cuda_ws_tri_r2",
      Backend::CUDA,
      Algorithm::Direct,
      DirectOptions::warpShuffle(W::Triangle, 2, 1, 1, 2) },
    { "cuda_ws_s2",
      Backend::CUDA,
      Algorithm::Direct,
      DirectOptions::warpShuffle(W::None, 1, 2, 1) },
    { "cuda_ws_s4_tri",
      Backend::CUDA,
      Algorithm::Direct,
      DirectOptions::warpShuffle(W::Triangle, 3, 4, 1) },
    { "cuda_ws_s8_rect",
      Backend::CUDA,
      Algorithm::Direct,
      DirectOptions::warpShuffle(W::Rectangle, 5, 8, 1, 1) },
    { "cuda_ws_r2",
      Backend::CUDA,
      Algorithm::Direct,
      DirectOptions::warpShuffle(W::None, 1, 1, 2) },
    { "cuda_ws_r4_rect",
      Backend::CUDA,
      Algorithm::Direct,
      DirectOptions::warpShuffle(W::Rectangle, 4, 1, 4) },
    { "cuda_ws_r8",
      Backend::CUDA,
      Algorithm::Direct,
      DirectOptions::warpShuffle(W::None, 1, 1, 8, 8) },
    { "cuda_ws_s2r4_tri",
      Backend::CUDA,
      Algorithm::Direct,
      DirectOptions::warpShuffle(W::Triangle, 2, 2, 4) },
    { "cuda_ws_s4r4",
      Backend::CUDA,
      Algorithm::Direct,
      DirectOptions::warpShuffle(W::None, 1, 4, 4) },
    { "cuda_ws_s8r2_tri",
      Backend::CUDA,
      Algorithm::Direct,
      DirectOptions::warpShuffle(W::Triangle, 1, 8, 2) },
    { "cuda_tiled", Backend::CUDA, Algorithm::Direct, DirectOptions::registerTiled(1, 4) },
    { "cuda_tiled_r2", Backend::CUDA, Algorithm::Direct, DirectOptions::registerTiled(2, 2) },
    { "cuda_tiled_r4", Backend::CUDA, Algorithm::Direct, DirectOptions::registerTiled(4, 8) },
    // Split tiled: automatic pairs per warp, and every P (32 / P lanes split each tile's sum);
    // from P = 8 on in float the lanes slide down column strips unless told not to.
    { "cuda_split", Backend::CUDA, Algorithm::Direct, DirectOptions::splitTiled(0, 4) },
    { "cuda_split_p1_w2", Backend::CUDA, Algorithm::Direct, DirectOptions::splitTiled(1, 2) },
    { "cuda_split_p2_w3", Backend::CUDA, Algorithm::Direct, DirectOptions::splitTiled(2, 3) },
    { "cuda_split_p4_w1", Backend::CUDA, Algorithm::Direct, DirectOptions::splitTiled(4, 1) },
    { "cuda_split_p8_w16", Backend::CUDA, Algorithm::Direct, DirectOptions::splitTiled(8, 16) },
    { "cuda_split_p16_w5", Backend::CUDA, Algorithm::Direct, DirectOptions::splitTiled(16, 5) },
    { "cuda_split_p32_w16", Backend::CUDA, Algorithm::Direct, DirectOptions::splitTiled(32, 16) },
    { "cuda_split_p16_w4_noslide",
      Backend::CUDA,
      Algorithm::Direct,
      DirectOptions::splitTiled(16, 4, false) },
    { "cuda_split_p32_w8_noslide",
      Backend::CUDA,
      Algorithm::Direct,
      DirectOptions::splitTiled(32, 8, false) },
    // Sliding strips that multiply the left's padding rows instead of skipping them.
    { "cuda_split_p16_w4_nopeel",
      Backend::CUDA,
      Algorithm::Direct,
      DirectOptions::splitTiled(16, 4, true, false) },
    { "cuda_split_p8_w2_nopeel",
      Backend::CUDA,
      Algorithm::Direct,
      DirectOptions::splitTiled(8, 2, true, false) },
    // 4-row tiles (sliding only), peeled and not, with 1, 2 and 4 lanes per pair.
    { "cuda_split_p32_w8_rows4",
      Backend::CUDA,
      Algorithm::Direct,
      DirectOptions::splitTiled(32, 8, true, true, 4) },
    { "cuda_split_p16_w3_rows4",
      Backend::CUDA,
      Algorithm::Direct,
      DirectOptions::splitTiled(16, 3, true, true, 4) },
    { "cuda_split_p8_w16_rows4_nopeel",
      Backend::CUDA,
      Algorithm::Direct,
      DirectOptions::splitTiled(8, 16, true, false, 4) },
    { "cuda_split_device_timing",
      Backend::CUDA,
      Algorithm::Direct,
      DirectOptions::splitTiled(0, 8),
      true,
      true },
    { "cuda_lanes_w32", Backend::CUDA, Algorithm::Direct, DirectOptions::pairPerLane(32) },
    { "cuda_lanes_w3", Backend::CUDA, Algorithm::Direct, DirectOptions::pairPerLane(3) },
    { "cuda_lanes_w8_nopeel",
      Backend::CUDA,
      Algorithm::Direct,
      DirectOptions::pairPerLane(8, false) },
    { "cuda_lanes_device_timing",
      Backend::CUDA,
      Algorithm::Direct,
      DirectOptions::pairPerLane(16),
      true,
      true },
    { "cuda_fft_cached", Backend::CUDA, Algorithm::FFT, {}, true },
    { "cuda_fft_per_call", Backend::CUDA, Algorithm::FFT, {}, false },
    { "cuda_fft_pow2", Backend::CUDA, Algorithm::FFT, {}, true, false, true },
    { "cuda_fft_device_timing", Backend::CUDA, Algorithm::FFT, {}, true, true } };
}

struct Case
{
  Shape shape;
  int n, m;
  Size2 left, right;
};

std::vector<Case> cases()
{
  return {
    { Shape::OneToOne, 1, 1, { 7, 5 }, { 9, 11 } },  // odd, left inside right
    { Shape::OneToOne, 1, 1, { 16, 12 }, { 8, 8 } }, // even, right inside left
    { Shape::OneToOne, 1, 1, { 33, 6 }, { 40, 9 } }, // lags cross warp boundaries
    { Shape::OneToMany, 1, 5, { 6, 7 }, { 10, 9 } }, // m not a multiple of 2/4/8
    { Shape::NToMN, 3, 3, { 5, 5 }, { 8, 6 } },      //
    { Shape::NToM, 2, 9, { 4, 6 }, { 7, 7 } },       //
  };
}

/// Tolerance of raw sums: `relative` of sqrt(sum L^2 sum R^2), the bound of any raw sum
/// (Cauchy-Schwarz).
double rawTolerance(const std::vector<double>& left,
  const std::vector<double>& right,
  double relative)
{
  double ll = 0, rr = 0;
  for (double x : left)
  {
    ll += x * x;
  }
  for (double x : right)
  {
    rr += x * x;
  }
  return relative * std::sqrt(ll * rr);
}

/// Every lag of `out` against the reference map `ref`, within `tol`.
void expectMap(const float* out, const std::vector<double>& ref, double tol, std::size_t pair)
{
  for (std::size_t k = 0; k < ref.size(); ++k)
  {
    ASSERT_NEAR(out[k], ref[k], tol) << "pair " << pair << " lag index " << k;
  }
}

template<typename T>
void check(const Variant& v, const Case& c, Mode mode, Normalization norm, unsigned seed)
{
  Batch batch{ c.shape, c.n, c.m, c.left, c.right };
  LagWindow window;
  ASSERT_TRUE(lagWindow(batch, mode, window).ok());
  const auto l = reference::randomMatrices(batch.leftCount() * c.left.count(), seed);
  const auto r = reference::randomMatrices(batch.rightCount() * c.right.count(), seed + 7);
  std::vector<T> lt(l.begin(), l.end()), rt(r.begin(), r.end());
  std::vector<T> out(batch.pairs() * window.size(), T(-999));
  ExecutionOptions options;
  options.backend = v.backend;
  options.algorithm = v.algorithm;
  options.tuning.direct = v.direct;
  options.tuning.cacheFftPlans = v.cachePlans;
  options.tuning.deviceOnlyKernelTiming = v.deviceOnlyTiming;
  options.tuning.fftPowerOfTwo = v.fftPowerOfTwo;
  options.strictBackend = true;
  options.threads = 2;
  ExecutionReport report;
  const Status s =
    correlate({ batch, lt.data(), rt.data(), mode, norm }, out.data(), options, &report);
  ASSERT_TRUE(s.ok()) << toString(s.code()) << ": " << s.message();
  EXPECT_EQ(report.backendUsed, v.backend);
  EXPECT_EQ(report.algorithmUsed, v.algorithm);
  if (v.backend == Backend::CUDA)
  {
    // (How long is not asserted: that is the benchmark's business.)
    EXPECT_GT(report.kernelSeconds, 0.0) << "the GPU work was timed";
  }
  if (v.backend == Backend::CUDA && v.direct.kernel == DirectKernel::SplitTiled &&
    v.algorithm == Algorithm::Direct)
  {
    EXPECT_EQ(report.kernelUsed, DirectKernel::SplitTiled) << "the staging fits: no fall-back";
  }
  if (v.backend == Backend::CUDA && v.direct.kernel == DirectKernel::PairPerLane &&
    v.algorithm == Algorithm::Direct)
  {
    // The 32 staged rights (interleaved, 7 zero columns either side) and 4 copies of the left:
    // within 48 KiB they fit on every GPU; beyond the largest opt-in size (227 KiB) on none.
    const std::size_t staged =
      (static_cast<std::size_t>(c.right.height) * (c.right.width + 14) * 33 +
        4 * c.left.height * ((c.left.width + 6) / 4 * 4)) *
      sizeof(T);
    if (staged <= 48 * 1024)
    {
      EXPECT_EQ(report.kernelUsed, DirectKernel::PairPerLane) << "the staging fits: no fall-back";
    }
    else if (staged > 227 * 1024)
    {
      EXPECT_NE(report.kernelUsed, DirectKernel::PairPerLane);
    }
  }
  const bool isFloat = sizeof(T) == 4;
  for (std::size_t p = 0; p < batch.pairs(); ++p)
  {
    const std::size_t i = p / c.m, j = p % c.m;
    std::vector<double> left(l.begin() + i * c.left.count(), l.begin() + (i + 1) * c.left.count());
    const std::size_t ri = batch.rightOf(i, j);
    std::vector<double> right(
      r.begin() + ri * c.right.count(), r.begin() + (ri + 1) * c.right.count());
    // Round the inputs like the code under test sees them.
    for (auto& x : left)
    {
      x = static_cast<T>(x);
    }
    for (auto& x : right)
    {
      x = static_cast<T>(x);
    }
    const auto ref = reference::correlateOne(left,
      c.left.width,
      c.left.height,
      right,
      c.right.width,
      c.right.height,
      window,
      norm,
      options.minOverlapFraction);
    // Raw sums are bounded by sqrt(sum L^2 sum R^2) (Cauchy-Schwarz); normalised values by 1.
    const double relative = isFloat ? (norm == Normalization::ZNCC ? 2e-3 : 2e-5) : 1e-9;
    const double tol = norm == Normalization::None ? rawTolerance(left, right, relative) : relative;
    for (std::size_t k = 0; k < window.size(); ++k)
    {
      ASSERT_NEAR(out[p * window.size() + k], ref[k], tol)
        << v.name << " " << toString(c.shape) << " " << toString(mode) << " " << toString(norm)
        << (isFloat ? " float" : " double") << " pair " << p << " lag ("
        << window.x0 + static_cast<int>(k % window.width) << ", "
        << window.y0 + static_cast<int>(k / window.width) << ")";
    }
  }
}

class Reference : public ::testing::TestWithParam<Variant>
{
};

TEST_P(Reference, AllShapesModesNormalisations)
{
  const Variant& v = GetParam();
  if (v.backend == Backend::CUDA)
  {
    std::string why;
    if (!cudaAvailable(&why))
    {
      GTEST_SKIP() << "CUDA not available: " << why;
    }
  }
  if (v.algorithm == Algorithm::FFT && v.backend == Backend::CPU && !fftwCompiled())
  {
    GTEST_SKIP() << "built without FFTW3: the CPU FFT path is unavailable";
  }
  unsigned seed = 1;
  for (const Case& c : cases())
  {
    for (Mode mode : { Mode::Full, Mode::Same, Mode::Valid })
    {
      Batch batch{ c.shape, c.n, c.m, c.left, c.right };
      LagWindow w;
      if (!lagWindow(batch, mode, w).ok())
      {
        continue; // valid mode of crossing sizes: its error is tested in test_errors
      }
      for (Normalization norm : { Normalization::None, Normalization::NCC, Normalization::ZNCC })
      {
        check<double>(v, c, mode, norm, seed);
        check<float>(v, c, mode, norm, seed + 1);
        seed += 2;
        if (HasFatalFailure())
        {
          return;
        }
      }
    }
  }
}

std::string variantName(const ::testing::TestParamInfo<Variant>& info)
{
  return info.param.name;
}

INSTANTIATE_TEST_SUITE_P(CPU, Reference, ::testing::ValuesIn(cpuVariants()), variantName);
INSTANTIATE_TEST_SUITE_P(CUDA, Reference, ::testing::ValuesIn(cudaVariants()), variantName);

// Larger sizes than the exhaustive loop above, one-to-one and many small windows, odd and even.
class ReferenceLarger : public ::testing::TestWithParam<Variant>
{
};

TEST_P(ReferenceLarger, OddAndEvenSizes)
{
  const Variant& v = GetParam();
  if (v.backend == Backend::CUDA && !cudaAvailable())
  {
    GTEST_SKIP() << "CUDA not available";
  }
  if (v.algorithm == Algorithm::FFT && v.backend == Backend::CPU && !fftwCompiled())
  {
    GTEST_SKIP() << "built without FFTW3";
  }
  check<float>(
    v, { Shape::OneToOne, 1, 1, { 37, 37 }, { 37, 37 } }, Mode::Full, Normalization::None, 11);
  check<double>(
    v, { Shape::OneToOne, 1, 1, { 48, 32 }, { 64, 40 } }, Mode::Full, Normalization::ZNCC, 12);
  check<float>(
    v, { Shape::OneToMany, 1, 33, { 16, 16 }, { 16, 16 } }, Mode::Full, Normalization::NCC, 13);
  // The benchmark's bar case in small (32 x 32 windows, full maps: every tile's strips skip
  // padding rows at one end) and Image Displacement's batches (valid mode: 32-px windows in
  // 48-px regions, where a tile could skip padding at both ends).
  check<float>(
    v, { Shape::OneToMany, 1, 18, { 32, 32 }, { 32, 32 } }, Mode::Full, Normalization::None, 14);
  check<float>(
    v, { Shape::NToMN, 3, 1, { 32, 32 }, { 48, 48 } }, Mode::Valid, Normalization::None, 15);
}

INSTANTIATE_TEST_SUITE_P(CPU, ReferenceLarger, ::testing::ValuesIn(cpuVariants()), variantName);
INSTANTIATE_TEST_SUITE_P(CUDA, ReferenceLarger, ::testing::ValuesIn(cudaVariants()), variantName);

// DirectKernel::Auto on a batch of 1024 pairs per left: the pair-per-lane kernel runs (its
// staging fits for these sizes on every GPU) and matches the reference, odd sizes, full mode.
TEST(PairPerLane, AutoRunsItForLargeBatches)
{
  std::string why;
  if (!cudaAvailable(&why))
  {
    GTEST_SKIP() << "CUDA not available: " << why;
  }
  const Batch batch{ Shape::OneToMany, 1, 1024, { 5, 7 }, { 9, 6 } };
  LagWindow window;
  ASSERT_TRUE(lagWindow(batch, Mode::Full, window).ok());
  const auto l = reference::randomMatrices(batch.left.count(), 31);
  const auto r = reference::randomMatrices(batch.rightCount() * batch.right.count(), 32);
  std::vector<float> lf(l.begin(), l.end()), rf(r.begin(), r.end());
  std::vector<float> out(batch.pairs() * window.size());
  ExecutionOptions options;
  options.backend = Backend::CUDA;
  options.algorithm = Algorithm::Direct;
  options.strictBackend = true;
  ExecutionReport report;
  const Status s = correlate(
    { batch, lf.data(), rf.data(), Mode::Full, Normalization::None }, out.data(), options, &report);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(report.kernelUsed, DirectKernel::PairPerLane);
  std::vector<double> left(lf.begin(), lf.end());
  for (std::size_t p = 0; p < batch.pairs(); p += 97)
  {
    std::vector<double> right(
      rf.begin() + p * batch.right.count(), rf.begin() + (p + 1) * batch.right.count());
    const auto ref = reference::correlateOne(
      left, 5, 7, right, 9, 6, window, Normalization::None, options.minOverlapFraction);
    expectMap(out.data() + p * window.size(), ref, rawTolerance(left, right, 2e-5), p);
  }
}

// A right matrix too large for shared memory (300 x 200 doubles, 469 KiB): SplitTiled gives
// way to another kernel, says which, and the result still matches the reference.
TEST(SplitTiled, TooLargeForSharedMemoryFallsBack)
{
  std::string why;
  if (!cudaAvailable(&why))
  {
    GTEST_SKIP() << "CUDA not available: " << why;
  }
  const Batch batch = Batch::oneToOne({ 300, 2 }, { 300, 200 });
  LagWindow window;
  ASSERT_TRUE(lagWindow(batch, Mode::Same, window).ok());
  const auto l = reference::randomMatrices(batch.left.count(), 21);
  const auto r = reference::randomMatrices(batch.right.count(), 22);
  std::vector<double> out(window.size());
  ExecutionOptions options;
  options.backend = Backend::CUDA;
  options.algorithm = Algorithm::Direct;
  options.tuning.direct.kernel = DirectKernel::SplitTiled;
  options.strictBackend = true;
  ExecutionReport report;
  const Status s = correlate(
    { batch, l.data(), r.data(), Mode::Same, Normalization::None }, out.data(), options, &report);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_NE(report.kernelUsed, DirectKernel::SplitTiled);
  EXPECT_NE(report.kernelUsed, DirectKernel::Auto);
  const auto ref = reference::correlateOne(
    l, 300, 2, r, 300, 200, window, Normalization::None, options.minOverlapFraction);
  const double tol = rawTolerance(l, r, 1e-9);
  for (std::size_t k = 0; k < window.size(); ++k)
  {
    ASSERT_NEAR(out[k], ref[k], tol) << "lag index " << k;
  }
}

} // namespace
