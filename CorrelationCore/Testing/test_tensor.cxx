// The tensor-core kernels (DirectKernel::TensorTf32, 3xTF32, and DirectKernel::TensorF16, 2xFP16)
// against the brute-force double reference: on the GPU for every shape, mode and normalisation,
// odd and even sizes, and (on any machine) a host emulation of their fragment mapping: the
// kernels' own staging indices and per-lane loads (src/cuda/TensorTf32.h, TensorF16.h), with the
// warp-wide mma.m16n8k8 written here from the PTX ISA's fragment tables, so that the index
// arithmetic is checked without a GPU.
#include "reference.h"

#include "../src/cuda/TensorF16.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>

using namespace correlation;
using namespace correlation::detail;

namespace
{

struct Case
{
  Shape shape;
  int n, m;
  Size2 left, right;
};

std::string describe(const Case& c, Mode mode)
{
  std::ostringstream os;
  os << toString(c.shape) << " n=" << c.n << " m=" << c.m << " left " << c.left.width << "x"
     << c.left.height << " right " << c.right.width << "x" << c.right.height << " "
     << toString(mode);
  return os.str();
}

/// Odd and even sizes, all four shapes, a half-empty block of pairs (m = 5, 18, 33), matrices
/// wider than one column chunk (40) and windows wider than one lag chunk (79 lags).
std::vector<Case> cases()
{
  return {
    { Shape::OneToOne, 1, 1, { 7, 5 }, { 9, 11 } },
    { Shape::OneToOne, 1, 1, { 16, 12 }, { 8, 8 } },
    { Shape::OneToOne, 1, 1, { 33, 6 }, { 40, 9 } },
    { Shape::OneToMany, 1, 5, { 6, 7 }, { 10, 9 } },
    { Shape::OneToMany, 1, 33, { 13, 11 }, { 12, 10 } },
    { Shape::OneToMany, 1, 18, { 32, 32 }, { 32, 32 } },
    { Shape::NToMN, 3, 3, { 5, 5 }, { 8, 6 } },
    { Shape::NToMN, 2, 17, { 9, 8 }, { 15, 14 } },
    { Shape::NToM, 2, 9, { 4, 6 }, { 7, 7 } },
  };
}

float fromBits(std::uint32_t u)
{
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

/// One recorded mma call of one lane: tile j, the A and B fragment registers.
struct MmaCall
{
  int j;
  std::uint32_t a[4], b[2];
};

struct Recorder
{
  std::vector<MmaCall>* calls;
  void operator()(int j, const std::uint32_t a[4], const std::uint32_t b[2])
  {
    calls->push_back({ j, { a[0], a[1], a[2], a[3] }, { b[0], b[1] } });
  }
};

/**
 * The whole launch on the host: the kernel's staging indices, its per-lane loads and its
 * accumulator targets; the warp's mma from the PTX ISA's m16n8k8 .tf32 tables (A: a0 (g, t),
 * a1 (g + 8, t), a2 (g, t + 4), a3 (g + 8, t + 4); B: b0 (t, g), b1 (t + 4, g); C: c0 (g, 2t),
 * c1 (g, 2t + 1), c2 (g + 8, 2t), c3 (g + 8, 2t + 1), g = lane / 4, t = lane % 4), products in
 * double. Staged arrays sit between NaN guard zones and start as NaN, so that a read outside the
 * staging or of a slot the staging never wrote shows up in the maps. Unwritten map entries stay
 * NaN too.
 */
std::vector<float> emulate(const Batch& batch,
  const LagWindow& window,
  const std::vector<float>& lefts,
  const std::vector<float>& rights,
  std::string& problem)
{
  const Geometry g = Geometry::of(batch, window);
  const TcLayout s = tcLayout(g);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::uint32_t nanBits;
  std::memcpy(&nanBits, &nan, sizeof(nanBits));
  const int guard = 4096;
  std::vector<float> out(batch.pairs() * window.size(), nan);
  const std::size_t mapSize = window.size();
  for (int li = 0; li < g.n; ++li)
  {
    for (int group = 0; group < s.groupsPerLeft; ++group)
    {
      const int j0 = group * kTcPairs;
      std::vector<float> imageStore(s.imageFloats + 2 * guard, nan);
      float* image = imageStore.data() + guard;
      for (int iy = 0; iy < g.rh; ++iy)
      {
        for (int u = 0; u < s.imagePitch; ++u)
        {
          for (int p = 0; p < kTcPairs; ++p)
          {
            const bool has = j0 + p < g.m && u < g.rw;
            image[tcImageStageIndex(s, iy, u, p)] = has
              ? rights[static_cast<std::size_t>(g.rightOf(li, j0 + p)) * g.rw * g.rh +
                  static_cast<std::size_t>(iy) * g.rw + u]
              : 0.0f;
          }
        }
      }
      std::vector<TcSplitWord> leftStore(s.leftWords + 2 * guard, TcSplitWord{ nanBits, nanBits });
      TcSplitWord* left = leftStore.data() + guard;
      for (int i = 0; i < s.leftWords; ++i)
      {
        const int ty = i / s.leftPitch, e = i % s.leftPitch - kTcPad;
        const float v = e >= 0 && e < g.lw ? lefts[static_cast<std::size_t>(li) * g.lw * g.lh +
                                               static_cast<std::size_t>(ty) * g.lw + e]
                                           : 0.0f;
        tcSplit(v, left[i].big, left[i].small);
      }
      // The band row body's template words (tcBandWord), between NaN guards like the others.
      const bool band = tcBandApplies(g, s);
      std::vector<TcBandWord> bandStore(
        band ? s.leftWords + 2 * guard : 0, TcBandWord{ nanBits, nanBits, nanBits, nanBits });
      TcBandWord* bandLeft = band ? bandStore.data() + guard : nullptr;
      for (int i = 0; band && i < s.leftWords; ++i)
      {
        const int ty = i / s.leftPitch, e = i % s.leftPitch - kTcPad;
        bandLeft[i] = tcBandWord(lefts.data() + static_cast<std::size_t>(li) * g.lw * g.lh +
            static_cast<std::size_t>(ty) * g.lw,
          g.lw,
          e);
      }
      for (int task = 0; task < s.tasks; ++task)
      {
        const TcTask t = tcTask(g, s, task);
        if (j0 + kTcHalf * t.h >= g.m)
        {
          continue;
        }
        std::vector<MmaCall> calls[32];
        for (int lane = 0; lane < 32; ++lane)
        {
          Recorder r{ &calls[lane] };
          if (band)
          {
            tcTaskProductsBand(s, image, bandLeft, t, lane, r); // what the kernel runs then
          }
          else
          {
            tcTaskProducts(g, s, image, left, t, lane, r);
          }
        }
        double acc[32][kTcTilesN][4] = {};
        for (std::size_t step = 0; step < calls[0].size(); ++step)
        {
          double a[16][8], b[8][8];
          const int j = calls[0][step].j;
          for (int lane = 0; lane < 32; ++lane)
          {
            if (calls[lane].size() != calls[0].size() || calls[lane][step].j != j)
            {
              problem = "lanes made different mma calls";
              return out;
            }
            const MmaCall& c = calls[lane][step];
            const int gr = lane / 4, tg = lane % 4;
            a[gr][tg] = fromBits(c.a[0]);
            a[gr + 8][tg] = fromBits(c.a[1]);
            a[gr][tg + 4] = fromBits(c.a[2]);
            a[gr + 8][tg + 4] = fromBits(c.a[3]);
            b[tg][gr] = fromBits(c.b[0]);
            b[tg + 4][gr] = fromBits(c.b[1]);
          }
          for (int lane = 0; lane < 32; ++lane)
          {
            const int gr = lane / 4, tg = lane % 4;
            const int rows[4] = { gr, gr, gr + 8, gr + 8 };
            const int cols[4] = { 2 * tg, 2 * tg + 1, 2 * tg, 2 * tg + 1 };
            for (int c = 0; c < 4; ++c)
            {
              double d = 0;
              for (int k = 0; k < 8; ++k)
              {
                d += a[rows[c]][k] * b[k][cols[c]];
              }
              acc[lane][j][c] += d;
            }
          }
        }
        for (int lane = 0; lane < 32; ++lane)
        {
          for (int j = 0; j < kTcTilesN; ++j)
          {
            for (int c = 0; c < 4; ++c)
            {
              int pair, dx;
              tcAccTarget(t, lane, j, c, pair, dx);
              if (j0 + pair < g.m && dx < g.x0 + g.ww)
              {
                out[(static_cast<std::size_t>(li) * g.m + j0 + pair) * mapSize +
                  static_cast<std::size_t>(t.dy - g.y0) * g.ww + (dx - g.x0)] =
                  static_cast<float>(acc[lane][j][c]);
              }
            }
          }
        }
      }
    }
  }
  return out;
}

struct MmaCallF16
{
  int j;
  std::uint32_t a[2], b;
};

struct RecorderF16
{
  std::vector<MmaCallF16>* calls;
  void operator()(int j, const std::uint32_t a[2], std::uint32_t b)
  {
    calls->push_back({ j, { a[0], a[1] }, b });
  }
};

float lowHalf(std::uint32_t r)
{
  return tcHalfValueHost(static_cast<std::uint16_t>(r & 0xffffu));
}
float highHalf(std::uint32_t r)
{
  return tcHalfValueHost(static_cast<std::uint16_t>(r >> 16));
}

/**
 * The FP16 kernel on the host, like emulate(): its scaling (tcF16Exponent of each matrix's
 * largest |value|), staged words (tcHalfImageStageIndex, tcLeftIndex), per-lane loads and
 * accumulator targets; the mma from the PTX ISA's m16n8k8 .f16 tables (A: a0a1 (g, 2t .. 2t + 1),
 * a2a3 (g + 8, 2t .. 2t + 1); B: b0b1 (2t .. 2t + 1, g); the lower half holds the lower index;
 * C as for .tf32), products in double, maps scaled back.
 */
std::vector<float> emulateF16(const Batch& batch,
  const LagWindow& window,
  const std::vector<float>& lefts,
  const std::vector<float>& rights,
  std::string& problem)
{
  const Geometry g = Geometry::of(batch, window);
  const TcLayout s = tcLayout(g);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const TcHalfWord poison{ 0x7e007e00u, 0x7e007e00u }; // FP16 NaNs
  const int guard = 4096;
  std::vector<float> out(batch.pairs() * window.size(), nan);
  const std::size_t mapSize = window.size();
  const std::size_t rightSize = static_cast<std::size_t>(g.rw) * g.rh;
  auto largest = [](const float* x, std::size_t n)
  {
    float m = 0;
    for (std::size_t i = 0; i < n; ++i)
    {
      m = std::max(m, std::abs(x[i]));
    }
    return m;
  };
  for (int li = 0; li < g.n; ++li)
  {
    const float* left = lefts.data() + static_cast<std::size_t>(li) * g.lw * g.lh;
    const int eL = tcF16Exponent(largest(left, static_cast<std::size_t>(g.lw) * g.lh));
    for (int group = 0; group < s.groupsPerLeft; ++group)
    {
      const int j0 = group * kTcPairs;
      int eR[kTcPairs] = {};
      std::vector<TcHalfWord> imageStore(s.imageFloats / 2 + 2 * guard, poison);
      TcHalfWord* image = imageStore.data() + guard;
      for (int p = 0; p < kTcPairs; ++p)
      {
        const bool has = j0 + p < g.m;
        const float* r = has ? rights.data() + g.rightOf(li, j0 + p) * rightSize : nullptr;
        eR[p] = has ? tcF16Exponent(largest(r, rightSize)) : 0;
        for (int iy = 0; iy < g.rh; ++iy)
        {
          for (int c = 0; c < s.imagePitch / 2; ++c)
          {
            const int u = 2 * c;
            const float a = has && u < g.rw ? r[iy * g.rw + u] : 0.0f;
            const float b = has && u + 1 < g.rw ? r[iy * g.rw + u + 1] : 0.0f;
            image[tcHalfImageStageIndex(s, iy, c, p)] =
              tcHalfWord(std::ldexp(a, eR[p]), std::ldexp(b, eR[p]));
          }
        }
      }
      std::vector<TcHalfWord> leftStore(s.leftWords + 2 * guard, poison);
      TcHalfWord* staged = leftStore.data() + guard;
      for (int i = 0; i < s.leftWords; ++i)
      {
        const int ty = i / s.leftPitch, e = i % s.leftPitch - kTcPad;
        const float a = e >= 0 && e < g.lw ? left[ty * g.lw + e] : 0.0f;
        const float b = e + 1 >= 0 && e + 1 < g.lw ? left[ty * g.lw + e + 1] : 0.0f;
        staged[i] = tcHalfWord(std::ldexp(a, eL), std::ldexp(b, eL));
      }
      for (int task = 0; task < s.tasks; ++task)
      {
        const TcTask t = tcTask(g, s, task);
        if (j0 + kTcHalf * t.h >= g.m)
        {
          continue;
        }
        std::vector<MmaCallF16> calls[32];
        for (int lane = 0; lane < 32; ++lane)
        {
          RecorderF16 r{ &calls[lane] };
          tcTaskProducts(g, s, image, staged, t, lane, r);
        }
        double acc[32][kTcTilesN][4] = {};
        for (std::size_t step = 0; step < calls[0].size(); ++step)
        {
          double a[16][8], b[8][8];
          const int j = calls[0][step].j;
          for (int lane = 0; lane < 32; ++lane)
          {
            if (calls[lane].size() != calls[0].size() || calls[lane][step].j != j)
            {
              problem = "lanes made different mma calls";
              return out;
            }
            const MmaCallF16& c = calls[lane][step];
            const int gr = lane / 4, tg = lane % 4;
            a[gr][2 * tg] = lowHalf(c.a[0]);
            a[gr][2 * tg + 1] = highHalf(c.a[0]);
            a[gr + 8][2 * tg] = lowHalf(c.a[1]);
            a[gr + 8][2 * tg + 1] = highHalf(c.a[1]);
            b[2 * tg][gr] = lowHalf(c.b);
            b[2 * tg + 1][gr] = highHalf(c.b);
          }
          for (int lane = 0; lane < 32; ++lane)
          {
            const int gr = lane / 4, tg = lane % 4;
            const int rows[4] = { gr, gr, gr + 8, gr + 8 };
            const int cols[4] = { 2 * tg, 2 * tg + 1, 2 * tg, 2 * tg + 1 };
            for (int c = 0; c < 4; ++c)
            {
              double d = 0;
              for (int k = 0; k < 8; ++k)
              {
                d += a[rows[c]][k] * b[k][cols[c]];
              }
              acc[lane][j][c] += d;
            }
          }
        }
        for (int lane = 0; lane < 32; ++lane)
        {
          for (int j = 0; j < kTcTilesN; ++j)
          {
            for (int c = 0; c < 4; ++c)
            {
              int pair, dx;
              tcAccTarget(t, lane, j, c, pair, dx);
              if (j0 + pair < g.m && dx < g.x0 + g.ww)
              {
                out[(static_cast<std::size_t>(li) * g.m + j0 + pair) * mapSize +
                  static_cast<std::size_t>(t.dy - g.y0) * g.ww + (dx - g.x0)] =
                  static_cast<float>(std::ldexp(acc[lane][j][c], -(eL + eR[pair])));
              }
            }
          }
        }
      }
    }
  }
  return out;
}

/// Every map of `out` against the reference, within `relative` of the lag's sum of |products|
/// (plus 1e-30 so that lags without overlap must be exactly 0 up to that).
void expectMaps(const Case& c,
  Mode mode,
  const LagWindow& window,
  const std::vector<float>& l,
  const std::vector<float>& r,
  const std::vector<float>& out,
  double relative,
  const std::string& what)
{
  const Batch batch{ c.shape, c.n, c.m, c.left, c.right };
  for (std::size_t p = 0; p < batch.pairs(); ++p)
  {
    const std::size_t i = p / c.m, jr = batch.rightOf(i, p % c.m);
    std::vector<double> left(l.begin() + i * c.left.count(), l.begin() + (i + 1) * c.left.count());
    std::vector<double> right(
      r.begin() + jr * c.right.count(), r.begin() + (jr + 1) * c.right.count());
    const auto ref = reference::correlateOne(left,
      c.left.width,
      c.left.height,
      right,
      c.right.width,
      c.right.height,
      window,
      Normalization::None,
      0.25);
    for (auto& x : left)
    {
      x = std::abs(x);
    }
    for (auto& x : right)
    {
      x = std::abs(x);
    }
    const auto scale = reference::correlateOne(left,
      c.left.width,
      c.left.height,
      right,
      c.right.width,
      c.right.height,
      window,
      Normalization::None,
      0.25);
    for (std::size_t k = 0; k < window.size(); ++k)
    {
      ASSERT_NEAR(out[p * window.size() + k], ref[k], relative * scale[k] + 1e-30)
        << what << " " << describe(c, mode) << " pair " << p << " lag ("
        << window.x0 + static_cast<int>(k % window.width) << ", "
        << window.y0 + static_cast<int>(k / window.width) << ")";
    }
  }
}

/// 3xTF32 with float accumulation: about 1e-6 of the sum of |products| (the dropped small*small
/// terms and the splits' rounding 3 x 2^-22, the accumulation's rounding a few 2^-24 per step).
constexpr double kTensorTolerance = 1e-5;

TEST(TensorTf32Emulation, FragmentMappingMatchesBruteForce)
{
  unsigned seed = 100;
  for (const Case& c : cases())
  {
    for (Mode mode : { Mode::Full, Mode::Same, Mode::Valid })
    {
      const Batch batch{ c.shape, c.n, c.m, c.left, c.right };
      LagWindow window;
      if (!lagWindow(batch, mode, window).ok())
      {
        continue;
      }
      const auto ld = reference::randomMatrices(batch.leftCount() * c.left.count(), seed++);
      const auto rd = reference::randomMatrices(batch.rightCount() * c.right.count(), seed++);
      const std::vector<float> l(ld.begin(), ld.end()), r(rd.begin(), rd.end());
      for (bool f16 : { false, true })
      {
        std::string problem;
        const auto out =
          f16 ? emulateF16(batch, window, l, r, problem) : emulate(batch, window, l, r, problem);
        ASSERT_TRUE(problem.empty()) << problem << " " << describe(c, mode);
        expectMaps(
          c, mode, window, l, r, out, kTensorTolerance, f16 ? "f16 emulation" : "emulation");
        if (HasFatalFailure())
        {
          return;
        }
      }
    }
  }
}

// A wide window (one-to-one 70 x 3 against 90 x 4, full: 159 lags, three lag chunks; 90 columns,
// three column chunks) and the bar's shape in small (1 x 40 of 32 x 32, full).
TEST(TensorTf32Emulation, SeveralChunks)
{
  const Case wide{ Shape::OneToOne, 1, 1, { 70, 3 }, { 90, 4 } };
  const Case bar{ Shape::OneToMany, 1, 40, { 32, 32 }, { 32, 32 } };
  unsigned seed = 300;
  for (const Case& c : { wide, bar })
  {
    const Batch batch{ c.shape, c.n, c.m, c.left, c.right };
    LagWindow window;
    ASSERT_TRUE(lagWindow(batch, Mode::Full, window).ok());
    const auto ld = reference::randomMatrices(batch.leftCount() * c.left.count(), seed++);
    const auto rd = reference::randomMatrices(batch.rightCount() * c.right.count(), seed++);
    const std::vector<float> l(ld.begin(), ld.end()), r(rd.begin(), rd.end());
    for (bool f16 : { false, true })
    {
      std::string problem;
      const auto out =
        f16 ? emulateF16(batch, window, l, r, problem) : emulate(batch, window, l, r, problem);
      ASSERT_TRUE(problem.empty()) << problem;
      expectMaps(
        c, Mode::Full, window, l, r, out, kTensorTolerance, f16 ? "f16 emulation" : "emulation");
    }
  }
}

// The band row body runs exactly where tcBandApplies: the bar's shape in full mode
// (any batch), not in same / valid mode, not for other sizes; its truncating split keeps x within
// 2^-20 |x| with the low 13 bits of both parts zero; and the emulated band launch agrees with the
// reference on the bar's shape with two groups and an empty M half (the other emulation tests
// run it for their 32 x 32 full cases too).
TEST(TensorTf32Emulation, BandRowBody)
{
  const auto applies = [](Size2 left, Size2 right, Mode mode)
  {
    const Batch batch{ Shape::OneToMany, 1, 40, left, right };
    LagWindow window;
    EXPECT_TRUE(lagWindow(batch, mode, window).ok());
    const Geometry g = Geometry::of(batch, window);
    return tcBandApplies(g, tcLayout(g));
  };
  EXPECT_TRUE(applies({ 32, 32 }, { 32, 32 }, Mode::Full));
  EXPECT_TRUE(applies({ 32, 20 }, { 30, 9 }, Mode::Full));
  EXPECT_FALSE(applies({ 32, 32 }, { 32, 32 }, Mode::Same));
  EXPECT_FALSE(applies({ 32, 32 }, { 32, 32 }, Mode::Valid));
  EXPECT_FALSE(applies({ 16, 16 }, { 16, 16 }, Mode::Full));
  EXPECT_FALSE(applies({ 32, 32 }, { 40, 32 }, Mode::Full));
  EXPECT_FALSE(applies({ 32, 32 }, { 20, 32 }, Mode::Full));
  unsigned seed = 900;
  for (float x : { 1.0f, -3.14159274f, 1e-30f, 123456.789f, -7.3e-5f })
  {
    std::uint32_t big, small;
    tcSplitTrunc(x, big, small);
    EXPECT_EQ(big & 0x1fffu, 0u);
    EXPECT_EQ(small & 0x1fffu, 0u);
    EXPECT_LE(std::abs(static_cast<double>(x) - fromBits(big) - fromBits(small)),
      std::ldexp(std::abs(static_cast<double>(x)), -20));
  }
  const Case c{ Shape::OneToMany, 1, 37, { 32, 32 }, { 31, 27 } };
  const Batch batch{ c.shape, c.n, c.m, c.left, c.right };
  LagWindow window;
  ASSERT_TRUE(lagWindow(batch, Mode::Full, window).ok());
  ASSERT_TRUE(tcBandApplies(Geometry::of(batch, window), tcLayout(Geometry::of(batch, window))));
  const auto ld = reference::randomMatrices(batch.leftCount() * c.left.count(), seed++);
  const auto rd = reference::randomMatrices(batch.rightCount() * c.right.count(), seed++);
  const std::vector<float> l(ld.begin(), ld.end()), r(rd.begin(), rd.end());
  std::string problem;
  const auto out = emulate(batch, window, l, r, problem);
  ASSERT_TRUE(problem.empty()) << problem;
  expectMaps(c, Mode::Full, window, l, r, out, kTensorTolerance, "band emulation");
}

// The layout's claims: a half warp's 8-byte image loads (g = 0..3 or 4..7, t = 0..3, one M
// half) hit 16 different 8-byte bank pairs; the staging's 32 lanes (32 columns of one pair) hit
// each bank twice at most;
// and the TF32 split reproduces x to 2^-22.
TEST(TensorTf32Emulation, ConflictFreeLayoutAndSplit)
{
  Batch batch{ Shape::OneToMany, 1, 64, { 32, 32 }, { 32, 32 } };
  LagWindow window;
  ASSERT_TRUE(lagWindow(batch, Mode::Full, window).ok());
  const TcLayout s = tcLayout(Geometry::of(batch, window));
  for (int iy = 0; iy < 3; ++iy)
  {
    for (int u0 = 0; u0 < 32; u0 += 4)
    {
      for (int h = 0; h < 2; ++h)
      {
        for (int half = 0; half < 2; ++half)
        {
          std::vector<int> used(16, 0);
          for (int lane = 16 * half; lane < 16 * half + 16; ++lane)
          {
            const int index = tcImageIndex(s, iy, u0 + lane % 4, lane / 4, h);
            ASSERT_EQ(index % 2, 0) << "8-byte aligned";
            ++used[(index / 2) % 16];
          }
          for (int b = 0; b < 16; ++b)
          {
            EXPECT_EQ(used[b], 1) << "bank pair " << b << " u0 " << u0 << " h " << h;
          }
        }
      }
    }
    for (int p = 0; p < 32; ++p)
    {
      std::vector<int> banks(32, 0);
      for (int u = 0; u < 32; ++u)
      {
        ++banks[tcImageStageIndex(s, iy, u, p) % 32];
      }
      for (int b = 0; b < 32; ++b)
      {
        EXPECT_LE(banks[b], 2) << "staging bank " << b << " pair " << p;
      }
    }
  }
  const auto values = reference::randomMatrices(1000, 7);
  for (double v : values)
  {
    const float x = static_cast<float>(v * 1e3);
    std::uint32_t big, small;
    tcSplit(x, big, small);
    EXPECT_EQ(big & 0x1fffu, 0u);
    EXPECT_EQ(small & 0x1fffu, 0u);
    EXPECT_LE(std::abs(static_cast<double>(fromBits(big)) - x), std::ldexp(std::abs(x), -11));
    EXPECT_LE(std::abs(static_cast<double>(fromBits(big)) + fromBits(small) - x),
      std::ldexp(std::abs(x), -21));
  }
}

// On the GPU, for both tensor kernels: the maps against the reference for every case and mode (raw
// sums within 1e-5 of each lag's sum of |products|), and with NCC / ZNCC through the public call;
// the kernel that ran is the tensor kernel wherever its staging fits.
// The FP16 kernel's pieces: the host model of __float2half_rn on known values, the scaling
// exponent, the split's accuracy in FP16's normal range, and the staged image layout (a half
// warp's 8-byte loads hit 16 different bank pairs; the raw staging's 32 lanes hit 32 banks).
TEST(TensorF16Emulation, HalvesScalingAndLayout)
{
  EXPECT_EQ(tcHalfBitsHost(1.0f), 0x3c00u);
  EXPECT_EQ(tcHalfBitsHost(-2.0f), 0xc000u);
  EXPECT_EQ(tcHalfBitsHost(65504.0f), 0x7bffu);
  EXPECT_EQ(tcHalfBitsHost(std::ldexp(1.0f, -14)), 0x0400u);
  EXPECT_EQ(tcHalfBitsHost(std::ldexp(1.0f, -24)), 0x0001u);
  EXPECT_EQ(tcHalfBitsHost(1.0f + std::ldexp(1.0f, -11)), 0x3c00u) << "tie to even";
  EXPECT_EQ(tcHalfBitsHost(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02u) << "tie to even";
  EXPECT_EQ(tcHalfValueHost(0x3555u), static_cast<float>(1365.0 / 4096.0));
  EXPECT_EQ(tcF16Exponent(1.0f), 14);
  EXPECT_EQ(tcF16Exponent(0.0f), 0);
  for (float m : { 1e-20f, 3.0f, 0.7f, 1e20f, 16384.0f, 32767.0f })
  {
    const float scaled = std::ldexp(m, tcF16Exponent(m));
    EXPECT_GE(scaled, 16384.0f) << m;
    EXPECT_LT(scaled, 32768.0f) << m;
  }
  const auto values = reference::randomMatrices(1000, 9);
  for (double v : values)
  {
    const float x = static_cast<float>(std::ldexp(v, 14));
    if (std::abs(x) < 0.125f)
    {
      continue; // below 2^-17 of the range: FP16 subnormals (absolute accuracy only)
    }
    std::uint16_t hi, lo;
    tcSplitF16(x, hi, lo);
    const double back = static_cast<double>(tcHalfValueHost(hi)) + tcHalfValueHost(lo);
    EXPECT_LE(std::abs(back - x), std::ldexp(std::abs(x), -21)) << x;
  }
  Batch batch{ Shape::OneToMany, 1, 64, { 32, 32 }, { 32, 32 } };
  LagWindow window;
  ASSERT_TRUE(lagWindow(batch, Mode::Full, window).ok());
  const TcLayout s = tcLayout(Geometry::of(batch, window));
  for (int iy = 0; iy < 3; ++iy)
  {
    for (int c0 = 0; c0 < 16; c0 += 4)
    {
      for (int h = 0; h < 2; ++h)
      {
        for (int hi = 0; hi < 2; ++hi)
        {
          for (int half = 0; half < 2; ++half)
          {
            std::vector<int> used(16, 0);
            for (int lane = 16 * half; lane < 16 * half + 16; ++lane)
            {
              ++used[tcHalfImageIndex(s, iy, c0 + lane % 4, lane / 4, h, hi) % 16];
            }
            for (int b = 0; b < 16; ++b)
            {
              EXPECT_EQ(used[b], 1) << "bank pair " << b << " c0 " << c0;
            }
          }
        }
      }
    }
    for (int p = 0; p < 32; ++p)
    {
      std::vector<int> banks(32, 0);
      for (int u = 0; u < 32; ++u)
      {
        ++banks[(2 * tcHalfImageStageIndex(s, iy, u / 2, p) + u % 2) % 32];
      }
      for (int b = 0; b < 32; ++b)
      {
        EXPECT_EQ(banks[b], 1) << "raw staging bank " << b << " pair " << p;
      }
    }
  }
}

DirectOptions tensorOptions(DirectKernel kernel, int warps = 16)
{
  return kernel == DirectKernel::TensorTf32 ? DirectOptions::tensorTf32(warps)
                                            : DirectOptions::tensorF16(warps);
}

const DirectKernel kTensorKernels[] = { DirectKernel::TensorTf32, DirectKernel::TensorF16 };

TEST(TensorKernels, MatchesReferenceOnAllShapesAndModes)
{
  std::string why;
  if (!cudaAvailable(&why))
  {
    GTEST_SKIP() << "CUDA not available: " << why;
  }
  unsigned seed = 500;
  for (DirectKernel kernel : kTensorKernels)
    for (const Case& c : cases())
    {
      for (Mode mode : { Mode::Full, Mode::Same, Mode::Valid })
      {
        const Batch batch{ c.shape, c.n, c.m, c.left, c.right };
        LagWindow window;
        if (!lagWindow(batch, mode, window).ok())
        {
          continue;
        }
        const auto ld = reference::randomMatrices(batch.leftCount() * c.left.count(), seed++);
        const auto rd = reference::randomMatrices(batch.rightCount() * c.right.count(), seed++);
        const std::vector<float> l(ld.begin(), ld.end()), r(rd.begin(), rd.end());
        for (int warps : { 16, 5 })
        {
          std::vector<float> out(batch.pairs() * window.size(), -999.0f);
          ExecutionOptions options;
          options.backend = Backend::CUDA;
          options.algorithm = Algorithm::Direct;
          options.tuning.direct = tensorOptions(kernel, warps);
          options.strictBackend = true;
          options.tuning.deviceOnlyKernelTiming = warps == 5;
          ExecutionReport report;
          const Status st = correlate(
            { batch, l.data(), r.data(), mode, Normalization::None }, out.data(), options, &report);
          ASSERT_TRUE(st.ok()) << st.message();
          EXPECT_EQ(report.kernelUsed, kernel) << describe(c, mode);
          EXPECT_GT(report.kernelSeconds, 0.0);
          expectMaps(c, mode, window, l, r, out, kTensorTolerance, toString(kernel));
          if (HasFatalFailure())
          {
            return;
          }
        }
        // Normalised maps go through the same host pass as every kernel's: ZNCC within 2e-3 (a
        // difference of sums in float), NCC within 2e-5, like the FFMA kernels' tests.
        for (Normalization norm : { Normalization::NCC, Normalization::ZNCC })
        {
          std::vector<float> out(batch.pairs() * window.size());
          ExecutionOptions options;
          options.backend = Backend::CUDA;
          options.algorithm = Algorithm::Direct;
          options.tuning.direct = tensorOptions(kernel);
          options.strictBackend = true;
          ASSERT_TRUE(
            correlate({ batch, l.data(), r.data(), mode, norm }, out.data(), options).ok());
          for (std::size_t p = 0; p < batch.pairs(); ++p)
          {
            const std::size_t i = p / c.m, jr = batch.rightOf(i, p % c.m);
            const std::vector<double> left(
              l.begin() + i * c.left.count(), l.begin() + (i + 1) * c.left.count());
            const std::vector<double> right(
              r.begin() + jr * c.right.count(), r.begin() + (jr + 1) * c.right.count());
            const auto ref = reference::correlateOne(left,
              c.left.width,
              c.left.height,
              right,
              c.right.width,
              c.right.height,
              window,
              norm,
              options.minOverlapFraction);
            const double tol = norm == Normalization::ZNCC ? 2e-3 : 2e-5;
            for (std::size_t k = 0; k < window.size(); ++k)
            {
              ASSERT_NEAR(out[p * window.size() + k], ref[k], tol)
                << toString(kernel) << " " << toString(norm) << " " << describe(c, mode) << " pair "
                << p << " lag " << k;
            }
          }
        }
      }
    }
}

// A small case for compute-sanitizer (memcheck, racecheck): two groups of 32 pairs, the second
// with an empty M half, every mode, odd sizes; maps against the reference as above.
TEST(TensorKernels, SanitizerCase)
{
  std::string why;
  if (!cudaAvailable(&why))
  {
    GTEST_SKIP() << "CUDA not available: " << why;
  }
  // The second case is the bar's shape (full: TensorTf32's band row body) with 37 pairs.
  const Case odd{ Shape::OneToMany, 1, 37, { 11, 9 }, { 13, 10 } };
  const Case band{ Shape::OneToMany, 1, 37, { 32, 32 }, { 32, 32 } };
  unsigned seed = 700;
  for (const Case& c : { odd, band })
    for (DirectKernel kernel : kTensorKernels)
      for (Mode mode : { Mode::Full, Mode::Same, Mode::Valid })
      {
        const Batch batch{ c.shape, c.n, c.m, c.left, c.right };
        LagWindow window;
        ASSERT_TRUE(lagWindow(batch, mode, window).ok());
        const auto ld = reference::randomMatrices(batch.leftCount() * c.left.count(), seed++);
        const auto rd = reference::randomMatrices(batch.rightCount() * c.right.count(), seed++);
        const std::vector<float> l(ld.begin(), ld.end()), r(rd.begin(), rd.end());
        std::vector<float> out(batch.pairs() * window.size(), -999.0f);
        ExecutionOptions options;
        options.backend = Backend::CUDA;
        options.algorithm = Algorithm::Direct;
        options.tuning.direct = tensorOptions(kernel, 4);
        options.strictBackend = true;
        ExecutionReport report;
        const Status st = correlate(
          { batch, l.data(), r.data(), mode, Normalization::None }, out.data(), options, &report);
        ASSERT_TRUE(st.ok()) << st.message();
        EXPECT_EQ(report.kernelUsed, kernel);
        expectMaps(c, mode, window, l, r, out, kTensorTolerance, toString(kernel));
      }
}

// DirectKernel::Auto on the bar's shape (float, one-to-many 32 x 32 x128 and x1024, full):
// TensorTf32's band row body runs, and the maps match the reference within the
// tensor bound; in same mode (no band) Auto keeps its FFMA kernels.
TEST(TensorKernels, AutoRunsBandOnBarShape)
{
  std::string why;
  if (!cudaAvailable(&why))
  {
    GTEST_SKIP() << "CUDA not available: " << why;
  }
  unsigned seed = 811;
  for (int m : { 128, 1024 })
  {
    const Case c{ Shape::OneToMany, 1, m, { 32, 32 }, { 32, 32 } };
    const Batch batch{ c.shape, c.n, c.m, c.left, c.right };
    const auto ld = reference::randomMatrices(batch.leftCount() * c.left.count(), seed++);
    const auto rd = reference::randomMatrices(batch.rightCount() * c.right.count(), seed++);
    const std::vector<float> l(ld.begin(), ld.end()), r(rd.begin(), rd.end());
    for (Mode mode : { Mode::Full, Mode::Same })
    {
      LagWindow window;
      ASSERT_TRUE(lagWindow(batch, mode, window).ok());
      std::vector<float> out(batch.pairs() * window.size(), -999.0f);
      ExecutionOptions options;
      options.backend = Backend::CUDA;
      options.algorithm = Algorithm::Direct;
      options.strictBackend = true;
      ExecutionReport report;
      const Status st = correlate(
        { batch, l.data(), r.data(), mode, Normalization::None }, out.data(), options, &report);
      ASSERT_TRUE(st.ok()) << st.message();
      const DirectKernel same = m >= 1024 ? DirectKernel::PairPerLane : DirectKernel::SplitTiled;
      EXPECT_EQ(report.kernelUsed, mode == Mode::Full ? DirectKernel::TensorTf32 : same) << m;
      // Every 61st pair against the reference (the maps of the others are the same code).
      const Case one{ Shape::OneToOne, 1, 1, c.left, c.right };
      for (std::size_t p = 0; p < batch.pairs(); p += 61)
      {
        const std::vector<float> rp(
          r.begin() + p * c.right.count(), r.begin() + (p + 1) * c.right.count());
        const std::vector<float> op(
          out.begin() + p * window.size(), out.begin() + (p + 1) * window.size());
        expectMaps(one, mode, window, l, rp, op, kTensorTolerance, "auto");
        if (HasFatalFailure())
        {
          return;
        }
      }
    }
  }
}

// Cases the tensor kernels do not take: double, and rights too large for their staging (32
// rights of 80 x 80 floats, 800 KiB). They give way to Auto's choice, say which kernel ran, and
// the maps still match the reference.
TEST(TensorKernels, FallBackForDoubleAndLargeSizes)
{
  std::string why;
  if (!cudaAvailable(&why))
  {
    GTEST_SKIP() << "CUDA not available: " << why;
  }
  for (DirectKernel kernel : kTensorKernels)
  {
    ExecutionOptions options;
    options.backend = Backend::CUDA;
    options.algorithm = Algorithm::Direct;
    options.tuning.direct = tensorOptions(kernel);
    options.strictBackend = true;
    {
      const Case c{ Shape::OneToMany, 1, 7, { 9, 8 }, { 11, 10 } };
      const Batch batch{ c.shape, c.n, c.m, c.left, c.right };
      LagWindow window;
      ASSERT_TRUE(lagWindow(batch, Mode::Full, window).ok());
      const auto l = reference::randomMatrices(batch.leftCount() * c.left.count(), 41);
      const auto r = reference::randomMatrices(batch.rightCount() * c.right.count(), 42);
      std::vector<double> out(batch.pairs() * window.size());
      ExecutionReport report;
      const Status st = correlate({ batch, l.data(), r.data(), Mode::Full, Normalization::None },
        out.data(),
        options,
        &report);
      ASSERT_TRUE(st.ok()) << st.message();
      EXPECT_NE(report.kernelUsed, kernel) << "double runs the FFMA kernels";
      EXPECT_NE(report.kernelUsed, DirectKernel::Auto);
      for (std::size_t p = 0; p < batch.pairs(); ++p)
      {
        const std::vector<double> left(l.begin(), l.end());
        const std::vector<double> right(
          r.begin() + p * c.right.count(), r.begin() + (p + 1) * c.right.count());
        const auto ref =
          reference::correlateOne(left, 9, 8, right, 11, 10, window, Normalization::None, 0.25);
        for (std::size_t k = 0; k < window.size(); ++k)
        {
          ASSERT_NEAR(out[p * window.size() + k], ref[k], 1e-7) << "pair " << p;
        }
      }
    }
    {
      const Case c{ Shape::OneToMany, 1, 3, { 20, 20 }, { 80, 80 } };
      const Batch batch{ c.shape, c.n, c.m, c.left, c.right };
      LagWindow window;
      ASSERT_TRUE(lagWindow(batch, Mode::Valid, window).ok());
      const TcLayout layout = tcLayout(Geometry::of(batch, window));
      ASSERT_GT(layout.sharedBytes, 227u * 1024u) << "larger than any GPU's shared memory";
      const auto ld = reference::randomMatrices(batch.leftCount() * c.left.count(), 43);
      const auto rd = reference::randomMatrices(batch.rightCount() * c.right.count(), 44);
      const std::vector<float> l(ld.begin(), ld.end()), r(rd.begin(), rd.end());
      std::vector<float> out(batch.pairs() * window.size());
      ExecutionReport report;
      const Status st = correlate({ batch, l.data(), r.data(), Mode::Valid, Normalization::None },
        out.data(),
        options,
        &report);
      ASSERT_TRUE(st.ok()) << st.message();
      EXPECT_NE(report.kernelUsed, kernel);
      EXPECT_NE(report.kernelUsed, DirectKernel::Auto);
      expectMaps(c, Mode::Valid, window, l, r, out, 2e-5, "fall-back");
    }
  }
}

} // namespace
