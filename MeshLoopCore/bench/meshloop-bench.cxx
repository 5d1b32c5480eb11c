// meshloop-bench: Cell Data to Point Data (cells -> points mean) and an Airfoil-like edge -> cell
// residual loop on generated hexahedral meshes, for every strategy x layout x reordering on the
// CPU threads and on CUDA, beside a CPU gather that follows VTK's vtkCellDataToPointData (point ->
// cell links built per call, then a parallel mean per point). Prints a table and JSON lines.
//
//   meshloop-bench --cells 1000000 --components 4 --reps 5 --threads 16 --json out.jsonl
//                  [--loops c2p,edge] [--reorderings None,GPS] [--backends GATHER,CPU,CUDA]
//                  [--float]
// GATHER is the VTK-like CPU reference, CPU and CUDA the MeshLoop backends.
#include <meshloop/meshloop.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

using namespace meshloop;
using Clock = std::chrono::steady_clock;

namespace
{

double seconds(Clock::time_point a)
{
  return std::chrono::duration<double>(Clock::now() - a).count();
}

double median(std::vector<double> v)
{
  if (v.empty())
  {
    return 0;
  }
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

bool has(const std::string& list, const std::string& item)
{
  std::stringstream ss(list);
  std::string token;
  while (std::getline(ss, token, ','))
  {
    if (token == item)
    {
      return true;
    }
  }
  return false;
}

struct Args
{
  long long cells = 1000000;
  int components = 4;
  int reps = 5;
  int threads = 0;
  int blockSize = 128;
  bool useFloat = false;
  std::string loops = "c2p,edge";
  std::string reorderings = "None,GPS";
  std::string backends = "GATHER,CPU,CUDA";
  std::string json;
};

template<typename T>
void parallel(int threads, long long n, T body)
{
  std::vector<std::thread> pool;
  const long long chunk = (n + threads - 1) / threads;
  for (int w = 0; w < threads; ++w)
  {
    const long long a = std::min(n, w * chunk), b = std::min(n, a + chunk);
    pool.emplace_back([=] { body(a, b); });
  }
  for (auto& t : pool)
  {
    t.join();
  }
}

/// VTK's algorithm for unstructured data (vtkCellDataToPointData with ContributingCellOption
/// All): point -> cell links built on every call, in parallel like vtkStaticCellLinksTemplate's
/// ThreadedBuildLinks (atomic counts, prefix sum, atomic fill), then every point averages its
/// cells' tuples, points split over threads. AoS like VTK arrays.
template<typename T>
void vtkLikeGather(const Mapping& m, const T* in, int components, T* out, int threads)
{
  const long long points = m.toCount;
  const long long cellCount = m.fromCount();
  std::vector<long long> offsets(static_cast<std::size_t>(points) + 1, 0);
  parallel(threads,
    cellCount,
    [&](long long e0, long long e1)
    {
      for (long long j = m.offsets[e0]; j < m.offsets[e1]; ++j)
      {
        __atomic_fetch_add(
          &offsets[static_cast<std::size_t>(m.targets[j]) + 1], 1, __ATOMIC_RELAXED);
      }
    });
  std::partial_sum(offsets.begin(), offsets.end(), offsets.begin());
  std::vector<std::int32_t> cells(m.targets.size());
  std::vector<long long> next(offsets.begin(), offsets.end() - 1);
  parallel(threads,
    cellCount,
    [&](long long e0, long long e1)
    {
      for (long long e = e0; e < e1; ++e)
      {
        for (long long j = m.offsets[e]; j < m.offsets[e + 1]; ++j)
        {
          const long long slot =
            __atomic_fetch_add(&next[static_cast<std::size_t>(m.targets[j])], 1, __ATOMIC_RELAXED);
          cells[static_cast<std::size_t>(slot)] = static_cast<std::int32_t>(e);
        }
      }
    });
  parallel(threads,
    points,
    [&](long long p0, long long p1)
    {
      std::vector<double> sum(static_cast<std::size_t>(components));
      for (long long p = p0; p < p1; ++p)
      {
        std::fill(sum.begin(), sum.end(), 0.0);
        const long long n = offsets[p + 1] - offsets[p];
        for (long long k = offsets[p]; k < offsets[p + 1]; ++k)
        {
          const T* tuple =
            in + static_cast<long long>(cells[static_cast<std::size_t>(k)]) * components;
          for (int c = 0; c < components; ++c)
          {
            sum[c] += tuple[c];
          }
        }
        for (int c = 0; c < components; ++c)
        {
          out[p * components + c] = n ? static_cast<T>(sum[c] / n) : T(0);
        }
      }
    });
}

template<typename T>
std::vector<double> referenceResult(const Mapping& m,
  const std::vector<T>& in,
  const std::vector<T>& w,
  int components,
  bool edges)
{
  // Serial double loop in AoS (the layout of the inputs generated below).
  std::vector<double> out(static_cast<std::size_t>(m.toCount * components), 0.0);
  std::vector<int> count(static_cast<std::size_t>(m.toCount), 0);
  for (long long e = 0; e < m.fromCount(); ++e)
  {
    if (edges)
    {
      const long long a = m.targets[m.offsets[e]], b = m.targets[m.offsets[e] + 1];
      for (int c = 0; c < components; ++c)
      {
        const double f =
          double(w[e]) * (double(in[b * components + c]) - double(in[a * components + c]));
        out[a * components + c] += f;
        out[b * components + c] -= f;
      }
      continue;
    }
    for (long long j = m.offsets[e]; j < m.offsets[e + 1]; ++j)
    {
      const long long t = m.targets[j];
      ++count[t];
      for (int c = 0; c < components; ++c)
      {
        out[t * components + c] += double(in[e * components + c]);
      }
    }
  }
  if (!edges)
  {
    for (long long t = 0; t < m.toCount; ++t)
    {
      for (int c = 0; c < components; ++c)
      {
        out[t * components + c] = count[t] ? out[t * components + c] / count[t] : 0.0;
      }
    }
  }
  return out;
}

/// SoA copy of AoS data.
template<typename T>
std::vector<T> toSoA(const std::vector<T>& aos, int components)
{
  const std::size_t n = aos.size() / components;
  std::vector<T> soa(aos.size());
  for (std::size_t i = 0; i < n; ++i)
  {
    for (int c = 0; c < components; ++c)
    {
      soa[c * n + i] = aos[i * components + c];
    }
  }
  return soa;
}

template<typename T>
double maxError(const std::vector<T>& got,
  const std::vector<double>& expected,
  bool soa,
  int components)
{
  const std::size_t n = expected.size() / components;
  double worst = 0;
  for (std::size_t i = 0; i < n; ++i)
  {
    for (int c = 0; c < components; ++c)
    {
      const double v = soa ? double(got[c * n + i]) : double(got[i * components + c]);
      worst = std::max(worst, std::abs(v - expected[i * components + c]));
    }
  }
  return worst;
}

struct Output
{
  std::ofstream json;
  void row(const std::string& loop,
    long long cells,
    const char* backend,
    const char* strategy,
    const char* layout,
    const char* reorder,
    int threads,
    double kernel,
    double e2e,
    double cold,
    double plan,
    double error,
    int colours)
  {
    std::printf("%-5s %10lld %-5s %-22s %-4s %-9s %3d %10.3f %10.3f %10.3f %9.3f %9.2e %5d\n",
      loop.c_str(),
      cells,
      backend,
      strategy,
      layout,
      reorder,
      threads,
      kernel * 1e3,
      e2e * 1e3,
      cold * 1e3,
      plan,
      error,
      colours);
    std::fflush(stdout);
    if (json)
    {
      json << "{\"loop\":\"" << loop << "\",\"cells\":" << cells << ",\"backend\":\"" << backend
           << "\",\"strategy\":\"" << strategy << "\",\"layout\":\"" << layout
           << "\",\"reordering\":\"" << reorder << "\",\"threads\":" << threads
           << ",\"kernel_ms\":" << kernel * 1e3 << ",\"end_to_end_ms\":" << e2e * 1e3
           << ",\"cold_ms\":" << cold * 1e3 << ",\"plan_s\":" << plan << ",\"max_error\":" << error
           << ",\"colours\":" << colours << "}\n";
      json.flush();
    }
  }
};

/// One loop's generated mesh, inputs, exact reference and output buffer, shared by its rows.
template<typename T>
struct LoopData
{
  std::string loop;
  bool edges = false;
  Mapping mesh;
  long long cells = 0;
  int k = 0;
  std::vector<T> in;
  std::vector<T> weights;
  std::vector<double> expected;
  std::vector<T> inSoA;
  std::vector<T> out;
};

template<typename T>
void makeLoopData(const std::string& loop, int side, int components, LoopData<T>& d)
{
  d.loop = loop;
  d.edges = loop == "edge";
  const bool edges = d.edges;
  const auto t0 = Clock::now();
  d.mesh = edges ? generate::dualEdges(side, side, side, true, 1)
                 : generate::hexahedra(side, side, side, true, 1);
  const Mapping& mesh = d.mesh;
  std::printf("# %s mesh: %lld from-elements, %lld to-elements, generated in %.2f s\n",
    loop.c_str(),
    static_cast<long long>(mesh.fromCount()),
    static_cast<long long>(mesh.toCount),
    seconds(t0));
  d.cells = static_cast<long long>(side) * side * side;
  const int k = components;
  d.k = k;
  std::mt19937 random(3);
  std::uniform_real_distribution<double> dist(-1, 1);
  d.in.resize(static_cast<std::size_t>((edges ? mesh.toCount : mesh.fromCount()) * k));
  for (auto& x : d.in)
  {
    x = static_cast<T>(dist(random));
  }
  d.weights.resize(static_cast<std::size_t>(edges ? mesh.fromCount() : 0));
  for (auto& x : d.weights)
  {
    x = static_cast<T>(dist(random));
  }
  d.expected = referenceResult(mesh, d.in, d.weights, k, edges);
  d.inSoA = toSoA(d.in, k);
  d.out.resize(static_cast<std::size_t>(mesh.toCount * k));
}

/// The GPS reordering, computed once per mesh and shared by all rows.
struct GpsReordering
{
  std::unique_ptr<MeshLoop> loop;
  Status status;
  double seconds = 0;
};

/// The VTK-like CPU gather (cells -> points only), in the mesh's numbering and in the one a
/// GPS reordering gives (what Reorder Mesh would write); the GPS reordering is kept in `gps`.
template<typename T>
void runGather(const Args& args, int threads, LoopData<T>& d, Output& output, GpsReordering& gps)
{
  const Mapping& mesh = d.mesh;
  const int k = d.k;
  std::vector<double> times;
  for (int r = 0; r < args.reps; ++r)
  {
    const auto s = Clock::now();
    vtkLikeGather(mesh, d.in.data(), k, d.out.data(), threads);
    times.push_back(seconds(s));
  }
  output.row(d.loop,
    d.cells,
    "CPU",
    "VTK-like-gather",
    "AoS",
    "None",
    threads,
    0,
    median(times),
    0,
    0,
    maxError(d.out, d.expected, false, k),
    0);
  // The same with the numbering a GPS reordering gives (what Reorder Mesh would write).
  if (has(args.reorderings, "GPS"))
  {
    const auto r0 = Clock::now();
    gps.loop.reset(new MeshLoop);
    gps.status = gps.loop->setMapping(mesh, Reordering::GPS, args.blockSize, threads);
    gps.seconds = seconds(r0);
  }
  if (gps.loop && gps.status)
  {
    const MeshLoop& ordered = *gps.loop;
    std::vector<T> orderedIn(d.in.size());
    const auto& perm = ordered.permutation();
    for (std::size_t e = 0; e < perm.fromOrder.size(); ++e)
    {
      std::copy_n(
        d.in.data() + static_cast<std::size_t>(perm.fromOrder[e]) * k, k, orderedIn.data() + e * k);
    }
    times.clear();
    for (int r = 0; r < args.reps; ++r)
    {
      const auto s = Clock::now();
      vtkLikeGather(ordered.internalMapping(), orderedIn.data(), k, d.out.data(), threads);
      times.push_back(seconds(s));
    }
    output.row(d.loop,
      d.cells,
      "CPU",
      "VTK-like-gather",
      "AoS",
      "GPS",
      threads,
      0,
      median(times),
      0,
      0,
      0,
      0);
  }
}

/// One row of the MeshLoop backends: the loop with `strategy`, `layout` and `backend` on the
/// prepared `meshLoop` (on CUDA after a cold call that uploads the mapping and plan too).
template<typename T>
void runLoopRow(const Args& args,
  int threads,
  LoopData<T>& d,
  Output& output,
  MeshLoop& meshLoop,
  Reordering reordering,
  Strategy strategy,
  double planSeconds,
  Layout layout,
  Backend backend)
{
  const bool edges = d.edges;
  const int k = d.k;
  const bool soa = layout == Layout::SoA;
  const T* data = soa ? d.inSoA.data() : d.in.data();
  ExecutionOptions options;
  options.backend = backend;
  options.strictBackend = true;
  options.strategy = strategy;
  options.layout = layout;
  options.threads = threads;
  auto call = [&](ExecutionReport& report)
  {
    return edges ? meshLoop.edgeFlux(data, d.weights.data(), k, d.out.data(), options, &report)
                 : meshLoop.scatter(Reduction::Mean, data, k, d.out.data(), options, &report);
  };
  ExecutionReport report;
  double cold = 0;
  if (backend == Backend::CUDA)
  {
    options.tuning.cacheOnDevice = false;
    Status s = call(report); // warm-up: module loading, first allocation
    s = call(report);
    cold = report.seconds;
    options.tuning.cacheOnDevice = true;
    s = call(report); // leaves the mapping and plan resident
    if (!s)
    {
      std::printf("# CUDA failed: %s\n", s.message().c_str());
      return;
    }
  }
  std::vector<double> kernel, total;
  Status s;
  for (int r = 0; r < args.reps; ++r)
  {
    s = call(report);
    kernel.push_back(report.kernelSeconds);
    total.push_back(report.seconds);
  }
  if (!s)
  {
    std::printf("# failed: %s\n", s.message().c_str());
    return;
  }
  const int colours = strategy == Strategy::GlobalColouring ? report.colours
    : strategy == Strategy::HierarchicalColouring           ? report.blockColours
                                                            : 0;
  output.row(d.loop,
    d.cells,
    toString(backend),
    toString(strategy),
    toString(layout),
    toString(reordering),
    backend == Backend::CPU ? threads : 0,
    median(kernel),
    median(total),
    cold,
    planSeconds,
    maxError(d.out, d.expected, soa, k),
    colours);
}

/// Every strategy x layout x backend of the MeshLoop backends with one reordering (the GPS one
/// taken from `gps` when the gather computed it).
template<typename T>
void runReordering(const Args& args,
  int threads,
  bool cuda,
  LoopData<T>& d,
  Output& output,
  Reordering reordering,
  GpsReordering& gps)
{
  std::unique_ptr<MeshLoop> own;
  Status set;
  double reorderSeconds = gps.seconds;
  if (reordering == Reordering::GPS && gps.loop)
  {
    own = std::move(gps.loop);
    set = gps.status;
  }
  else
  {
    own.reset(new MeshLoop);
    const auto r0 = Clock::now();
    set = own->setMapping(d.mesh, reordering, args.blockSize, threads);
    reorderSeconds = seconds(r0);
  }
  MeshLoop& meshLoop = *own;
  if (!set)
  {
    std::printf("# %s: %s\n", toString(reordering), set.message().c_str());
    return;
  }
  std::printf("# reordering %s took %.2f s\n", toString(reordering), reorderSeconds);
  for (const Strategy strategy :
    { Strategy::GlobalAtomics, Strategy::GlobalColouring, Strategy::HierarchicalColouring })
  {
    const auto p0 = Clock::now();
    if (!meshLoop.preparePlan(strategy, threads))
    {
      std::printf("# %s: the plan could not be built\n", toString(strategy));
      continue;
    }
    const double planSeconds = reorderSeconds + seconds(p0);
    for (const Layout layout : { Layout::AoS, Layout::SoA })
    {
      for (const Backend backend : { Backend::CPU, Backend::CUDA })
      {
        if (!has(args.backends, toString(backend)) || (backend == Backend::CUDA && !cuda))
        {
          continue;
        }
        runLoopRow(
          args, threads, d, output, meshLoop, reordering, strategy, planSeconds, layout, backend);
      }
    }
  }
}

void printHeader(const Args& args, int side, int threads, bool cuda, const std::string& why)
{
  std::printf("# meshloop-bench: %d^3 hexahedra (shuffled numbering), %d components, %s, reps %d, "
              "CPU threads %d, CUDA %s\n",
    side,
    args.components,
    args.useFloat ? "float" : "double",
    args.reps,
    threads,
    cuda ? "available" : why.c_str());
  std::printf("# times in ms (median); cold = one call with the mapping and plan uploaded too; "
              "plan = reordering + colouring in s\n");
  std::printf("%-5s %10s %-5s %-22s %-4s %-9s %3s %10s %10s %10s %9s %9s %5s\n",
    "loop",
    "cells",
    "back",
    "strategy",
    "lay",
    "reorder",
    "thr",
    "kernel",
    "end2end",
    "cold",
    "plan_s",
    "maxerr",
    "cols");
}

template<typename T>
int runAll(const Args& args)
{
  Output output;
  if (!args.json.empty())
  {
    output.json.open(args.json, std::ios::app);
  }
  const int side = std::max(1, static_cast<int>(std::lround(std::cbrt(double(args.cells)))));
  const int threads =
    args.threads > 0 ? args.threads : static_cast<int>(std::thread::hardware_concurrency());
  std::string why;
  const bool cuda = cudaAvailable(&why);
  printHeader(args, side, threads, cuda, why);
  for (const std::string loop : { "c2p", "edge" })
  {
    if (!has(args.loops, loop))
    {
      continue;
    }
    LoopData<T> d;
    makeLoopData(loop, side, args.components, d);
    GpsReordering gps;
    if (!d.edges && has(args.backends, "GATHER"))
    {
      runGather(args, threads, d, output, gps);
    }
    for (const Reordering reordering : { Reordering::None, Reordering::GPS, Reordering::Partition })
    {
      if (has(args.reorderings, toString(reordering)))
      {
        runReordering(args, threads, cuda, d, output, reordering, gps);
      }
    }
  }
  return 0;
}

} // namespace

int main(int argc, char** argv)
{
  Args args;
  for (int i = 1; i < argc; ++i)
  {
    const std::string a = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--cells")
      args.cells = std::stoll(next());
    else if (a == "--components")
      args.components = std::stoi(next());
    else if (a == "--reps")
      args.reps = std::stoi(next());
    else if (a == "--threads")
      args.threads = std::stoi(next());
    else if (a == "--block")
      args.blockSize = std::stoi(next());
    else if (a == "--float")
      args.useFloat = true;
    else if (a == "--loops")
      args.loops = next();
    else if (a == "--reorderings")
      args.reorderings = next();
    else if (a == "--backends")
      args.backends = next();
    else if (a == "--json")
      args.json = next();
    else
    {
      std::fprintf(stderr, "unknown argument %s\n", a.c_str());
      return 2;
    }
  }
  return args.useFloat ? runAll<float>(args) : runAll<double>(args);
}
