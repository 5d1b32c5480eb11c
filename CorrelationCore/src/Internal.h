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

#include <cstddef>
#include <functional>

namespace correlation
{
namespace detail
{

/// The share of a CPU call's progress that the correlation itself takes (normalisation the
/// rest).
constexpr double ComputeProgress = 0.9;

template<typename T>
Status cpuDirect(const Batch& batch,
  const LagWindow& window,
  const T* lefts,
  const T* rights,
  T* out,
  const ExecutionOptions& options);

/// FFTW path; BackendUnavailable when the core was built without FFTW.
template<typename T>
Status cpuFft(const Batch& batch,
  const LagWindow& window,
  const T* lefts,
  const T* rights,
  T* out,
  const ExecutionOptions& options);

template<typename T>
Status normalize(const Batch& batch,
  const LagWindow& window,
  const T* lefts,
  const T* rights,
  Normalization normalization,
  T* out,
  const ExecutionOptions& options);

/// Smallest n >= minimum whose only prime factors are 2, 3, 5 and 7 (fast for FFTW and cuFFT),
/// or with powerOfTwo the smallest power of two (Tuning::fftPowerOfTwo).
int fftFriendlySize(int minimum, bool powerOfTwo = false);

// CUDA (CudaUnavailable.cxx answers BackendUnavailable when the core was built without it).
// Host pointers in, host pointers out; kernelSeconds gets the device time of the correlation.
template<typename T>
Status cudaDirect(const Batch& batch,
  const LagWindow& window,
  const T* lefts,
  const T* rights,
  T* out,
  const DirectOptions& direct,
  double* kernelSeconds,
  bool deviceOnlyTiming,
  DirectKernel* kernelUsed);
template<typename T>
Status cudaFft(const Batch& batch,
  const LagWindow& window,
  const T* lefts,
  const T* rights,
  T* out,
  bool cachePlans,
  bool powerOfTwo,
  double* kernelSeconds,
  bool deviceOnlyTiming);

} // namespace detail
} // namespace correlation

#endif
