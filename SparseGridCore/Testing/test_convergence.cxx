// Convergence of the sparse-grid interpolant of smooth functions, measured against the functions
// themselves (an independent reference) at random points: O(h^2) in 1-D and
// O(h^2 |log2 h|^(D-1)) for regular sparse grids in D = 2, 3, with h = 2^-L.
#include "reference.h"

#include <sparsegrid/sparsegrid.h>

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <vector>

namespace
{
using sparsegrid::Grid;

class Convergence : public ref::BackendTest
{
protected:
  /// Max error of the level-L interpolant of f at `npts` random points (double precision).
  double maxError(int D,
    int L,
    bool boundary,
    const std::function<double(const double*)>& f,
    std::size_t npts)
  {
    Grid grid;
    const sparsegrid::Status cs = Grid::create(ref::spec(D, L, {}, boundary), grid);
    EXPECT_TRUE(cs.ok()) << cs.message();
    if (!cs.ok())
    {
      return NAN;
    }
    // Nodal values at the coordinates of the definition, i * 2^-l (not from the code under test).
    const ref::Grid g = ref::enumerate(ref::spec(D, L, {}, boundary));
    EXPECT_EQ(grid.size(), g.size());
    std::vector<double> values(g.size());
    for (std::size_t p = 0; p < g.size(); ++p)
    {
      values[p] = f(g.points[p].x.data());
    }
    sparsegrid::ExecutionReport r1, r2;
    EXPECT_TRUE(sparsegrid::hierarchize(grid, values.data(), this->options(), &r1).ok());
    SG_EXPECT_BACKEND(r1);
    std::mt19937_64 rng(1000 + static_cast<std::uint64_t>(D));
    const std::vector<double> xs = ref::randomPoints(rng, D, npts);
    std::vector<double> out(npts);
    EXPECT_TRUE(
      sparsegrid::evaluate(grid, values.data(), xs.data(), npts, out.data(), this->options(), &r2)
        .ok());
    SG_EXPECT_BACKEND(r2);
    double e = 0;
    for (std::size_t k = 0; k < npts; ++k)
    {
      e = std::max(e, std::fabs(out[k] - f(&xs[k * static_cast<std::size_t>(D)])));
    }
    return e;
  }

  /**
   * Observed order over levels L0..L1 vs the theoretical one. With e(L) ~ C 4^-L L^(D-1), the
   * order measured between L0 and L1 is p_th = 2 - (D - 1) log2(L1 / L0) / (L1 - L0).
   * Tolerance: the max over random points underestimates the true max by a few percent at most
   * (each cell's peak is sampled by several points), and the log factor is an upper bound that
   * smooth functions may beat before the asymptotic regime; so we require
   * p_th - 0.25 <= p <= 2.25: an interpolant that lost an order (p ~ 1 or less), or a wrong
   * surplus anywhere (error stalls, p ~ 0), fails; rates faster than h^2 are impossible for
   * piecewise-linear interpolation of a function with non-zero mixed second derivatives.
   */
  void checkOrder(int D,
    bool boundary,
    int L0,
    int L1,
    const std::function<double(const double*)>& f,
    std::size_t npts)
  {
    std::vector<double> e;
    std::string table;
    for (int L = L0; L <= L1; ++L)
    {
      e.push_back(this->maxError(D, L, boundary, f, npts));
      table += "L=" + std::to_string(L) + ": " + std::to_string(e.back()) + "  ";
    }
    const double p = std::log2(e.front() / e.back()) / (L1 - L0);
    const double pth = 2.0 - (D - 1) * std::log2(static_cast<double>(L1) / L0) / (L1 - L0);
    EXPECT_GE(p, pth - 0.25) << "observed order " << p << ", theory " << pth << "; errors "
                             << table;
    EXPECT_LE(p, 2.25) << "observed order " << p << "; errors " << table;
    // The error must also fall at every step (no level may make it worse).
    for (std::size_t k = 1; k < e.size(); ++k)
    {
      EXPECT_LT(e[k], e[k - 1]) << "errors " << table;
    }
  }
};

TEST_P(Convergence, OneDimensionalIsSecondOrder)
{
  // 1-D: e(L) = h^2/8 max|f''| asymptotically: each level divides the error by 4. With ~16 random
  // points per cell at the finest level the sampled max is within ~2% of the true one, so each
  // ratio lies in [3.6, 4.4] (10% each way).
  auto sine = [](const double* x) { return std::sin(M_PI * x[0]); };
  auto expcos = [](const double* x) { return std::exp(0.7 * x[0]) * std::cos(1.3 * x[0]); };
  for (bool boundary : { false, true })
  {
    std::vector<double> e;
    for (int L = 4; L <= 9; ++L)
    {
      e.push_back(this->maxError(1,
        L,
        boundary,
        boundary ? std::function<double(const double*)>(expcos)
                 : std::function<double(const double*)>(sine),
        8000));
    }
    for (std::size_t k = 1; k < e.size(); ++k)
    {
      const double ratio = e[k - 1] / e[k];
      EXPECT_GE(ratio, 3.6) << "boundary " << boundary << " level " << k + 4;
      EXPECT_LE(ratio, 4.4) << "boundary " << boundary << " level " << k + 4;
    }
  }
}

TEST_P(Convergence, TwoDimensionalNoBoundary)
{
  auto f = [](const double* x) { return std::sin(M_PI * x[0]) * std::sin(M_PI * x[1]); };
  this->checkOrder(2, false, 3, 8, f, 6000);
}

TEST_P(Convergence, TwoDimensionalBoundary)
{
  auto f = [](const double* x)
  {
    return std::exp(0.7 * x[0]) * std::cos(1.3 * x[0]) * std::exp(0.7 * x[1]) *
      std::cos(1.3 * x[1] + 0.2);
  };
  this->checkOrder(2, true, 3, 8, f, 6000);
}

TEST_P(Convergence, ThreeDimensionalNoBoundary)
{
  auto f = [](const double* x)
  { return std::sin(M_PI * x[0]) * std::sin(M_PI * x[1]) * std::sin(M_PI * x[2]); };
  this->checkOrder(3, false, 3, 7, f, 6000);
}

TEST_P(Convergence, ThreeDimensionalBoundary)
{
  auto f = [](const double* x)
  {
    double v = 1;
    for (int t = 0; t < 3; ++t)
    {
      v *= std::exp(0.7 * x[t]) * std::cos(1.3 * x[t] + 0.2 * t);
    }
    return v;
  };
  this->checkOrder(3, true, 3, 7, f, 6000);
}

SG_INSTANTIATE_BACKENDS(Convergence);

} // namespace
