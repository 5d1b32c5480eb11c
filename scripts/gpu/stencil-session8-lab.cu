// Session 8 laboratory for the horizontal laplap at 512 x 512 x 64 (issue 15's 80 % bar, float
// and double): where the frame goes in the launch (first, spread among the interior, last; the
// strips' frame blocks through the generic imageValue or the 2-D nested form), against the copy
// references (the benchmark's copy kernel and cudaMemcpy device to device at each image's size).
// StencilCore's own kernels (this file includes src/cuda/Device.cu), every variant checked
// against a reference kernel (one thread per value, the generic imageValue) on random data with
// the output poisoned (NaN) first, also on 260 x 37 x 3 images in both boundary modes. Timing as
// stencil-bench: CUDA events around each launch, median of 30 launches; 8 repeats in rotating
// order, median of the medians; and per repeat the ratio to the same repeat's cudaMemcpy median.
// Build (repository root): nvcc -O3 -arch=sm_90 -std=c++17 -IStencilCore/include
//   scripts/gpu/stencil-session8-lab.cu -o /tmp/lab8
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

struct Variant
{
  std::string name;
  double bytes;                 // bytes read + written
  std::function<void()> launch; // one launch
  int check = 0;                // 0 none, 1 whole image, 2 interior only, 3 frame only
  bool isDouble = false;
  std::vector<double> medians;
  int reference = -1; // the same-size cudaMemcpy variant (per-repeat ratios)
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
/**
 * The 2-D laplap's frame (2 rows and 2 columns at the sides of each layer) in a kernel of its
 * own (laboratory, call 4: slower), one point per thread (warpRowFramePoint), for a launch on a
 * second stream beside the walks or the strips' interior (session 8): those kernels hold 96-128
 * registers per thread and leave a few thousand registers of an SM unused, which blocks of this
 * small kernel can fill, so that the latency-bound frame takes no block slot of the bandwidth-bound
 * interior.
 */
template<typename T>
__global__ void __launch_bounds__(64)
  frameKernel(const __grid_constant__ ImageArgs<T> args, const WarpRowGrid g)
{
  warpRowFramePoint(args, g, blockIdx.x * 64LL + threadIdx.x);
}

/// The interior (walks or strip blocks) on the default stream and the frame kernel on a second
/// stream, forked and joined by events, so that the timing events on the default stream cover
/// both.
struct Concurrent
{
  cudaStream_t side = nullptr;
  cudaEvent_t fork = nullptr;
  cudaEvent_t join = nullptr;
};

Concurrent& concurrent()
{
  static Concurrent c;
  if (!c.side)
  {
    CHECK(cudaStreamCreateWithFlags(&c.side, cudaStreamNonBlocking));
    CHECK(cudaEventCreateWithFlags(&c.fork, cudaEventDisableTiming));
    CHECK(cudaEventCreateWithFlags(&c.join, cudaEventDisableTiming));
  }
  return c;
}

/// frameFirst: the frame kernel is launched before the interior (else after it).
template<typename T>
void withFrameKernel(const ImageArgs<T>& a, const std::function<void()>& interior, bool frameFirst)
{
  Concurrent& c = concurrent();
  const WarpRowGrid g = warpRowGrid<T>(a.dims, 8, 4, true);
  const unsigned blocks = static_cast<unsigned>((g.framePoints * a.dims[2] + 63) / 64);
  CHECK(cudaEventRecord(c.fork, 0));
  CHECK(cudaStreamWaitEvent(c.side, c.fork, 0));
  if (!frameFirst)
  {
    interior();
  }
  frameKernel<T><<<blocks, 64, 0, c.side>>>(a, g);
  if (frameFirst)
  {
    interior();
  }
  CHECK(cudaEventRecord(c.join, c.side));
  CHECK(cudaStreamWaitEvent(0, c.join, 0));
}
} // namespace lab

using namespace lab;

template<typename T, int Rows>
std::function<void()> strips(const ImageArgs<T>& a, StripGrid g)
{
  return [=]()
  { launchStripKernel(rowStripKernel<T, true, false, Rows, 2, false, false>, g, a, 0); };
}

/// The strip grid with the frame placed (0 first, 1 spread, -1 last), formed (frame2D) and
/// perThread boundary values per thread.
StripGrid placedStrips(const long long* dims,
  int rows,
  int placement,
  bool frame2D,
  int perThread = 1)
{
  StripGrid g = stripGrid(dims, true, false, rows, 2, 4);
  setFramePerThread(g, dims, perThread);
  g.frame2D = frame2D;
  g.frameEvery =
    placement > 0 ? spreadEvery(g.boundaryBlocks, g.interiorBlocks) : (placement < 0 ? -1 : 0);
  return g;
}

template<typename T>
WarpRowGrid placedWarpRows(const long long* dims,
  int rows,
  bool frameBlocks,
  int placement,
  int perThread = 1,
  int side = 0)
{
  // warpRowGrid's placements: 1 first, 2 spread, 3 last (here 0, 1, -1).
  const int place = placement > 0 ? 2 : (placement < 0 ? 3 : 1);
  return warpRowGrid<T>(dims, rows, 4, frameBlocks, place, perThread, side);
}

const char* placementName(int placement)
{
  return placement > 0 ? "spread" : (placement < 0 ? "last" : "first");
}

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
  auto memcpyD2D = [&](size_t bytes)
  { return [=]() { cudaMemcpyAsync(cb, ca, bytes, cudaMemcpyDeviceToDevice); }; };
  const size_t small = big / 2;
  variants.push_back({ "copy: bench kernel, 64 MiB (float image)", 2.0 * small, benchCopy(small) });
  variants.push_back({ "copy: bench kernel, 128 MiB (double image)", 2.0 * big, benchCopy(big) });
  const int memcpyFloat = static_cast<int>(variants.size());
  variants.push_back(
    { "copy: cudaMemcpy D2D, 64 MiB (float image)", 2.0 * small, memcpyD2D(small) });
  const int memcpyDouble = static_cast<int>(variants.size());
  variants.push_back({ "copy: cudaMemcpy D2D, 128 MiB (double image)", 2.0 * big, memcpyD2D(big) });
  const size_t firstStencil = variants.size();
  bool smallOk = true;

  // Round 5 (call 5): frame-row points in the side blocks (no frame-row warps), the frame-row
  // warps first with the side blocks spread, and the spread frame ending early (the frame units
  // spread over the first 75 % or 50 % of the launch, so that no long frame unit starts last).
  auto addStencils = [](std::vector<Variant>& variants,
                       const ImageArgs<float> af,
                       const ImageArgs<double> ad,
                       double floatBytes,
                       double doubleBytes) -> size_t
  {
  // SCALE: the spread's spacing times SCALE / 100 (frame units over the first SCALE %);
  // WARPS: where the frame-row warps go (0 first, 1 spread).
#define WARP_ROWS(T, R, D, M, FB, PER, SIDE, SCALE, WARPS, NAME)                                   \
  {                                                                                                \
    const ImageArgs<T> at = pick<T>(af, ad);                                                       \
    WarpRowGrid g = placedWarpRows<T>(at.dims, R, FB, 1, PER, SIDE);                               \
    g.frameEvery = std::max(1LL, g.frameEvery * SCALE / 100);                                      \
    g.frameWarpEvery = WARPS ? std::max(1LL, g.frameWarpEvery * SCALE / 100) : 0;                  \
    variants.push_back({ std::string(#T " warp rows " #R " x " #D) + NAME,                         \
      sizeof(T) == 4 ? floatBytes : doubleBytes,                                                   \
      [=]() { launchWarpRows<T, R, D, 4, M, false>(at, g); },                                      \
      1,                                                                                           \
      sizeof(T) == 8 });                                                                           \
  }
    {
      const WarpRowGrid g = placedWarpRows<float>(af.dims, 8, false, 0);
      variants.push_back(
        { "float warp rows 8 x 12, frame-row warps first (session 7 float default)",
          floatBytes,
          [=]() { launchWarpRows<float, 8, 12, 4, 5, false>(af, g); },
          1 });
    }
    WARP_ROWS(float, 8, 12, 5, true, 1, 0, 100, 1, ", frame blocks spread (call 2 float default)")
    WARP_ROWS(float, 8, 12, 5, true, 1, 0, 75, 1, ", frame blocks spread over the first 75 %")
    WARP_ROWS(float, 8, 12, 5, true, 1, 0, 50, 1, ", frame blocks spread over the first 50 %")
    WARP_ROWS(float,
      8,
      12,
      5,
      false,
      2,
      1,
      100,
      1,
      ", frame-row warps and side blocks (2 rows per thread) spread")
    WARP_ROWS(float,
      8,
      12,
      5,
      false,
      2,
      1,
      100,
      0,
      ", frame-row warps first, side blocks (2 rows per thread) spread")
    WARP_ROWS(float,
      8,
      12,
      5,
      false,
      2,
      1,
      75,
      1,
      ", frame-row warps and side blocks (2 rows per thread) spread over the first 75 %")
    WARP_ROWS(float, 8, 12, 5, false, 1, 2, 100, 1, ", row points and side blocks spread")
    WARP_ROWS(
      float, 8, 12, 5, false, 2, 2, 100, 1, ", row points and side blocks spread, 2 per thread")
    WARP_ROWS(float,
      8,
      12,
      5,
      false,
      1,
      2,
      75,
      1,
      ", row points and side blocks spread over the first 75 %")
    {
      WarpRowGrid g = warpRowGrid<float>(af.dims, 8, 4, true);
      g.blocks -= g.frameBlockCount;
      g.frameBlockCount = 0;
      variants.push_back({ "float warp rows 8 x 12, walks only (interior)",
        floatBytes,
        [=]() { launchWarpRows<float, 8, 12, 4, 5, false>(af, g); },
        2 });
    }
    const size_t firstDouble = variants.size();
    variants.push_back({ "double strips 2 x 4, frame first, generic (session 7 double default)",
      doubleBytes,
      strips<double, 4>(ad, placedStrips(ad.dims, 4, 0, false)),
      1,
      true });
    variants.push_back({ "double strips 2 x 4, frame spread, 2-D form (session 8 double default)",
      doubleBytes,
      strips<double, 4>(ad, placedStrips(ad.dims, 4, 1, true)),
      1,
      true });
    {
      StripGrid g = placedStrips(ad.dims, 4, 1, true);
      g.frameEvery = std::max(1LL, g.frameEvery * 3 / 4);
      variants.push_back({ "double strips 2 x 4, frame spread over the first 75 %, 2-D form",
        doubleBytes,
        strips<double, 4>(ad, g),
        1,
        true });
    }
    WARP_ROWS(double, 8, 12, 4, true, 1, 0, 100, 1, ", frame blocks spread")
    WARP_ROWS(double, 8, 12, 4, false, 1, 2, 100, 1, ", row points and side blocks spread")
    return firstDouble;
  };
  const size_t firstDouble = addStencils(variants, pf.args, pd.args, floatBytes, doubleBytes);
  for (size_t v = firstStencil; v < variants.size(); ++v)
  {
    variants[v].reference = v >= firstDouble ? memcpyDouble : memcpyFloat;
  }
  // Profile mode (argv[2]: a part of a variant's name): that variant's launch three times, no
  // checks and no timing, for Nsight Compute.
  if (argc > 2)
  {
    for (const Variant& v : variants)
    {
      if (v.name.find(argv[2]) != std::string::npos)
      {
        std::printf("profiling %s\n", v.name.c_str());
        for (int r = 0; r < 3; ++r)
        {
          v.launch();
        }
        CHECK(cudaDeviceSynchronize());
        return 0;
      }
    }
    std::printf("no variant named %s\n", argv[2]);
    return 1;
  }
  // Partial warps, spans and frames first (260 = 65 vectors: a last warp with one lane; 37 rows:
  // partial spans), checks only.
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
      const std::string verdict =
        v >= smallDouble ? checkVariant(sd, smallVariants[v]) : checkVariant(sf, smallVariants[v]);
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
  bool allOk = smallOk;
  for (size_t v = firstStencil; v < variants.size(); ++v)
  {
    const std::string verdict =
      v >= firstDouble ? checkVariant(pd, variants[v]) : checkVariant(pf, variants[v]);
    allOk = allOk && verdict.rfind("ok", 0) == 0;
    std::printf("check %-60s %s\n", variants[v].name.c_str(), verdict.c_str());
  }
  std::fflush(stdout);
  for (int r = 0; r < repeats; ++r)
  {
    for (size_t t = 0; t < variants.size(); ++t)
    {
      Variant& v = variants[(t + r) % variants.size()];
      v.medians.push_back(timeMedian(v.launch, runs));
    }
  }
  std::printf(
    "\n%d repeats in rotating order, each a median of %d launches (CUDA events)\n", repeats, runs);
  std::printf("%% memcpy: of the median cudaMemcpy at the image's size; per repeat: the ratio to "
              "the same repeat's cudaMemcpy median (median, min-max)\n");
  std::printf("| variant | median us | min-max us | GB/s | %% memcpy | per repeat %% memcpy |\n"
              "|---|---|---|---|---|---|\n");
  for (Variant& v : variants)
  {
    const double m = medianOf(v.medians);
    const auto mm = std::minmax_element(v.medians.begin(), v.medians.end());
    std::string percent = "", perRepeat = "";
    if (v.reference >= 0)
    {
      const Variant& ref = variants[v.reference];
      const double refBw = ref.bytes / medianOf(ref.medians);
      std::vector<double> ratios;
      for (size_t r = 0; r < v.medians.size(); ++r)
      {
        ratios.push_back(100.0 * (v.bytes / v.medians[r]) / (ref.bytes / ref.medians[r]));
      }
      const auto rr = std::minmax_element(ratios.begin(), ratios.end());
      char text[120];
      std::snprintf(text, sizeof(text), "%.1f", 100 * v.bytes / m / refBw);
      percent = text;
      std::snprintf(
        text, sizeof(text), "%.1f (%.1f-%.1f)", medianOf(ratios), *rr.first, *rr.second);
      perRepeat = text;
    }
    std::printf("| %s | %.1f | %.1f-%.1f | %.1f | %s | %s |\n",
      v.name.c_str(),
      m * 1e6,
      *mm.first * 1e6,
      *mm.second * 1e6,
      v.bytes / m * 1e-9,
      percent.c_str(),
      perRepeat.c_str());
  }
  std::printf("all checks %s\n", allOk ? "passed" : "FAILED");
  return allOk ? 0 : 1;
}
