// The FFT path on the CPU (FFTW): zero-padded real transforms, conj(F(L)) * F(R), inverse.
#include "Internal.h"

#ifdef CORRELATION_HAVE_FFTW
#include <fftw3.h>

#include <atomic>
#include <cstring>
#include <mutex>
#include <vector>
#endif

namespace correlation
{

bool fftwCompiled()
{
#ifdef CORRELATION_HAVE_FFTW
  return true;
#else
  return false;
#endif
}

namespace detail
{

#ifdef CORRELATION_HAVE_FFTW
namespace
{
// FFTW's planner is not thread-safe; executing a finished plan on new arrays is.
std::mutex& plannerMutex()
{
  static std::mutex mutex;
  return mutex;
}

template<typename T>
struct Fftw;

template<>
struct Fftw<double>
{
  using Complex = fftw_complex;
  using Plan = fftw_plan;
  static void* alloc(std::size_t bytes) { return fftw_malloc(bytes); }
  static void release(void* p) { fftw_free(p); }
  static Plan r2c(int ny, int nx, double* in, Complex* out, unsigned flags)
  {
    return fftw_plan_dft_r2c_2d(ny, nx, in, out, flags);
  }
  static Plan c2r(int ny, int nx, Complex* in, double* out, unsigned flags)
  {
    return fftw_plan_dft_c2r_2d(ny, nx, in, out, flags);
  }
  static void execR2c(Plan p, double* in, Complex* out) { fftw_execute_dft_r2c(p, in, out); }
  static void execC2r(Plan p, Complex* in, double* out) { fftw_execute_dft_c2r(p, in, out); }
  static void destroy(Plan p) { fftw_destroy_plan(p); }
};

template<>
struct Fftw<float>
{
  using Complex = fftwf_complex;
  using Plan = fftwf_plan;
  static void* alloc(std::size_t bytes) { return fftwf_malloc(bytes); }
  static void release(void* p) { fftwf_free(p); }
  static Plan r2c(int ny, int nx, float* in, Complex* out, unsigned flags)
  {
    return fftwf_plan_dft_r2c_2d(ny, nx, in, out, flags);
  }
  static Plan c2r(int ny, int nx, Complex* in, float* out, unsigned flags)
  {
    return fftwf_plan_dft_c2r_2d(ny, nx, in, out, flags);
  }
  static void execR2c(Plan p, float* in, Complex* out) { fftwf_execute_dft_r2c(p, in, out); }
  static void execC2r(Plan p, Complex* in, float* out) { fftwf_execute_dft_c2r(p, in, out); }
  static void destroy(Plan p) { fftwf_destroy_plan(p); }
};

template<typename P>
struct Buffer
{
  explicit Buffer(std::size_t count)
    : Data(static_cast<P*>(count ? Fftw<double>::alloc(count * sizeof(P)) : nullptr))
  {
  }
  ~Buffer() { Fftw<double>::release(this->Data); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  P* Data;
};
}

template<typename T>
Status cpuFft(const Maps<T>& maps, const ExecutionOptions& options)
{
  const Batch& batch = maps.batch;
  const LagWindow& window = maps.window;
  using F = Fftw<T>;
  using C = typename F::Complex;
  // Padding to at least lw + rw - 1 keeps every lag with overlap free of wrap-around.
  const int px =
    fftFriendlySize(batch.left.width + batch.right.width - 1, options.tuning.fftPowerOfTwo);
  const int py =
    fftFriendlySize(batch.left.height + batch.right.height - 1, options.tuning.fftPowerOfTwo);
  const std::size_t real = static_cast<std::size_t>(px) * py;
  const std::size_t spectrum = static_cast<std::size_t>(px / 2 + 1) * py;
  const std::size_t nl = batch.leftCount(), nr = batch.rightCount();
  // Spectra of every input, then one product and one real map per piece of work.
  const std::uint64_t bytes =
    (nl + nr) * spectrum * sizeof(C) + 64ull * (spectrum * sizeof(C) + real * sizeof(T));
  if (bytes > (8ull << 30))
  {
    return { ErrorCode::TooLarge,
      "the FFT path would need " + std::to_string(bytes >> 20) + " MiB of spectra" };
  }
  Buffer<C> spectra((nl + nr) * spectrum);
  Buffer<T> planReal(real);
  Buffer<C> planComplex(spectrum);
  if (!spectra.Data || !planReal.Data || !planComplex.Data)
  {
    return { ErrorCode::TooLarge, "cannot allocate the FFT buffers" };
  }
  typename F::Plan forward, inverse;
  {
    std::lock_guard<std::mutex> lock(plannerMutex());
    forward = F::r2c(py, px, planReal.Data, planComplex.Data, FFTW_ESTIMATE | FFTW_UNALIGNED);
    inverse = F::c2r(py, px, planComplex.Data, planReal.Data, FFTW_ESTIMATE | FFTW_UNALIGNED);
  }
  if (!forward || !inverse)
  {
    return { ErrorCode::Internal, "FFTW could not create a plan" };
  }
  // Forward transforms of all inputs (each zero-padded in a scratch buffer).
  Status status = execution::checkedParallelFor(
    options,
    nl + nr,
    0,
    [&](std::size_t begin, std::size_t end)
    {
      Buffer<T> padded(real);
      for (std::size_t k = begin; k < end; ++k)
      {
        const bool isLeft = k < nl;
        const Size2 s = isLeft ? batch.left : batch.right;
        const T* src = isLeft ? maps.lefts + k * s.count() : maps.rights + (k - nl) * s.count();
        std::memset(padded.Data, 0, real * sizeof(T));
        for (int y = 0; y < s.height; ++y)
        {
          std::memcpy(padded.Data + static_cast<std::size_t>(y) * px,
            src + static_cast<std::size_t>(y) * s.width,
            s.width * sizeof(T));
        }
        F::execR2c(forward, padded.Data, spectra.Data + k * spectrum);
      }
    },
    0,
    ComputeProgress / 3);
  const T scale = T(1) / static_cast<T>(real);
  if (status)
  {
    status = execution::checkedParallelFor(
      options,
      batch.pairs(),
      0,
      [&](std::size_t begin, std::size_t end)
      {
        Buffer<C> product(spectrum);
        Buffer<T> map(real);
        for (std::size_t pair = begin; pair < end; ++pair)
        {
          const std::size_t i = pair / batch.m, j = pair % batch.m;
          const C* fl = spectra.Data + i * spectrum;
          const C* fr = spectra.Data + (nl + batch.rightOf(i, j)) * spectrum;
          for (std::size_t k = 0; k < spectrum; ++k)
          {
            // conj(a) * b
            product.Data[k][0] = fl[k][0] * fr[k][0] + fl[k][1] * fr[k][1];
            product.Data[k][1] = fl[k][0] * fr[k][1] - fl[k][1] * fr[k][0];
          }
          F::execC2r(inverse, product.Data, map.Data);
          T* dst = maps.out + pair * window.size();
          for (int jy = 0; jy < window.height; ++jy)
          {
            const int dy = window.y0 + jy;
            const int row = (dy % py + py) % py;
            for (int ix = 0; ix < window.width; ++ix)
            {
              const int dx = window.x0 + ix;
              const int col = (dx % px + px) % px;
              // Lags without overlap are zero by definition; the circular map holds another
              // lag's value there.
              const bool overlap = dx > -batch.left.width && dx < batch.right.width &&
                dy > -batch.left.height && dy < batch.right.height;
              dst[static_cast<std::size_t>(jy) * window.width + ix] =
                overlap ? map.Data[static_cast<std::size_t>(row) * px + col] * scale : T(0);
            }
          }
        }
      },
      ComputeProgress / 3,
      ComputeProgress);
  }
  {
    std::lock_guard<std::mutex> lock(plannerMutex());
    F::destroy(forward);
    F::destroy(inverse);
  }
  return status;
}

#else

template<typename T>
Status cpuFft(const Maps<T>&, const ExecutionOptions&)
{
  return { ErrorCode::BackendUnavailable,
    "the CPU FFT path is unavailable: CorrelationCore was built without FFTW3 (install "
    "libfftw3-dev and reconfigure)" };
}

#endif

template Status cpuFft(const Maps<float>&, const ExecutionOptions&);
template Status cpuFft(const Maps<double>&, const ExecutionOptions&);

} // namespace detail
} // namespace correlation
