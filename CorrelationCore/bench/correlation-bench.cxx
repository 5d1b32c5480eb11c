// correlation-bench: the study's size grid, direct kernel variants against the one-thread-per-lag
// baseline, cuFFT with cached and per-call plans, and the CPU (direct and FFTW). Prints a table
// and writes JSON. Times are medians over repetitions after one warm-up call; "kernel" is the
// device time of the correlation (events), "e2e" the whole correlate() call (allocation,
// transfers, kernel, copy back), "gpu" the kernel time again with the launches queued behind a
// wait kernel (deviceOnlyKernelTiming: GPU execution only, no host launch latency). Float, no
// normalisation; full mode (the study's setting) except the "windows" group (valid mode, as Image
// Displacement runs it).
//
//   correlation-bench [--json FILE] [--quick] [--no-cpu] [--case TEXT] [--config NAME]
// --case: only the cases whose group or name contains TEXT (e.g. "32x32 x1024"); --config: only
// the configuration of that name (for a profiler).
#include <correlation/correlation.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

using namespace correlation;

namespace
{
struct Config
{
  std::string name;
  Backend backend;
  Algorithm algorithm;
  DirectOptions direct;
  bool cachePlans = true;
  bool powerOfTwo = false; ///< FFT: power-of-two sizes instead of 2^a 3^b 5^c 7^d
};

struct Result
{
  std::string group, caseName, config;
  double kernelMs = 0, e2eMs = 0;
  double gpuMs = 0;   ///< kernel time without the host's launch latency (CUDA only)
  std::string kernel; ///< the GPU direct kernel that ran (a fall-back shows here)
  bool ok = true;
  std::string error;
};

double median(std::vector<double> v)
{
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

Result measure(const std::string& group,
  const std::string& caseName,
  const Config& c,
  const Batch& batch,
  Mode mode,
  const std::vector<float>& l,
  const std::vector<float>& r,
  int reps)
{
  Result res{ group, caseName, c.name };
  LagWindow w;
  if (!lagWindow(batch, mode, w).ok())
  {
    res.ok = false;
    res.error = "invalid batch";
    return res;
  }
  std::vector<float> out(batch.pairs() * w.size());
  ExecutionOptions o;
  o.backend = c.backend;
  o.algorithm = c.algorithm;
  o.tuning.direct = c.direct;
  o.tuning.cacheFftPlans = c.cachePlans;
  o.tuning.fftPowerOfTwo = c.powerOfTwo;
  o.strictBackend = true;
  std::vector<double> k, e;
  for (int i = 0; i <= reps; ++i)
  {
    ExecutionReport rep;
    const auto t0 = std::chrono::steady_clock::now();
    const Status s =
      correlate({ batch, l.data(), r.data(), mode, Normalization::None }, out.data(), o, &rep);
    const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!s)
    {
      res.ok = false;
      res.error = std::string(toString(s.code())) + ": " + s.message();
      return res;
    }
    res.kernel = c.backend == Backend::CUDA && c.algorithm == Algorithm::Direct
      ? toString(rep.kernelUsed)
      : "";
    if (i > 0) // the first call warms up (context, module loading, plan creation when cached)
    {
      k.push_back(rep.kernelSeconds * 1e3);
      e.push_back(sec * 1e3);
    }
  }
  res.kernelMs = median(k);
  res.e2eMs = median(e);
  if (c.backend == Backend::CUDA)
  {
    // The same calls again, timed on the GPU only (deviceOnlyKernelTiming: the launches are
    // queued behind a wait kernel, so the host's launch latency leaves the event window).
    o.tuning.deviceOnlyKernelTiming = true;
    std::vector<double> g;
    for (int i = 0; i < reps; ++i)
    {
      ExecutionReport rep;
      if (correlate({ batch, l.data(), r.data(), mode, Normalization::None }, out.data(), o, &rep))
      {
        g.push_back(rep.kernelSeconds * 1e3);
      }
    }
    res.gpuMs = median(g);
  }
  return res;
}

std::string jsonEscape(const std::string& s)
{
  std::string o;
  for (char ch : s)
  {
    if (ch == '"' || ch == '\\')
    {
      o += '\\';
    }
    o += ch;
  }
  return o;
}
struct Case
{
  std::string group, name;
  Batch batch;
  Mode mode = Mode::Full;
};

/// The command line (see the file's comment).
struct Arguments
{
  std::string jsonPath = "correlation-bench.json";
  bool quick = false, cpu = true;
  std::string only, onlyConfig;
};

Arguments parseArguments(int argc, char** argv)
{
  Arguments a;
  for (int i = 1; i < argc; ++i)
  {
    if (!std::strcmp(argv[i], "--json") && i + 1 < argc)
    {
      a.jsonPath = argv[++i];
    }
    else if (!std::strcmp(argv[i], "--quick"))
    {
      a.quick = true;
    }
    else if (!std::strcmp(argv[i], "--no-cpu"))
    {
      a.cpu = false;
    }
    else if (!std::strcmp(argv[i], "--case") && i + 1 < argc)
    {
      a.only = argv[++i];
    }
    else if (!std::strcmp(argv[i], "--config") && i + 1 < argc)
    {
      a.onlyConfig = argv[++i];
    }
  }
  return a;
}

/// The GPU direct kernels compared on one-to-one batches.
std::vector<Config> oneToOneDirectConfigs()
{
  using W = WorkDistribution;
  DirectOptions baseline;
  baseline.kernel = DirectKernel::Baseline;
  return { { "baseline", Backend::CUDA, Algorithm::Direct, baseline },
    { "ws", Backend::CUDA, Algorithm::Direct, DirectOptions::warpShuffle(W::None, 1, 1, 1) },
    { "ws-rect8",
      Backend::CUDA,
      Algorithm::Direct,
      DirectOptions::warpShuffle(W::Rectangle, 8, 1, 1) },
    { "ws-tri8",
      Backend::CUDA,
      Algorithm::Direct,
      DirectOptions::warpShuffle(W::Triangle, 8, 1, 1) },
    { "ws-rect4",
      Backend::CUDA,
      Algorithm::Direct,
      DirectOptions::warpShuffle(W::Rectangle, 4, 1, 1) },
    { "ws-tri4",
      Backend::CUDA,
      Algorithm::Direct,
      DirectOptions::warpShuffle(W::Triangle, 4, 1, 1) },
    { "ws-tri2",
      Backend::CUDA,
      Algorithm::Direct,
      DirectOptions::warpShuffle(W::Triangle, 2, 1, 1) },
    { "ws-tri32",
      Backend::CUDA,
      Algorithm::Direct,
      DirectOptions::warpShuffle(W::Triangle, 32, 1, 1) },
    { "ws-s2", Backend::CUDA, Algorithm::Direct, DirectOptions::warpShuffle(W::None, 1, 2, 1) },
    { "ws-s4", Backend::CUDA, Algorithm::Direct, DirectOptions::warpShuffle(W::None, 1, 4, 1) },
    { "ws-s8", Backend::CUDA, Algorithm::Direct, DirectOptions::warpShuffle(W::None, 1, 8, 1) },
    { "ws-s4-tri8",
      Backend::CUDA,
      Algorithm::Direct,
      DirectOptions::warpShuffle(W::Triangle, 8, 4, 1) },
    { "ws-s8-tri16",
      Backend::CUDA,
      Algorithm::Direct,
      DirectOptions::warpShuffle(W::Triangle, 16, 8, 1) },
    { "tiled-w2", Backend::CUDA, Algorithm::Direct, DirectOptions::registerTiled(1, 2) },
    { "tiled-w4", Backend::CUDA, Algorithm::Direct, DirectOptions::registerTiled(1, 4) },
    { "tiled-w8", Backend::CUDA, Algorithm::Direct, DirectOptions::registerTiled(1, 8) },
    { "split-w4", Backend::CUDA, Algorithm::Direct, DirectOptions::splitTiled(0, 4) },
    { "split-w8", Backend::CUDA, Algorithm::Direct, DirectOptions::splitTiled(0, 8) },
    { "split-w16", Backend::CUDA, Algorithm::Direct, DirectOptions::splitTiled(0, 16) },
    { "auto", Backend::CUDA, Algorithm::Direct, {} } };
}

/// The GPU direct kernels compared on batches of many pairs.
std::vector<Config> manyDirectConfigs()
{
  using W = WorkDistribution;
  DirectOptions baseline;
  baseline.kernel = DirectKernel::Baseline;
  return { { "baseline", Backend::CUDA, Algorithm::Direct, baseline },
    { "ws", Backend::CUDA, Algorithm::Direct, DirectOptions::warpShuffle(W::None, 1, 1, 1) },
    { "ws-r2", Backend::CUDA, Algorithm::Direct, DirectOptions::warpShuffle(W::None, 1, 1, 2) },
    { "ws-r4", Backend::CUDA, Algorithm::Direct, DirectOptions::warpShuffle(W::None, 1, 1, 4) },
    { "ws-r8", Backend::CUDA, Algorithm::Direct, DirectOptions::warpShuffle(W::None, 1, 1, 8) },
    { "ws-s2-r4", Backend::CUDA, Algorithm::Direct, DirectOptions::warpShuffle(W::None, 1, 2, 4) },
    { "ws-s2-r8", Backend::CUDA, Algorithm::Direct, DirectOptions::warpShuffle(W::None, 1, 2, 8) },
    { "ws-s4-r4", Backend::CUDA, Algorithm::Direct, DirectOptions::warpShuffle(W::None, 1, 4, 4) },
    { "ws-tri8-r4",
      Backend::CUDA,
      Algorithm::Direct,
      DirectOptions::warpShuffle(W::Triangle, 8, 1, 4) },
    { "tiled", Backend::CUDA, Algorithm::Direct, DirectOptions::registerTiled(1, 4) },
    { "tiled-r2", Backend::CUDA, Algorithm::Direct, DirectOptions::registerTiled(2, 4) },
    { "tiled-r4", Backend::CUDA, Algorithm::Direct, DirectOptions::registerTiled(4, 4) },
    { "tiled-r4-w8", Backend::CUDA, Algorithm::Direct, DirectOptions::registerTiled(4, 8) },
    { "split-p32-w16-noslide",
      Backend::CUDA,
      Algorithm::Direct,
      DirectOptions::splitTiled(32, 16, false) },
    { "split-p16-w16-noslide",
      Backend::CUDA,
      Algorithm::Direct,
      DirectOptions::splitTiled(16, 16, false) },
    { "split-p8-w8-noslide",
      Backend::CUDA,
      Algorithm::Direct,
      DirectOptions::splitTiled(8, 8, false) },
    { "split-p32-w16-nopeel",
      Backend::CUDA,
      Algorithm::Direct,
      DirectOptions::splitTiled(32, 16, true, false) },
    { "split-p16-w16-nopeel",
      Backend::CUDA,
      Algorithm::Direct,
      DirectOptions::splitTiled(16, 16, true, false) },
    { "split-p8-w16-nopeel",
      Backend::CUDA,
      Algorithm::Direct,
      DirectOptions::splitTiled(8, 16, true, false) },
    { "split-p32-w16", Backend::CUDA, Algorithm::Direct, DirectOptions::splitTiled(32, 16) },
    { "split-p32-w8-rows4",
      Backend::CUDA,
      Algorithm::Direct,
      DirectOptions::splitTiled(32, 8, true, true, 4) },
    { "split-p16-w8-rows4",
      Backend::CUDA,
      Algorithm::Direct,
      DirectOptions::splitTiled(16, 8, true, true, 4) },
    { "split-p16-w4-rows4",
      Backend::CUDA,
      Algorithm::Direct,
      DirectOptions::splitTiled(16, 4, true, true, 4) },
    { "split-p8-w8-rows4",
      Backend::CUDA,
      Algorithm::Direct,
      DirectOptions::splitTiled(8, 8, true, true, 4) },
    { "split-p8-w4-rows4",
      Backend::CUDA,
      Algorithm::Direct,
      DirectOptions::splitTiled(8, 4, true, true, 4) },
    { "split-p8-w8-rows4-nopeel",
      Backend::CUDA,
      Algorithm::Direct,
      DirectOptions::splitTiled(8, 8, true, false, 4) },
    { "split-p32-w8", Backend::CUDA, Algorithm::Direct, DirectOptions::splitTiled(32, 8) },
    { "split-p16-w16", Backend::CUDA, Algorithm::Direct, DirectOptions::splitTiled(16, 16) },
    { "split-p16-w8", Backend::CUDA, Algorithm::Direct, DirectOptions::splitTiled(16, 8) },
    { "split-p8-w16", Backend::CUDA, Algorithm::Direct, DirectOptions::splitTiled(8, 16) },
    { "split-p8-w8", Backend::CUDA, Algorithm::Direct, DirectOptions::splitTiled(8, 8) },
    { "split-p4-w8", Backend::CUDA, Algorithm::Direct, DirectOptions::splitTiled(4, 8) },
    { "split-p1-w8", Backend::CUDA, Algorithm::Direct, DirectOptions::splitTiled(1, 8) },
    { "lanes-w32", Backend::CUDA, Algorithm::Direct, DirectOptions::pairPerLane(32) },
    { "lanes-w24", Backend::CUDA, Algorithm::Direct, DirectOptions::pairPerLane(24) },
    { "lanes-w16", Backend::CUDA, Algorithm::Direct, DirectOptions::pairPerLane(16) },
    { "lanes-w8", Backend::CUDA, Algorithm::Direct, DirectOptions::pairPerLane(8) },
    { "lanes-w32-nopeel", Backend::CUDA, Algorithm::Direct, DirectOptions::pairPerLane(32, false) },
    { "tensor-3xtf32", Backend::CUDA, Algorithm::Direct, DirectOptions::tensorTf32(16) },
    { "tensor-3xtf32-w8", Backend::CUDA, Algorithm::Direct, DirectOptions::tensorTf32(8) },
    { "tensor-3xtf32-w12", Backend::CUDA, Algorithm::Direct, DirectOptions::tensorTf32(12) },
    { "tensor-2xf16", Backend::CUDA, Algorithm::Direct, DirectOptions::tensorF16(16) },
    { "tensor-2xf16-w8", Backend::CUDA, Algorithm::Direct, DirectOptions::tensorF16(8) },
    { "auto", Backend::CUDA, Algorithm::Direct, {} } };
}

/// cuFFT with cached and per-call plans.
std::vector<Config> fftConfigs()
{
  return { { "cufft-cached", Backend::CUDA, Algorithm::FFT, {}, true },
    { "cufft-cached-pow2", Backend::CUDA, Algorithm::FFT, {}, true, true },
    { "cufft-per-call", Backend::CUDA, Algorithm::FFT, {}, false } };
}

/// The CPU: direct and FFTW.
std::vector<Config> cpuConfigs()
{
  return { { "cpu-direct", Backend::CPU, Algorithm::Direct, {} },
    { "cpu-fftw", Backend::CPU, Algorithm::FFT, {} } };
}

/// The study's size grid (fewer sizes with --quick).
std::vector<Case> makeCases(bool quick)
{
  std::vector<Case> cases;
  std::vector<int> squares = { 16, 24, 32, 48, 64, 96, 128, 139, 192, 256, 512 };
  if (quick)
  {
    squares = { 16, 32, 64 };
  }
  for (int s : squares)
  {
    cases.push_back({ "one-to-one",
      std::to_string(s) + "x" + std::to_string(s),
      Batch::oneToOne({ s, s }, { s, s }) });
  }
  std::vector<int> ms = { 2, 8, 32, 128, 512, 1024 };
  if (quick)
  {
    ms = { 2, 32 };
  }
  for (int m : ms)
  {
    cases.push_back({ "one-to-many",
      "32x32 x" + std::to_string(m),
      { Shape::OneToMany, 1, m, { 32, 32 }, { 32, 32 } } });
  }
  cases.push_back(
    { "one-to-many", "16x16 x1024", { Shape::OneToMany, 1, 1024, { 16, 16 }, { 16, 16 } } });
  cases.push_back({ "n-to-m", "16x16 50x50", { Shape::NToM, 50, 50, { 16, 16 }, { 16, 16 } } });
  if (!quick)
  {
    cases.push_back({ "n-to-m", "32x32 50x50", { Shape::NToM, 50, 50, { 32, 32 }, { 32, 32 } } });
    cases.push_back({ "n-to-mn", "16x16 32x32", { Shape::NToMN, 32, 32, { 16, 16 }, { 16, 16 } } });
  }
  // Image Displacement's batches: n windows, each searched in its own region (valid mode).
  for (int n : { 64, 1024 })
  {
    cases.push_back({ "windows",
      "32 in 48 x" + std::to_string(n),
      { Shape::NToMN, n, 1, { 32, 32 }, { 48, 48 } },
      Mode::Valid });
  }

  return cases;
}

/// Rewritten after every result so that a run cut short still leaves its numbers.
void writeJson(const std::string& jsonPath, bool gpu, const std::vector<Result>& results)
{
  std::ofstream json(jsonPath);
  json << "{\n  \"cuda\": " << (gpu ? "true" : "false") << ",\n  \"unit\": \"ms (median)\",\n"
       << "  \"results\": [\n";
  for (std::size_t i = 0; i < results.size(); ++i)
  {
    const Result& r = results[i];
    json << "    {\"group\": \"" << r.group << "\", \"case\": \"" << r.caseName
         << "\", \"config\": \"" << r.config << "\", \"ok\": " << (r.ok ? "true" : "false")
         << ", \"kernel\": \"" << r.kernel << "\", \"kernel_ms\": " << r.kernelMs
         << ", \"kernel_gpu_only_ms\": " << r.gpuMs << ", \"e2e_ms\": " << r.e2eMs
         << ", \"error\": \"" << jsonEscape(r.error) << "\"}" << (i + 1 < results.size() ? "," : "")
         << "\n";
  }
  json << "  ]\n}\n";
}

/// The configurations measured on case `c` of `ops` direct operations.
std::vector<Config> configsFor(const Case& c, double ops, bool gpu, bool cpu)
{
  std::vector<Config> configs;
  if (gpu)
  {
    const std::vector<Config> direct =
      c.group == "one-to-one" ? oneToOneDirectConfigs() : manyDirectConfigs();
    const std::vector<Config> fft = fftConfigs();
    configs.insert(configs.end(), direct.begin(), direct.end());
    configs.insert(configs.end(), fft.begin(), fft.end());
  }
  if (cpu)
  {
    const std::vector<Config> cpuOnes = cpuConfigs();
    configs.push_back(cpuOnes[1]);
    if (ops < 3e9) // the CPU direct path beyond that takes seconds per call
    {
      configs.push_back(cpuOnes[0]);
    }
  }
  return configs;
}

/// One line of the table.
void printResult(const Case& c, const Config& cfg, const Result& res)
{
  if (res.ok)
  {
    std::printf("%-12s %-14s %-22s %10.4f %10.4f %10.4f  %s\n",
      c.group.c_str(),
      c.name.c_str(),
      cfg.name.c_str(),
      res.kernelMs,
      res.gpuMs,
      res.e2eMs,
      res.kernel.c_str());
  }
  else
  {
    std::printf("%-12s %-14s %-22s failed: %s\n",
      c.group.c_str(),
      c.name.c_str(),
      cfg.name.c_str(),
      res.error.c_str());
  }
  std::fflush(stdout);
}
}

int main(int argc, char** argv)
{
  const Arguments a = parseArguments(argc, argv);
  std::string why;
  const bool gpu = cudaAvailable(&why);
  if (!gpu)
  {
    std::printf("# CUDA unavailable (%s): CPU rows only\n", why.c_str());
  }
  const std::vector<Case> cases = makeCases(a.quick);
  std::vector<Result> results;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1, 1);
  std::printf("%-12s %-14s %-22s %10s %10s %10s  %s\n",
    "group",
    "case",
    "config",
    "kernel_ms",
    "gpu_ms",
    "e2e_ms",
    "kernel that ran");
  for (const Case& c : cases)
  {
    if (!a.only.empty() && c.group.find(a.only) == std::string::npos &&
      c.name.find(a.only) == std::string::npos)
    {
      continue;
    }
    std::vector<float> l(c.batch.leftCount() * c.batch.left.count());
    std::vector<float> r(c.batch.rightCount() * c.batch.right.count());
    for (auto& x : l)
    {
      x = dist(rng);
    }
    for (auto& x : r)
    {
      x = dist(rng);
    }
    LagWindow w;
    if (!lagWindow(c.batch, c.mode, w).ok())
    {
      continue;
    }
    const double ops = static_cast<double>(directOperations(c.batch, w));
    const int reps = ops > 5e9 ? 3 : (ops > 2e9 ? 5 : 11);
    for (const Config& cfg : configsFor(c, ops, gpu, a.cpu))
    {
      if (!a.onlyConfig.empty() && cfg.name != a.onlyConfig)
      {
        continue;
      }
      const int n = cfg.backend == Backend::CPU ? std::min(reps, 5) : reps;
      Result res = measure(c.group, c.name, cfg, c.batch, c.mode, l, r, n);
      printResult(c, cfg, res);
      results.push_back(res);
      writeJson(a.jsonPath, gpu, results);
    }
  }
  writeJson(a.jsonPath, gpu, results);
  return 0;
}
