// Random grids (D = 1..6, random level and caps, both boundary modes) against the brute-force
// reference of reference.h: hierarchize, dehierarchize and evaluate, in float and double, on every
// backend.
#include "reference.h"

#include <sparsegrid/sparsegrid.h>

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <utility>
#include <vector>

namespace
{
using sparsegrid::Grid;
using sparsegrid::GridSpec;

// The reference must itself satisfy the definition before it may judge anything: the interpolant
// of its surpluses reproduces the nodal values, and a multilinear function has zero surpluses on
// every level >= 1 (it is linear along each axis, so each point equals its parents' mean).
TEST(Reference, SelfCheck)
{
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 12; ++trial)
  {
    const GridSpec s = ref::randomSpec(rng, 1 + trial % 4, 600);
    SCOPED_TRACE(ref::describe(s));
    const ref::Grid g = ref::enumerate(s);
    std::vector<double> f(g.size());
    std::uniform_real_distribution<double> u(-1, 1);
    for (double& v : f)
    {
      v = u(rng);
    }
    const std::vector<double> a = ref::hierarchize(g, f);
    const std::vector<double> back = ref::dehierarchize(g, a);
    for (std::size_t p = 0; p < g.size(); ++p)
    {
      ASSERT_NEAR(back[p], f[p], 1e-12) << "point " << p; // double rounding on O(1) values
    }
    if (s.boundary)
    {
      std::vector<double> m(g.size());
      for (std::size_t p = 0; p < g.size(); ++p)
      {
        const double* x = g.points[p].x.data();
        m[p] = 0.5 + x[0] - 2 * x[0] * (g.D > 1 ? x[1] : 1.0);
      }
      const std::vector<double> am = ref::hierarchize(g, m);
      for (std::size_t p = 0; p < g.size(); ++p)
      {
        bool coarse = true;
        for (int l : g.points[p].l)
        {
          coarse = coarse && l == 0;
        }
        if (!coarse)
        {
          ASSERT_NEAR(am[p], 0.0, 1e-14) << "point " << p; // double rounding on O(1) values
        }
      }
    }
  }
}

class RandomGrids : public ref::BackendTest
{
protected:
  /// Every test of this class walks the same kind of grids: 24 of 1 to 6 dimensions, up to 1500
  /// points and level 10.
  template<typename Body>
  void forEachGrid(std::mt19937_64& rng, Body&& body)
  {
    ref::forEachRandomGrid(rng, 24, 6, 1500, 10, std::forward<Body>(body));
  }

  template<typename T>
  void hierarchizeMatchesReference(std::uint64_t seed)
  {
    std::mt19937_64 rng(seed);
    forEachGrid(rng,
      [&](const GridSpec&, const Grid& grid, const ref::Grid& g)
      {
        ASSERT_EQ(grid.size(), g.size());

        std::vector<T> values = ref::uniformValues<T>(rng, g.size());
        // The reference sees exactly the values the code sees (after rounding to T).
        const std::vector<double> expect = ref::hierarchize(g, ref::toDouble(values));
        sparsegrid::ExecutionReport report;
        const sparsegrid::Status st =
          sparsegrid::hierarchize(grid, values.data(), this->options(), &report);
        ASSERT_TRUE(st.ok()) << st.message();
        SG_EXPECT_BACKEND(report);

        ref::Mismatches bad("surplus");
        for (std::size_t p = 0; p < g.size() && bad.open(); ++p)
        {
          const double tol = ref::surplusTolerance<T>(g, g.points[p], 1.0); // |nodal| <= 1
          bad.check(p, values[p], expect[p], tol);
        }
      });
  }

  template<typename T>
  void evaluateMatchesBruteForce(std::uint64_t seed)
  {
    std::mt19937_64 rng(seed);
    forEachGrid(rng,
      [&](const GridSpec& s, const Grid& grid, const ref::Grid& g)
      {
        const int D = s.dimensions;

        // Arbitrary surpluses: every block contributes, so any indexing error shows.
        std::vector<T> alpha = ref::uniformValues<T>(rng, g.size());
        const std::vector<double> alphaD = ref::toDouble(alpha);
        // Random interior points, plus points on faces, edges and corners (x = 0 or 1 on some
        // axes), where the index of the one non-zero hat per block is easiest to get wrong.
        std::vector<double> xs = ref::randomPoints(rng, D, 60);
        for (int k = 0; k < 20; ++k)
        {
          std::vector<double> x = ref::randomPoints(rng, D, 1);
          for (int t = 0; t < D; ++t)
          {
            const int c = static_cast<int>(rng() % 3);
            if (c < 2)
            {
              x[static_cast<std::size_t>(t)] = c;
            }
          }
          xs.insert(xs.end(), x.begin(), x.end());
        }
        const std::vector<T> xt = ref::cast<T>(xs);
        const std::size_t n = xs.size() / static_cast<std::size_t>(D);
        std::vector<T> out(n, static_cast<T>(12345));
        sparsegrid::ExecutionReport report;
        const sparsegrid::Status st = sparsegrid::evaluate(
          grid, alpha.data(), xt.data(), n, out.data(), this->options(), &report);
        ASSERT_TRUE(st.ok()) << st.message();
        SG_EXPECT_BACKEND(report);
        int bad = 0;
        for (std::size_t k = 0; k < n && bad < 5; ++k)
        {
          std::vector<double> x(xt.begin() + static_cast<std::ptrdiff_t>(k * D),
            xt.begin() + static_cast<std::ptrdiff_t>((k + 1) * D));
          const double expect = ref::evaluate(g, alphaD, x.data());
          const double tol = ref::sumTolerance<T>(g, ref::termAbsSum(g, alphaD, x.data()));
          if (!(std::fabs(out[k] - expect) <= tol))
          {
            ++bad;
            std::string xsStr;
            for (double v : x)
            {
              xsStr += std::to_string(v) + " ";
            }
            ADD_FAILURE() << "point " << k << " (x = " << xsStr << "): got " << out[k]
                          << ", brute force " << expect << ", tolerance " << tol;
          }
        }
      });
  }

  template<typename T>
  void dehierarchizeMatchesReference(std::uint64_t seed)
  {
    std::mt19937_64 rng(seed);
    forEachGrid(rng,
      [&](const GridSpec&, const Grid& grid, const ref::Grid& g)
      {
        std::vector<T> alpha = ref::uniformValues<T>(rng, g.size());
        const std::vector<double> alphaD = ref::toDouble(alpha);
        const std::vector<double> expect = ref::dehierarchize(g, alphaD);
        std::vector<T> values = alpha;
        sparsegrid::ExecutionReport report;
        const sparsegrid::Status st =
          sparsegrid::dehierarchize(grid, values.data(), this->options(), &report);
        ASSERT_TRUE(st.ok()) << st.message();
        SG_EXPECT_BACKEND(report);
        ref::Mismatches bad("nodal value");
        for (std::size_t p = 0; p < g.size() && bad.open(); ++p)
        {
          bad.check(p,
            values[p],
            expect[p],
            ref::sumTolerance<T>(g, ref::termAbsSum(g, alphaD, g.points[p].x.data())));
        }
      });
  }

  template<typename T>
  void dehierarchizeInvertsHierarchize(std::uint64_t seed)
  {
    std::mt19937_64 rng(seed);
    forEachGrid(rng,
      [&](const GridSpec&, const Grid& grid, const ref::Grid& g)
      {
        std::vector<T> f = ref::uniformValues<T>(rng, g.size());
        const std::vector<double> alphaRef = ref::hierarchize(g, ref::toDouble(f));
        std::vector<T> values = f;
        sparsegrid::ExecutionReport r1, r2;
        ASSERT_TRUE(sparsegrid::hierarchize(grid, values.data(), this->options(), &r1).ok());
        ASSERT_TRUE(sparsegrid::dehierarchize(grid, values.data(), this->options(), &r2).ok());
        SG_EXPECT_BACKEND(r1);
        SG_EXPECT_BACKEND(r2);
        ref::Mismatches bad("value");
        for (std::size_t p = 0; p < g.size() && bad.open(); ++p)
        {
          const double tol = ref::interpolantTolerance<T>(g, alphaRef, g.points[p].x.data(), 1.0);
          bad.check(p, values[p], f[p], tol);
        }
      });
  }
};

// Many dimensions (up to MaxDimensions) with small levels: hierarchize against the reference and
// evaluate against the brute force, in both precisions.
class Extremes : public ref::BackendTest
{
protected:
  template<typename T>
  void highDimensions(const GridSpec& s, std::uint64_t seed)
  {
    SCOPED_TRACE(ref::describe(s) + (sizeof(T) == 4 ? " float" : " double"));
    Grid grid;
    const sparsegrid::Status cs = Grid::create(s, grid);
    ASSERT_TRUE(cs.ok()) << cs.message();
    const ref::Grid g = ref::enumerate(s);
    ASSERT_EQ(grid.size(), g.size());
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> u(-1, 1);
    std::vector<T> values = ref::uniformValues<T>(rng, g.size());
    const std::vector<double> expect = ref::hierarchize(g, ref::toDouble(values));
    sparsegrid::ExecutionReport report;
    ASSERT_TRUE(sparsegrid::hierarchize(grid, values.data(), this->options(), &report).ok());
    SG_EXPECT_BACKEND(report);
    ref::Mismatches bad("surplus");
    for (std::size_t p = 0; p < g.size() && bad.open(); ++p)
    {
      const double tol = ref::surplusTolerance<T>(g, g.points[p], 1.0);
      bad.check(p, values[p], expect[p], tol);
    }
    // evaluate the (reference) surpluses rounded to T at random points
    const std::vector<T> alpha = ref::cast<T>(expect);
    const std::vector<double> alphaD = ref::toDouble(alpha);
    const std::size_t n = 30;
    const std::vector<T> xs = ref::cast<T>(ref::randomPoints(rng, s.dimensions, n));
    std::vector<T> out(n);
    ASSERT_TRUE(
      sparsegrid::evaluate(grid, alpha.data(), xs.data(), n, out.data(), this->options(), &report)
        .ok());
    SG_EXPECT_BACKEND(report);
    for (std::size_t k = 0; k < n; ++k)
    {
      const std::vector<double> x(xs.begin() + static_cast<std::ptrdiff_t>(k * s.dimensions),
        xs.begin() + static_cast<std::ptrdiff_t>((k + 1) * s.dimensions));
      const double tol = ref::sumTolerance<T>(g, ref::termAbsSum(g, alphaD, x.data()));
      EXPECT_NEAR(out[k], ref::evaluate(g, alphaD, x.data()), tol) << "point " << k;
    }
  }

  /// High levels in 1-D: the surplus has the closed form f(x) - (f(x - h) + f(x + h)) / 2 with
  /// h = 2^-l (neighbours at 0 and 1 are the boundary values, or 0 without boundary).
  template<typename T>
  void highLevels1D(bool boundary, std::uint64_t seed)
  {
    const int L = 16;
    const GridSpec s = ref::spec(1, L, {}, boundary);
    SCOPED_TRACE(ref::describe(s) + (sizeof(T) == 4 ? " float" : " double"));
    Grid grid;
    ASSERT_TRUE(Grid::create(s, grid).ok());
    const ref::Grid g = ref::enumerate(s);
    ASSERT_EQ(grid.size(), g.size());
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> u(-0.2, 0.2);
    // nodal values on the finest lattice (2^L + 1 samples), smooth plus noise, |f| <= 1
    std::vector<double> lattice((std::size_t(1) << L) + 1);
    for (std::size_t j = 0; j < lattice.size(); ++j)
    {
      const double x = std::ldexp(static_cast<double>(j), -L);
      lattice[j] = static_cast<T>(boundary
          ? 0.5 * std::cos(5 * x) + u(rng)
          : (j == 0 || j + 1 == lattice.size() ? 0.0 : 0.6 * std::sin(7 * x) + u(rng)));
    }
    auto at = [&](double x) { return lattice[static_cast<std::size_t>(std::ldexp(x, L))]; };
    std::vector<T> values(g.size());
    std::vector<double> alphaRef(g.size());
    for (std::size_t p = 0; p < g.size(); ++p)
    {
      const double x = g.points[p].x[0];
      const int l = g.points[p].l[0];
      values[p] = static_cast<T>(at(x));
      alphaRef[p] =
        l == 0 ? at(x) : at(x) - 0.5 * (at(x - std::ldexp(1.0, -l)) + at(x + std::ldexp(1.0, -l)));
    }
    std::vector<T> h = values;
    sparsegrid::ExecutionReport report;
    ASSERT_TRUE(sparsegrid::hierarchize(grid, h.data(), this->options(), &report).ok());
    SG_EXPECT_BACKEND(report);
    ref::Mismatches bad("surplus");
    for (std::size_t p = 0; p < g.size() && bad.open(); ++p)
    {
      const double tol = ref::surplusTolerance<T>(g, g.points[p], 1.0);
      bad.check(p, h[p], alphaRef[p], tol);
    }
    // Round trip: in 1-D at most one hat per level is non-zero at any x (and the two level-0
    // functions sum to 1), so S(x) <= sum over levels of the largest |alpha| on that level and
    // the surplus errors add up to at most (L + 1) times the largest surplus tolerance.
    std::vector<double> maxPerLevel(static_cast<std::size_t>(L) + 1, 0.0);
    double stMax = 0;
    for (std::size_t p = 0; p < g.size(); ++p)
    {
      double& m = maxPerLevel[static_cast<std::size_t>(g.points[p].l[0])];
      m = std::max(m, std::fabs(alphaRef[p]));
      stMax = std::max(stMax, ref::surplusTolerance<T>(g, g.points[p], 1.0));
    }
    double Smax = 0;
    for (double m : maxPerLevel)
    {
      Smax += m;
    }
    const double E = (L + 1) * stMax;
    const double tol = E + ref::sumTolerance<T>(g, Smax + E);
    ASSERT_TRUE(sparsegrid::dehierarchize(grid, h.data(), this->options(), &report).ok());
    SG_EXPECT_BACKEND(report);
    ref::Mismatches roundTrip("value after the round trip");
    for (std::size_t p = 0; p < g.size() && roundTrip.open(); ++p)
    {
      roundTrip.check(p, h[p], values[p], tol);
    }
    // Evaluate at points near the finest cells' edges, against the brute force.
    const std::size_t n = 40;
    std::vector<T> xs(n), out(n);
    for (std::size_t k = 0; k < n; ++k)
    {
      const double j = static_cast<double>(rng() % ((std::uint64_t(1) << L) + 1));
      xs[k] = static_cast<T>(std::min(1.0, std::ldexp(j + (k % 2 ? 0.25 : 0.0), -L)));
    }
    const std::vector<T> alphaT = ref::cast<T>(alphaRef);
    const std::vector<double> alphaD = ref::toDouble(alphaT);
    ASSERT_TRUE(
      sparsegrid::evaluate(grid, alphaT.data(), xs.data(), n, out.data(), this->options(), &report)
        .ok());
    for (std::size_t k = 0; k < n; ++k)
    {
      const double x = xs[k];
      const double tol2 = ref::sumTolerance<T>(g, ref::termAbsSum(g, alphaD, &x));
      EXPECT_NEAR(out[k], ref::evaluate(g, alphaD, &x), tol2) << "x = " << x;
    }
  }
};

TEST_P(Extremes, HighDimensions)
{
  const std::vector<GridSpec> specs = { ref::spec(sparsegrid::MaxDimensions, 3, {}, false),
    ref::spec(20, 3, {}, false),
    ref::spec(7, 1, {}, true),
    ref::spec(6, 2, { 1, 0, 2, 1, 0, 2 }, true) };
  std::uint64_t seed = 500;
  for (const GridSpec& s : specs)
  {
    this->highDimensions<double>(s, seed++);
    this->highDimensions<float>(s, seed++);
  }
}

TEST_P(Extremes, HighLevels1D)
{
  this->highLevels1D<double>(true, 601);
  this->highLevels1D<float>(true, 602);
  this->highLevels1D<double>(false, 603);
  this->highLevels1D<float>(false, 604);
}

TEST_P(Extremes, HighLevelsTruncated2D)
{
  // Strongly truncated: level 13 on axis 0, at most 1 on axis 1 (an image of 8193 x 3 samples).
  this->highDimensions<double>(ref::spec(2, 13, { 13, 1 }, true), 701);
}

SG_INSTANTIATE_BACKENDS(Extremes);

TEST_P(RandomGrids, HierarchizeDoubleMatchesReference)
{
  this->hierarchizeMatchesReference<double>(101);
}
TEST_P(RandomGrids, HierarchizeFloatMatchesReference)
{
  this->hierarchizeMatchesReference<float>(102);
}
TEST_P(RandomGrids, EvaluateDoubleMatchesBruteForce)
{
  this->evaluateMatchesBruteForce<double>(201);
}
TEST_P(RandomGrids, EvaluateFloatMatchesBruteForce)
{
  this->evaluateMatchesBruteForce<float>(202);
}
TEST_P(RandomGrids, DehierarchizeDoubleMatchesReference)
{
  this->dehierarchizeMatchesReference<double>(301);
}
TEST_P(RandomGrids, DehierarchizeFloatMatchesReference)
{
  this->dehierarchizeMatchesReference<float>(302);
}
TEST_P(RandomGrids, DehierarchizeInvertsHierarchizeDouble)
{
  this->dehierarchizeInvertsHierarchize<double>(401);
}
TEST_P(RandomGrids, DehierarchizeInvertsHierarchizeFloat)
{
  this->dehierarchizeInvertsHierarchize<float>(402);
}

SG_INSTANTIATE_BACKENDS(RandomGrids);

} // namespace
