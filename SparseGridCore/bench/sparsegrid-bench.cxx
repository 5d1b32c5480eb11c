// sparsegrid-bench: times the core's operations on synthetic data and prints a table, or one
// JSON object per line with --json. Needs only SparseGridCore. See docs/benchmarks.md.
//
// Conventions (the fastsg papers'): hierarchize counts 3 * D * N_points flops, evaluate counts
// N_evals * N_blocks * (11 * D + 2). Throughput is coefficients/s (hierarchize, dehierarchize),
// points/s (evaluate) or voxels/s (reconstruct, sample).
#include "sparsegrid/sparsegrid.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace sg = sparsegrid;

namespace
{

struct Args
{
  std::string op = "hierarchize";
  int dims = 3;
  int level = 10;
  std::vector<int> caps;
  bool boundary = false;
  std::string precision = "float";
  std::size_t points = 1000000;
  std::vector<std::size_t> image;
  int threads = 0;
  std::string backend = "cpu";
  int repeat = 5;
  bool json = false;
  std::string opts = "default";
  int chunk = -1;
  unsigned seed = 42;
  int components = 1;   ///< probe, prepared-evaluate: interleaved components
  int batches = 1;      ///< probe: evaluate calls the points are split into
  bool prepared = true; ///< probe: through a PreparedGrid (else per batch and component)
};

void usage()
{
  std::fprintf(stderr,
    "usage: sparsegrid-bench --op "
    "hierarchize|dehierarchize|evaluate|reconstruct|sample|probe|prepared-evaluate\n"
    "  --dims D --level L [--caps c1,...] [--boundary 0|1] [--precision float|double]\n"
    "  [--points N] [--image NX,NY,...] [--threads T] [--backend cpu|cuda|auto]\n"
    "  [--repeat R] [--json] [--opts default|none|inv1,inv2,...] [--chunk N] [--seed S]\n"
    "  [--components C] [--batches K] [--prepared 0|1]\n"
    "--opts: the optimisation switches that are ON (default: the library's defaults).\n"
    "probe: a whole probe of --points points with C interleaved components in K evaluate calls,\n"
    "  through one PreparedGrid (--prepared 1, prepare() included) or one evaluate per batch\n"
    "  and component (--prepared 0, the plugin's former loop).\n"
    "prepared-evaluate: one evaluate call of --points points on a PreparedGrid prepared (and\n"
    "  made resident) before timing: the per-call cost that Auto's prepared threshold weighs.\n");
}

template<typename V>
std::vector<V> parseList(const char* text)
{
  std::vector<V> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ','))
  {
    out.push_back(static_cast<V>(std::stoll(item)));
  }
  return out;
}

bool parse(int argc, char** argv, Args& a)
{
  for (int i = 1; i < argc; ++i)
  {
    const std::string k = argv[i];
    auto next = [&]() -> const char*
    {
      if (i + 1 >= argc)
      {
        std::fprintf(stderr, "missing value for %s\n", k.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (k == "--op")
      a.op = next();
    else if (k == "--dims")
      a.dims = std::atoi(next());
    else if (k == "--level")
      a.level = std::atoi(next());
    else if (k == "--caps")
      a.caps = parseList<int>(next());
    else if (k == "--boundary")
      a.boundary = std::atoi(next()) != 0;
    else if (k == "--precision")
      a.precision = next();
    else if (k == "--points")
      a.points = static_cast<std::size_t>(std::atof(next()));
    else if (k == "--image")
      a.image = parseList<std::size_t>(next());
    else if (k == "--threads")
      a.threads = std::atoi(next());
    else if (k == "--backend")
      a.backend = next();
    else if (k == "--repeat")
      a.repeat = std::max(1, std::atoi(next()));
    else if (k == "--json")
      a.json = true;
    else if (k == "--opts")
      a.opts = next();
    else if (k == "--chunk")
      a.chunk = std::atoi(next());
    else if (k == "--seed")
      a.seed = static_cast<unsigned>(std::atoi(next()));
    else if (k == "--components")
      a.components = std::max(1, std::atoi(next()));
    else if (k == "--batches")
      a.batches = std::max(1, std::atoi(next()));
    else if (k == "--prepared")
      a.prepared = std::atoi(next()) != 0;
    else
    {
      usage();
      return false;
    }
  }
  return true;
}

/// The optimisation switches by their names in --opts and in the results.
using Switch = std::pair<const char*, bool sg::Optimizations::*>;
const Switch Switches[] = {
  Switch("inv1", &sg::Optimizations::inv1),
  Switch("inv2", &sg::Optimizations::inv2),
  Switch("inv3", &sg::Optimizations::inv3),
  Switch("inv4", &sg::Optimizations::inv4),
  Switch("ichg1", &sg::Optimizations::ichg1),
  Switch("ichg2", &sg::Optimizations::ichg2),
  Switch("vec1", &sg::Optimizations::vec1),
  Switch("sred1", &sg::Optimizations::sred1),
};

sg::Optimizations optimizations(const Args& a)
{
  sg::Optimizations o;
  if (a.opts != "default" && a.opts != "all")
  {
    o = sg::Optimizations::none();
    std::stringstream ss(a.opts);
    std::string item;
    while (std::getline(ss, item, ','))
    {
      bool known = item == "none" || item.empty();
      for (const auto& s : Switches)
      {
        if (item == s.first)
        {
          o.*(s.second) = true;
          known = true;
        }
      }
      if (!known)
      {
        std::fprintf(stderr, "unknown optimisation '%s'\n", item.c_str());
        std::exit(2);
      }
    }
  }
  if (a.chunk > 0)
  {
    o.chunkSize = a.chunk;
  }
  return o;
}

std::string optsString(const sg::Optimizations& o)
{
  std::string s;
  for (const auto& named : Switches)
  {
    if (o.*(named.second))
      s += (s.empty() ? "" : ",") + std::string(named.first);
  }
  return s.empty() ? "none" : s;
}

struct Result
{
  double median = 0, minimum = 0, kernelMedian = 0;
  std::string backendUsed, note;
  std::size_t items = 0;
  std::uint64_t uploads = 0; ///< coefficient uploads of the last timed run
};

/// The timed runs of one operation: wall and kernel seconds, the last report and status.
struct Timing
{
  std::vector<double> times, kernels;
  sg::ExecutionReport report;
  sg::Status status;

  template<typename Body>
  void timeIt(Body&& body)
  {
    auto t0 = std::chrono::steady_clock::now();
    status = body();
    times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    kernels.push_back(report.kernelSeconds);
  }
};

using Uniform = std::uniform_real_distribution<double>;

// Times hierarchize or dehierarchize of the coefficients, from a fresh copy each run.
template<typename T>
void timeTransform(const Args& a,
  const sg::Grid& grid,
  const sg::ExecutionOptions& options,
  const std::vector<T>& coeffs,
  Timing& t,
  Result& r)
{
  r.items = grid.size();
  std::vector<T> work(coeffs.size());
  const bool inverse = a.op == "dehierarchize";
  for (int k = 0; k < a.repeat + 1 && t.status.ok(); ++k)
  {
    work = coeffs;
    t.timeIt(
      [&]
      {
        return inverse ? sg::dehierarchize(grid, work.data(), options, &t.report)
                       : sg::hierarchize(grid, work.data(), options, &t.report);
      });
  }
}

// Times the evaluation of the coefficients at random points.
template<typename T>
void timeEvaluate(const Args& a,
  const sg::Grid& grid,
  const sg::ExecutionOptions& options,
  const std::vector<T>& coeffs,
  std::mt19937_64& rng,
  Uniform& uniform,
  Timing& t,
  Result& r)
{
  r.items = a.points;
  std::vector<T> pts(a.points * static_cast<std::size_t>(a.dims)), out(a.points);
  for (auto& p : pts)
  {
    p = static_cast<T>(uniform(rng));
  }
  for (int k = 0; k < a.repeat + 1 && t.status.ok(); ++k)
  {
    t.timeIt(
      [&]
      {
        return sg::evaluate(
          grid, coeffs.data(), pts.data(), a.points, out.data(), options, &t.report);
      });
  }
}

// Times probing several components in batches: resident, prepared per run, or one by one.
template<typename T>
void timeProbe(const Args& a,
  const sg::Grid& grid,
  const sg::ExecutionOptions& options,
  std::mt19937_64& rng,
  Uniform& uniform,
  Timing& t,
  Result& r)
{
  r.items = a.points;
  const std::size_t nc = static_cast<std::size_t>(a.components);
  const std::size_t D = static_cast<std::size_t>(a.dims);
  std::vector<T> all(grid.size() * nc);
  for (auto& c : all)
  {
    c = static_cast<T>(uniform(rng) - 0.5);
  }
  std::vector<std::vector<T>> single(nc, std::vector<T>(grid.size()));
  for (std::size_t p = 0; p < grid.size(); ++p)
  {
    for (std::size_t c = 0; c < nc; ++c)
    {
      single[c][p] = all[p * nc + c];
    }
  }
  std::vector<T> pts(a.points * D), out(a.points * nc);
  for (auto& p : pts)
  {
    p = static_cast<T>(uniform(rng));
  }
  const auto layout = sg::ComponentLayout::interleaved(a.components);
  const std::size_t batch = (a.points + a.batches - 1) / a.batches;
  sg::PreparedGrid<T> resident;
  if (a.op == "prepared-evaluate")
  {
    t.status = resident.prepare(grid, all.data(), layout, options, &t.report);
  }
  for (int k = 0; k < a.repeat + 1 && t.status.ok(); ++k)
  {
    double kernel = 0;
    std::uint64_t uploads = 0;
    auto add = [&](const sg::ExecutionReport& part)
    {
      kernel += part.kernelSeconds;
      uploads += part.coefficientUploads;
    };
    t.timeIt(
      [&]() -> sg::Status
      {
        if (a.op == "prepared-evaluate")
        {
          sg::Status st =
            resident.evaluate(pts.data(), a.points, out.data(), layout, options, &t.report);
          add(t.report);
          return st;
        }
        if (a.prepared)
        {
          sg::PreparedGrid<T> prepared;
          sg::Status st = prepared.prepare(grid, all.data(), layout, options, &t.report);
          add(t.report);
          for (std::size_t first = 0; st.ok() && first < a.points; first += batch)
          {
            const std::size_t count = std::min(batch, a.points - first);
            st = prepared.evaluate(
              pts.data() + first * D, count, out.data() + first * nc, layout, options, &t.report);
            add(t.report);
          }
          return st;
        }
        sg::Status st;
        for (std::size_t first = 0; st.ok() && first < a.points; first += batch)
        {
          const std::size_t count = std::min(batch, a.points - first);
          for (std::size_t c = 0; st.ok() && c < nc; ++c)
          {
            st = sg::evaluate(grid,
              single[c].data(),
              pts.data() + first * D,
              count,
              out.data() + first,
              options,
              &t.report);
            add(t.report);
          }
        }
        return st;
      });
    t.kernels.back() = kernel;
    r.uploads = uploads;
  }
}

// Times reconstructing the image or sampling it back; 2 when --image has the wrong length.
template<typename T>
int timeImage(const Args& a,
  const sg::Grid& grid,
  const sg::ExecutionOptions& options,
  std::vector<T>& coeffs,
  std::mt19937_64& rng,
  Uniform& uniform,
  Timing& t,
  Result& r)
{
  std::vector<std::size_t> dims = a.image;
  if (dims.empty())
  {
    for (int c : grid.caps())
    {
      dims.push_back((std::size_t(1) << c) + 1);
    }
  }
  if (static_cast<int>(dims.size()) != a.dims)
  {
    std::fprintf(stderr, "--image needs %d values\n", a.dims);
    return 2;
  }
  const sg::RegularGrid target = sg::RegularGrid::unitCube(dims);
  r.items = target.numberOfPoints();
  std::vector<T> image(r.items);
  if (a.op == "reconstruct")
  {
    for (int k = 0; k < a.repeat + 1 && t.status.ok(); ++k)
    {
      t.timeIt(
        [&] {
          return sg::reconstructImage(
            grid, coeffs.data(), target, image.data(), options, &t.report);
        });
    }
  }
  else
  {
    for (auto& v : image)
    {
      v = static_cast<T>(uniform(rng));
    }
    r.items = grid.size();
    for (int k = 0; k < a.repeat + 1 && t.status.ok(); ++k)
    {
      t.timeIt(
        [&] {
          return sg::sampleImage(
            grid, image.data(), target, coeffs.data(), {}, {}, options, &t.report);
        });
    }
  }
  return 0;
}

template<typename T>
int runOp(const Args& a, const sg::Grid& grid, const sg::ExecutionOptions& options, Result& r)
{
  std::mt19937_64 rng(a.seed);
  Uniform uniform(0.0, 1.0);
  std::vector<T> coeffs(grid.size());
  for (auto& c : coeffs)
  {
    c = static_cast<T>(uniform(rng) - 0.5);
  }
  Timing t;

  if (a.op == "hierarchize" || a.op == "dehierarchize")
  {
    timeTransform(a, grid, options, coeffs, t, r);
  }
  else if (a.op == "evaluate")
  {
    timeEvaluate(a, grid, options, coeffs, rng, uniform, t, r);
  }
  else if (a.op == "probe" || a.op == "prepared-evaluate")
  {
    timeProbe<T>(a, grid, options, rng, uniform, t, r);
  }
  else if (a.op == "reconstruct" || a.op == "sample")
  {
    const int code = timeImage(a, grid, options, coeffs, rng, uniform, t, r);
    if (code != 0)
    {
      return code;
    }
  }
  else
  {
    usage();
    return 2;
  }
  if (!t.status)
  {
    std::fprintf(stderr, "error: %s\n", t.status.message().c_str());
    return 1;
  }
  // The first run warms caches, threads and (on the GPU) the context: not counted.
  std::vector<double>& times = t.times;
  std::vector<double>& kernels = t.kernels;
  times.erase(times.begin());
  kernels.erase(kernels.begin());
  std::sort(times.begin(), times.end());
  std::sort(kernels.begin(), kernels.end());
  r.median = times[times.size() / 2];
  r.minimum = times.front();
  r.kernelMedian = kernels[kernels.size() / 2];
  r.backendUsed = sg::toString(t.report.backendUsed);
  r.note = t.report.note;
  return 0;
}

std::string jsonEscape(const std::string& s)
{
  std::string out;
  for (char c : s)
  {
    if (c == '"' || c == '\\')
      out += '\\';
    out += c;
  }
  return out;
}

} // namespace

int main(int argc, char** argv)
{
  Args a;
  if (!parse(argc, argv, a))
  {
    return 2;
  }
  sg::GridSpec spec;
  spec.dimensions = a.dims;
  spec.level = a.level;
  spec.caps = a.caps;
  spec.boundary = a.boundary;
  sg::Grid grid;
  sg::Status status = sg::Grid::create(spec, grid);
  if (!status)
  {
    std::fprintf(stderr, "error: %s\n", status.message().c_str());
    return 1;
  }
  sg::ExecutionOptions options;
  options.threads = a.threads;
  options.optimizations = optimizations(a);
  options.backend = a.backend == "cuda"
    ? sg::Backend::CUDA
    : (a.backend == "auto" ? sg::Backend::Auto : sg::Backend::CPU);
  Result r;
  const int rc = a.precision == "double" ? runOp<double>(a, grid, options, r)
                                         : runOp<float>(a, grid, options, r);
  if (rc != 0)
  {
    return rc;
  }
  double flops = 0;
  if (a.op == "hierarchize" || a.op == "dehierarchize")
  {
    flops = 3.0 * a.dims * static_cast<double>(grid.size());
  }
  else if (a.op == "evaluate" || a.op == "probe" || a.op == "prepared-evaluate")
  {
    flops = static_cast<double>(a.components) * static_cast<double>(a.points) *
      static_cast<double>(grid.numberOfBlocks()) * (11.0 * a.dims + 2.0);
  }
  const int threads = a.threads > 0 ? a.threads : 0;
  const double throughput = static_cast<double>(r.items) / r.median;
  const double gflops = flops / r.median * 1e-9;
  // One list of fields for both outputs: JSON gets every field, the table the ones with a
  // column width (negative: left-aligned).
  struct Field
  {
    const char* key;
    const char* label;
    int width;
    std::string text;
    bool quoted;
  };
  const auto format = [](const char* f, double v)
  {
    char buffer[64];
    std::snprintf(buffer, sizeof(buffer), f, v);
    return std::string(buffer);
  };
  const std::string opts = optsString(options.optimizations);
  const std::vector<Field> fields = {
    { "op", "op", -12, a.op, true },
    { "dims", "D", 4, std::to_string(a.dims), false },
    { "level", "L", 5, std::to_string(a.level), false },
    { "boundary", "boundary", 8, a.boundary ? "1" : "0", false },
    { "precision", "precision", 9, a.precision, true },
    { "backend", "backend", 7, r.backendUsed, true },
    { "threads", "threads", 7, std::to_string(threads), false },
    { "coefficients", "coefficients", 13, std::to_string(grid.size()), false },
    { "blocks", "", 0, std::to_string(grid.numberOfBlocks()), false },
    { "points", "items", 10, std::to_string(r.items), false },
    { "median_s", "median [s]", 12, format("%.9g", r.median), false },
    { "min_s", "", 0, format("%.9g", r.minimum), false },
    { "kernel_median_s", "", 0, format("%.9g", r.kernelMedian), false },
    { "throughput", "throughput/s", 14, format("%.6g", throughput), false },
    { "gflops", "GFlop/s", 9, format("%.6g", gflops), false },
    { "opts", "opts", -1, opts, true },
    { "chunk", "", 0, std::to_string(options.optimizations.chunkSize), false },
    { "repeat", "", 0, std::to_string(a.repeat), false },
    { "components", "", 0, std::to_string(a.components), false },
    { "batches", "", 0, std::to_string(a.batches), false },
    { "prepared", "", 0, a.prepared ? "1" : "0", false },
    { "uploads", "", 0, std::to_string(r.uploads), false },
    { "note", "", 0, jsonEscape(r.note), true },
  };
  if (a.json)
  {
    std::string line = "{";
    for (const Field& f : fields)
    {
      line += std::string(line.size() > 1 ? "," : "") + "\"" + f.key +
        "\":" + (f.quoted ? "\"" + f.text + "\"" : f.text);
    }
    std::printf("%s}\n", line.c_str());
  }
  else
  {
    std::string header, row;
    for (const Field& f : fields)
    {
      if (f.width != 0)
      {
        const char* gap = header.empty() ? "" : " ";
        char cell[256];
        std::snprintf(cell, sizeof(cell), "%s%*s", gap, f.width, f.label);
        header += cell;
        std::snprintf(cell, sizeof(cell), "%s%*s", gap, f.width, f.text.c_str());
        row += cell;
      }
    }
    std::printf("%s\n%s\n", header.c_str(), row.c_str());
    if (a.op == "probe" || a.op == "prepared-evaluate")
    {
      std::printf("components %d, batches %d, prepared %d: %llu coefficient upload(s)\n",
        a.components,
        a.batches,
        a.prepared ? 1 : 0,
        static_cast<unsigned long long>(r.uploads));
    }
    if (!r.note.empty())
    {
      std::printf("note: %s\n", r.note.c_str());
    }
  }
  return 0;
}
