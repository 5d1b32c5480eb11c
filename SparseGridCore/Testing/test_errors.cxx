// Bad input: a clear error code and message, never a crash. Also the documented behaviour at the
// edges: clamping of points outside the domain, abort and progress callbacks, backend fallback.
#include "reference.h"

#include <sparsegrid/sparsegrid.h>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <thread>
#include <vector>

namespace
{
using sparsegrid::ErrorCode;
using sparsegrid::Grid;
using sparsegrid::GridSpec;
using sparsegrid::Status;

/// An image spanning the unit cube with dims[t] samples per axis.
sparsegrid::RegularGrid Unit(const std::vector<std::size_t>& dims)
{
  return sparsegrid::RegularGrid::unitCube(dims);
}

bool hasDigit(const std::string& s)
{
  for (char c : s)
  {
    if (c >= '0' && c <= '9')
    {
      return true;
    }
  }
  return false;
}

/// The status must be the expected error, with a non-empty message containing one of the words.
void expectError(const Status& st, ErrorCode code, const std::vector<std::string>& words)
{
  EXPECT_FALSE(st.ok());
  EXPECT_EQ(st.code(), code) << "got " << sparsegrid::toString(st.code()) << ": " << st.message();
  EXPECT_FALSE(st.message().empty());
  bool found = words.empty();
  for (const std::string& w : words)
  {
    found = found || ref::containsNoCase(st.message(), w);
  }
  std::string list;
  for (const std::string& w : words)
  {
    list += "'" + w + "' ";
  }
  EXPECT_TRUE(found) << "message \"" << st.message() << "\" mentions none of " << list;
}

/// create and count must both reject the spec with this code.
void expectBadSpec(const GridSpec& s, ErrorCode code, const std::vector<std::string>& words)
{
  SCOPED_TRACE(ref::describe(s));
  Grid g;
  expectError(Grid::create(s, g), code, words);
  EXPECT_FALSE(g.valid());
  std::uint64_t points = 0, blocks = 0;
  const Status c = Grid::count(s, points, blocks);
  EXPECT_FALSE(c.ok()) << "count accepted an invalid spec";
  EXPECT_FALSE(c.message().empty());
}

TEST(BadSpecs, Dimensions)
{
  expectBadSpec(ref::spec(0, 3), ErrorCode::InvalidArgument, { "dimension" });
  expectBadSpec(ref::spec(-2, 3), ErrorCode::InvalidArgument, { "dimension" });
  expectBadSpec(
    ref::spec(sparsegrid::MaxDimensions + 1, 2), ErrorCode::InvalidArgument, { "dimension" });
}

TEST(BadSpecs, Levels)
{
  expectBadSpec(ref::spec(2, 0), ErrorCode::InvalidArgument, { "level" });
  expectBadSpec(ref::spec(2, -4), ErrorCode::InvalidArgument, { "level" });
  expectBadSpec(ref::spec(2, 0, {}, false), ErrorCode::InvalidArgument, { "level" });
}

TEST(BadSpecs, AbsurdLevel)
{
  // Level 1000 with default caps (= level, far above MaxAxisLevel): either diagnosis, invalid
  // argument or too large, is right; it must not succeed, hang or crash.
  for (int D : { 1, 3 })
  {
    const GridSpec s = ref::spec(D, 1000);
    SCOPED_TRACE(ref::describe(s));
    Grid g;
    const Status st = Grid::create(s, g);
    EXPECT_FALSE(st.ok());
    EXPECT_TRUE(st.code() == ErrorCode::InvalidArgument || st.code() == ErrorCode::TooLarge)
      << sparsegrid::toString(st.code()) << ": " << st.message();
    EXPECT_FALSE(st.message().empty());
  }
}

TEST(BadSpecs, Caps)
{
  // with boundary the minimum cap is 0 (an axis of 2 samples); without boundary it is 1
  expectBadSpec(ref::spec(2, 3, { -1, 3 }), ErrorCode::InvalidArgument, { "cap" });
  expectBadSpec(ref::spec(2, 3, { 3, 0 }, false), ErrorCode::InvalidArgument, { "cap" });
  expectBadSpec(
    ref::spec(2, 3, { 3, sparsegrid::MaxAxisLevel + 1 }), ErrorCode::InvalidArgument, { "cap" });
  expectBadSpec(ref::spec(3, 3, { 3, 3 }), ErrorCode::InvalidArgument, { "cap" }); // wrong count
  // and the minimum itself is valid
  Grid g;
  EXPECT_TRUE(Grid::create(ref::spec(2, 3, { 0, 3 }), g).ok());
  EXPECT_TRUE(Grid::create(ref::spec(2, 3, { 1, 3 }, false), g).ok());
}

TEST(BadSpecs, TooLargeNamesTheSize)
{
  // D = 3, level 40 with the largest legal caps: ~10^16 points, far beyond any memory.
  {
    Grid g;
    const GridSpec s = ref::spec(3, 40, { 30, 30, 30 });
    const Status st = Grid::create(s, g);
    expectError(st, ErrorCode::TooLarge, {});
    EXPECT_TRUE(hasDigit(st.message())) << "no size in \"" << st.message() << "\"";
    EXPECT_FALSE(g.valid());
  }
  // D = 3, level 40 with default caps (= 40 > MaxAxisLevel): must fail; TooLarge (the brief's
  // expectation) or InvalidArgument (the caps) are both correct diagnoses.
  {
    Grid g;
    const Status st = Grid::create(ref::spec(3, 40), g);
    EXPECT_TRUE(st.code() == ErrorCode::TooLarge || st.code() == ErrorCode::InvalidArgument)
      << sparsegrid::toString(st.code()) << ": " << st.message();
    EXPECT_FALSE(st.message().empty());
  }
  // D = 3, level 28, legal caps: 1.5 * 10^11 points (1.1 TiB of doubles, more than any machine
  // that runs these tests).
  {
    Grid g;
    const Status st = Grid::create(ref::spec(3, 28), g);
    expectError(st, ErrorCode::TooLarge, {});
    EXPECT_TRUE(hasDigit(st.message())) << "no size in \"" << st.message() << "\"";
  }
  // A small grid under an explicit memory limit of 1000 bytes (D = 3, level 6: thousands of
  // points, tens of kilobytes of doubles).
  {
    Grid g;
    const Status st = Grid::create(ref::spec(3, 6), g, 1000);
    expectError(st, ErrorCode::TooLarge, {});
    EXPECT_TRUE(hasDigit(st.message())) << "no size in \"" << st.message() << "\"";
    EXPECT_TRUE(Grid::create(ref::spec(3, 6), g, 1u << 30).ok()) << "1 GiB is plenty";
  }
  // count of such specs still works (saturating), without allocating
  std::uint64_t points = 0, blocks = 0;
  ASSERT_TRUE(Grid::count(ref::spec(3, 40, { 30, 30, 30 }), points, blocks).ok());
  EXPECT_GT(points, std::uint64_t(1) << 40);
}

TEST(BadSpecs, CheckAllocation)
{
  const Status big =
    sparsegrid::checkAllocation(std::uint64_t(1) << 62, "sparse-grid coefficients");
  expectError(big, ErrorCode::TooLarge, { "sparse-grid coefficients" });
  EXPECT_TRUE(hasDigit(big.message()));
  EXPECT_TRUE(sparsegrid::checkAllocation(1024, "a small buffer").ok());
  const Status lim = sparsegrid::checkAllocation(5000, "the test buffer", 4000);
  expectError(lim, ErrorCode::TooLarge, { "the test buffer" });
}

TEST(BadSpecs, CheckFinite)
{
  std::vector<double> v(100, 1.0);
  EXPECT_TRUE(sparsegrid::checkFinite(v.data(), v.size(), "values").ok());
  // 13 non-finite values, the first at index 40
  for (std::size_t k = 0; k < 13; ++k)
  {
    v[40 + 4 * k] = k % 3 == 0 ? std::numeric_limits<double>::quiet_NaN()
                               : (k % 3 == 1 ? std::numeric_limits<double>::infinity()
                                             : -std::numeric_limits<double>::infinity());
  }
  const Status st = sparsegrid::checkFinite(v.data(), v.size(), "the input array");
  expectError(st, ErrorCode::NonFinite, { "13" });
  EXPECT_TRUE(ref::containsNoCase(st.message(), "40")) << st.message();
  EXPECT_TRUE(ref::containsNoCase(st.message(), "the input array")) << st.message();
  // With stride 2 only the even entries count: 40, 44, ... are all even -> still 13.
  EXPECT_EQ(sparsegrid::checkFinite(v.data(), 50, "strided", 2).code(), ErrorCode::NonFinite);
  std::vector<float> w(20, 0.f); // n = 10 samples at stride 2 read w[0], w[2], ..., w[18]
  w[3] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(sparsegrid::checkFinite(w.data(), 10, "odd", 2).code(), ErrorCode::None)
    << "the NaN at index 3 is not on the stride-2 samples";
  EXPECT_EQ(sparsegrid::checkFinite(w.data(), 10, "odd", 1).code(), ErrorCode::NonFinite);
}

TEST(BadSpecs, OperationsOnAnEmptyGridFail)
{
  const Grid empty;
  std::vector<double> v(16, 0.0), x(16, 0.5), out(16);
  sparsegrid::ExecutionOptions o;
  o.backend = sparsegrid::Backend::CPU;
  EXPECT_EQ(sparsegrid::hierarchize(empty, v.data(), o).code(), ErrorCode::InvalidArgument);
  EXPECT_EQ(sparsegrid::dehierarchize(empty, v.data(), o).code(), ErrorCode::InvalidArgument);
  EXPECT_EQ(sparsegrid::evaluate(empty, v.data(), x.data(), 2, out.data(), o).code(),
    ErrorCode::InvalidArgument);
}

class Errors : public ref::BackendTest
{
};

TEST_P(Errors, NonFiniteImage)
{
  Grid grid;
  ASSERT_TRUE(Grid::create(ref::spec(2, 4), grid).ok());
  const std::vector<std::size_t> dims = { 17, 17 };
  std::vector<double> image(17 * 17, 0.25);
  for (std::size_t k = 0; k < 13; ++k)
  {
    image[40 + 7 * k] =
      k % 2 ? std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
  }
  std::vector<double> values(grid.size(), 0.0);
  sparsegrid::ExecutionReport report;
  Status st = sparsegrid::sampleImage(
    grid, image.data(), Unit(dims), values.data(), {}, {}, this->options(), &report);
  expectError(st, ErrorCode::NonFinite, { "13" });
  EXPECT_TRUE(ref::containsNoCase(st.message(), "40")) << "first index: " << st.message();

  std::vector<float> imageF(image.begin(), image.end());
  std::vector<float> valuesF(grid.size(), 0.f);
  st = sparsegrid::sampleImage(
    grid, imageF.data(), Unit(dims), valuesF.data(), {}, {}, this->options());
  expectError(st, ErrorCode::NonFinite, { "13" });
}

TEST_P(Errors, NanCoordinate)
{
  Grid grid;
  ASSERT_TRUE(Grid::create(ref::spec(3, 4), grid).ok());
  std::vector<double> alpha(grid.size(), 0.5);
  std::vector<double> xs = { 0.1, 0.2, 0.3, 0.4, std::numeric_limits<double>::quiet_NaN(), 0.6 };
  std::vector<double> out(2);
  const Status st =
    sparsegrid::evaluate(grid, alpha.data(), xs.data(), 2, out.data(), this->options());
  expectError(st, ErrorCode::InvalidArgument, { "nan", "coordinate", "finite", "point" });
  std::vector<float> alphaF(grid.size(), 0.5f), xsF(xs.begin(), xs.end()), outF(2);
  const Status sf =
    sparsegrid::evaluate(grid, alphaF.data(), xsF.data(), 2, outF.data(), this->options());
  expectError(sf, ErrorCode::InvalidArgument, { "nan", "coordinate", "finite", "point" });
}

TEST_P(Errors, PointsOutsideTheDomainAreClamped)
{
  // Random surpluses on a boundary grid (non-zero on the faces) and a no-boundary grid.
  for (bool boundary : { true, false })
  {
    const GridSpec s = ref::spec(2, 5, {}, boundary);
    SCOPED_TRACE(ref::describe(s));
    Grid grid;
    ASSERT_TRUE(Grid::create(s, grid).ok());
    const ref::Grid g = ref::enumerate(s);
    std::mt19937_64 rng(3);
    std::uniform_real_distribution<double> u(-1, 1);
    std::vector<double> alpha(grid.size());
    for (double& v : alpha)
    {
      v = u(rng);
    }
    // pairs: (outside, its clamped image)
    const std::vector<double> xs = {
      -0.5,
      0.3,
      0.0,
      0.3, //
      1.7,
      0.3,
      1.0,
      0.3, //
      0.6,
      -2.0,
      0.6,
      0.0, //
      0.6,
      9.0,
      0.6,
      1.0, //
      -3.0,
      5.0,
      0.0,
      1.0, //
      1e300,
      -1e300,
      1.0,
      0.0,
    };
    const std::size_t n = xs.size() / 2;
    std::vector<double> out(n);
    sparsegrid::ExecutionReport report;
    const Status st =
      sparsegrid::evaluate(grid, alpha.data(), xs.data(), n, out.data(), this->options(), &report);
    ASSERT_TRUE(st.ok()) << st.message();
    SG_EXPECT_BACKEND(report);
    for (std::size_t k = 0; k < n; k += 2)
    {
      const double* inside = &xs[2 * (k + 1)];
      const double expect = ref::evaluate(g, alpha, inside);
      const double tol = ref::sumTolerance<double>(g, ref::termAbsSum(g, alpha, inside));
      EXPECT_NEAR(out[k], out[k + 1], tol) << "x = (" << xs[2 * k] << ", " << xs[2 * k + 1] << ")";
      EXPECT_NEAR(out[k + 1], expect, tol);
    }
  }
}

TEST_P(Errors, BadImageDimensions)
{
  Grid grid;
  ASSERT_TRUE(Grid::create(ref::spec(2, 3), grid).ok());
  std::vector<double> image(100, 1.0), values(grid.size());
  for (const std::vector<std::size_t>& dims :
    std::vector<std::vector<std::size_t>>{ { 1, 9 }, { 9, 0 }, { 9 }, { 3, 3, 3 } })
  {
    SCOPED_TRACE("dims size " + std::to_string(dims.size()));
    const Status st = sparsegrid::sampleImage(
      grid, image.data(), Unit(dims), values.data(), {}, {}, this->options());
    expectError(st, ErrorCode::InvalidArgument, { "dim", "sample", "size", "axes", "axis" });
  }
  // an image of no components makes no sense
  EXPECT_EQ(sparsegrid::sampleImage(grid,
              image.data(),
              Unit({ 5, 5 }),
              values.data(),
              sparsegrid::ComponentLayout::interleaved(0),
              {},
              this->options())
              .code(),
    ErrorCode::InvalidArgument);
  // reconstructImage: target of the wrong dimension, or inconsistent origin/spacing sizes
  sparsegrid::RegularGrid t3 = sparsegrid::RegularGrid::unitCube({ 3, 3, 3 });
  std::vector<double> out(27);
  expectError(sparsegrid::reconstructImage(grid, values.data(), t3, out.data(), this->options()),
    ErrorCode::InvalidArgument,
    { "dim", "target", "size", "axes", "axis" });
  sparsegrid::RegularGrid t2 = sparsegrid::RegularGrid::unitCube({ 3, 3 });
  t2.spacing.pop_back();
  EXPECT_EQ(
    sparsegrid::reconstructImage(grid, values.data(), t2, out.data(), this->options()).code(),
    ErrorCode::InvalidArgument);
}

TEST_P(Errors, ZeroPointsIsFine)
{
  Grid grid;
  ASSERT_TRUE(Grid::create(ref::spec(2, 3), grid).ok());
  std::vector<double> alpha(grid.size(), 1.0), xs(2, 0.5), out(1, 42.0);
  const Status st =
    sparsegrid::evaluate(grid, alpha.data(), xs.data(), 0, out.data(), this->options());
  EXPECT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(out[0], 42.0) << "nothing may be written for n = 0";
}

TEST_P(Errors, AbortCallback)
{
  Grid grid;
  ASSERT_TRUE(Grid::create(ref::spec(3, 7), grid).ok());
  std::vector<double> v(grid.size(), 1.0), xs(3 * 5000, 0.4), out(5000);
  std::vector<double> image(33 * 33 * 33, 1.0);
  sparsegrid::ExecutionOptions o = this->options();
  int asked = 0;
  o.abort = [&asked]
  {
    ++asked;
    return true;
  };
  expectError(sparsegrid::hierarchize(grid, v.data(), o), ErrorCode::Aborted, {});
  expectError(sparsegrid::dehierarchize(grid, v.data(), o), ErrorCode::Aborted, {});
  expectError(
    sparsegrid::evaluate(grid, v.data(), xs.data(), 5000, out.data(), o), ErrorCode::Aborted, {});
  expectError(
    sparsegrid::sampleImage(grid, image.data(), Unit({ 33, 33, 33 }), v.data(), {}, {}, o),
    ErrorCode::Aborted,
    {});
  std::vector<double> rec(33 * 33 * 33);
  expectError(sparsegrid::reconstructImage(
                grid, v.data(), sparsegrid::RegularGrid::unitCube({ 33, 33, 33 }), rec.data(), o),
    ErrorCode::Aborted,
    {});
  EXPECT_GE(asked, 5);

  // An abort callback that never fires changes nothing: hierarchize of a constant gives the
  // constant on level 0 (boundary corners) and 0 elsewhere.
  o.abort = [] { return false; };
  std::vector<double> c(grid.size(), 2.5);
  ASSERT_TRUE(sparsegrid::hierarchize(grid, c.data(), o).ok());
  const ref::Grid g = ref::enumerate(ref::spec(3, 7));
  for (std::size_t p = 0; p < g.size(); ++p)
  {
    bool corner = true;
    for (int l : g.points[p].l)
    {
      corner = corner && l == 0;
    }
    // a constant's surpluses are exactly 2.5 at the 8 corners and 0 elsewhere, up to rounding
    ASSERT_NEAR(c[p], corner ? 2.5 : 0.0, 1e-13) << "point " << p;
  }
}

TEST_P(Errors, ProgressCallback)
{
  Grid grid;
  ASSERT_TRUE(Grid::create(ref::spec(3, 7), grid).ok());
  std::vector<double> v(grid.size(), 1.0), xs(3 * 5000, 0.4), out(5000);
  std::vector<double> image(17 * 17 * 17, 1.0);
  std::vector<double> rec(17 * 17 * 17);
  const std::thread::id caller = std::this_thread::get_id();
  std::vector<double> seen;
  bool otherThread = false;
  sparsegrid::ExecutionOptions o = this->options();
  o.progress = [&](double f)
  {
    seen.push_back(f);
    otherThread = otherThread || std::this_thread::get_id() != caller;
  };
  const char* names[] = {
    "hierarchize", "dehierarchize", "evaluate", "sampleImage", "reconstructImage"
  };
  for (int op = 0; op < 5; ++op)
  {
    SCOPED_TRACE(names[op]);
    seen.clear();
    Status st;
    switch (op)
    {
      case 0:
        st = sparsegrid::hierarchize(grid, v.data(), o);
        break;
      case 1:
        st = sparsegrid::dehierarchize(grid, v.data(), o);
        break;
      case 2:
        st = sparsegrid::evaluate(grid, v.data(), xs.data(), 5000, out.data(), o);
        break;
      case 3:
        st = sparsegrid::sampleImage(grid, image.data(), Unit({ 17, 17, 17 }), v.data(), {}, {}, o);
        break;
      default:
        st = sparsegrid::reconstructImage(
          grid, v.data(), sparsegrid::RegularGrid::unitCube({ 17, 17, 17 }), rec.data(), o);
        break;
    }
    ASSERT_TRUE(st.ok()) << st.message();
    EXPECT_FALSE(seen.empty()) << "progress was never reported";
    for (double f : seen)
    {
      EXPECT_GE(f, 0.0);
      EXPECT_LE(f, 1.0);
    }
    EXPECT_FALSE(otherThread) << "documented: called from the calling thread only";
  }
}

SG_INSTANTIATE_BACKENDS(Errors);

// Asking for CUDA where it cannot run must never pretend to have run it.
TEST(BackendFallback, CudaRequestedWithoutCuda)
{
  std::string why;
  if (sparsegrid::cudaAvailable(&why))
  {
    EXPECT_TRUE(sparsegrid::cudaCompiled()) << "a usable CUDA device implies a CUDA build";
    GTEST_SKIP() << "CUDA is available here: the fallback cannot be observed";
  }
  EXPECT_FALSE(why.empty()) << "cudaAvailable must say what is missing";
  Grid grid;
  ASSERT_TRUE(Grid::create(ref::spec(2, 3), grid).ok());
  std::vector<double> v(grid.size(), 1.0);
  sparsegrid::ExecutionOptions o;
  o.backend = sparsegrid::Backend::CUDA;
  sparsegrid::ExecutionReport report;
  report.backendUsed = sparsegrid::Backend::CUDA;
  const Status st = sparsegrid::hierarchize(grid, v.data(), o, &report);
  if (st.ok())
  {
    EXPECT_EQ(report.backendUsed, sparsegrid::Backend::CPU) << "claims CUDA ran without CUDA";
    EXPECT_FALSE(report.note.empty()) << "a fallback must say why";
  }
  else
  {
    EXPECT_EQ(st.code(), ErrorCode::BackendUnavailable) << st.message();
    EXPECT_FALSE(st.message().empty());
  }
}

} // namespace
