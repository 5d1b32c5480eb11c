// The FFT path on the GPU (cuFFT): pad, batched R2C of all inputs, conj(F(L)) * F(R) per pair,
// batched C2R, extract the lag window. Plans are cached per (size, batch, type) unless asked not
// to be (the study's per-call plans).
#include "Common.cuh"

#include <cufft.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <tuple>

namespace correlation
{
namespace detail
{
namespace
{
template<typename T>
struct CufftTypes;
template<>
struct CufftTypes<float>
{
  using Complex = cufftComplex;
  static constexpr cufftType forward = CUFFT_R2C;
  static constexpr cufftType inverse = CUFFT_C2R;
  static cufftResult execForward(cufftHandle p, float* in, Complex* out)
  {
    return cufftExecR2C(p, in, out);
  }
  static cufftResult execInverse(cufftHandle p, Complex* in, float* out)
  {
    return cufftExecC2R(p, in, out);
  }
};
template<>
struct CufftTypes<double>
{
  using Complex = cufftDoubleComplex;
  static constexpr cufftType forward = CUFFT_D2Z;
  static constexpr cufftType inverse = CUFFT_Z2D;
  static cufftResult execForward(cufftHandle p, double* in, Complex* out)
  {
    return cufftExecD2Z(p, in, out);
  }
  static cufftResult execInverse(cufftHandle p, Complex* in, double* out)
  {
    return cufftExecZ2D(p, in, out);
  }
};

Status cufftStatus(cufftResult result, const char* what)
{
  if (result == CUFFT_SUCCESS)
  {
    return Status::Ok();
  }
  const ErrorCode code =
    result == CUFFT_ALLOC_FAILED ? ErrorCode::OutOfDeviceMemory : ErrorCode::Internal;
  return { code, std::string(what) + ": cuFFT error " + std::to_string(static_cast<int>(result)) };
}

using PlanKey = std::tuple<int, int, long long, int>;
std::mutex& planMutex()
{
  static std::mutex mutex;
  return mutex;
}
std::map<PlanKey, cufftHandle>& planCache()
{
  static std::map<PlanKey, cufftHandle> cache;
  return cache;
}

/// A batched 2-D plan, from the cache or made for this call (owned then).
class Plan
{
public:
  ~Plan()
  {
    if (this->Owned)
    {
      cufftDestroy(this->Handle);
    }
  }
  Status make(int py, int px, long long batch, cufftType type, bool cached)
  {
    const PlanKey key{ py, px, batch, static_cast<int>(type) };
    std::lock_guard<std::mutex> lock(planMutex());
    if (cached)
    {
      auto it = planCache().find(key);
      if (it != planCache().end())
      {
        this->Handle = it->second;
        return Status::Ok();
      }
    }
    int dims[2] = { py, px };
    Status status = cufftStatus(
      cufftPlanMany(
        &this->Handle, 2, dims, nullptr, 1, 0, nullptr, 1, 0, type, static_cast<int>(batch)),
      "cuFFT plan");
    if (!status)
    {
      return status;
    }
    if (cached)
    {
      planCache()[key] = this->Handle;
    }
    else
    {
      this->Owned = true;
    }
    return Status::Ok();
  }
  cufftHandle get() const { return this->Handle; }

private:
  cufftHandle Handle = 0;
  bool Owned = false;
};

template<typename T>
__global__ void padKernel(const T* __restrict__ src,
  int w,
  int h,
  long long count,
  int px,
  int py,
  T* __restrict__ dst)
{
  const long long plane = static_cast<long long>(px) * py;
  for (long long k = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
       k < count * plane;
       k += static_cast<long long>(gridDim.x) * blockDim.x)
  {
    const long long matrix = k / plane;
    const int y = static_cast<int>((k % plane) / px), x = static_cast<int>(k % px);
    dst[k] = (x < w && y < h) ? src[matrix * w * h + static_cast<long long>(y) * w + x] : T(0);
  }
}

template<typename C>
__global__ void productKernel(const C* __restrict__ spectra,
  Geometry g,
  long long spectrum,
  C* __restrict__ products)
{
  for (long long k = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
       k < g.pairs * spectrum;
       k += static_cast<long long>(gridDim.x) * blockDim.x)
  {
    const long long pair = k / spectrum, e = k % spectrum;
    const long long i = pair / g.m;
    const C a = spectra[i * spectrum + e];
    const C b = spectra[(g.n + g.rightOf(i, pair % g.m)) * spectrum + e];
    C c;
    c.x = a.x * b.x + a.y * b.y;
    c.y = a.x * b.y - a.y * b.x;
    products[k] = c;
  }
}

template<typename T>
__global__ void extractKernel(const T* __restrict__ maps,
  Geometry g,
  int px,
  int py,
  T scale,
  T* __restrict__ out)
{
  const long long size = static_cast<long long>(g.ww) * g.wh;
  for (long long k = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
       k < g.pairs * size;
       k += static_cast<long long>(gridDim.x) * blockDim.x)
  {
    const long long pair = k / size;
    const int j = static_cast<int>((k % size) / g.ww), i = static_cast<int>(k % g.ww);
    const int dx = g.x0 + i, dy = g.y0 + j;
    const int row = (dy % py + py) % py, col = (dx % px + px) % px;
    // Lags without overlap are zero; the circular map holds another lag's value there.
    const bool overlap = dx > -g.lw && dx < g.rw && dy > -g.lh && dy < g.rh;
    out[k] = overlap ? maps[pair * px * py + static_cast<long long>(row) * px + col] * scale : T(0);
  }
}

unsigned blocksFor(long long work)
{
  return static_cast<unsigned>(std::min<long long>((work + 255) / 256, 1 << 20));
}
}

template<typename T>
Status cudaFft(const Batch& batch,
  const LagWindow& window,
  const T* lefts,
  const T* rights,
  T* out,
  bool cachePlans,
  bool powerOfTwo,
  double* kernelSeconds,
  bool deviceOnlyTiming)
{
  using Types = CufftTypes<T>;
  using C = typename Types::Complex;
  const Geometry g = Geometry::of(batch, window);
  const int px = fftFriendlySize(batch.left.width + batch.right.width - 1, powerOfTwo);
  const int py = fftFriendlySize(batch.left.height + batch.right.height - 1, powerOfTwo);
  const long long real = static_cast<long long>(px) * py;
  const long long spectrum = static_cast<long long>(px / 2 + 1) * py;
  const long long nl = static_cast<long long>(batch.leftCount());
  const long long nr = static_cast<long long>(batch.rightCount());
  const long long pairs = static_cast<long long>(batch.pairs());
  const std::size_t nli = batch.leftCount() * batch.left.count();
  const std::size_t nri = batch.rightCount() * batch.right.count();
  const std::size_t no = batch.pairs() * window.size();
  if ((nl + nr) > (1ll << 31) / 2 || pairs > (1ll << 31) / 2)
  {
    return { ErrorCode::TooLarge, "too many matrices for one cuFFT batch" };
  }
  DeviceBuffer<T> dl, dr, padded, maps, dout;
  DeviceBuffer<C> spectra, products;
  Status status;
  if (!(status = dl.allocate(nli, "left matrices")) ||
    !(status = dr.allocate(nri, "right matrices")) ||
    !(status = padded.allocate((nl + nr) * real, "padded inputs")) ||
    !(status = spectra.allocate((nl + nr) * spectrum, "spectra")) ||
    !(status = products.allocate(pairs * spectrum, "products")) ||
    !(status = maps.allocate(pairs * real, "inverse transforms")) ||
    !(status = dout.allocate(no, "correlation maps")))
  {
    return status;
  }
  Plan forward, inverse;
  if (!(status = forward.make(py, px, nl + nr, Types::forward, cachePlans)) ||
    !(status = inverse.make(py, px, pairs, Types::inverse, cachePlans)))
  {
    return status;
  }
  if (!(status = cudaStatus(cudaMemcpy(dl.get(), lefts, nli * sizeof(T), cudaMemcpyHostToDevice),
          "copy to device")) ||
    !(status = cudaStatus(
        cudaMemcpy(dr.get(), rights, nri * sizeof(T), cudaMemcpyHostToDevice), "copy to device")))
  {
    return status;
  }
  EventTimer timer;
  timer.start(deviceOnlyTiming);
  padKernel<T><<<blocksFor(nl * real), 256>>>(
    dl.get(), batch.left.width, batch.left.height, nl, px, py, padded.get());
  padKernel<T><<<blocksFor(nr * real), 256>>>(
    dr.get(), batch.right.width, batch.right.height, nr, px, py, padded.get() + nl * real);
  if (!(status = cufftStatus(
          Types::execForward(forward.get(), padded.get(), spectra.get()), "cuFFT forward")))
  {
    return status;
  }
  productKernel<C>
    <<<blocksFor(pairs * spectrum), 256>>>(spectra.get(), g, spectrum, products.get());
  if (!(status = cufftStatus(
          Types::execInverse(inverse.get(), products.get(), maps.get()), "cuFFT inverse")))
  {
    return status;
  }
  extractKernel<T><<<blocksFor(static_cast<long long>(no)), 256>>>(
    maps.get(), g, px, py, T(1) / static_cast<T>(real), dout.get());
  timer.stop();
  if (!(status = cudaStatus(cudaGetLastError(), "FFT kernels")) ||
    !(status = cudaStatus(cudaDeviceSynchronize(), "FFT kernels")))
  {
    return status;
  }
  if (kernelSeconds)
  {
    *kernelSeconds = timer.seconds();
  }
  return cudaStatus(
    cudaMemcpy(out, dout.get(), no * sizeof(T), cudaMemcpyDeviceToHost), "copy to host");
}

template Status cudaFft<float>(const Batch&,
  const LagWindow&,
  const float*,
  const float*,
  float*,
  bool,
  bool,
  double*,
  bool);
template Status cudaFft<double>(const Batch&,
  const LagWindow&,
  const double*,
  const double*,
  double*,
  bool,
  bool,
  double*,
  bool);

} // namespace detail
} // namespace correlation
