/**
 * @file reference.h
 * @brief Independent double-precision reference for the SparseGridCore tests.
 *
 * Everything here is written from the definitions in sparsegrid.h alone (selection rule, point
 * set, basis functions, storage order) and uses none of the library's code: level vectors and
 * points are enumerated by brute force, the interpolant is a sum over ALL grid points, and
 * hierarchization solves the interpolation conditions directly (a unit lower-triangular system
 * in level order). It is slow (O(N^2 D)) on purpose: simple enough to be checked by reading.
 */
#ifndef SPARSEGRID_TESTING_REFERENCE_H
#define SPARSEGRID_TESTING_REFERENCE_H

#include <sparsegrid/sparsegrid.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <numeric>
#include <ostream>
#include <random>
#include <string>
#include <vector>

namespace sparsegrid
{
/// Readable parameter values in test names and failure messages (found by gtest through ADL).
inline void PrintTo(Backend b, std::ostream* os)
{
  *os << (b == Backend::CPU ? "CPU" : (b == Backend::CUDA ? "CUDA" : "Auto"));
}
}

namespace ref
{

/// One grid point: level vector, index vector, coordinates, and where the header says it lives.
struct Point
{
  std::vector<int> l;
  std::vector<std::uint32_t> i;
  std::vector<double> x;
  int levelSum = 0; ///< sum of the raw levels (level 0 counts 0): the triangular-solve order
  std::size_t block = 0;
};

/// A grid enumerated from the definition.
struct Grid
{
  int D = 0;
  int L = 0;
  bool boundary = true;
  std::vector<int> caps;                 ///< resolved caps (empty spec caps -> level)
  std::vector<std::vector<int>> blocks;  ///< level vectors in storage order (group, then lex)
  std::vector<int> blockGroup;           ///< group of each block
  std::vector<std::uint64_t> blockStart; ///< offset of each block, plus the total at the end
  std::vector<std::size_t> groupBegin;   ///< first block of group g at [g - 1]; L + 1 entries
  std::vector<Point> points;             ///< in the expected storage order

  std::size_t size() const { return this->points.size(); }
};

inline int effectiveLevel(int l)
{
  return l < 1 ? 1 : l;
}

/// The 1-D basis function of (l, i) at x, straight from the header's definition.
inline double basis1d(int l, std::uint32_t i, double x)
{
  if (l == 0)
  {
    return i == 0 ? 1.0 - x : x;
  }
  const double v = 1.0 - std::fabs(std::ldexp(x, l) - static_cast<double>(i));
  return v > 0.0 ? v : 0.0;
}

inline double clamp01(double x)
{
  return x < 0.0 ? 0.0 : (x > 1.0 ? 1.0 : x);
}

/// Counts the points of a level vector: 2 for level 0, 2^(l-1) for level l >= 1, per axis.
inline std::uint64_t blockPoints(const std::vector<int>& l)
{
  std::uint64_t n = 1;
  for (int lt : l)
  {
    n *= lt == 0 ? 2u : (std::uint64_t(1) << (lt - 1));
  }
  return n;
}

/// Enumerates a grid from (D, L, caps, boundary). maxPoints guards against accidental huge grids.
inline Grid enumerate(int D,
  int L,
  std::vector<int> caps,
  bool boundary,
  std::size_t maxPoints = std::size_t(1) << 22)
{
  Grid g;
  g.D = D;
  g.L = L;
  g.boundary = boundary;
  if (caps.empty())
  {
    caps.assign(static_cast<std::size_t>(D), L);
  }
  g.caps = caps;
  const int budget = L + D - 1;
  const int lmin = boundary ? 0 : 1;

  // All level vectors in lexicographic order (axis 0 most significant, ascending), filtered by
  // the selection rule; then a stable sort by group keeps lex order inside each group.
  // Pruned: once the effective levels so far plus 1 per remaining axis exceed the budget, no
  // completion can qualify; the test at the leaf is the definition itself.
  std::vector<std::vector<int>> all;
  std::vector<int> l(static_cast<std::size_t>(D), lmin);
  std::function<void(int, int)> rec = [&](int t, int used)
  {
    if (t == D)
    {
      int s = 0;
      for (int lt : l)
      {
        s += effectiveLevel(lt);
      }
      if (s <= budget)
      {
        all.push_back(l);
      }
      return;
    }
    for (int v = lmin; v <= caps[static_cast<std::size_t>(t)]; ++v)
    {
      if (used + effectiveLevel(v) + (D - 1 - t) > budget)
      {
        break;
      }
      l[static_cast<std::size_t>(t)] = v;
      rec(t + 1, used + effectiveLevel(v));
    }
  };
  rec(0, 0);
  auto groupOf = [&](const std::vector<int>& lv)
  {
    int s = 0;
    for (int lt : lv)
    {
      s += effectiveLevel(lt);
    }
    return s - D + 1;
  };
  std::stable_sort(all.begin(),
    all.end(),
    [&](const std::vector<int>& a, const std::vector<int>& b) { return groupOf(a) < groupOf(b); });
  g.blocks = all;
  g.blockStart.push_back(0);
  g.groupBegin.assign(static_cast<std::size_t>(L) + 1, 0);
  for (std::size_t b = 0; b < all.size(); ++b)
  {
    g.blockGroup.push_back(groupOf(all[b]));
    g.blockStart.push_back(g.blockStart.back() + blockPoints(all[b]));
  }
  for (int grp = 1; grp <= L + 1; ++grp)
  {
    // first block whose group is >= grp
    std::size_t b = 0;
    while (b < all.size() && g.blockGroup[b] < grp)
    {
      ++b;
    }
    g.groupBegin[static_cast<std::size_t>(grp - 1)] = b;
  }
  if (g.blockStart.back() > maxPoints)
  {
    ADD_FAILURE() << "reference grid too large for the brute-force reference: "
                  << g.blockStart.back();
    return g;
  }

  // Points: row-major over the block's axes, last axis fastest; k -> i per the header.
  g.points.reserve(static_cast<std::size_t>(g.blockStart.back()));
  for (std::size_t b = 0; b < all.size(); ++b)
  {
    const std::vector<int>& lv = all[b];
    std::vector<std::uint32_t> n(static_cast<std::size_t>(D));
    for (int t = 0; t < D; ++t)
    {
      const int lt = lv[static_cast<std::size_t>(t)];
      n[static_cast<std::size_t>(t)] = lt == 0 ? 2u : (1u << (lt - 1));
    }
    std::vector<std::uint32_t> k(static_cast<std::size_t>(D), 0);
    const std::uint64_t count = blockPoints(lv);
    for (std::uint64_t r = 0; r < count; ++r)
    {
      Point p;
      p.l = lv;
      p.block = b;
      for (int t = 0; t < D; ++t)
      {
        const int lt = lv[static_cast<std::size_t>(t)];
        const std::uint32_t kt = k[static_cast<std::size_t>(t)];
        const std::uint32_t it = lt == 0 ? kt : 2 * kt + 1;
        p.i.push_back(it);
        p.x.push_back(lt == 0 ? static_cast<double>(it) : std::ldexp(static_cast<double>(it), -lt));
        p.levelSum += lt;
      }
      g.points.push_back(std::move(p));
      // increment k, last axis fastest
      for (int t = D - 1; t >= 0; --t)
      {
        if (++k[static_cast<std::size_t>(t)] < n[static_cast<std::size_t>(t)])
        {
          break;
        }
        k[static_cast<std::size_t>(t)] = 0;
      }
    }
  }
  return g;
}

inline Grid enumerate(const sparsegrid::GridSpec& s, std::size_t maxPoints = std::size_t(1) << 22)
{
  return enumerate(s.dimensions, s.level, s.caps, s.boundary, maxPoints);
}

/// prod_t basis of point p at x (x already in the domain).
inline double basis(const Point& p, const double* x)
{
  double v = 1.0;
  for (std::size_t t = 0; t < p.l.size() && v != 0.0; ++t)
  {
    v *= basis1d(p.l[t], p.i[t], x[t]);
  }
  return v;
}

/// sum over ALL grid points q of weight(q) * basis_q(x), at x clamped to the domain.
template<typename Weight>
double basisSum(const Grid& g, const double* xin, Weight weight)
{
  std::vector<double> x(xin, xin + g.D);
  for (double& v : x)
  {
    v = clamp01(v);
  }
  double s = 0.0;
  for (std::size_t q = 0; q < g.points.size(); ++q)
  {
    s += weight(q) * basis(g.points[q], x.data());
  }
  return s;
}

/// Brute force: sum over ALL grid points of alpha * basis, at x clamped to the domain.
inline double evaluate(const Grid& g, const std::vector<double>& alpha, const double* xin)
{
  return basisSum(g, xin, [&](std::size_t q) { return alpha[q]; });
}

/// sum_q |alpha_q| basis_q(x): scales the rounding error of any evaluation of the interpolant.
inline double termAbsSum(const Grid& g, const std::vector<double>& alpha, const double* xin)
{
  return basisSum(g, xin, [&](std::size_t q) { return std::fabs(alpha[q]); });
}

/// sum_q basis_q(x): how much per-surplus errors can add up at x.
inline double basisSum(const Grid& g, const double* xin)
{
  std::vector<double> x(xin, xin + g.D);
  for (double& v : x)
  {
    v = clamp01(v);
  }
  double s = 0.0;
  for (const Point& p : g.points)
  {
    s += basis(p, x.data());
  }
  return s;
}

/**
 * Brute-force hierarchization: the unique alpha with interpolant(x_p) = f_p for every grid point.
 * basis_q(x_p) = 0 unless q_t <= p_t on every axis (a hat of level l >= 1 vanishes on all points
 * of coarser levels and on the other points of its own level; level 0 counts as the coarsest), and
 * basis_p(x_p) = 1, so solving in increasing raw level sum is a forward substitution:
 * alpha_p = f_p - sum_{q: levelSum(q) < levelSum(p)} alpha_q basis_q(x_p).
 * Points of equal level sum but different level vectors do not see each other (some q_t > p_t).
 */
inline std::vector<double> hierarchize(const Grid& g, const std::vector<double>& f)
{
  const std::size_t n = g.points.size();
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), std::size_t(0));
  std::stable_sort(order.begin(),
    order.end(),
    [&](std::size_t a, std::size_t b) { return g.points[a].levelSum < g.points[b].levelSum; });
  std::vector<double> alpha(n, 0.0);
  for (std::size_t a = 0; a < n; ++a)
  {
    const Point& p = g.points[order[a]];
    double s = 0.0;
    for (std::size_t b = 0; b < a; ++b)
    {
      const Point& q = g.points[order[b]];
      if (q.levelSum >= p.levelSum)
      {
        break;
      }
      bool below = true;
      for (int t = 0; t < g.D && below; ++t)
      {
        below = q.l[static_cast<std::size_t>(t)] <= p.l[static_cast<std::size_t>(t)];
      }
      if (below)
      {
        s += alpha[order[b]] * basis(q, p.x.data());
      }
    }
    alpha[order[a]] = f[order[a]] - s;
  }
  return alpha;
}

/// Dehierarchization reference: the interpolant evaluated at every grid point.
inline std::vector<double> dehierarchize(const Grid& g, const std::vector<double>& alpha)
{
  std::vector<double> f(g.points.size());
  for (std::size_t p = 0; p < g.points.size(); ++p)
  {
    f[p] = evaluate(g, alpha, g.points[p].x.data());
  }
  return f;
}

/// Multilinear interpolation of an image (axis 0 fastest, dims[t] samples) at the continuous
/// sample position pos (pos_t in sample units, clamped to [0, dims[t] - 1]: constant extension
/// beyond the image), written directly: 2^D corner weights. An axis of one sample is constant.
inline double multilinearAt(const std::vector<double>& image,
  const std::vector<std::size_t>& dims,
  const double* pos,
  std::size_t stride = 1)
{
  const std::size_t D = dims.size();
  std::vector<std::size_t> j0(D);
  std::vector<double> w(D);
  for (std::size_t t = 0; t < D; ++t)
  {
    const double last = static_cast<double>(dims[t] - 1);
    const double u = pos[t] < 0.0 ? 0.0 : (pos[t] > last ? last : pos[t]);
    std::size_t j = static_cast<std::size_t>(std::floor(u));
    if (dims[t] >= 2 && j > dims[t] - 2)
    {
      j = dims[t] - 2;
    }
    j0[t] = dims[t] >= 2 ? j : 0;
    w[t] = dims[t] >= 2 ? u - static_cast<double>(j) : 0.0;
  }
  double s = 0.0;
  for (std::size_t corner = 0; corner < (std::size_t(1) << D); ++corner)
  {
    double weight = 1.0;
    std::size_t idx = 0, mul = 1;
    for (std::size_t t = 0; t < D; ++t)
    {
      const bool up = (corner >> t) & 1u;
      weight *= up ? w[t] : 1.0 - w[t];
      idx += (j0[t] + (up ? 1 : 0)) * mul;
      mul *= dims[t];
    }
    if (weight != 0.0)
    {
      s += weight * image[idx * stride];
    }
  }
  return s;
}

/// Multilinear interpolation of an image covering [0,1]^D (dims[t] >= 2) at x in [0,1]^D.
inline double multilinear(const std::vector<double>& image,
  const std::vector<std::size_t>& dims,
  const double* x,
  std::size_t stride = 1)
{
  std::vector<double> pos(dims.size());
  for (std::size_t t = 0; t < dims.size(); ++t)
  {
    pos[t] = clamp01(x[t]) * static_cast<double>(dims[t] - 1);
  }
  return multilinearAt(image, dims, pos.data(), stride);
}

/// Multilinear interpolation of an image placed at origin + j * spacing (unit coordinates).
inline double multilinearPlaced(const std::vector<double>& image,
  const sparsegrid::RegularGrid& placement,
  const double* x,
  std::size_t stride = 1)
{
  std::vector<double> pos(placement.dims.size());
  for (std::size_t t = 0; t < pos.size(); ++t)
  {
    pos[t] = (x[t] - placement.origin[t]) / placement.spacing[t];
  }
  return multilinearAt(image, placement.dims, pos.data(), stride);
}

//------------------------------------------------------------------------------------------------
// Tolerances. Each states the rounding model it comes from.
//------------------------------------------------------------------------------------------------
template<typename T>
double eps()
{
  return static_cast<double>(std::numeric_limits<T>::epsilon());
}

/// Number of axes along which point p has hierarchical parents (level >= 1 with boundary: the
/// level-0 points are parents; level >= 2 without boundary).
inline int parentAxes(const Grid& g, const Point& p)
{
  int a = 0;
  for (int l : p.l)
  {
    a += l >= (g.boundary ? 1 : 2) ? 1 : 0;
  }
  return a;
}

/**
 * Bound on the rounding error of the hierarchical surplus of point p computed in precision T from
 * nodal values bounded by M. Hierarchization by axis passes changes p only in the a passes along
 * axes where p has parents (v -= (left + right) / 2: 3 rounded operations); its parents along an
 * axis have parents along the same other axes, so after those passes |v| <= 2^a M, and errors of
 * earlier passes are at most doubled by later ones: the error is <= 3 a 2^a eps M. We allow
 * 16 (a + 1) 2^a eps M (a factor > 4 of slack for other, equally valid, operation orders). The
 * double reference (forward substitution, at most one term per block, each <= 2^a M) adds
 * 4 (blocks + 16 (a + 1)) 2^a eps_double M.
 */
template<typename T>
double surplusTolerance(const Grid& g, const Point& p, double M)
{
  const int a = parentAxes(g, p);
  const double scale = std::ldexp(1.0, a) * M;
  return 16.0 * (a + 1) * eps<T>() * scale +
    4.0 * (static_cast<double>(g.blocks.size()) + 16.0 * (a + 1)) * eps<double>() * scale;
}

/**
 * Bound on the rounding error of evaluating the interpolant (a sum of at most one non-zero term
 * per block, each a product of D hat values, or a chain of D (L + 2) axis-pass updates when
 * dehierarchizing) whose terms have absolute sum S: (number of rounded operations) * eps * S,
 * with a factor 4 of slack, in T for the code under test plus in double for the reference.
 */
template<typename T>
double sumTolerance(const Grid& g, double S)
{
  const double ops = static_cast<double>(g.blocks.size() + g.D * (g.L + 2) + 8);
  return 4.0 * ops * (eps<T>() + eps<double>()) * S;
}

/// sum_q surplusTolerance(q) basis_q(x): how far an interpolant built from surpluses that are
/// each within their surplusTolerance can move at x.
template<typename T>
double surplusErrorAt(const Grid& g, const double* xin, double M)
{
  return basisSum(g, xin, [&](std::size_t q) { return surplusTolerance<T>(g, g.points[q], M); });
}

/**
 * Tolerance for the interpolant built from surpluses computed by the code under test (each within
 * surplusTolerance of the exact one) and then evaluated at x: the surplus errors add up with
 * weight basis_q(x), plus the evaluation rounding.
 */
template<typename T>
double interpolantTolerance(const Grid& g,
  const std::vector<double>& alphaRef,
  const double* x,
  double M)
{
  const double E = surplusErrorAt<T>(g, x, M);
  return E + sumTolerance<T>(g, termAbsSum(g, alphaRef, x) + E);
}

//------------------------------------------------------------------------------------------------
// Small helpers shared by the tests
//------------------------------------------------------------------------------------------------
inline sparsegrid::GridSpec spec(int D, int L, std::vector<int> caps = {}, bool boundary = true)
{
  sparsegrid::GridSpec s;
  s.dimensions = D;
  s.level = L;
  s.caps = std::move(caps);
  s.boundary = boundary;
  return s;
}

inline std::string describe(const sparsegrid::GridSpec& s)
{
  std::string r = "D=" + std::to_string(s.dimensions) + " L=" + std::to_string(s.level) +
    (s.boundary ? " boundary" : " no-boundary") + " caps={";
  for (std::size_t t = 0; t < s.caps.size(); ++t)
  {
    r += (t ? "," : "") + std::to_string(s.caps[t]);
  }
  return r + "}";
}

/// Random spec with at most maxPoints points (counted by the reference enumeration).
inline sparsegrid::GridSpec randomSpec(std::mt19937_64& rng,
  int D,
  std::size_t maxPoints,
  int maxLevel = 7)
{
  std::uniform_int_distribution<int> boolDist(0, 1);
  for (;;)
  {
    sparsegrid::GridSpec s;
    s.dimensions = D;
    s.boundary = boolDist(rng) == 1;
    s.level = std::uniform_int_distribution<int>(1, maxLevel)(rng);
    if (boolDist(rng) == 1 || D == 1)
    {
      // random caps, sometimes above the level (no truncation on that axis)
      const int lo = s.boundary ? 0 : 1;
      for (int t = 0; t < D; ++t)
      {
        s.caps.push_back(std::uniform_int_distribution<int>(lo, s.level + 1)(rng));
      }
    }
    std::vector<int> caps = s.caps.empty() ? std::vector<int>(std::size_t(D), s.level) : s.caps;
    // count with the reference formula before enumerating
    std::uint64_t n = 0;
    std::vector<int> l(static_cast<std::size_t>(D));
    std::function<void(int, int, std::uint64_t)> rec = [&](int t, int used, std::uint64_t pts)
    {
      if (n > maxPoints)
      {
        return;
      }
      if (t == D)
      {
        n += pts;
        return;
      }
      for (int v = s.boundary ? 0 : 1; v <= caps[static_cast<std::size_t>(t)]; ++v)
      {
        const int e = effectiveLevel(v);
        if (used + e + (D - 1 - t) > s.level + D - 1)
        {
          break;
        }
        rec(t + 1, used + e, pts * (v == 0 ? 2u : (std::uint64_t(1) << (v - 1))));
      }
    };
    rec(0, 0, 1);
    if (n <= maxPoints && n >= 1)
    {
      return s;
    }
  }
}

/**
 * The set-up of the randomised tests: `trials` random specs of 1 to maxDimensions dimensions (the
 * count cycles with the trial, so every count is met), each created as a Grid and enumerated by
 * the reference, then body(spec, grid, enumerated). The spec names itself in failures; a fatal
 * failure stops the trials, as an ASSERT in a loop of the test itself would.
 */
template<typename Body>
void forEachRandomGrid(std::mt19937_64& rng,
  int trials,
  int maxDimensions,
  std::size_t maxPoints,
  int maxLevel,
  Body&& body)
{
  for (int trial = 0; trial < trials; ++trial)
  {
    const sparsegrid::GridSpec spec =
      randomSpec(rng, 1 + trial % maxDimensions, maxPoints, maxLevel);
    SCOPED_TRACE(describe(spec) + " trial " + std::to_string(trial));
    sparsegrid::Grid grid;
    ASSERT_TRUE(sparsegrid::Grid::create(spec, grid).ok());
    const Grid enumerated = enumerate(spec);
    body(spec, grid, enumerated);
    if (::testing::Test::HasFatalFailure())
    {
      return;
    }
  }
}

inline const char* backendName(sparsegrid::Backend b)
{
  switch (b)
  {
    case sparsegrid::Backend::CPU:
      return "CPU";
    case sparsegrid::Backend::CUDA:
      return "CUDA";
    default:
      return "Auto";
  }
}

struct BackendName
{
  std::string operator()(const ::testing::TestParamInfo<sparsegrid::Backend>& info) const
  {
    return backendName(info.param);
  }
};

/// Base fixture for every numerical test: parameterised over {CPU, CUDA}; CUDA is SKIPPED (never
/// silently passed) where no usable device exists.
class BackendTest : public ::testing::TestWithParam<sparsegrid::Backend>
{
protected:
  void SetUp() override
  {
    if (this->GetParam() == sparsegrid::Backend::CUDA)
    {
      std::string why;
      if (!sparsegrid::cudaAvailable(&why))
      {
        GTEST_SKIP() << "CUDA backend not available here: " << why;
      }
    }
  }

  sparsegrid::ExecutionOptions options(int threads = 2) const
  {
    sparsegrid::ExecutionOptions o;
    o.backend = this->GetParam();
    o.threads = threads;
    return o;
  }
};

/// n values uniform in [-1, 1), rounded to T (the draws of a uniform_real_distribution(-1, 1)).
template<typename T>
std::vector<T> uniformValues(std::mt19937_64& rng, std::size_t n)
{
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<T> values(n);
  for (T& v : values)
  {
    v = static_cast<T>(u(rng));
  }
  return values;
}

/**
 * Compares values with a reference within tolerances and reports the first few that are outside
 * (ADD_FAILURE each, naming the item), so that one wrong kernel does not print thousands.
 */
class Mismatches
{
public:
  explicit Mismatches(const char* item)
    : Item(item)
  {
  }
  /// False once enough failures were reported: loops stop checking.
  bool open() const { return this->Count < 5; }
  void check(std::size_t index, double got, double expected, double tolerance)
  {
    if (!(std::fabs(got - expected) <= tolerance))
    {
      ++this->Count;
      ADD_FAILURE() << this->Item << " " << index << ": got " << got << ", expected " << expected
                    << ", tolerance " << tolerance;
    }
  }

private:
  const char* Item;
  int Count = 0;
};

/// The report must name the backend we asked for (no silent fallback). A macro, so that a
/// failure points at the operation's line in the test.
#define SG_EXPECT_BACKEND(report)                                                                  \
  EXPECT_EQ((report).backendUsed, this->GetParam())                                                \
    << "asked for " << ::ref::backendName(this->GetParam()) << ", ran on "                         \
    << ::ref::backendName((report).backendUsed) << " (note: \"" << (report).note << "\")"

/// sampleImage has no GPU kernel (sampling is a single pass over the image): it always runs on
/// the CPU, and when another backend was asked for, the report must say so.
#define SG_EXPECT_SAMPLED_ON_CPU(report)                                                           \
  EXPECT_EQ((report).backendUsed, sparsegrid::Backend::CPU);                                       \
  if (this->GetParam() != sparsegrid::Backend::CPU)                                                \
  {                                                                                                \
    EXPECT_NE((report).note.find("CPU"), std::string::npos)                                        \
      << "sampling on the CPU when " << ::ref::backendName(this->GetParam())                       \
      << " was requested must be reported; note: \"" << (report).note << "\"";                     \
  }

#define SG_INSTANTIATE_BACKENDS(Suite)                                                             \
  INSTANTIATE_TEST_SUITE_P(Backends,                                                               \
    Suite,                                                                                         \
    ::testing::Values(sparsegrid::Backend::CPU, sparsegrid::Backend::CUDA),                        \
    ::ref::BackendName())

/// Uniform random points in [0,1]^D, row-major.
inline std::vector<double> randomPoints(std::mt19937_64& rng,
  int D,
  std::size_t n,
  double lo = 0.0,
  double hi = 1.0)
{
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<double> x(n * static_cast<std::size_t>(D));
  for (double& v : x)
  {
    v = u(rng);
  }
  return x;
}

template<typename T>
std::vector<T> cast(const std::vector<double>& v)
{
  return std::vector<T>(v.begin(), v.end());
}

template<typename T>
std::vector<double> toDouble(const std::vector<T>& v)
{
  return std::vector<double>(v.begin(), v.end());
}

inline double maxAbs(const std::vector<double>& v)
{
  double m = 0.0;
  for (double x : v)
  {
    m = std::max(m, std::fabs(x));
  }
  return m;
}

inline bool containsNoCase(std::string hay, std::string needle)
{
  for (char& c : hay)
  {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  for (char& c : needle)
  {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return hay.find(needle) != std::string::npos;
}

} // namespace ref

#endif
