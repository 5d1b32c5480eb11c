// The FFT path on the GPU (cuFFT): pad, batched R2C of all inputs, conj(F(L)) * F(R) per pair,
// batched C2R, extract the lag window. Plans are cached per (size, batch, type) unless asked not
// to be (the study's per-call plans).
#include "Common.cuh"

#include <cufft.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <tuple>
#include <type_traits>

namespace correlation
{
namespace detail
{
namespace
{
/// cuFFT's types and calls for float (R2C / C2R) or double (D2Z / Z2D).
template<typename T>
struct CufftTypes
{
  static constexpr bool single = std::is_same<T, float>::value;
  using Complex = std::conditional_t<single, cufftComplex, cufftDoubleComplex>;
  static constexpr cufftType forward = single ? CUFFT_R2C : CUFFT_D2Z;
  static constexpr cufftType inverse = single ? CUFFT_C2R : CUFFT_Z2D;
  static cufftResult execForward(cufftHandle p, T* in, Complex* out)
  {
    if constexpr (single)
    {
      return cufftExecR2C(p, in, out);
    }
    else
    {
      return cufftExecD2Z(p, in, out);
    }
  }
  static cufftResult execInverse(cufftHandle p, Complex* in, T* out)
  {
    if constexpr (single)
    {
      return cufftExecC2R(p, in, out);
    }
    else
    {
      return cufftExecZ2D(p, in, out);
    }
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

// The pointwise kernels run on a 2-D grid, y over matrices (or pairs), x over one matrix's
// elements, so that per element only 32-bit index arithmetic remains (64-bit divisions per
// element made them take as long as the transforms: 98 of 162 us for 1024 maps of 63 x 63).
template<typename T>
__global__ void padKernel(const T* __restrict__ src,
  int w,
  int h,
  long long count,
  int px,
  int py,
  T* __restrict__ dst)
{
  const int plane = px * py;
  for (long long matrix = blockIdx.y; matrix < count; matrix += gridDim.y)
  {
    const T* from = src + matrix * w * h;
    T* to = dst + matrix * plane;
    for (int k = blockIdx.x * blockDim.x + threadIdx.x; k < plane; k += gridDim.x * blockDim.x)
    {
      const int y = k / px, x = k - y * px;
      to[k] = (x < w && y < h) ? from[y * w + x] : T(0);
    }
  }
}

template<typename C>
__global__ void productKernel(const C* __restrict__ spectra,
  Geometry g,
  int spectrum,
  C* __restrict__ products)
{
  for (long long pair = blockIdx.y; pair < g.pairs; pair += gridDim.y)
  {
    const long long i = pair / g.m;
    const C* left = spectra + i * spectrum;
    const C* right = spectra + (g.n + g.rightOf(i, pair % g.m)) * spectrum;
    C* to = products + pair * spectrum;
    for (int e = blockIdx.x * blockDim.x + threadIdx.x; e < spectrum; e += gridDim.x * blockDim.x)
    {
      const C a = left[e], b = right[e];
      C c;
      c.x = a.x * b.x + a.y * b.y;
      c.y = a.x * b.y - a.y * b.x;
      to[e] = c;
    }
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
  const int size = g.ww * g.wh;
  for (long long pair = blockIdx.y; pair < g.pairs; pair += gridDim.y)
  {
    const T* map = maps + pair * px * py;
    T* to = out + pair * size;
    for (int k = blockIdx.x * blockDim.x + threadIdx.x; k < size; k += gridDim.x * blockDim.x)
    {
      const int j = k / g.ww, i = k - j * g.ww;
      const int dx = g.x0 + i, dy = g.y0 + j;
      const int row = (dy % py + py) % py, col = (dx % px + px) % px;
      // Lags without overlap are zero; the circular map holds another lag's value there.
      const bool overlap = dx > -g.lw && dx < g.rw && dy > -g.lh && dy < g.rh;
      to[k] = overlap ? map[row * px + col] * scale : T(0);
    }
  }
}

/// Grid of the pointwise kernels: x over `elements` of one matrix, y over `matrices`.
dim3 gridFor(long long elements, long long matrices)
{
  return dim3(static_cast<unsigned>(std::min<long long>((elements + 255) / 256, 1024)),
    static_cast<unsigned>(std::min<long long>(std::max<long long>(matrices, 1), 65535)));
}

}

template<typename T>
Status cudaFft(const Maps<T>& maps,
  bool cachePlans,
  bool powerOfTwo,
  double* kernelSeconds,
  bool deviceOnlyTiming)
{
  const Batch& batch = maps.batch;
  const LagWindow& window = maps.window;
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
  if (real > (1ll << 31) - 1)
  {
    return { ErrorCode::TooLarge, "padded matrices too large for one cuFFT plan" };
  }
  DeviceBuffer dl, dr, padded, transformed, dout;
  DeviceBuffer spectra, products;
  Status status;
  if (!(status = dl.allocate(nli * sizeof(T), "left matrices")) ||
    !(status = dr.allocate(nri * sizeof(T), "right matrices")) ||
    !(status = padded.allocate((nl + nr) * real * sizeof(T), "padded inputs")) ||
    !(status = spectra.allocate((nl + nr) * spectrum * sizeof(C), "spectra")) ||
    !(status = products.allocate(pairs * spectrum * sizeof(C), "products")) ||
    !(status = transformed.allocate(pairs * real * sizeof(T), "inverse transforms")) ||
    !(status = dout.allocate(no * sizeof(T), "correlation maps")))
  {
    return status;
  }
  Plan forward, inverse;
  if (!(status = forward.make(py, px, nl + nr, Types::forward, cachePlans)) ||
    !(status = inverse.make(py, px, pairs, Types::inverse, cachePlans)))
  {
    return status;
  }
  if (!(status =
          fromCuda(cudaMemcpy(dl.as<T>(), maps.lefts, nli * sizeof(T), cudaMemcpyHostToDevice),
            "copy to device")) ||
    !(status =
        fromCuda(cudaMemcpy(dr.as<T>(), maps.rights, nri * sizeof(T), cudaMemcpyHostToDevice),
          "copy to device")))
  {
    return status;
  }
  EventTimer timer;
  if (!(status = startTiming(timer, deviceOnlyTiming)))
  {
    return status;
  }
  padKernel<T><<<gridFor(real, nl), 256>>>(
    dl.as<T>(), batch.left.width, batch.left.height, nl, px, py, padded.as<T>());
  padKernel<T><<<gridFor(real, nr), 256>>>(
    dr.as<T>(), batch.right.width, batch.right.height, nr, px, py, padded.as<T>() + nl * real);
  if (!(status = cufftStatus(
          Types::execForward(forward.get(), padded.as<T>(), spectra.as<C>()), "cuFFT forward")))
  {
    return status;
  }
  productKernel<C><<<gridFor(spectrum, pairs), 256>>>(
    spectra.as<C>(), g, static_cast<int>(spectrum), products.as<C>());
  if (!(status =
          cufftStatus(Types::execInverse(inverse.get(), products.as<C>(), transformed.as<T>()),
            "cuFFT inverse")))
  {
    return status;
  }
  extractKernel<T><<<gridFor(static_cast<long long>(window.size()), pairs), 256>>>(
    transformed.as<T>(), g, px, py, T(1) / static_cast<T>(real), dout.as<T>());
  if (!(status = timer.stop()) || !(status = fromCuda(cudaGetLastError(), "FFT kernels")) ||
    !(status = fromCuda(cudaDeviceSynchronize(), "FFT kernels")))
  {
    return status;
  }
  if (kernelSeconds)
  {
    if (!(status = timer.collect("FFT kernels")))
    {
      return status;
    }
    *kernelSeconds = timer.seconds();
  }
  return fromCuda(
    cudaMemcpy(maps.out, dout.as<T>(), no * sizeof(T), cudaMemcpyDeviceToHost), "copy to host");
}

template Status cudaFft(const Maps<float>&, bool, bool, double*, bool);
template Status cudaFft(const Maps<double>&, bool, bool, double*, bool);

} // namespace detail
} // namespace correlation
