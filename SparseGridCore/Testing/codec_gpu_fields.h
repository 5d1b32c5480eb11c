// Shared by the CUDA codec tests (test_codec_gpu.cxx, test_codec_gpu_bricks.cxx): realistic
// synthetic fields, the CPU and GPU options, arrays of bricks, and launch counts from the kernel
// profile.
#ifndef SPARSEGRID_CODEC_GPU_FIELDS_H
#define SPARSEGRID_CODEC_GPU_FIELDS_H

#include <sparsegrid/codec.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace codecgpu
{
namespace codec = sparsegrid::codec;
using Dims = std::array<std::uint64_t, 3>;

#define SKIP_WITHOUT_GPU()                                                                         \
  do                                                                                               \
  {                                                                                                \
    std::string why_;                                                                              \
    if (!sparsegrid::cudaAvailable(&why_))                                                         \
    {                                                                                              \
      GTEST_SKIP() << "no usable CUDA device: " << why_;                                           \
    }                                                                                              \
  } while (0)

template<typename T>
std::vector<T> field(int kind, const Dims& d, unsigned seed = 3)
{
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> g(0, 1);
  std::vector<T> v(d[0] * d[1] * d[2]);
  for (std::uint64_t k = 0; k < d[2]; ++k)
    for (std::uint64_t j = 0; j < d[1]; ++j)
      for (std::uint64_t i = 0; i < d[0]; ++i)
      {
        const double x = (i + 0.5) / d[0] - 0.5, y = (j + 0.5) / d[1] - 0.5,
                     z = (k + 0.5) / d[2] - 0.5;
        const double r = std::sqrt(x * x + y * y + z * z) * 20;
        double value = 0;
        switch (kind)
        {
          case 0: // hydrogen 3d_z2-like orbital density
            value =
              r * r * std::exp(-r / 3) * std::pow(3 * z * z * 400 / (r * r + 1e-9) - 1, 2) / 600;
            break;
          case 1: // multi-scale smooth field
            for (int t = 1; t < 12; ++t)
              value += std::sin(t * 6.1 * x + t) * std::cos(t * 4.3 * y - t) *
                std::sin(t * 3.7 * z) / (t * t);
            break;
          case 2: // vortex with a sharp core, like a hurricane's wind speed
          {
            const double rr = std::sqrt(x * x + y * y) * 30 + 1e-3;
            value = 60 * rr / (1 + rr * rr) * (1 - 0.5 * z) + 0.3 * std::sin(40 * x * y);
            break;
          }
          default:
            value = g(rng) * 10 + (kind == 4 ? 1e6 : 0);
        }
        v[i + d[0] * (j + d[1] * k)] = static_cast<T>(value);
      }
  return v;
}

inline sparsegrid::ExecutionOptions cpuOptions()
{
  sparsegrid::ExecutionOptions o;
  o.backend = sparsegrid::Backend::CPU;
  return o;
}

/// The GPU or an error (no fall-back to the CPU).
inline sparsegrid::ExecutionOptions gpuOptions()
{
  sparsegrid::ExecutionOptions o;
  o.backend = sparsegrid::Backend::CUDA;
  o.strictBackend = true;
  return o;
}

template<typename T>
double rangeOf(const std::vector<T>& v)
{
  double lo = 1e300, hi = -1e300;
  for (T x : v)
  {
    lo = std::min(lo, double(x));
    hi = std::max(hi, double(x));
  }
  return hi > lo ? hi - lo : 1.0;
}

/// Bricks in one array with a gap between them: kinds 0-2 (smooth fields), a brick of noise at
/// a bound too small to code (a raw stream) and a brick with NaN/Inf where asked.
template<typename T>
std::vector<T> brickArray(const Dims& d, std::uint64_t count, std::uint64_t stride, bool hostile)
{
  const std::uint64_t n = d[0] * d[1] * d[2];
  std::vector<T> all(count * stride, T(-7));
  for (std::uint64_t b = 0; b < count; ++b)
  {
    const int kind = hostile && b == 1 ? 3 : static_cast<int>(b % 3);
    std::vector<T> f = field<T>(kind, d, static_cast<unsigned>(b + 1));
    if (hostile && b == 1)
    {
      for (T& v : f)
      {
        v *= T(1e6); // white noise far above the bound: the coded stream is not smaller
      }
    }
    if (hostile && b + 1 == count)
    {
      f[n / 2] = std::numeric_limits<T>::quiet_NaN();
      f[n / 3] = -std::numeric_limits<T>::infinity();
    }
    std::copy(f.begin(), f.end(), all.begin() + b * stride);
  }
  return all;
}

/// The kernel launches the profile counted under names that start with `prefix`.
inline long profiledLaunches(const std::string& report, const std::string& prefix)
{
  long launches = 0;
  std::istringstream in(report);
  std::string line;
  while (std::getline(in, line))
  {
    if (line.rfind(prefix, 0) == 0)
    {
      const auto t1 = line.find('\t'), t2 = line.rfind('\t');
      launches += std::stol(line.substr(t1 + 1, t2 - t1 - 1));
    }
  }
  return launches;
}
} // namespace codecgpu

#endif
