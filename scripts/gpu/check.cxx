// sparsegrid-gpu-check: compares the CUDA backend with the CPU backend through the public API on
// many grids, switch combinations, precisions and sizes (independent of the core tests, which
// compare both with a reference). Prints one JSON line: {"checks":..,"failures":..,...}; details
// of failures go to stderr. Exit code 0 when everything agrees and ran on the GPU.
//   sparsegrid-gpu-check [--quick] [--large] [--sanitize]
// --quick: a subset of the switch combinations and fewer points (emulation, sanitizers);
// --sanitize: --quick without the big problems (compute-sanitizer runs 10-100x slower);
// --large: adds more points than one transfer chunk (the double-buffered pipeline).
#include "sparsegrid/sparsegrid.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace sg = sparsegrid;

namespace
{

int checks = 0, failures = 0, notOnGpu = 0;
double worstRatio = 0;

sg::GridSpec spec(int D, int L, std::vector<int> caps, bool boundary)
{
  sg::GridSpec s;
  s.dimensions = D;
  s.level = L;
  s.caps = std::move(caps);
  s.boundary = boundary;
  return s;
}

std::string describe(const sg::GridSpec& s)
{
  std::string c;
  for (int v : s.caps)
  {
    c += (c.empty() ? "" : ",") + std::to_string(v);
  }
  return "D=" + std::to_string(s.dimensions) + " L=" + std::to_string(s.level) + " caps=[" + c +
    "] boundary=" + (s.boundary ? "1" : "0");
}

std::string describe(const sg::Optimizations& o)
{
  char b[160];
  std::snprintf(b,
    sizeof(b),
    "inv1=%d inv2=%d inv3=%d inv4=%d ichg1=%d ichg2=%d vec1=%d sred1=%d chunk=%d",
    o.inv1,
    o.inv2,
    o.inv3,
    o.inv4,
    o.ichg1,
    o.ichg2,
    o.vec1,
    o.sred1,
    o.chunkSize);
  return b;
}

template<typename T>
double eps()
{
  return std::numeric_limits<T>::epsilon();
}

/// Compares two arrays with tolerance rel * scale (scale: the largest magnitude involved).
template<typename T>
bool compare(const char* what,
  const std::string& context,
  const std::vector<T>& gpu,
  const std::vector<T>& cpu,
  double rel,
  double scale)
{
  ++checks;
  double worst = 0;
  std::size_t at = 0;
  bool finite = true;
  for (std::size_t i = 0; i < gpu.size(); ++i)
  {
    if (!std::isfinite(static_cast<double>(gpu[i])))
    {
      finite = false;
      at = i;
      break;
    }
    const double d = std::fabs(static_cast<double>(gpu[i]) - static_cast<double>(cpu[i]));
    if (d > worst)
    {
      worst = d;
      at = i;
    }
  }
  const double tol = rel * std::max(1.0, scale);
  worstRatio = std::max(worstRatio, worst / tol);
  if (!finite || worst > tol)
  {
    ++failures;
    if (failures <= 40)
    {
      std::fprintf(stderr,
        "FAIL %s (%s): index %zu gpu %.17g cpu %.17g diff %.3g tol %.3g%s\n",
        what,
        context.c_str(),
        at,
        at < gpu.size() ? double(gpu[at]) : 0.0,
        at < cpu.size() ? double(cpu[at]) : 0.0,
        worst,
        tol,
        finite ? "" : " (non-finite)");
    }
    return false;
  }
  return true;
}

void expectGpu(const sg::ExecutionReport& r, const char* what, const std::string& context)
{
  if (r.backendUsed != sg::Backend::CUDA)
  {
    ++notOnGpu;
    ++failures;
    if (failures <= 40)
    {
      std::fprintf(
        stderr, "FAIL %s (%s) did not run on CUDA: %s\n", what, context.c_str(), r.note.c_str());
    }
  }
}

void expectOk(const sg::Status& s, const char* what, const std::string& context)
{
  if (!s.ok())
  {
    ++failures;
    ++checks;
    if (failures <= 40)
    {
      std::fprintf(stderr, "FAIL %s (%s): %s\n", what, context.c_str(), s.message().c_str());
    }
  }
}

template<typename T>
std::vector<T> randomValues(std::mt19937_64& rng, std::size_t n, double lo, double hi)
{
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<T> v(n);
  for (T& x : v)
  {
    x = static_cast<T>(u(rng));
  }
  return v;
}

/// hierarchize, dehierarchize and evaluate on both backends.
template<typename T>
void checkOps(const sg::GridSpec& s,
  const sg::Optimizations& opt,
  std::size_t nPoints,
  std::uint64_t seed)
{
  sg::Grid grid;
  if (!sg::Grid::create(s, grid).ok())
  {
    ++failures;
    std::fprintf(stderr, "FAIL cannot create %s\n", describe(s).c_str());
    return;
  }
  const std::string ctx =
    describe(s) + " " + describe(opt) + (sizeof(T) == 4 ? " float" : " double");
  std::mt19937_64 rng(seed);
  const std::vector<T> nodal = randomValues<T>(rng, grid.size(), -1, 1);
  sg::ExecutionOptions gpu, cpu;
  gpu.backend = sg::Backend::CUDA;
  cpu.backend = sg::Backend::CPU;
  gpu.optimizations = opt;
  cpu.threads = 0;
  sg::ExecutionReport report;
  const double tolH =
    64.0 * s.dimensions * (s.level + 2) * eps<T>() * std::ldexp(1.0, std::min(s.dimensions, 20));
  // hierarchize
  std::vector<T> hg = nodal, hc = nodal;
  expectOk(sg::hierarchize(grid, hg.data(), gpu, &report), "hierarchize", ctx);
  expectGpu(report, "hierarchize", ctx);
  expectOk(sg::hierarchize(grid, hc.data(), cpu), "hierarchize cpu", ctx);
  compare("hierarchize", ctx, hg, hc, tolH, 1.0);
  // dehierarchize (of the CPU's surpluses)
  std::vector<T> dg = hc, dc = hc;
  expectOk(sg::dehierarchize(grid, dg.data(), gpu, &report), "dehierarchize", ctx);
  expectGpu(report, "dehierarchize", ctx);
  expectOk(sg::dehierarchize(grid, dc.data(), cpu), "dehierarchize cpu", ctx);
  compare("dehierarchize", ctx, dg, dc, tolH * 4, 1.0);
  // evaluate: random points, some outside the domain, corners and faces
  std::vector<T> pts = randomValues<T>(rng, nPoints * s.dimensions, -0.05, 1.05);
  for (int t = 0; t < s.dimensions && nPoints >= 3; ++t)
  {
    pts[static_cast<std::size_t>(t)] = T(0);
    pts[static_cast<std::size_t>(s.dimensions + t)] = T(1);
    pts[static_cast<std::size_t>(2 * s.dimensions + t)] = t % 2 ? T(1) : T(0.5);
  }
  std::vector<T> eg(nPoints), ec(nPoints);
  expectOk(
    sg::evaluate(grid, hc.data(), pts.data(), nPoints, eg.data(), gpu, &report), "evaluate", ctx);
  expectGpu(report, "evaluate", ctx);
  if (report.backendUsed == sg::Backend::CUDA && nPoints > 0 && !(report.kernelSeconds > 0))
  {
    ++failures;
    std::fprintf(
      stderr, "FAIL evaluate (%s): kernelSeconds = %g\n", ctx.c_str(), report.kernelSeconds);
  }
  expectOk(sg::evaluate(grid, hc.data(), pts.data(), nPoints, ec.data(), cpu), "evaluate cpu", ctx);
  double scale = 0;
  for (T v : hc)
  {
    scale = std::max(scale, std::fabs(double(v)));
  }
  const double tolE = 16.0 * (grid.numberOfBlocks() + s.dimensions) * eps<T>() *
    std::ldexp(1.0, std::min(s.dimensions, 20));
  compare("evaluate", ctx, eg, ec, tolE, scale);
}

template<typename T>
void checkReconstruct(const sg::GridSpec& s,
  const sg::RegularGrid& target,
  const char* label,
  std::uint64_t seed)
{
  sg::Grid grid;
  if (!sg::Grid::create(s, grid).ok())
  {
    ++failures;
    return;
  }
  const std::string ctx =
    describe(s) + " target " + label + (sizeof(T) == 4 ? " float" : " double");
  std::mt19937_64 rng(seed);
  const std::vector<T> alpha = randomValues<T>(rng, grid.size(), -1, 1);
  sg::ExecutionOptions gpu, cpu;
  gpu.backend = sg::Backend::CUDA;
  cpu.backend = sg::Backend::CPU;
  sg::ExecutionReport report;
  std::vector<T> og(target.numberOfPoints()), oc(target.numberOfPoints());
  expectOk(
    sg::reconstructImage(grid, alpha.data(), target, og.data(), gpu, &report), "reconstruct", ctx);
  expectGpu(report, "reconstruct", ctx);
  expectOk(
    sg::reconstructImage(grid, alpha.data(), target, oc.data(), cpu), "reconstruct cpu", ctx);
  const double tol = 64.0 * (grid.numberOfBlocks() + s.dimensions * (s.level + 2)) * eps<T>() *
    std::ldexp(1.0, std::min(s.dimensions, 20));
  compare("reconstruct", ctx, og, oc, tol, 1.0);
}

sg::Optimizations combination(unsigned bits, int chunk)
{
  sg::Optimizations o;
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

} // namespace

int main(int argc, char** argv)
{
  bool quick = false, large = false, sanitize = false;
  for (int i = 1; i < argc; ++i)
  {
    quick = quick || std::strcmp(argv[i], "--quick") == 0;
    large = large || std::strcmp(argv[i], "--large") == 0;
    sanitize = sanitize || std::strcmp(argv[i], "--sanitize") == 0;
  }
  quick = quick || sanitize;
  std::string why;
  if (!sg::cudaAvailable(&why))
  {
    std::printf(
      "{\"checks\":0,\"failures\":1,\"error\":\"CUDA not available: %s\"}\n", why.c_str());
    return 1;
  }
  std::uint64_t seed = 1;
  // 1. Every switch combination on small grids (boundary and not, caps, D = 1..4).
  const std::vector<sg::GridSpec> small = { spec(3, 4, { 4, 2, 4 }, true),
    spec(4, 4, {}, false),
    spec(1, 6, {}, true),
    spec(2, 5, { 5, 3 }, false),
    spec(2, 3, { 0, 3 }, true) };
  const int chunks[] = { 1, 33, 256 };
  for (const sg::GridSpec& s : small)
  {
    for (unsigned bits = 0; bits < 256; bits += sanitize ? 37 : (quick ? 7 : 1))
    {
      for (int chunk : chunks)
      {
        checkOps<double>(s, combination(bits, chunk), 70, seed++);
        checkOps<float>(s, combination(bits, chunk), 70, seed++);
      }
    }
  }
  // 2. Defaults and none on grids of every dimension the kernels specialise (1..10) and beyond.
  for (int D = 1; D <= 13; ++D)
  {
    if (sanitize && D != 1 && D != 3 && D != 5 && D != 10 && D != 12)
    {
      continue;
    }
    const int L = D <= 3 ? 6 : (D <= 6 ? 4 : 3);
    for (bool boundary : { false, true })
    {
      if (boundary && D > 9)
      {
        continue; // 2^D corners per block: large
      }
      for (const sg::Optimizations& o :
        { sg::Optimizations(), sg::Optimizations::none(), combination(0xff & ~32u, 100) })
      {
        checkOps<float>(spec(D, L, {}, boundary), o, 500, seed++);
        checkOps<double>(spec(D, L, {}, boundary), o, 500, seed++);
      }
    }
  }
  // 3. Larger grids: the shared-coefficient path (D = 3, L = 10), several chunks of points,
  //    the ichg1 tiles split along r and h.
  if (!sanitize)
  {
    checkOps<float>(spec(3, 10, {}, false), sg::Optimizations(), quick ? 20000 : 300000, seed++);
    checkOps<double>(spec(3, 10, {}, false), sg::Optimizations(), quick ? 20000 : 100000, seed++);
    checkOps<float>(spec(3, 9, {}, true), sg::Optimizations(), quick ? 20000 : 100000, seed++);
    checkOps<float>(spec(5, 6, {}, false), sg::Optimizations(), 20000, seed++);
    checkOps<float>(spec(2, 12, { 12, 6 }, true), sg::Optimizations(), 20000, seed++);
  }
  else
  {
    // Each kernel variant once, small: the shared-coefficient path needs >= 4096 points.
    checkOps<float>(spec(3, 7, {}, false), sg::Optimizations(), 3000, seed++);
    checkOps<double>(spec(3, 7, {}, true), sg::Optimizations(), 3000, seed++);
    checkOps<float>(spec(11, 3, {}, false), sg::Optimizations(), 300, seed++);
  }
  if (!quick)
  {
    checkOps<float>(spec(3, 12, {}, false), sg::Optimizations(), 100000, seed++);
    checkOps<float>(spec(10, 5, {}, false), sg::Optimizations(), 50000, seed++);
  }
  if (large)
  {
    // More points than one transfer chunk (2^22): the double-buffered pipeline.
    checkOps<float>(spec(2, 6, {}, true), sg::Optimizations(), 9000000, seed++);
    checkOps<double>(spec(3, 14, {}, false), sg::Optimizations(), 100000, seed++);
  }
  // 4. Reconstruction: the lattice itself, other targets (inside and beyond the domain), and the
  //    evaluation path (lattice much larger than the target).
  for (bool boundary : { true, false })
  {
    for (int D = 1; D <= 4; ++D)
    {
      const sg::GridSpec s = spec(D, D <= 2 ? 6 : 4, {}, boundary);
      std::vector<std::size_t> dims;
      for (int t = 0; t < D; ++t)
      {
        dims.push_back((std::size_t(1) << s.level) + 1);
      }
      checkReconstruct<float>(s, sg::RegularGrid::unitCube(dims), "lattice", seed++);
      checkReconstruct<double>(s, sg::RegularGrid::unitCube(dims), "lattice", seed++);
      sg::RegularGrid other = sg::RegularGrid::unitCube(std::vector<std::size_t>(D, 7));
      for (int t = 0; t < D; ++t)
      {
        other.dims[static_cast<std::size_t>(t)] = 5 + 3 * t;
        other.origin[static_cast<std::size_t>(t)] = -0.1 + 0.05 * t;
        other.spacing[static_cast<std::size_t>(t)] = 0.23 - 0.02 * t;
      }
      checkReconstruct<float>(s, other, "other", seed++);
      checkReconstruct<double>(s, other, "other", seed++);
    }
  }
  if (!sanitize)
  {
    checkReconstruct<float>(
      spec(3, 9, {}, true), sg::RegularGrid::unitCube({ 513, 513, 513 }), "513^3", seed++);
  }
  checkReconstruct<float>(spec(3, 12, { 12, 12, 3 }, true),
    sg::RegularGrid::unitCube({ 9, 10, 3 }),
    "evaluation path",
    seed++);
  checkReconstruct<double>(
    spec(2, 14, { 14, 13 }, true), sg::RegularGrid::unitCube({ 40, 30 }), "long axes", seed++);
  if (!sanitize)
  {
    // An axis of 16385 nodes is too long for a shared-memory tile: the column kernel.
    checkReconstruct<float>(spec(2, 15, { 14, 2 }, true),
      sg::RegularGrid::unitCube({ 16385, 5 }),
      "column kernel",
      seed++);
    checkReconstruct<double>(spec(2, 15, { 2, 14 }, true),
      sg::RegularGrid::unitCube({ 5, 16385 }),
      "column kernel, axis 1",
      seed++);
  }
  std::printf(
    "{\"checks\":%d,\"failures\":%d,\"not_on_gpu\":%d,\"worst_error_over_tolerance\":%.3g}\n",
    checks,
    failures,
    notOnGpu,
    worstRatio);
  return failures == 0 ? 0 : 1;
}
