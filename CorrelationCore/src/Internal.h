/**
 * @file Internal.h
 * @brief Private declarations shared by the core's translation units (CPU, FFTW, CUDA).
 *
 * Every path below computes the raw (unnormalised) correlation of a batch into `out`; the
 * normalisation is one host pass over the maps afterwards (normalize), so every algorithm and
 * backend shares it.
 */
#ifndef CORRELATION_INTERNAL_H
#define CORRELATION_INTERNAL_H

#include <correlation/correlation.h>

#include <algorithm>
#include <cstddef>
#include <functional>

namespace correlation
{
namespace detail
{

/// The share of a CPU call's progress that the correlation itself takes (normalisation the
/// rest).
constexpr double ComputeProgress = 0.9;

/// What every path works on: the request, its lag window and the output maps.
template<typename T>
struct Maps : Request<T>
{
  const LagWindow& window;
  T* out;
};

/// The overlap at lag (dx, dy): left rows [y0, y1) and columns [x0, x1) meet the right matrix
/// shifted by the lag; empty when x0 >= x1 or y0 >= y1.
struct Overlap
{
  int dx, dy, x0, x1, y0, y1;
  bool empty() const { return x0 >= x1 || y0 >= y1; }
};

/// Calls lag(pair, overlap, value) for every lag of the lag rows [begin, end) of all pairs (row
/// = pair * window.height + lag row); value is that lag's entry of the output maps.
template<typename T, typename Lag>
void forEachLag(const Maps<T>& maps, std::size_t begin, std::size_t end, const Lag& lag)
{
  const Batch& batch = maps.batch;
  const LagWindow& window = maps.window;
  for (std::size_t row = begin; row < end; ++row)
  {
    const std::size_t pair = row / window.height;
    const int j = static_cast<int>(row % window.height);
    Overlap o;
    o.dy = window.y0 + j;
    o.y0 = std::max(0, -o.dy);
    o.y1 = std::min(batch.left.height, batch.right.height - o.dy);
    T* line = maps.out + pair * window.size() + static_cast<std::size_t>(j) * window.width;
    for (int i = 0; i < window.width; ++i)
    {
      o.dx = window.x0 + i;
      o.x0 = std::max(0, -o.dx);
      o.x1 = std::min(batch.left.width, batch.right.width - o.dx);
      lag(pair, o, line[i]);
    }
  }
}

template<typename T>
Status cpuDirect(const Maps<T>& maps, const ExecutionOptions& options);

/// FFTW path; BackendUnavailable when the core was built without FFTW.
template<typename T>
Status cpuFft(const Maps<T>& maps, const ExecutionOptions& options);

template<typename T>
Status normalize(const Maps<T>& maps, const ExecutionOptions& options);

/// Smallest n >= minimum whose only prime factors are 2, 3, 5 and 7 (fast for FFTW and cuFFT),
/// or with powerOfTwo the smallest power of two (Tuning::fftPowerOfTwo).
int fftFriendlySize(int minimum, bool powerOfTwo = false);

// CUDA (CudaUnavailable.cxx answers BackendUnavailable when the core was built without it).
// Host pointers in, host pointers out; kernelSeconds gets the device time of the correlation.
template<typename T>
Status cudaDirect(const Maps<T>& maps,
  const DirectOptions& direct,
  double* kernelSeconds,
  bool deviceOnlyTiming,
  DirectKernel* kernelUsed);
template<typename T>
Status cudaFft(const Maps<T>& maps,
  bool cachePlans,
  bool powerOfTwo,
  double* kernelSeconds,
  bool deviceOnlyTiming);

} // namespace detail
} // namespace correlation

#endif
