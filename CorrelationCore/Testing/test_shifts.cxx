// Known displacements: integer shifts found exactly, sub-pixel shifts within 0.1 px, interrogation
// windows over translated and rotated fields, and the peak search itself on analytic maps.
#include "reference.h"

#include <gtest/gtest.h>

#include <cmath>
#include <ostream>

using namespace correlation;

namespace
{
struct Path
{
  std::string name;
  Backend backend;
  Algorithm algorithm;
};

std::vector<Path> paths()
{
  return { { "cpu_direct", Backend::CPU, Algorithm::Direct },
    { "cpu_fft", Backend::CPU, Algorithm::FFT },
    { "cuda_direct", Backend::CUDA, Algorithm::Direct },
    { "cuda_fft", Backend::CUDA, Algorithm::FFT } };
}

void PrintTo(const Path& p, std::ostream* os)
{
  *os << p.name;
}

// Call through SKIP_IF_UNAVAILABLE: GTEST_SKIP only leaves this helper.
void skipIfUnavailable(const Path& p)
{
  std::string why;
  if (p.backend == Backend::CUDA && !cudaAvailable(&why))
  {
    GTEST_SKIP() << "CUDA not available: " << why;
  }
  if (p.backend == Backend::CPU && p.algorithm == Algorithm::FFT && !fftwCompiled())
  {
    GTEST_SKIP() << "built without FFTW3";
  }
}

ExecutionOptions optionsOf(const Path& p)
{
  ExecutionOptions o;
  o.backend = p.backend;
  o.algorithm = p.algorithm;
  o.strictBackend = true;
  o.threads = 2;
  return o;
}

class Shifts : public ::testing::TestWithParam<Path>
{
};

TEST_P(Shifts, IntegerShiftFoundExactly)
{
  skipIfUnavailable(GetParam());
  if (IsSkipped())
  {
    return;
  }
  const int w = 64, h = 48;
  const reference::SmoothField field(w, h, 5);
  const auto ref = field.sample<float>(w, h);
  for (auto shift : { std::pair<int, int>{ 3, -5 }, { -7, 2 }, { 0, 0 }, { 11, 9 } })
  {
    const auto moved = field.sample<float>(w, h, shift.first, shift.second);
    const Batch batch = Batch::oneToOne({ w, h }, { w, h });
    LagWindow window;
    ASSERT_TRUE(lagWindow(batch, Mode::Full, window).ok());
    std::vector<float> map(window.size());
    const Status s = correlate({ batch, ref.data(), moved.data(), Mode::Full, Normalization::ZNCC },
      map.data(),
      optionsOf(GetParam()));
    ASSERT_TRUE(s.ok()) << s.message();
    const Peak peak = findPeak(map.data(), window);
    EXPECT_EQ(peak.x, shift.first);
    EXPECT_EQ(peak.y, shift.second);
    EXPECT_GT(peak.value, 0.99); // the overlap of a pure translation correlates perfectly
  }
}

TEST_P(Shifts, SubPixelShiftWithinATenth)
{
  skipIfUnavailable(GetParam());
  if (IsSkipped())
  {
    return;
  }
  const int w = 64, h = 64;
  const reference::SmoothField field(w, h, 9);
  const auto ref = field.sample<double>(w, h);
  for (auto shift : { std::pair<double, double>{ 0.3, -0.6 }, { -2.45, 1.2 }, { 4.8, 3.5 } })
  {
    const auto moved = field.sample<double>(w, h, shift.first, shift.second);
    const Batch batch = Batch::oneToOne({ w, h }, { w, h });
    LagWindow window;
    ASSERT_TRUE(lagWindow(batch, Mode::Same, window).ok());
    std::vector<double> map(window.size());
    ASSERT_TRUE(correlate({ batch, ref.data(), moved.data(), Mode::Same, Normalization::ZNCC },
      map.data(),
      optionsOf(GetParam()))
                  .ok());
    const Peak peak = findPeak(map.data(), window, PeakFit::Gaussian);
    EXPECT_NEAR(peak.subX, shift.first, 0.1);
    EXPECT_NEAR(peak.subY, shift.second, 0.1);
  }
}

TEST_P(Shifts, WindowsRecoverATranslation)
{
  skipIfUnavailable(GetParam());
  if (IsSkipped())
  {
    return;
  }
  const int w = 128, h = 96;
  const reference::SmoothField field(w, h, 21, w * h / 16, 1.0, 1.5); // particle-like
  const double sx = 2.4, sy = -1.3;
  const auto ref = field.sample<float>(w, h);
  const auto moved = field.sample<float>(w, h, sx, sy);
  WindowSpec spec;
  spec.windowSize = 24;
  spec.step = 12;
  spec.searchRadius = 5;
  DisplacementField out;
  ExecutionReport report;
  const Status s = windowDisplacements(
    ImagePair{ ref.data(), moved.data(), { w, h } }, spec, out, optionsOf(GetParam()), &report);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(out.nx, (w - 34) / 12 + 1);
  EXPECT_EQ(out.ny, (h - 34) / 12 + 1);
  int valid = 0;
  for (std::size_t k = 0; k < out.dx.size(); ++k)
  {
    if (!out.valid[k])
    {
      continue;
    }
    ++valid;
    EXPECT_NEAR(out.dx[k], sx, 0.1) << "window " << k;
    EXPECT_NEAR(out.dy[k], sy, 0.1) << "window " << k;
  }
  EXPECT_GT(valid, static_cast<int>(out.dx.size() * 9 / 10));
}

TEST_P(Shifts, WindowsRecoverARotation)
{
  skipIfUnavailable(GetParam());
  if (IsSkipped())
  {
    return;
  }
  const int w = 128, h = 128;
  const reference::SmoothField field(w, h, 33, w * h / 16, 1.0, 1.5);
  const double angle = 2.0 * M_PI / 180, cx = 64, cy = 64;
  // image(p) = reference(R^-1 (p - c) + c): the field rotated by `angle` about c.
  std::vector<double> ref = field.sample<double>(w, h), moved(ref.size());
  for (int y = 0; y < h; ++y)
  {
    for (int x = 0; x < w; ++x)
    {
      const double px = x - cx, py = y - cy;
      moved[y * w + x] = field(std::cos(angle) * px + std::sin(angle) * py + cx,
        -std::sin(angle) * px + std::cos(angle) * py + cy);
    }
  }
  WindowSpec spec;
  spec.windowSize = 16;
  spec.step = 16;
  spec.searchRadius = 4;
  DisplacementField out;
  ASSERT_TRUE(windowDisplacements(
    ImagePair{ ref.data(), moved.data(), { w, h } }, spec, out, optionsOf(GetParam()))
                .ok());
  int valid = 0;
  for (int j = 0; j < out.ny; ++j)
  {
    for (int i = 0; i < out.nx; ++i)
    {
      const std::size_t k = static_cast<std::size_t>(j) * out.nx + i;
      if (!out.valid[k])
      {
        continue;
      }
      ++valid;
      // A window centred at q moves to R (q - c) + c.
      const double qx = out.originX + i * out.step - cx, qy = out.originY + j * out.step - cy;
      const double ex = std::cos(angle) * qx - std::sin(angle) * qy - qx;
      const double ey = std::sin(angle) * qx + std::cos(angle) * qy - qy;
      // Rotation inside a 16 px window shears it by up to 0.3 px: the fit sees the mean motion.
      EXPECT_NEAR(out.dx[k], ex, 0.2) << "window " << i << "," << j;
      EXPECT_NEAR(out.dy[k], ey, 0.2) << "window " << i << "," << j;
    }
  }
  EXPECT_GT(valid, out.nx * out.ny * 3 / 4);
}

INSTANTIATE_TEST_SUITE_P(AllPaths,
  Shifts,
  ::testing::ValuesIn(paths()),
  [](const ::testing::TestParamInfo<Path>& info) { return info.param.name; });

TEST(PeakSearch, AnalyticGaussianPeak)
{
  // A sampled Gaussian centred at (2.3, -1.7): the Gaussian fit is exact for it.
  const LagWindow window{ -5, -6, 11, 13 };
  std::vector<double> map(window.size());
  for (int j = 0; j < window.height; ++j)
  {
    for (int i = 0; i < window.width; ++i)
    {
      const double x = window.x0 + i - 2.3, y = window.y0 + j + 1.7;
      map[j * window.width + i] = std::exp(-(x * x + y * y) / 3.0) +
        0.4 *
          std::exp(-((window.x0 + i + 4.0) * (window.x0 + i + 4.0) +
            (window.y0 + j - 4.0) * (window.y0 + j - 4.0)));
    }
  }
  const Peak p = findPeak(map.data(), window, PeakFit::Gaussian);
  EXPECT_EQ(p.x, 2);
  EXPECT_EQ(p.y, -2);
  EXPECT_NEAR(p.subX, 2.3, 1e-6);
  EXPECT_NEAR(p.subY, -1.7, 1e-6);
  EXPECT_FALSE(p.onBorder);
  // The second peak is the 0.4 blob at (-4, 4) (plus the first one's tail, tiny there).
  EXPECT_NEAR(p.secondValue, 0.4, 1e-3);
  EXPECT_NEAR(p.ratio, p.value / p.secondValue, 1e-12);
  const double zx = -2.3, zy = 1.7;
  EXPECT_NEAR(p.zeroLag, std::exp(-(zx * zx + zy * zy) / 3.0) + 0.4 * std::exp(-32.0), 1e-12);
}

TEST(PeakSearch, ParabolaAndBorder)
{
  // Parabola through (-1, 1), (0, 3), (1, 2): vertex at 0.5 * (1 - 2) / (1 - 6 + 2) = 1/6.
  const LagWindow window{ 0, 0, 3, 1 };
  const double map[3] = { 1, 3, 2 };
  const Peak p = findPeak(map, window, PeakFit::Parabolic);
  EXPECT_NEAR(p.subX, 1 + 1.0 / 6.0, 1e-12);
  const double edge[3] = { 5, 3, 2 };
  const Peak q = findPeak(edge, window, PeakFit::Parabolic);
  EXPECT_TRUE(q.onBorder);
  EXPECT_EQ(q.subX, 0.0);
}

} // namespace
