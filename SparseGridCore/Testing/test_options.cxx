// Execution options: every combination of the eight optimisation switches and several chunk sizes
// gives the reference result; thread counts and a caller-supplied ParallelFor do not change the
// result. Every backend; float against the double reference within float tolerance.
#include "reference.h"

#include <sparsegrid/sparsegrid.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <iomanip>
#include <map>
#include <random>
#include <sstream>
#include <thread>
#include <vector>

namespace
{
using sparsegrid::Grid;
using sparsegrid::GridSpec;
using sparsegrid::Optimizations;

/// Short scientific notation for failure messages (std::to_string prints tiny tolerances as 0).
std::string num(double v)
{
  std::ostringstream os;
  os << std::setprecision(6) << v;
  return os.str();
}

Optimizations combination(unsigned bits, int chunk)
{
  Optimizations o;
  o.inv1 = bits & 1u;
  o.inv2 = bits & 2u;
  o.inv3 = bits & 4u;
  o.inv4 = bits & 8u;
  o.ichg1 = bits & 16u;
  o.ichg2 = bits & 32u;
  o.vec1 = bits & 64u;
  o.sred1 = bits & 128u;
  o.chunkSize = chunk;
  return o;
}

std::string describe(const Optimizations& o)
{
  return std::string("inv1=") + (o.inv1 ? "1" : "0") + " inv2=" + (o.inv2 ? "1" : "0") +
    " inv3=" + (o.inv3 ? "1" : "0") + " inv4=" + (o.inv4 ? "1" : "0") +
    " ichg1=" + (o.ichg1 ? "1" : "0") + " ichg2=" + (o.ichg2 ? "1" : "0") +
    " vec1=" + (o.vec1 ? "1" : "0") + " sred1=" + (o.sred1 ? "1" : "0") +
    " chunkSize=" + std::to_string(o.chunkSize);
}

/// A grid with its reference data: nodal values, surpluses, evaluation points and values.
struct Case
{
  GridSpec spec;
  Grid grid;
  ref::Grid g;
  std::vector<double> nodal, alpha, points, pointValues;
  // Tolerances, per evaluation point / per grid point, for double [0] and float [1].
  std::vector<double> pointTol[2], nodalTol[2], surplusTol[2];
};

Case makeCase(const GridSpec& s, std::uint64_t seed)
{
  Case c;
  c.spec = s;
  EXPECT_TRUE(Grid::create(s, c.grid).ok());
  c.g = ref::enumerate(s);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  // Nodal values representable in float, so that float and double runs see the same input.
  for (std::size_t p = 0; p < c.g.size(); ++p)
  {
    c.nodal.push_back(static_cast<float>(u(rng)));
  }
  c.alpha = ref::hierarchize(c.g, c.nodal);
  // Points representable in float, including faces and corners.
  c.points = ref::randomPoints(rng, s.dimensions, 40);
  for (double& v : c.points)
  {
    v = static_cast<float>(v);
  }
  for (int t = 0; t < s.dimensions; ++t)
  {
    c.points[static_cast<std::size_t>(t)] = 0.0;                // point 0 at the origin
    c.points[static_cast<std::size_t>(s.dimensions + t)] = 1.0; // point 1 at (1,..,1)
    c.points[static_cast<std::size_t>(2 * s.dimensions + t)] = t % 2 ? 1.0 : 0.5; // on faces
  }
  const std::size_t n = c.points.size() / static_cast<std::size_t>(s.dimensions);
  for (std::size_t k = 0; k < n; ++k)
  {
    const double* x = &c.points[k * static_cast<std::size_t>(s.dimensions)];
    c.pointValues.push_back(ref::evaluate(c.g, c.alpha, x));
    // evaluate() is given the reference surpluses rounded to T (relative error eps_T / 2 each,
    // so at most eps_T S at x in all) and rounds its sum: sumTolerance.
    const double S = ref::termAbsSum(c.g, c.alpha, x);
    c.pointTol[0].push_back(ref::sumTolerance<double>(c.g, S) + ref::eps<double>() * S);
    c.pointTol[1].push_back(ref::sumTolerance<float>(c.g, S) + ref::eps<float>() * S);
  }
  for (std::size_t p = 0; p < c.g.size(); ++p)
  {
    // dehierarchize: the same two sources at the grid point
    const double S = ref::termAbsSum(c.g, c.alpha, c.g.points[p].x.data());
    c.nodalTol[0].push_back(ref::sumTolerance<double>(c.g, S) + ref::eps<double>() * S);
    c.nodalTol[1].push_back(ref::sumTolerance<float>(c.g, S) + ref::eps<float>() * S);
    // hierarchize of nodal values with |nodal| <= 1
    c.surplusTol[0].push_back(ref::surplusTolerance<double>(c.g, c.g.points[p], 1.0));
    c.surplusTol[1].push_back(ref::surplusTolerance<float>(c.g, c.g.points[p], 1.0));
  }
  return c;
}

/// Runs hierarchize, dehierarchize and evaluate with options o in precision T; returns a message
/// describing the first mismatch, or "" when all agree with the reference.
template<typename T>
std::string runAll(const Case& c, const sparsegrid::ExecutionOptions& o, sparsegrid::Backend want)
{
  const bool isFloat = sizeof(T) == sizeof(float);
  const std::size_t N = c.g.size();
  sparsegrid::ExecutionReport report;
  auto checkReport = [&](const char* op) -> std::string
  {
    if (report.backendUsed != want)
    {
      return std::string(op) + " ran on " + ref::backendName(report.backendUsed) + " (" +
        report.note + ")";
    }
    return "";
  };
  // hierarchize
  std::vector<T> v(c.nodal.begin(), c.nodal.end());
  sparsegrid::Status st = sparsegrid::hierarchize(c.grid, v.data(), o, &report);
  if (!st.ok())
  {
    return "hierarchize failed: " + st.message();
  }
  std::string m = checkReport("hierarchize");
  if (!m.empty())
  {
    return m;
  }
  const int k = isFloat ? 1 : 0;
  for (std::size_t p = 0; p < N; ++p)
  {
    const double stol = c.surplusTol[k][p];
    if (!(std::fabs(v[p] - c.alpha[p]) <= stol))
    {
      return "hierarchize: surplus " + std::to_string(p) + " = " + num(v[p]) + ", reference " +
        num(c.alpha[p]) + ", tolerance " + num(stol);
    }
  }
  // dehierarchize of the reference surpluses (rounded to T)
  std::vector<T> a(c.alpha.begin(), c.alpha.end());
  std::vector<T> d = a;
  st = sparsegrid::dehierarchize(c.grid, d.data(), o, &report);
  if (!st.ok())
  {
    return "dehierarchize failed: " + st.message();
  }
  m = checkReport("dehierarchize");
  if (!m.empty())
  {
    return m;
  }
  for (std::size_t p = 0; p < N; ++p)
  {
    const double tol = c.nodalTol[k][p];
    if (!(std::fabs(d[p] - c.nodal[p]) <= tol))
    {
      return "dehierarchize: value " + std::to_string(p) + " = " + num(d[p]) + ", reference " +
        num(c.nodal[p]) + ", tolerance " + num(tol);
    }
  }
  // evaluate
  const std::vector<T> xs(c.points.begin(), c.points.end());
  const std::size_t n = c.pointValues.size();
  std::vector<T> out(n);
  st = sparsegrid::evaluate(c.grid, a.data(), xs.data(), n, out.data(), o, &report);
  if (!st.ok())
  {
    return "evaluate failed: " + st.message();
  }
  m = checkReport("evaluate");
  if (!m.empty())
  {
    return m;
  }
  for (std::size_t j = 0; j < n; ++j)
  {
    const double tol = c.pointTol[k][j];
    if (!(std::fabs(out[j] - c.pointValues[j]) <= tol))
    {
      return "evaluate: point " + std::to_string(j) + " = " + num(out[j]) + ", reference " +
        num(c.pointValues[j]) + ", tolerance " + num(tol);
    }
  }
  return "";
}

class Options : public ref::BackendTest
{
protected:
  template<typename T>
  void allCombinations()
  {
    const std::vector<GridSpec> specs = {
      ref::spec(3, 4, { 4, 2, 4 }, true), ref::spec(4, 4, {}, false), ref::spec(1, 6, {}, true)
    };
    const int chunks[] = { 1, 7, 32, 256, 1000 };
    std::uint64_t seed = 5;
    for (const GridSpec& s : specs)
    {
      SCOPED_TRACE(ref::describe(s));
      const Case c = makeCase(s, seed++);
      int failures = 0;
      // Diagnostics: failures per switch value and per operation, to point at the culprit.
      int withFlag[8] = { 0 }, withoutFlag[8] = { 0 };
      std::map<std::string, int> perOperation;
      for (unsigned bits = 0; bits < 256; ++bits)
      {
        for (int chunk : chunks)
        {
          sparsegrid::ExecutionOptions o = this->options();
          o.optimizations = combination(bits, chunk);
          const std::string m = runAll<T>(c, o, this->GetParam());
          if (m.empty())
          {
            continue;
          }
          for (int f = 0; f < 8; ++f)
          {
            ++((bits >> f) & 1u ? withFlag[f] : withoutFlag[f]);
          }
          ++perOperation[m.substr(0, m.find(':'))];
          if (++failures <= 4)
          {
            ADD_FAILURE() << describe(o.optimizations) << ": " << m;
          }
        }
      }
      std::string summary;
      const char* flagNames[8] = {
        "inv1", "inv2", "inv3", "inv4", "ichg1", "ichg2", "vec1", "sred1"
      };
      for (int f = 0; f < 8; ++f)
      {
        summary += std::string(flagNames[f]) + ": " + std::to_string(withFlag[f]) + " on / " +
          std::to_string(withoutFlag[f]) + " off; ";
      }
      for (const auto& kv : perOperation)
      {
        summary += kv.first + " " + std::to_string(kv.second) + "; ";
      }
      EXPECT_EQ(failures, 0) << "combinations (of 256 x 5) that disagree with the reference. "
                             << "Failing combinations by switch: " << summary;
    }
  }
};

TEST_P(Options, AllOptimizationCombinationsDouble)
{
  this->allCombinations<double>();
}

TEST_P(Options, AllOptimizationCombinationsFloat)
{
  this->allCombinations<float>();
}

TEST_P(Options, NoneAndDefaultsAgree)
{
  const Case c = makeCase(ref::spec(2, 6, { 6, 3 }, true), 77);
  for (const Optimizations& o : { Optimizations(), Optimizations::none() })
  {
    sparsegrid::ExecutionOptions eo = this->options();
    eo.optimizations = o;
    EXPECT_EQ(runAll<double>(c, eo, this->GetParam()), "") << describe(o);
    EXPECT_EQ(runAll<float>(c, eo, this->GetParam()), "") << describe(o);
  }
}

/// Results of all five operations under one set of options (for comparisons between settings).
template<typename T>
struct Outputs
{
  std::vector<T> hier, dehier, eval, sampled, image;
  std::string error;
};

template<typename T>
Outputs<T> runFive(const Grid& grid,
  const std::vector<double>& nodal,
  const std::vector<double>& points,
  const std::vector<double>& image,
  const std::vector<std::size_t>& dims,
  const sparsegrid::ExecutionOptions& o)
{
  Outputs<T> r;
  auto fail = [&](const char* op, const sparsegrid::Status& st)
  {
    r.error = std::string(op) + ": " + st.message();
    return r;
  };
  r.hier.assign(nodal.begin(), nodal.end());
  sparsegrid::Status st = sparsegrid::hierarchize(grid, r.hier.data(), o);
  if (!st.ok())
  {
    return fail("hierarchize", st);
  }
  r.dehier = r.hier;
  st = sparsegrid::dehierarchize(grid, r.dehier.data(), o);
  if (!st.ok())
  {
    return fail("dehierarchize", st);
  }
  const std::vector<T> xs(points.begin(), points.end());
  const std::size_t n = points.size() / static_cast<std::size_t>(grid.dimensions());
  r.eval.resize(n);
  st = sparsegrid::evaluate(grid, r.hier.data(), xs.data(), n, r.eval.data(), o);
  if (!st.ok())
  {
    return fail("evaluate", st);
  }
  const std::vector<T> img(image.begin(), image.end());
  r.sampled.resize(grid.size());
  st = sparsegrid::sampleImage(
    grid, img.data(), sparsegrid::RegularGrid::unitCube(dims), r.sampled.data(), {}, {}, o);
  if (!st.ok())
  {
    return fail("sampleImage", st);
  }
  sparsegrid::RegularGrid target = sparsegrid::RegularGrid::unitCube({ 13, 6, 9 });
  target.origin = { 0.1, 0.0, 0.25 };
  target.spacing = { 0.07, 0.2, 0.09 };
  r.image.resize(target.numberOfPoints());
  st = sparsegrid::reconstructImage(grid, r.hier.data(), target, r.image.data(), o);
  if (!st.ok())
  {
    return fail("reconstructImage", st);
  }
  return r;
}

class Threads : public ref::BackendTest
{
protected:
  template<typename T>
  void sameResults()
  {
    // Big enough that a thread pool has work for several threads, small enough for the reference.
    const GridSpec s = ref::spec(3, 6, { 6, 5, 6 }, true);
    Grid grid;
    ASSERT_TRUE(Grid::create(s, grid).ok());
    const ref::Grid g = ref::enumerate(s);
    std::mt19937_64 rng(99);
    std::uniform_real_distribution<double> u(-1, 1);
    std::vector<double> nodal(g.size());
    for (double& v : nodal)
    {
      v = static_cast<T>(u(rng));
    }
    const std::vector<double> points = ref::toDouble(ref::cast<T>(ref::randomPoints(rng, 3, 3000)));
    const std::vector<std::size_t> dims = { 11, 7, 20 };
    std::vector<double> image(11 * 7 * 20);
    for (double& v : image)
    {
      v = static_cast<T>(u(rng));
    }

    std::vector<sparsegrid::ExecutionOptions> variants;
    std::vector<std::string> names;
    for (int threads : { 1, 2, 3 })
    {
      sparsegrid::ExecutionOptions o = this->options(threads);
      variants.push_back(o);
      names.push_back("threads=" + std::to_string(threads));
    }
    std::atomic<int> serialCalls{ 0 };
    {
      sparsegrid::ExecutionOptions o = this->options(3); // threads is ignored with parallelFor
      o.parallelFor =
        [&serialCalls](std::size_t count, const std::function<void(std::size_t, std::size_t)>& body)
      {
        ++serialCalls;
        body(0, count);
      };
      variants.push_back(o);
      names.push_back("caller ParallelFor, serial, one range");
    }
    {
      sparsegrid::ExecutionOptions o = this->options(3);
      // Many small ranges run in reverse order: results must not depend on the order of ranges.
      o.parallelFor =
        [](std::size_t count, const std::function<void(std::size_t, std::size_t)>& body)
      {
        const std::size_t step = 3;
        for (std::size_t end = count; end > 0;)
        {
          const std::size_t begin = end > step ? end - step : 0;
          body(begin, end);
          end = begin;
        }
      };
      variants.push_back(o);
      names.push_back("caller ParallelFor, serial, small ranges in reverse order");
    }
    {
      sparsegrid::ExecutionOptions o = this->options(3);
      // Truly concurrent: 4 std::threads over interleaved ranges.
      o.parallelFor =
        [](std::size_t count, const std::function<void(std::size_t, std::size_t)>& body)
      {
        std::vector<std::thread> pool;
        const std::size_t parts = 4;
        for (std::size_t k = 0; k < parts; ++k)
        {
          pool.emplace_back(
            [&, k]
            {
              const std::size_t b = count * k / parts, e = count * (k + 1) / parts;
              if (b < e)
              {
                body(b, e);
              }
            });
        }
        for (std::thread& t : pool)
        {
          t.join();
        }
      };
      variants.push_back(o);
      names.push_back("caller ParallelFor, 4 std::threads");
    }

    std::vector<Outputs<T>> outs;
    for (std::size_t k = 0; k < variants.size(); ++k)
    {
      outs.push_back(runFive<T>(grid, nodal, points, image, dims, variants[k]));
      ASSERT_EQ(outs.back().error, "") << names[k];
    }
    // Against the reference (hierarchize only here; the other operations are covered elsewhere).
    const std::vector<double> alpha = ref::hierarchize(g, nodal);
    for (std::size_t p = 0; p < g.size(); ++p)
    {
      ASSERT_NEAR(outs[0].hier[p], alpha[p], ref::surplusTolerance<T>(g, g.points[p], 1.0))
        << "surplus " << p;
    }
    // Each output value is computed by one task with a fixed sequence of operations, so the
    // thread count and the split into ranges must not change a single bit.
    for (std::size_t k = 1; k < outs.size(); ++k)
    {
      SCOPED_TRACE(names[k] + " vs " + names[0]);
      EXPECT_EQ(outs[k].hier, outs[0].hier);
      EXPECT_EQ(outs[k].dehier, outs[0].dehier);
      EXPECT_EQ(outs[k].eval, outs[0].eval);
      EXPECT_EQ(outs[k].sampled, outs[0].sampled);
      EXPECT_EQ(outs[k].image, outs[0].image);
    }
  }
};

TEST_P(Threads, SameResultsDouble)
{
  this->sameResults<double>();
}

TEST_P(Threads, SameResultsFloat)
{
  this->sameResults<float>();
}

SG_INSTANTIATE_BACKENDS(Options);
SG_INSTANTIATE_BACKENDS(Threads);

// CPU threading only: the caller's ParallelFor is the documented way to plug in vtkSMPTools; it
// must actually be used (with full, disjoint coverage) on a problem large enough to split.
TEST(CpuThreading, CallerParallelForIsUsedAndCoversTheRange)
{
  Grid grid;
  ASSERT_TRUE(Grid::create(ref::spec(3, 7), grid).ok());
  std::vector<double> values(grid.size(), 1.0);
  std::atomic<int> calls{ 0 };
  bool badRange = false;
  sparsegrid::ExecutionOptions o;
  o.backend = sparsegrid::Backend::CPU;
  o.parallelFor = [&](std::size_t count, const std::function<void(std::size_t, std::size_t)>& body)
  {
    ++calls;
    std::size_t b = 0;
    while (b < count)
    {
      const std::size_t e = std::min(count, b + 5);
      if (e <= b)
      {
        badRange = true;
        break;
      }
      body(b, e);
      b = e;
    }
  };
  sparsegrid::ExecutionReport report;
  ASSERT_TRUE(sparsegrid::hierarchize(grid, values.data(), o, &report).ok());
  EXPECT_EQ(report.backendUsed, sparsegrid::Backend::CPU);
  EXPECT_GT(calls.load(), 0) << "hierarchize never called the caller's parallelFor";
  EXPECT_FALSE(badRange);
  const int afterHier = calls.load();
  std::vector<double> xs(3 * 20000, 0.3), out(20000);
  ASSERT_TRUE(sparsegrid::evaluate(grid, values.data(), xs.data(), 20000, out.data(), o).ok());
  EXPECT_GT(calls.load(), afterHier) << "evaluate never called the caller's parallelFor";
}

TEST(AutoBackend, SmallProblemsRunOnTheCpu)
{
  Grid grid;
  ASSERT_TRUE(Grid::create(ref::spec(2, 3), grid).ok());
  std::vector<double> values(grid.size(), 0.5);
  sparsegrid::ExecutionOptions o; // Auto, threshold 2^20 points
  sparsegrid::ExecutionReport report;
  report.backendUsed = sparsegrid::Backend::CUDA;
  ASSERT_TRUE(sparsegrid::hierarchize(grid, values.data(), o, &report).ok());
  EXPECT_EQ(report.backendUsed, sparsegrid::Backend::CPU)
    << "a " << grid.size() << "-point problem is far below autoGpuThreshold";
}

TEST(AutoBackend, ZeroThresholdPicksCudaWhenAvailable)
{
  std::string why;
  if (!sparsegrid::cudaAvailable(&why))
  {
    GTEST_SKIP() << "CUDA backend not available here: " << why;
  }
  Grid grid;
  ASSERT_TRUE(Grid::create(ref::spec(2, 3), grid).ok());
  std::vector<double> values(grid.size(), 0.5);
  sparsegrid::ExecutionOptions o;
  o.autoGpuThreshold = 0;
  sparsegrid::ExecutionReport report;
  ASSERT_TRUE(sparsegrid::hierarchize(grid, values.data(), o, &report).ok());
  EXPECT_EQ(report.backendUsed, sparsegrid::Backend::CUDA) << report.note;
}

} // namespace
