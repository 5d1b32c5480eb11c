// Bad input gives a clear status (never a crash), and the backend / algorithm choices say what
// ran: CPU fall-back with a note, strict mode failing instead, Auto agreeing with the reference.
#include "reference.h"

#include <gtest/gtest.h>

#include <limits>

using namespace correlation;

namespace
{
Status run(const Batch& batch, Mode mode, const ExecutionOptions& options = {}, double poison = 0)
{
  std::vector<double> l(batch.leftCount() * batch.left.count(), 1.0);
  std::vector<double> r(batch.rightCount() * batch.right.count(), 1.0);
  if (poison != 0 && !l.empty())
  {
    l[l.size() / 2] = poison;
  }
  LagWindow w;
  Status s = lagWindow(batch, mode, w);
  std::vector<double> out(s.ok() ? batch.pairs() * w.size() : 1);
  return correlate({ batch, l.data(), r.data(), mode, Normalization::None }, out.data(), options);
}

TEST(Errors, EmptyMatrix)
{
  const Status s = run(Batch::oneToOne({ 0, 5 }, { 4, 4 }), Mode::Full);
  EXPECT_EQ(s.code(), ErrorCode::InvalidArgument);
  EXPECT_NE(s.message().find("empty"), std::string::npos) << s.message();
}

TEST(Errors, NaNAndInf)
{
  Status s = run(
    Batch::oneToOne({ 4, 4 }, { 4, 4 }), Mode::Full, {}, std::numeric_limits<double>::quiet_NaN());
  EXPECT_EQ(s.code(), ErrorCode::NonFinite);
  EXPECT_NE(s.message().find("left"), std::string::npos) << s.message();
  s = run(
    Batch::oneToOne({ 4, 4 }, { 4, 4 }), Mode::Full, {}, std::numeric_limits<double>::infinity());
  EXPECT_EQ(s.code(), ErrorCode::NonFinite);
}

TEST(Errors, ValidModeNeedsContainment)
{
  const Status s = run(Batch::oneToOne({ 8, 3 }, { 4, 6 }), Mode::Valid);
  EXPECT_EQ(s.code(), ErrorCode::InvalidArgument);
  EXPECT_NE(s.message().find("valid"), std::string::npos);
}

TEST(Errors, ShapeCounts)
{
  EXPECT_EQ(run({ Shape::OneToOne, 2, 1, { 4, 4 }, { 4, 4 } }, Mode::Full).code(),
    ErrorCode::InvalidArgument);
  EXPECT_EQ(run({ Shape::OneToMany, 2, 3, { 4, 4 }, { 4, 4 } }, Mode::Full).code(),
    ErrorCode::InvalidArgument);
  EXPECT_EQ(
    run({ Shape::NToM, 0, 3, { 4, 4 }, { 4, 4 } }, Mode::Full).code(), ErrorCode::InvalidArgument);
}

TEST(Errors, DirectOptionsOutOfRange)
{
  ExecutionOptions o;
  o.tuning.direct.shiftsPerThread = 3;
  EXPECT_EQ(
    run(Batch::oneToOne({ 4, 4 }, { 4, 4 }), Mode::Full, o).code(), ErrorCode::InvalidArgument);
  o = {};
  o.tuning.direct.warpsPerBlock = 0;
  EXPECT_EQ(
    run(Batch::oneToOne({ 4, 4 }, { 4, 4 }), Mode::Full, o).code(), ErrorCode::InvalidArgument);
  o = {};
  o.tuning.direct.pairsPerWarp = 3;
  EXPECT_EQ(
    run(Batch::oneToOne({ 4, 4 }, { 4, 4 }), Mode::Full, o).code(), ErrorCode::InvalidArgument);
  o = {};
  o.tuning.direct.tileRows = 6;
  EXPECT_EQ(
    run(Batch::oneToOne({ 4, 4 }, { 4, 4 }), Mode::Full, o).code(), ErrorCode::InvalidArgument);
  o = {};
  o.minOverlapFraction = 1.5;
  EXPECT_EQ(
    run(Batch::oneToOne({ 4, 4 }, { 4, 4 }), Mode::Full, o).code(), ErrorCode::InvalidArgument);
}

TEST(Errors, NullPointers)
{
  const Batch b = Batch::oneToOne({ 4, 4 }, { 4, 4 });
  std::vector<float> out(49);
  EXPECT_EQ(
    correlate<float>({ b, nullptr, nullptr, Mode::Full, Normalization::None }, out.data()).code(),
    ErrorCode::InvalidArgument);
}

TEST(Errors, WindowLargerThanImage)
{
  std::vector<float> a(40 * 30, 1.0f);
  WindowSpec spec;
  spec.windowSize = 24;
  spec.searchRadius = 4; // 32 px > 30 px
  DisplacementField f;
  const Status s = windowDisplacements(ImagePair{ a.data(), a.data(), { 40, 30 } }, spec, f);
  EXPECT_EQ(s.code(), ErrorCode::InvalidArgument);
  EXPECT_NE(s.message().find("larger than the image"), std::string::npos) << s.message();
  EXPECT_EQ(windowDisplacements(ImagePair{ a.data(), a.data(), { 0, 30 } }, spec, f).code(),
    ErrorCode::InvalidArgument);
  std::vector<float> nan = a;
  nan[5] = std::numeric_limits<float>::quiet_NaN();
  spec.windowSize = 8;
  EXPECT_EQ(windowDisplacements(ImagePair{ a.data(), nan.data(), { 40, 30 } }, spec, f).code(),
    ErrorCode::NonFinite);
}

TEST(Backends, CudaRequestFallsBackOrStrictFails)
{
  std::string why;
  if (cudaAvailable(&why))
  {
    GTEST_SKIP() << "a CUDA device is present: the fall-back cannot be observed";
  }
  EXPECT_FALSE(why.empty());
  const Batch b = Batch::oneToOne({ 5, 5 }, { 6, 6 });
  const auto l = reference::randomMatrices(25, 1), r = reference::randomMatrices(36, 2);
  LagWindow w;
  ASSERT_TRUE(lagWindow(b, Mode::Full, w).ok());
  std::vector<double> out(w.size());
  ExecutionOptions o;
  o.backend = Backend::CUDA;
  ExecutionReport report;
  ASSERT_TRUE(
    correlate({ b, l.data(), r.data(), Mode::Full, Normalization::None }, out.data(), o, &report)
      .ok());
  EXPECT_EQ(report.backendUsed, Backend::CPU);
  EXPECT_NE(report.note.find("not usable"), std::string::npos) << report.note;
  const auto ref = reference::correlateOne(l, 5, 5, r, 6, 6, w, Normalization::None, 0);
  for (std::size_t k = 0; k < w.size(); ++k)
  {
    EXPECT_NEAR(out[k], ref[k], 1e-12);
  }
  o.strictBackend = true;
  EXPECT_EQ(
    correlate({ b, l.data(), r.data(), Mode::Full, Normalization::None }, out.data(), o).code(),
    ErrorCode::BackendUnavailable);
}

TEST(Backends, FftUnavailableWithoutFftw)
{
  if (fftwCompiled())
  {
    GTEST_SKIP() << "built with FFTW3: the unavailable path cannot be observed";
  }
  ExecutionOptions o;
  o.backend = Backend::CPU;
  o.algorithm = Algorithm::FFT;
  const Status s = run(Batch::oneToOne({ 4, 4 }, { 4, 4 }), Mode::Full, o);
  EXPECT_EQ(s.code(), ErrorCode::BackendUnavailable);
  EXPECT_NE(s.message().find("FFTW"), std::string::npos);
}

TEST(Backends, AutoChoosesBySizeAndAgrees)
{
  // Tiny problems go direct; a large one-to-one goes FFT where an FFT is available.
  const Batch small = Batch::oneToOne({ 8, 8 }, { 8, 8 });
  LagWindow w;
  ASSERT_TRUE(lagWindow(small, Mode::Full, w).ok());
  EXPECT_EQ(autoAlgorithm(small, w, Backend::CPU), Algorithm::Direct);
  const Batch large = Batch::oneToOne({ 256, 256 }, { 256, 256 });
  LagWindow wl;
  ASSERT_TRUE(lagWindow(large, Mode::Full, wl).ok());
  EXPECT_EQ(autoAlgorithm(large, wl, Backend::CPU), Algorithm::FFT);
  EXPECT_EQ(directOperations(small, w), 64u * 64u); // sum over lags of overlaps = (8*8)^2

  const Batch mid = Batch::oneToOne({ 40, 40 }, { 40, 40 });
  LagWindow wm;
  ASSERT_TRUE(lagWindow(mid, Mode::Same, wm).ok());
  const auto l = reference::randomMatrices(1600, 3), r = reference::randomMatrices(1600, 4);
  std::vector<double> out(wm.size());
  ExecutionOptions o;
  o.backend = Backend::CPU;
  ExecutionReport report;
  ASSERT_TRUE(
    correlate({ mid, l.data(), r.data(), Mode::Same, Normalization::NCC }, out.data(), o, &report)
      .ok());
  const auto ref = reference::correlateOne(l, 40, 40, r, 40, 40, wm, Normalization::NCC, 0.25);
  for (std::size_t k = 0; k < wm.size(); ++k)
  {
    ASSERT_NEAR(out[k], ref[k], 1e-9) << toString(report.algorithmUsed);
  }
}

TEST(Backends, AbortStops)
{
  ExecutionOptions o;
  o.backend = Backend::CPU;
  o.algorithm = Algorithm::Direct;
  o.abort = []() { return true; };
  EXPECT_EQ(run(Batch::oneToOne({ 16, 16 }, { 16, 16 }), Mode::Full, o).code(), ErrorCode::Aborted);
}

TEST(Execution, ProgressRisesToOneOnTheCpu)
{
  const Batch b{ Shape::NToM, 4, 8, { 12, 12 }, { 12, 12 } };
  for (Algorithm algorithm : { Algorithm::Direct, Algorithm::FFT })
  {
    if (algorithm == Algorithm::FFT && !fftwCompiled())
    {
      continue;
    }
    ExecutionOptions o;
    o.backend = Backend::CPU;
    o.threads = 2;
    o.algorithm = algorithm;
    std::vector<double> seen;
    o.progress = [&](double f) { seen.push_back(f); };
    ASSERT_TRUE(run(b, Mode::Full, o).ok());
    ASSERT_GE(seen.size(), 2u) << toString(algorithm);
    EXPECT_DOUBLE_EQ(seen.back(), 1.0);
    for (std::size_t i = 1; i < seen.size(); ++i)
    {
      EXPECT_GE(seen[i], seen[i - 1]) << toString(algorithm);
    }
  }
}

TEST(Execution, AbortStopsTheCorrelation)
{
  const Batch b{ Shape::NToM, 4, 8, { 12, 12 }, { 12, 12 } };
  for (Algorithm algorithm : { Algorithm::Direct, Algorithm::FFT })
  {
    if (algorithm == Algorithm::FFT && !fftwCompiled())
    {
      continue;
    }
    ExecutionOptions o;
    o.backend = Backend::CPU;
    o.threads = 1;
    o.algorithm = algorithm;
    int polls = 0;
    // Runs a few pieces of work, then asks to stop.
    o.abort = [&] { return ++polls > 3; };
    EXPECT_EQ(run(b, Mode::Full, o).code(), ErrorCode::Aborted) << toString(algorithm);
  }
}

} // namespace
