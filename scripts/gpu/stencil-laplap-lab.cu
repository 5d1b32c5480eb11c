// Session 7 laboratory for the float horizontal laplap (issue 15's 80 % bar): the copy
// references (the benchmark's copy kernel, a wider copy kernel, cudaMemcpy device to device, at
// the float and the double size), the current default strips (StencilCore's own kernels: this
// file includes src/cuda/Device.cu) and the warp-row variants, every variant checked against a
// reference kernel (one thread per value, StencilCore's generic imageValue) on random data with
// the output poisoned (NaN) first. Timing as stencil-bench: CUDA events around each launch,
// median of 30 launches; 8 repeats in rotating order, median of the medians.
// Build (repository root): nvcc -O3 -arch=sm_90 -std=c++17 -IStencilCore/include
//   scripts/gpu/stencil-laplap-lab.cu -o /tmp/lab
// Needs the warp-row kernels of scripts/gpu/pending/stencil-session7-warp-rows.patch (git apply)
// until that patch is on main.
#include "../../StencilCore/src/cuda/Device.cu"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

// Not used here: the column-mesh and row-tile entry points of the other CUDA sources.
namespace stencil
{
namespace detail
{
#define STENCIL_LAB_STUB(name, T)                                                                  \
  template<>                                                                                       \
  Status name<T>(                                                                                  \
    const PreparedTable<T>&, const ColumnArgs<T>&, const ExecutionOptions&, ExecutionReport&)      \
  {                                                                                                \
    return Status(ErrorCode::BackendUnavailable, "lab");                                           \
  }
STENCIL_LAB_STUB(cudaColumnsChasing, float)
STENCIL_LAB_STUB(cudaColumnsChasing, double)
STENCIL_LAB_STUB(cudaColumnsNonChasing, float)
STENCIL_LAB_STUB(cudaColumnsNonChasing, double)
template<typename T>
void launchRowTiles(const ImageArgs<T>&, const TileGrid&)
{
}
template void launchRowTiles<float>(const ImageArgs<float>&, const TileGrid&);
template void launchRowTiles<double>(const ImageArgs<double>&, const TileGrid&);
template<typename T>
TileGrid rowTileGrid(const ImageArgs<T>&, int, int)
{
  return TileGrid{};
}
template TileGrid rowTileGrid<float>(const ImageArgs<float>&, int, int);
template TileGrid rowTileGrid<double>(const ImageArgs<double>&, int, int);
} // namespace detail
} // namespace stencil

using namespace stencil::detail;

#define CHECK(x)                                                                                   \
  do                                                                                               \
  {                                                                                                \
    cudaError_t e_ = (x);                                                                          \
    if (e_ != cudaSuccess)                                                                         \
    {                                                                                              \
      std::printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e_), #x, __LINE__);               \
      std::exit(2);                                                                                \
    }                                                                                              \
  } while (0)

// A named namespace: nvcc's host stubs cannot tell kernels in two anonymous namespaces apart.
namespace lab
{
template<typename T>
__global__ void referenceKernel(const __grid_constant__ ImageArgs<T> a)
{
  const long long n = a.dims[0] * a.dims[1] * a.dims[2];
  for (long long p = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; p < n;
       p += static_cast<long long>(gridDim.x) * blockDim.x)
  {
    const long long i = p % a.dims[0];
    const long long j = (p / a.dims[0]) % a.dims[1];
    const long long k = p / (a.dims[0] * a.dims[1]);
    a.out[p] = imageValue(a, i, j, k);
  }
}

__global__ void wideCopy(const float4* __restrict__ in, float4* __restrict__ out, long long n)
{
  const long long base = (blockIdx.x * static_cast<long long>(blockDim.x)) * 4 + threadIdx.x;
  float4 v[4];
#pragma unroll
  for (int u = 0; u < 4; ++u)
  {
    const long long i = base + u * blockDim.x;
    if (i < n)
    {
      v[u] = __ldg(in + i);
    }
  }
#pragma unroll
  for (int u = 0; u < 4; ++u)
  {
    const long long i = base + u * blockDim.x;
    if (i < n)
    {
      out[i] = v[u];
    }
  }
}

struct Variant
{
  std::string name;
  double bytes;                 // bytes read + written
  std::function<void()> launch; // one launch
  int check = 0;                // 0 none, 1 whole image, 2 interior only, 3 frame only
  bool isDouble = false;
  std::vector<double> medians;
};

double medianOf(std::vector<double> v)
{
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double timeMedian(const std::function<void()>& launch, int runs)
{
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  std::vector<double> t;
  launch(); // warm-up
  CHECK(cudaDeviceSynchronize());
  for (int r = 0; r < runs; ++r)
  {
    CHECK(cudaEventRecord(start));
    launch();
    CHECK(cudaEventRecord(stop));
    CHECK(cudaGetLastError());
    CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, start, stop));
    t.push_back(ms * 1e-3);
  }
  CHECK(cudaEventDestroy(start));
  CHECK(cudaEventDestroy(stop));
  return medianOf(t);
}

template<typename T>
struct Problem
{
  ImageArgs<T> args;
  T* u = nullptr;
  T* out = nullptr;
  std::vector<T> reference;
  size_t n = 0;
};

template<typename T>
void setUp(Problem<T>& p, int nx, int ny, int nz, bool zeroFlux = true)
{
  p.n = static_cast<size_t>(nx) * ny * nz;
  CHECK(cudaMalloc(&p.u, p.n * sizeof(T)));
  CHECK(cudaMalloc(&p.out, p.n * sizeof(T)));
  std::vector<T> host(p.n);
  std::mt19937 rng(12345);
  std::uniform_real_distribution<double> d(-1.0, 1.0);
  for (auto& v : host)
  {
    v = static_cast<T>(d(rng));
  }
  CHECK(cudaMemcpy(p.u, host.data(), p.n * sizeof(T), cudaMemcpyHostToDevice));
  ImageArgs<T>& a = p.args;
  a.u = p.u;
  a.out = p.out;
  a.dims[0] = nx;
  a.dims[1] = ny;
  a.dims[2] = nz;
  a.stride[0] = 1;
  a.stride[1] = nx;
  a.stride[2] = static_cast<long long>(nx) * ny;
  a.weight[0] = T(1);
  a.weight[1] = T(1.0 / (1.25 * 1.25));
  a.weight[2] = 0;
  a.active[0] = true;
  a.active[1] = true;
  a.active[2] = false;
  a.laplap = true;
  a.zeroFlux = zeroFlux;
  a.fill = T(-7);
  CHECK(cudaMemset(p.out, 0xff, p.n * sizeof(T)));
  referenceKernel<T><<<4096, 256>>>(a);
  CHECK(cudaDeviceSynchronize());
  p.reference.resize(p.n);
  CHECK(cudaMemcpy(p.reference.data(), p.out, p.n * sizeof(T), cudaMemcpyDeviceToHost));
  // The reference kernel against the host (the same generic function) on a sample.
  ImageArgs<T> h = a;
  h.u = host.data();
  double worst = 0;
  for (size_t q = 0; q < p.n; q += 7919)
  {
    const long long i = q % nx, j = (q / nx) % ny, k = q / (static_cast<size_t>(nx) * ny);
    worst = std::max(worst, std::fabs(double(imageValue(h, i, j, k)) - double(p.reference[q])));
  }
  for (long long j : { 0, 1, 2, ny - 3, ny - 2, ny - 1 })
    for (long long i = 0; i < nx; ++i)
    {
      const size_t q = i + static_cast<size_t>(nx) * j;
      worst = std::max(worst, std::fabs(double(imageValue(h, i, j, 0)) - double(p.reference[q])));
    }
  std::printf("reference kernel vs host imageValue (%s, sample + frame rows): max |diff| %.3g\n",
    sizeof(T) == 4 ? "float" : "double",
    worst);
}

template<typename T>
std::string checkVariant(Problem<T>& p, const Variant& v)
{
  CHECK(cudaMemset(p.out, 0xff, p.n * sizeof(T)));
  v.launch();
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  std::vector<T> got(p.n);
  CHECK(cudaMemcpy(got.data(), p.out, p.n * sizeof(T), cudaMemcpyDeviceToHost));
  const long long nx = p.args.dims[0], ny = p.args.dims[1];
  double worst = 0, scale = 0;
  size_t bad = 0, inexact = 0, checked = 0;
  for (size_t q = 0; q < p.n; ++q)
  {
    const long long i = q % nx, j = (q / nx) % ny;
    const bool frame = i < 2 || i >= nx - 2 || j < 2 || j >= ny - 2;
    if ((v.check == 2 && frame) || (v.check == 3 && !frame))
    {
      continue;
    }
    ++checked;
    const double r = p.reference[q], g = got[q];
    scale = std::max(scale, std::fabs(r));
    const double d = std::fabs(r - g);
    if (!(d <= (sizeof(T) == 4 ? 1e-5 : 1e-12) * (1 + std::fabs(r))))
    {
      ++bad;
    }
    if (!(r == g))
    {
      ++inexact;
    }
    if (!(d <= worst))
    {
      worst = std::isnan(d) ? INFINITY : std::max(worst, d);
    }
  }
  char text[200];
  std::snprintf(text,
    sizeof(text),
    "%s (checked %zu, max|diff| %.2g, not bitwise %zu, bad %zu)",
    bad ? "FAIL" : "ok",
    checked,
    worst,
    inexact,
    bad);
  return text;
}

template<typename T>
ImageArgs<T> pick(const ImageArgs<float>& f, const ImageArgs<double>& d)
{
  if constexpr (sizeof(T) == 4)
  {
    return f;
  }
  else
  {
    return d;
  }
}

template<typename T, int Rows, int Prefetch, int Warps, int MinBlocks, bool Streaming>
void launchWarpRows(const ImageArgs<T>& a, const WarpRowGrid& g)
{
  warpRowKernel<T, Rows, Prefetch, Warps, MinBlocks, Streaming>
    <<<static_cast<unsigned>(g.blocks), dim3(32, Warps)>>>(a, g);
}
} // namespace lab

using namespace lab;

int main(int argc, char** argv)
{
  const int repeats = argc > 1 ? std::atoi(argv[1]) : 8;
  const int runs = 30;
  const int nx = 512, ny = 512, nz = 64;
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf(
    "device %s, %d SMs, L2 %d MB\n", prop.name, prop.multiProcessorCount, prop.l2CacheSize >> 20);
  Problem<float> pf;
  setUp(pf, nx, ny, nz);
  Problem<double> pd;
  setUp(pd, nx, ny, nz);
  const double floatBytes = 2.0 * pf.n * sizeof(float);
  const double doubleBytes = 2.0 * pd.n * sizeof(double);

  // Copy buffers: 128 MiB (the benchmark's reference size, = the double image) and 64 MiB.
  const size_t big = pd.n * sizeof(double);
  void *ca = nullptr, *cb = nullptr;
  CHECK(cudaMalloc(&ca, big));
  CHECK(cudaMalloc(&cb, big));
  CHECK(cudaMemset(ca, 0, big));
  const int sms = prop.multiProcessorCount;
  std::vector<Variant> variants;
  auto benchCopy = [&](size_t bytes)
  {
    const size_t n = bytes / sizeof(double2);
    return [=]() { copyKernel<<<sms * 8, 256>>>((const double2*)ca, (double2*)cb, n); };
  };
  auto wide = [&](size_t bytes)
  {
    const long long n = bytes / sizeof(float4);
    const unsigned blocks = static_cast<unsigned>((n + 1023) / 1024);
    return [=]() { wideCopy<<<blocks, 256>>>((const float4*)ca, (float4*)cb, n); };
  };
  auto memcpyD2D = [&](size_t bytes)
  { return [=]() { cudaMemcpyAsync(cb, ca, bytes, cudaMemcpyDeviceToDevice); }; };
  const size_t small = big / 2;
  variants.push_back(
    { "copy: bench kernel (double2 grid-stride), 128 MiB", 2.0 * big, benchCopy(big) });
  variants.push_back(
    { "copy: bench kernel (double2 grid-stride), 64 MiB", 2.0 * small, benchCopy(small) });
  variants.push_back({ "copy: wide kernel (4 float4 per thread), 128 MiB", 2.0 * big, wide(big) });
  variants.push_back(
    { "copy: wide kernel (4 float4 per thread), 64 MiB", 2.0 * small, wide(small) });
  variants.push_back({ "copy: cudaMemcpy D2D, 128 MiB", 2.0 * big, memcpyD2D(big) });
  variants.push_back({ "copy: cudaMemcpy D2D, 64 MiB", 2.0 * small, memcpyD2D(small) });
  const size_t firstStencil = variants.size();
  bool smallOk = true;

  auto addStencils = [](std::vector<Variant>& variants,
                       const ImageArgs<float> af,
                       const ImageArgs<double> ad,
                       double floatBytes,
                       double doubleBytes) -> size_t
  {
    // The current default: 2-column x 4-row strips, 32 x 4 threads, frame blocks first.
    variants.push_back({ "float strips (default now)",
      floatBytes,
      [=]() { launchRowStrips<float, true, false>(af, 4, 2, 4, StripVariant{}); },
      1 });
    {
      StripGrid g = stripGrid(af.dims, true, false, 4, 2, 4);
      StripGrid interior = g;
      interior.boundaryBlocks = 0;
      StripGrid frame = g;
      frame.interiorBlocks = 0;
      variants.push_back({ "float strips, interior blocks only",
        floatBytes,
        [=]() {
          launchStripKernel(
            rowStripKernel<float, true, false, 4, 2, false, false>, interior, af, 0);
        },
        2 });
      variants.push_back({ "float strips, frame blocks only",
        floatBytes,
        [=]() {
          launchStripKernel(rowStripKernel<float, true, false, 4, 2, false, false>, frame, af, 0);
        },
        3 });
    }
#define WARP_ROWS(T, R, D, M, FB)                                                                  \
  {                                                                                                \
    const ImageArgs<T> at = pick<T>(af, ad);                                                       \
    const WarpRowGrid g = warpRowGrid<T>(at.dims, R, 4, FB);                                       \
    variants.push_back({ std::string(#T " warp rows R=" #R " D=" #D " minBlocks " #M) +            \
        (FB ? ", frame in blocks of points" : ""),                                                 \
      sizeof(T) == 4 ? floatBytes : doubleBytes,                                                   \
      [=]() { launchWarpRows<T, R, D, 4, M, false>(at, g); },                                      \
      1,                                                                                           \
      sizeof(T) == 8 });                                                                           \
  }
    WARP_ROWS(float, 4, 8, 4, false)
    WARP_ROWS(float, 8, 4, 4, false)
    WARP_ROWS(float, 8, 12, 4, false)
    WARP_ROWS(float, 8, 12, 5, false)
    WARP_ROWS(float, 16, 4, 4, false)
    WARP_ROWS(float, 16, 6, 4, false)
    WARP_ROWS(float, 4, 8, 4, true)
    WARP_ROWS(float, 8, 12, 4, true)
    WARP_ROWS(float, 16, 4, 4, true)
    {
      // The walks alone (no frame): the interior's cost.
      WarpRowGrid g = warpRowGrid<float>(af.dims, 8, 4, true);
      g.blocks -= g.frameBlockCount;
      g.frameBlockCount = 0;
      variants.push_back({ "float warp rows R=8 D=12, walks only (interior)",
        floatBytes,
        [=]() { launchWarpRows<float, 8, 12, 4, 4, false>(af, g); },
        2 });
    }
    const size_t firstDouble = variants.size();
    variants.push_back({ "double strips (default now)",
      doubleBytes,
      [=]() { launchRowStrips<double, true, false>(ad, 4, 2, 4, StripVariant{}); },
      1,
      true });
    WARP_ROWS(double, 4, 8, 4, false)
    WARP_ROWS(double, 8, 4, 4, false)
    WARP_ROWS(double, 8, 12, 4, false)
    WARP_ROWS(double, 16, 4, 4, false)
    WARP_ROWS(double, 8, 4, 4, true)
    return firstDouble;
  };
  const size_t firstDouble =
    addStencils(variants, pf.args, pd.args, floatBytes, doubleBytes) + 0 * firstStencil;
  // Partial warps and spans first: a small image (260 = 65 vectors: a last warp with one lane;
  // 37 rows: partial spans), checks only.
  {
    for (const bool zeroFlux : { true, false })
    {
      Problem<float> sf;
      setUp(sf, 260, 37, 3, zeroFlux);
      Problem<double> sd;
      setUp(sd, 260, 37, 3, zeroFlux);
      std::vector<Variant> smallVariants;
      const size_t smallDouble = addStencils(smallVariants, sf.args, sd.args, 0, 0);
      for (size_t v = 0; v < smallVariants.size(); ++v)
      {
        const std::string verdict = v >= smallDouble ? checkVariant(sd, smallVariants[v])
                                                     : checkVariant(sf, smallVariants[v]);
        smallOk = smallOk && verdict.rfind("ok", 0) == 0;
        std::printf("check 260x37x3 %s %-60s %s\n",
          zeroFlux ? "zero flux" : "fill",
          smallVariants[v].name.c_str(),
          verdict.c_str());
      }
      cudaFree(sf.u);
      cudaFree(sf.out);
      cudaFree(sd.u);
      cudaFree(sd.out);
    }
  }
  // Correctness at 512 x 512 x 64 (poisoned outputs).
  bool allOk = smallOk;
  for (size_t v = firstStencil; v < variants.size(); ++v)
  {
    const std::string verdict =
      v >= firstDouble ? checkVariant(pd, variants[v]) : checkVariant(pf, variants[v]);
    allOk = allOk && verdict.rfind("ok", 0) == 0;
    std::printf("check %-60s %s\n", variants[v].name.c_str(), verdict.c_str());
  }
  // StencilCore's entry point (cudaImage, as applyImage calls it): which kernel runs for the
  // warp-row options, and its values against the reference.
  auto apiCheck = [&](auto& problem, int warpRows, int prefetch, int columns, bool frameBlocks)
  {
    using T = std::remove_reference_t<decltype(problem.reference[0])>;
    std::vector<T> host(problem.n), got(problem.n, T(-12345));
    CHECK(cudaMemcpy(host.data(), problem.u, problem.n * sizeof(T), cudaMemcpyDeviceToHost));
    ImageArgs<T> a = problem.args;
    a.u = host.data();
    a.out = got.data();
    stencil::ExecutionOptions o;
    o.imageWarpRows = warpRows;
    o.imageWarpPrefetch = prefetch;
    o.imageColumnsPerThread = columns;
    o.imageWarpFrame = frameBlocks ? 2 : 1; // session 8: an int (session 7: frame blocks or not)
    o.timingRepeats = 5;
    stencil::ExecutionReport report;
    const stencil::Status st = cudaImage<T>(a, problem.n, o, report);
    double worst = 0;
    for (size_t q = 0; q < problem.n; ++q)
    {
      const double d = std::fabs(double(got[q]) - double(problem.reference[q]));
      worst = std::isnan(d) ? INFINITY : std::max(worst, d);
    }
    const bool ok = st.ok() && worst <= (sizeof(T) == 4 ? 1e-4 : 1e-11);
    allOk = allOk && ok;
    std::printf(
      "api %s warpRows %d prefetch %d columns %d frameBlocks %d: %s, %s, %.1f us, max|diff| %.2g\n",
      sizeof(T) == 4 ? "float" : "double",
      warpRows,
      prefetch,
      columns,
      int(frameBlocks),
      ok ? "ok" : "FAIL",
      report.imageKernel.c_str(),
      report.kernelSeconds * 1e6,
      worst);
  };
  for (int warpRows : { 0, 4, 8, 16, -1 })
    for (int prefetch : { 0, 4, 6, 12 })
    {
      if (warpRows == -1 && prefetch != 0)
        continue;
      apiCheck(pf, warpRows, prefetch, 0, false);
      apiCheck(pd, warpRows, prefetch, 0, false);
    }
  apiCheck(pf, 0, 0, 2, false);
  apiCheck(pf, 0, 0, 0, true);
  apiCheck(pd, 0, 0, 0, true);
  std::fflush(stdout);
  // Timing: repeats in rotating order.
  for (int r = 0; r < repeats; ++r)
  {
    for (size_t t = 0; t < variants.size(); ++t)
    {
      Variant& v = variants[(t + r) % variants.size()];
      v.medians.push_back(timeMedian(v.launch, runs));
    }
  }
  const double benchCopyBw = variants[0].bytes / medianOf(variants[0].medians);
  double bestCopy64 = 0;
  for (size_t v = 0; v < firstStencil; ++v)
  {
    if (variants[v].bytes == 2.0 * small)
    {
      bestCopy64 = std::max(bestCopy64, variants[v].bytes / medianOf(variants[v].medians));
    }
  }
  std::printf(
    "\n%d repeats in rotating order, each a median of %d launches (CUDA events)\n", repeats, runs);
  std::printf("%% bench copy: of the benchmark's reference (bench kernel at 128 MiB, %.1f GB/s); "
              "%% best 64 MiB copy: of the fastest copy at the float image's size (%.1f GB/s)\n",
    benchCopyBw * 1e-9,
    bestCopy64 * 1e-9);
  std::printf("| variant | median us | min-max us | GB/s | %% bench copy | %% best 64 MiB copy "
              "|\n|---|---|---|---|---|---|\n");
  for (Variant& v : variants)
  {
    const double m = medianOf(v.medians);
    const auto mm = std::minmax_element(v.medians.begin(), v.medians.end());
    std::printf("| %s | %.1f | %.1f-%.1f | %.1f | %.1f | %.1f |\n",
      v.name.c_str(),
      m * 1e6,
      *mm.first * 1e6,
      *mm.second * 1e6,
      v.bytes / m * 1e-9,
      100 * v.bytes / m / benchCopyBw,
      100 * v.bytes / m / bestCopy64);
  }
  std::printf("all checks %s\n", allOk ? "passed" : "FAILED");
  return allOk ? 0 : 1;
}
