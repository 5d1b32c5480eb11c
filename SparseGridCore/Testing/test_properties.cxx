// Interpolation properties: the interpolant reproduces nodal values, full grids reproduce images,
// any boundary grid reproduces multilinear functions, reconstructImage equals the brute-force
// evaluator, sampleImage equals multilinear interpolation of the image. Every backend, float and
// double.
#include "reference.h"

#include <sparsegrid/sparsegrid.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

namespace
{
using sparsegrid::Grid;
using sparsegrid::GridSpec;

class Properties : public ref::BackendTest
{
protected:
  template<typename T>
  void interpolatesAtGridPoints(std::uint64_t seed)
  {
    std::mt19937_64 rng(seed);
    ref::forEachRandomGrid(rng,
      20,
      5,
      1200,
      7,
      [&](const GridSpec& s, const Grid& grid, const ref::Grid& g)
      {
        const int D = s.dimensions;
        // A smooth function plus noise: nodal values in [-1, 1].
        std::uniform_real_distribution<double> u(-0.3, 0.3);
        std::vector<T> f(g.size());
        for (std::size_t p = 0; p < g.size(); ++p)
        {
          double v = 0.7;
          for (int t = 0; t < D; ++t)
          {
            v *= std::cos(2.0 * g.points[p].x[static_cast<std::size_t>(t)] + t);
          }
          f[p] = static_cast<T>(v + u(rng));
        }
        const std::vector<double> alphaRef = ref::hierarchize(g, ref::toDouble(f));
        std::vector<T> alpha = f;
        sparsegrid::ExecutionReport r1, r2;
        ASSERT_TRUE(sparsegrid::hierarchize(grid, alpha.data(), this->options(), &r1).ok());
        SG_EXPECT_BACKEND(r1);
        // Grid coordinates from the definition (dyadic numbers: exact in float up to level 24).
        std::vector<T> xs;
        for (const ref::Point& p : g.points)
        {
          for (double x : p.x)
          {
            xs.push_back(static_cast<T>(x));
          }
        }
        std::vector<T> out(g.size());
        const sparsegrid::Status st = sparsegrid::evaluate(
          grid, alpha.data(), xs.data(), g.size(), out.data(), this->options(), &r2);
        ASSERT_TRUE(st.ok()) << st.message();
        SG_EXPECT_BACKEND(r2);
        ref::Mismatches bad("interpolant at grid point");
        for (std::size_t p = 0; p < g.size() && bad.open(); ++p)
        {
          bad.check(
            p, out[p], f[p], ref::interpolantTolerance<T>(g, alphaRef, g.points[p].x.data(), 1.0));
        }
      });
  }

  template<typename T>
  void fullGridReproducesImage(std::uint64_t seed)
  {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> u(0, 1);
    const std::vector<std::vector<std::size_t>> cases = {
      { 33 }, { 2 }, { 9, 17 }, { 2, 9 }, { 5, 9, 3 }, { 3, 2, 5 }, { 5, 5, 5, 3 }
    };
    for (const std::vector<std::size_t>& dims : cases)
    {
      const int D = static_cast<int>(dims.size());
      std::vector<int> caps;
      int sumE = 0;
      std::size_t voxels = 1;
      for (std::size_t d : dims)
      {
        int n = 0;
        while ((std::size_t(1) << n) + 1 < d)
        {
          ++n;
        }
        caps.push_back(n);
        sumE += n < 1 ? 1 : n;
        voxels *= d;
      }
      // The finest block (all caps) is in group sum e(caps) - D + 1: that level makes it full.
      const GridSpec s = ref::spec(D, sumE - D + 1, caps, true);
      SCOPED_TRACE(ref::describe(s));
      Grid grid;
      ASSERT_TRUE(Grid::create(s, grid).ok());
      ASSERT_EQ(grid.size(), voxels) << "caps = image levels and this level give the full grid";
      const ref::Grid g = ref::enumerate(s);

      std::vector<T> image = ref::uniformValues<T>(rng, voxels);
      std::vector<T> values(grid.size());
      sparsegrid::ExecutionReport r0, r1, r2;
      sparsegrid::Status st = sparsegrid::sampleImage(grid,
        image.data(),
        sparsegrid::RegularGrid::unitCube(dims),
        values.data(),
        {},
        {},
        this->options(),
        &r0);
      ASSERT_TRUE(st.ok()) << st.message();
      SG_EXPECT_SAMPLED_ON_CPU(r0);
      // Every grid point is a voxel: sampling must return that voxel's value (weights 0 and 1;
      // allow 2 ulp for a formula such as v0 + w (v1 - v0)).
      std::vector<double> nodal(g.size());
      for (std::size_t p = 0; p < g.size(); ++p)
      {
        std::size_t idx = 0, mul = 1;
        for (int t = 0; t < D; ++t)
        {
          idx += static_cast<std::size_t>(
                   std::lround(g.points[p].x[static_cast<std::size_t>(t)] * (dims[t] - 1))) *
            mul;
          mul *= dims[t];
        }
        nodal[p] = image[idx];
        ASSERT_NEAR(values[p], image[idx], 2 * ref::eps<T>()) << "grid point " << p;
      }
      st = sparsegrid::hierarchize(grid, values.data(), this->options(), &r1);
      ASSERT_TRUE(st.ok()) << st.message();
      SG_EXPECT_BACKEND(r1);
      std::vector<T> out(voxels, static_cast<T>(-7));
      st = sparsegrid::reconstructImage(grid,
        values.data(),
        sparsegrid::RegularGrid::unitCube(dims),
        out.data(),
        this->options(),
        &r2);
      ASSERT_TRUE(st.ok()) << st.message();
      SG_EXPECT_BACKEND(r2);
      const std::vector<double> alphaRef = ref::hierarchize(g, nodal);
      ref::Mismatches bad("voxel");
      std::vector<double> x(static_cast<std::size_t>(D));
      for (std::size_t v = 0; v < voxels && bad.open(); ++v)
      {
        std::size_t rest = v;
        for (int t = 0; t < D; ++t)
        {
          x[static_cast<std::size_t>(t)] =
            static_cast<double>(rest % dims[t]) / static_cast<double>(dims[t] - 1);
          rest /= dims[t];
        }
        const double tol = ref::interpolantTolerance<T>(g, alphaRef, x.data(), 1.0);
        bad.check(v, out[v], image[v], tol);
      }
    }
  }

  template<typename T>
  void multilinearIsReproduced(std::uint64_t seed)
  {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> u(-1, 1);
    for (int trial = 0; trial < 20; ++trial)
    {
      const int D = 1 + trial % 5;
      GridSpec s;
      do
      {
        s = ref::randomSpec(rng, D, 1200);
      } while (!s.boundary);
      SCOPED_TRACE(ref::describe(s) + " trial " + std::to_string(trial));
      Grid grid;
      ASSERT_TRUE(Grid::create(s, grid).ok());
      const ref::Grid g = ref::enumerate(s);
      // f(x) = sum over subsets S of the axes of c_S prod_{t in S} x_t (a + b x + c y + d xy + ...)
      std::vector<double> c(std::size_t(1) << D);
      double M = 0;
      for (double& v : c)
      {
        v = u(rng);
        M += std::fabs(v); // |f| <= sum |c_S| on [0,1]^D
      }
      auto f = [&](const double* x)
      {
        double sum = 0;
        for (std::size_t S = 0; S < c.size(); ++S)
        {
          double m = c[S];
          for (int t = 0; t < D; ++t)
          {
            if ((S >> t) & 1u)
            {
              m *= x[t];
            }
          }
          sum += m;
        }
        return sum;
      };
      std::vector<T> values(g.size());
      std::vector<double> nodal(g.size());
      for (std::size_t p = 0; p < g.size(); ++p)
      {
        values[p] = static_cast<T>(f(g.points[p].x.data()));
        nodal[p] = values[p];
      }
      const std::vector<double> alphaRef = ref::hierarchize(g, nodal);
      sparsegrid::ExecutionReport r1, r2;
      ASSERT_TRUE(sparsegrid::hierarchize(grid, values.data(), this->options(), &r1).ok());
      SG_EXPECT_BACKEND(r1);
      const std::vector<T> xs = ref::cast<T>(ref::randomPoints(rng, D, 100));
      std::vector<T> out(100);
      ASSERT_TRUE(
        sparsegrid::evaluate(grid, values.data(), xs.data(), 100, out.data(), this->options(), &r2)
          .ok());
      SG_EXPECT_BACKEND(r2);
      ref::Mismatches bad("point");
      for (std::size_t k = 0; k < 100 && bad.open(); ++k)
      {
        std::vector<double> x(xs.begin() + static_cast<std::ptrdiff_t>(k * D),
          xs.begin() + static_cast<std::ptrdiff_t>((k + 1) * D));
        // Tolerance: rounding of the nodal values to T (eps_T M / 2, scaled like any surplus
        // error, which surplusTolerance covers) plus the usual interpolant tolerance.
        const double tol = ref::interpolantTolerance<T>(g, alphaRef, x.data(), M);
        bad.check(k, out[k], f(x.data()), tol);
      }
    }
  }

  template<typename T>
  void reconstructImageMatchesBruteForce(std::uint64_t seed)
  {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> u(-1, 1), u01(0, 1);
    for (int trial = 0; trial < 16; ++trial)
    {
      const int D = 1 + trial % 4;
      const GridSpec s = ref::randomSpec(rng, D, 800);
      SCOPED_TRACE(ref::describe(s) + " trial " + std::to_string(trial));
      Grid grid;
      ASSERT_TRUE(Grid::create(s, grid).ok());
      const ref::Grid g = ref::enumerate(s);
      std::vector<T> alpha = ref::uniformValues<T>(rng, g.size());
      const std::vector<double> alphaD = ref::toDouble(alpha);

      // A target box inside [0,1]^D with arbitrary dims, origin and spacing; trial % 4 == 3 makes
      // one axis a single-sample slice.
      sparsegrid::RegularGrid target;
      std::size_t total = 1;
      for (int t = 0; t < D; ++t)
      {
        std::size_t d = 2 + rng() % (D <= 2 ? 12 : 5);
        if (trial % 4 == 3 && t == D - 1)
        {
          d = 1;
        }
        const double origin = 0.4 * u01(rng);
        const double spacing = d > 1 ? (1.0 - origin) * (0.3 + 0.7 * u01(rng)) / (d - 1) : 0.0;
        target.dims.push_back(d);
        target.origin.push_back(origin);
        target.spacing.push_back(spacing);
        total *= d;
      }
      std::vector<T> out(total, static_cast<T>(-99));
      sparsegrid::ExecutionReport report;
      const sparsegrid::Status st = sparsegrid::reconstructImage(
        grid, alpha.data(), target, out.data(), this->options(), &report);
      ASSERT_TRUE(st.ok()) << st.message();
      SG_EXPECT_BACKEND(report);

      // The finest full grid spanned by the sparse grid has 2^n_t cells on axis t, n_t = the
      // largest level present on that axis; the fast path interpolates its nodal values, so the
      // rounding scale is the largest term sum at x and at the corners of x's cell.
      std::vector<int> nmax(static_cast<std::size_t>(D), 0);
      for (const std::vector<int>& b : g.blocks)
      {
        for (int t = 0; t < D; ++t)
        {
          nmax[static_cast<std::size_t>(t)] =
            std::max(nmax[static_cast<std::size_t>(t)], b[static_cast<std::size_t>(t)]);
        }
      }
      int bad = 0;
      std::vector<double> x(static_cast<std::size_t>(D)), corner(static_cast<std::size_t>(D));
      for (std::size_t v = 0; v < total && bad < 5; ++v)
      {
        std::size_t rest = v;
        for (int t = 0; t < D; ++t)
        {
          x[static_cast<std::size_t>(t)] = target.origin[static_cast<std::size_t>(t)] +
            static_cast<double>(rest % target.dims[t]) *
              target.spacing[static_cast<std::size_t>(t)];
          rest /= target.dims[t];
        }
        const double expect = ref::evaluate(g, alphaD, x.data());
        double S = ref::termAbsSum(g, alphaD, x.data());
        for (std::size_t cn = 0; cn < (std::size_t(1) << D); ++cn)
        {
          for (int t = 0; t < D; ++t)
          {
            const double cells = std::ldexp(1.0, nmax[static_cast<std::size_t>(t)]);
            const double lo = std::floor(ref::clamp01(x[t]) * cells);
            corner[static_cast<std::size_t>(t)] =
              std::min(1.0, (lo + ((cn >> t) & 1u ? 1.0 : 0.0)) / cells);
          }
          S = std::max(S, ref::termAbsSum(g, alphaD, corner.data()));
        }
        // Plus: the multilinear step (2^D weights and D weight products: 4 (2^D + D) eps S), and
        // the target coordinates / cell weights formed in T (an error of eps 2^n_t in the weight
        // on axis t moves the value by at most 2 S times that).
        double coord = 0;
        for (int t = 0; t < D; ++t)
        {
          coord += 4.0 * std::ldexp(1.0, nmax[static_cast<std::size_t>(t)]);
        }
        const double tol = ref::sumTolerance<T>(g, S) +
          (4.0 * ((1 << D) + D) + coord) * (ref::eps<T>() + ref::eps<double>()) * S;
        if (!(std::fabs(out[v] - expect) <= tol))
        {
          ++bad;
          ADD_FAILURE() << "target point " << v << ": got " << out[v] << ", brute force " << expect
                        << ", tolerance " << tol;
        }
      }
    }
  }

  template<typename T>
  void sampleImageMatchesMultilinear(std::uint64_t seed)
  {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> u(-1, 1);
    const std::vector<std::vector<std::size_t>> cases = {
      { 7 }, { 12, 5 }, { 6, 10, 4 }, { 3, 3, 3 }, { 2, 11 }, { 9, 17 }, { 20, 7, 5 }
    };
    int trial = 0;
    for (const std::vector<std::size_t>& dims : cases)
    {
      for (std::size_t stride : { std::size_t(1), std::size_t(3) })
      {
        ++trial;
        const int D = static_cast<int>(dims.size());
        // caps: the image's levels (levelForSamples definition), sometimes one more or less
        std::vector<int> caps;
        std::size_t voxels = 1, dmax = 0;
        for (std::size_t d : dims)
        {
          int n = 0;
          while ((std::size_t(1) << n) + 1 < d)
          {
            ++n;
          }
          caps.push_back(std::max(0, n + static_cast<int>(rng() % 3) - 1));
          voxels *= d;
          dmax = std::max(dmax, d);
        }
        const bool boundary = trial % 3 != 0;
        if (!boundary)
        {
          for (int& cp : caps)
          {
            cp = std::max(cp, 1);
          }
        }
        const GridSpec s = ref::spec(D, 2 + static_cast<int>(rng() % 4), caps, boundary);
        SCOPED_TRACE(ref::describe(s) + " stride " + std::to_string(stride));
        Grid grid;
        ASSERT_TRUE(Grid::create(s, grid).ok());
        const ref::Grid g = ref::enumerate(s);
        // An interleaved image of `stride` components; we sample component stride - 1.
        std::vector<T> image = ref::uniformValues<T>(rng, voxels * stride);
        const std::vector<double> imageD = ref::toDouble(image);
        std::vector<T> values(g.size());
        sparsegrid::ExecutionReport report;
        const sparsegrid::Status st = sparsegrid::sampleImage(grid,
          image.data() + (stride - 1),
          sparsegrid::RegularGrid::unitCube(dims),
          values.data(),
          sparsegrid::ComponentLayout::strided(stride),
          {},
          this->options(),
          &report);
        ASSERT_TRUE(st.ok()) << st.message();
        SG_EXPECT_SAMPLED_ON_CPU(report);
        // Tolerance: 2^D weighted terms and D weight computations (4 (2^D + D + 2) eps), plus the
        // weight error from forming x (d - 1) in T (relative eps on a number up to d: a value
        // error of 2 d eps per axis with |image| <= 1).
        const double tol = (4.0 * ((1 << D) + D + 2) + 4.0 * D * static_cast<double>(dmax)) *
          (ref::eps<T>() + ref::eps<double>());
        int bad = 0;
        for (std::size_t p = 0; p < g.size() && bad < 5; ++p)
        {
          const double expect =
            ref::multilinear(std::vector<double>(imageD.begin() + (stride - 1), imageD.end()),
              dims,
              g.points[p].x.data(),
              stride);
          if (!(std::fabs(values[p] - expect) <= tol))
          {
            ++bad;
            ADD_FAILURE() << "grid point " << p << ": sampled " << values[p]
                          << ", multilinear interpolation of the image " << expect << ", tolerance "
                          << tol;
          }
        }
      }
    }
  }

  /// Tolerance of sampling an image with |values| <= M by multilinear interpolation: 2^D weighted
  /// terms and D weight computations (4 (2^D + D + 2) eps), plus the weight error from forming the
  /// sample position in T (relative eps on a number up to dmax: 2 dmax eps M per axis).
  template<typename T>
  static double samplingTolerance(int D, std::size_t dmax, double M)
  {
    return (4.0 * ((1 << D) + D + 2) + 4.0 * D * static_cast<double>(dmax)) *
      (ref::eps<T>() + ref::eps<double>()) * M;
  }

  template<typename T>
  void sampleImagePlaced(std::uint64_t seed)
  {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> u(-1, 1);
    struct Case
    {
      std::vector<std::size_t> dims;
      std::vector<double> origin, spacing;
      GridSpec spec;
    };
    const std::vector<Case> cases = {
      // voxel-exact corner embedding: 7 x 5 samples at spacing 1/8, 1/4 (the rest is extension)
      { { 7, 5 }, { 0.0, 0.0 }, { 0.125, 0.25 }, ref::spec(2, 5, { 3, 2 }, true) },
      // arbitrary box, partly outside the unit cube
      { { 6, 9, 4 }, { 0.1, -0.05, 0.2 }, { 0.15, 0.1, 0.3 }, ref::spec(3, 4, {}, true) },
      { { 10 }, { 0.3 }, { 0.05 }, ref::spec(1, 6, {}, false) },
      { { 4, 4 }, { 0.0, 0.0 }, { 1.0 / 3.0, 1.0 / 3.0 }, ref::spec(2, 4, {}, false) },
    };
    for (const Case& c : cases)
    {
      const int D = static_cast<int>(c.dims.size());
      SCOPED_TRACE(ref::describe(c.spec));
      Grid grid;
      ASSERT_TRUE(Grid::create(c.spec, grid).ok());
      const ref::Grid g = ref::enumerate(c.spec);
      sparsegrid::RegularGrid placement;
      placement.dims = c.dims;
      placement.origin = c.origin;
      placement.spacing = c.spacing;
      std::vector<T> image = ref::uniformValues<T>(rng, placement.numberOfPoints());
      const std::vector<double> imageD = ref::toDouble(image);
      std::vector<T> values(g.size());
      sparsegrid::ExecutionReport report;
      const sparsegrid::Status st = sparsegrid::sampleImage(
        grid, image.data(), placement, values.data(), {}, {}, this->options(), &report);
      ASSERT_TRUE(st.ok()) << st.message();
      SG_EXPECT_SAMPLED_ON_CPU(report);
      const std::size_t dmax = *std::max_element(c.dims.begin(), c.dims.end());
      const double tol = samplingTolerance<T>(D, dmax, 1.0);
      int bad = 0;
      for (std::size_t p = 0; p < g.size() && bad < 5; ++p)
      {
        const double expect = ref::multilinearPlaced(imageD, placement, g.points[p].x.data());
        if (!(std::fabs(values[p] - expect) <= tol))
        {
          ++bad;
          ADD_FAILURE() << "grid point " << p << ": sampled " << values[p]
                        << ", multilinear interpolation of the placed image " << expect
                        << ", tolerance " << tol;
        }
      }
    }
  }

  template<typename T>
  void voxelExactEmbedding(std::uint64_t seed)
  {
    // With spacing 2^-c_t every voxel is a node of the 2^c + 1 lattice: a full grid with caps c
    // reproduces any image at every voxel through sampleImage (placed) + hierarchize +
    // reconstructImage on the voxel positions.
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> u(0, 1);
    for (const std::vector<std::size_t>& dims :
      std::vector<std::vector<std::size_t>>{ { 13 }, { 6, 10 }, { 7, 5, 3 } })
    {
      const int D = static_cast<int>(dims.size());
      sparsegrid::RegularGrid placement;
      std::vector<int> caps;
      int sumE = 0;
      for (std::size_t d : dims)
      {
        int n = 0;
        while ((std::size_t(1) << n) + 1 < d)
        {
          ++n;
        }
        caps.push_back(n);
        sumE += std::max(n, 1);
        placement.dims.push_back(d);
        placement.origin.push_back(0.0);
        placement.spacing.push_back(std::ldexp(1.0, -n));
      }
      const GridSpec s = ref::spec(D, sumE - D + 1, caps, true);
      SCOPED_TRACE(ref::describe(s));
      Grid grid;
      ASSERT_TRUE(Grid::create(s, grid).ok());
      const ref::Grid g = ref::enumerate(s);
      std::vector<T> image = ref::uniformValues<T>(rng, placement.numberOfPoints());
      std::vector<T> values(g.size());
      sparsegrid::ExecutionReport r0, r1, r2;
      ASSERT_TRUE(sparsegrid::sampleImage(
        grid, image.data(), placement, values.data(), {}, {}, this->options(), &r0)
                    .ok());
      SG_EXPECT_SAMPLED_ON_CPU(r0);
      std::vector<double> nodal = ref::toDouble(values);
      ASSERT_TRUE(sparsegrid::hierarchize(grid, values.data(), this->options(), &r1).ok());
      SG_EXPECT_BACKEND(r1);
      std::vector<T> out(image.size(), static_cast<T>(-5));
      ASSERT_TRUE(sparsegrid::reconstructImage(
        grid, values.data(), placement, out.data(), this->options(), &r2)
                    .ok());
      SG_EXPECT_BACKEND(r2);
      const std::vector<double> alphaRef = ref::hierarchize(g, nodal);
      std::vector<double> x(static_cast<std::size_t>(D));
      ref::Mismatches bad("voxel");
      for (std::size_t v = 0; v < image.size() && bad.open(); ++v)
      {
        std::size_t rest = v;
        for (int t = 0; t < D; ++t)
        {
          x[static_cast<std::size_t>(t)] =
            static_cast<double>(rest % dims[t]) * placement.spacing[static_cast<std::size_t>(t)];
          rest /= dims[t];
        }
        const double tol = ref::interpolantTolerance<T>(g, alphaRef, x.data(), 1.0);
        bad.check(v, out[v], image[v], tol);
      }
    }
  }

  template<typename T>
  void piecesSumToWhole(std::uint64_t seed)
  {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> u(-1, 1);
    struct Case
    {
      std::vector<std::size_t> whole;
      // per axis: the [begin, end) sample ranges of the pieces (sharing one layer)
      std::vector<std::vector<std::pair<std::size_t, std::size_t>>> splits;
      GridSpec spec;
      bool placed;
    };
    const std::vector<Case> cases = {
      { { 9, 12 }, { { { 0, 5 }, { 4, 9 } }, { { 0, 7 }, { 6, 12 } } }, ref::spec(2, 5), false },
      { { 9, 12 }, { { { 0, 3 }, { 2, 9 } }, { { 0, 12 } } }, ref::spec(2, 5, {}, false), false },
      { { 6, 7, 5 },
        { { { 0, 3 }, { 2, 6 } }, { { 0, 7 } }, { { 0, 2 }, { 1, 3 }, { 2, 5 } } },
        ref::spec(3, 4, { 3, 3, 2 }),
        false },
      { { 7, 5 },
        { { { 0, 4 }, { 3, 7 } }, { { 0, 3 }, { 2, 5 } } },
        ref::spec(2, 5, { 3, 2 }),
        true },
    };
    for (const Case& c : cases)
    {
      const int D = static_cast<int>(c.whole.size());
      SCOPED_TRACE(ref::describe(c.spec) + (c.placed ? " placed" : " unit cube"));
      Grid grid;
      ASSERT_TRUE(Grid::create(c.spec, grid).ok());
      const ref::Grid g = ref::enumerate(c.spec);
      sparsegrid::RegularGrid placement = sparsegrid::RegularGrid::unitCube(c.whole);
      if (c.placed)
      {
        for (int t = 0; t < D; ++t)
        {
          placement.spacing[static_cast<std::size_t>(t)] = std::ldexp(1.0, -(t == 0 ? 3 : 2));
        }
      }
      std::vector<double> image(placement.numberOfPoints());
      for (double& v : image)
      {
        v = static_cast<T>(u(rng));
      }
      std::vector<double> sum(g.size(), 0.0);
      std::uint64_t ownedTotal = 0;
      // every combination of the per-axis ranges is one piece
      std::size_t pieces = 1;
      for (const auto& sp : c.splits)
      {
        pieces *= sp.size();
      }
      for (std::size_t pc = 0; pc < pieces; ++pc)
      {
        sparsegrid::ImagePiece geo;
        geo.wholeDims = c.whole;
        if (c.placed)
        {
          geo.origin = placement.origin;
          geo.spacing = placement.spacing;
        }
        std::size_t rest = pc;
        for (int t = 0; t < D; ++t)
        {
          const auto& r = c.splits[static_cast<std::size_t>(t)][rest % c.splits[t].size()];
          rest /= c.splits[t].size();
          geo.offset.push_back(r.first);
          geo.dims.push_back(r.second - r.first);
        }
        // copy the piece out of the whole image (axis 0 fastest)
        std::size_t n = 1;
        for (std::size_t d : geo.dims)
        {
          n *= d;
        }
        std::vector<T> piece(n);
        for (std::size_t k = 0; k < n; ++k)
        {
          std::size_t r = k, idx = 0, mul = 1;
          for (int t = 0; t < D; ++t)
          {
            idx += (geo.offset[t] + r % geo.dims[t]) * mul;
            r /= geo.dims[t];
            mul *= c.whole[t];
          }
          piece[k] = static_cast<T>(image[idx]);
        }
        std::vector<T> values(g.size(), static_cast<T>(77));
        std::uint64_t owned = 0;
        const sparsegrid::Status st = sparsegrid::sampleImagePiece(
          grid, piece.data(), geo, values.data(), {}, {}, &owned, this->options());
        ASSERT_TRUE(st.ok()) << st.message();
        ownedTotal += owned;
        std::uint64_t nonZero = 0;
        for (std::size_t p = 0; p < g.size(); ++p)
        {
          sum[p] += values[p];
          nonZero += values[p] != T(0) ? 1 : 0;
        }
        EXPECT_LE(nonZero, owned) << "values written outside the owned points of piece " << pc;
      }
      // every grid point has exactly one owner, and the owner's value is the whole image's
      EXPECT_EQ(ownedTotal, g.size());
      const std::size_t dmax = *std::max_element(c.whole.begin(), c.whole.end());
      const double tol = samplingTolerance<T>(D, dmax, 1.0);
      int bad = 0;
      for (std::size_t p = 0; p < g.size() && bad < 5; ++p)
      {
        const double expect = ref::multilinearPlaced(image, placement, g.points[p].x.data());
        if (!(std::fabs(sum[p] - expect) <= tol))
        {
          ++bad;
          ADD_FAILURE() << "grid point " << p << ": sum over pieces " << sum[p]
                        << ", multilinear interpolation of the whole image " << expect
                        << ", tolerance " << tol;
        }
      }
      // a piece with a zero dimension owns nothing and writes zeros
      sparsegrid::ImagePiece empty;
      empty.wholeDims = c.whole;
      empty.offset.assign(c.whole.size(), 0);
      empty.dims = c.whole;
      empty.dims[0] = 0;
      std::vector<T> values(g.size(), static_cast<T>(5));
      std::uint64_t owned = 99;
      const T dummy = 0;
      ASSERT_TRUE(sparsegrid::sampleImagePiece(
        grid, &dummy, empty, values.data(), {}, {}, &owned, this->options())
                    .ok());
      EXPECT_EQ(owned, 0u);
      EXPECT_EQ(
        std::count(values.begin(), values.end(), T(0)), static_cast<std::ptrdiff_t>(g.size()));
    }
  }
};

TEST_P(Properties, InterpolatesAtGridPointsDouble)
{
  this->interpolatesAtGridPoints<double>(11);
}
TEST_P(Properties, InterpolatesAtGridPointsFloat)
{
  this->interpolatesAtGridPoints<float>(12);
}
TEST_P(Properties, FullGridReproducesImageDouble)
{
  this->fullGridReproducesImage<double>(21);
}
TEST_P(Properties, FullGridReproducesImageFloat)
{
  this->fullGridReproducesImage<float>(22);
}
TEST_P(Properties, MultilinearReproducedDouble)
{
  this->multilinearIsReproduced<double>(31);
}
TEST_P(Properties, MultilinearReproducedFloat)
{
  this->multilinearIsReproduced<float>(32);
}
TEST_P(Properties, ReconstructImageMatchesBruteForceDouble)
{
  this->reconstructImageMatchesBruteForce<double>(41);
}
TEST_P(Properties, ReconstructImageMatchesBruteForceFloat)
{
  this->reconstructImageMatchesBruteForce<float>(42);
}
TEST_P(Properties, SampleImageMatchesMultilinearDouble)
{
  this->sampleImageMatchesMultilinear<double>(51);
}
TEST_P(Properties, SampleImageMatchesMultilinearFloat)
{
  this->sampleImageMatchesMultilinear<float>(52);
}

TEST_P(Properties, SampleImagePlacedDouble)
{
  this->sampleImagePlaced<double>(61);
}
TEST_P(Properties, SampleImagePlacedFloat)
{
  this->sampleImagePlaced<float>(62);
}
TEST_P(Properties, VoxelExactEmbeddingReproducesImageDouble)
{
  this->voxelExactEmbedding<double>(71);
}
TEST_P(Properties, VoxelExactEmbeddingReproducesImageFloat)
{
  this->voxelExactEmbedding<float>(72);
}
TEST_P(Properties, ImagePiecesSumToWholeDouble)
{
  this->piecesSumToWhole<double>(81);
}
TEST_P(Properties, ImagePiecesSumToWholeFloat)
{
  this->piecesSumToWhole<float>(82);
}

SG_INSTANTIATE_BACKENDS(Properties);

} // namespace

// Targets finer than the lattice on some axes and coarser on others: the separable passes then
// produce intermediates larger than the lattice itself, which must still be exact.
TEST_P(Properties, ReconstructTargetFinerThanLattice)
{
  sparsegrid::GridSpec s;
  s.dimensions = 3;
  s.level = 4;
  s.caps = { 1, 2, 3 }; // lattice 3 x 5 x 9 nodes
  s.boundary = true;
  Grid grid;
  ASSERT_TRUE(Grid::create(s, grid).ok());
  const ref::Grid g = ref::enumerate(s);
  std::mt19937_64 rng(77);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> alpha(g.size());
  for (double& v : alpha)
  {
    v = u(rng);
  }
  for (const std::vector<std::size_t>& dims : { std::vector<std::size_t>{ 40, 30, 2 },
         std::vector<std::size_t>{ 2, 30, 40 },
         std::vector<std::size_t>{ 17, 3, 33 } })
  {
    const sparsegrid::RegularGrid target = sparsegrid::RegularGrid::unitCube(dims);
    std::vector<double> out(target.numberOfPoints(), -99.0);
    sparsegrid::ExecutionReport report;
    const sparsegrid::Status st = sparsegrid::reconstructImage(
      grid, alpha.data(), target, out.data(), this->options(), &report);
    ASSERT_TRUE(st.ok()) << st.message();
    SG_EXPECT_BACKEND(report);
    double worst = 0;
    for (std::size_t v = 0; v < out.size(); ++v)
    {
      const double x[3] = { static_cast<double>(v % dims[0]) * target.spacing[0],
        static_cast<double>(v / dims[0] % dims[1]) * target.spacing[1],
        static_cast<double>(v / dims[0] / dims[1]) * target.spacing[2] };
      worst = std::max(worst, std::abs(out[v] - ref::evaluate(g, alpha, x)));
    }
    // |alpha| <= 1 and at most |g| = 45 terms: double rounding stays far below 1e-12.
    EXPECT_LT(worst, 1e-12) << dims[0] << "x" << dims[1] << "x" << dims[2];
  }
}
