/**
 * @file reference.h
 * @brief Independent brute-force references for the CorrelationCore tests.
 *
 * Written from the definitions in correlation.h, in double, with no shared code: every lag's
 * overlap is enumerated directly and its sums (products, energies, means) are computed from
 * scratch. Slow on purpose; the tests keep sizes small.
 */
#ifndef CORRELATION_TEST_REFERENCE_H
#define CORRELATION_TEST_REFERENCE_H

#include <correlation/correlation.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

namespace reference
{

/// The reference map of one pair at the lags of `window`.
inline std::vector<double> correlateOne(const std::vector<double>& left,
  int lw,
  int lh,
  const std::vector<double>& right,
  int rw,
  int rh,
  const correlation::LagWindow& window,
  correlation::Normalization normalization,
  double minOverlapFraction)
{
  std::vector<double> map(window.size(), 0.0);
  const double minArea = minOverlapFraction * std::min(lw * lh, rw * rh);
  for (int j = 0; j < window.height; ++j)
  {
    for (int i = 0; i < window.width; ++i)
    {
      const int dx = window.x0 + i, dy = window.y0 + j;
      double c = 0, sl = 0, sr = 0, ll = 0, rr = 0, n = 0;
      for (int y = 0; y < lh; ++y)
      {
        for (int x = 0; x < lw; ++x)
        {
          const int u = x + dx, v = y + dy;
          if (u < 0 || u >= rw || v < 0 || v >= rh)
          {
            continue;
          }
          const double a = left[y * lw + x], b = right[v * rw + u];
          c += a * b;
          sl += a;
          sr += b;
          ll += a * a;
          rr += b * b;
          n += 1;
        }
      }
      double value = c;
      if (normalization != correlation::Normalization::None)
      {
        if (n == 0 || n < minArea)
        {
          value = 0;
        }
        else if (normalization == correlation::Normalization::NCC)
        {
          value = (ll > 0 && rr > 0) ? c / std::sqrt(ll * rr) : 0;
        }
        else
        {
          const double ml = sl / n, mr = sr / n;
          double cov = 0, vl = 0, vr = 0;
          for (int y = 0; y < lh; ++y)
          {
            for (int x = 0; x < lw; ++x)
            {
              const int u = x + dx, v = y + dy;
              if (u < 0 || u >= rw || v < 0 || v >= rh)
              {
                continue;
              }
              const double a = left[y * lw + x] - ml, b = right[v * rw + u] - mr;
              cov += a * b;
              vl += a * a;
              vr += b * b;
            }
          }
          value = (vl > 0 && vr > 0) ? cov / std::sqrt(vl * vr) : 0;
        }
      }
      map[static_cast<std::size_t>(j) * window.width + i] = value;
    }
  }
  return map;
}

inline std::vector<double> randomMatrices(std::size_t count, unsigned seed, double offset = 0.3)
{
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  std::vector<double> v(count);
  for (auto& x : v)
  {
    x = offset + dist(rng);
  }
  return v;
}

/// A smooth random field: a sum of Gaussian blobs, evaluated anywhere (shifts are exact).
struct SmoothField
{
  struct Blob
  {
    double x, y, sigma, amplitude;
  };
  std::vector<Blob> blobs;
  /// `count` blobs of widths in [sigmaMin, sigmaMax] (small ones look like PIV particles).
  SmoothField(int width,
    int height,
    unsigned seed,
    int count = 60,
    double sigmaMin = 2.0,
    double sigmaMax = 4.0)
  {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> ux(-8.0, width + 8.0), uy(-8.0, height + 8.0),
      us(sigmaMin, sigmaMax), ua(-1.0, 1.0);
    for (int k = 0; k < count; ++k)
    {
      blobs.push_back({ ux(rng), uy(rng), us(rng), ua(rng) });
    }
  }
  double operator()(double x, double y) const
  {
    double v = 0;
    for (const auto& b : blobs)
    {
      const double dx = x - b.x, dy = y - b.y;
      v += b.amplitude * std::exp(-(dx * dx + dy * dy) / (2 * b.sigma * b.sigma));
    }
    return v;
  }
  /// Samples f(p - shift) on a width x height grid: the field moved by `shift`.
  template<typename T>
  std::vector<T> sample(int width, int height, double sx = 0, double sy = 0) const
  {
    std::vector<T> image(static_cast<std::size_t>(width) * height);
    for (int y = 0; y < height; ++y)
    {
      for (int x = 0; x < width; ++x)
      {
        image[static_cast<std::size_t>(y) * width + x] = static_cast<T>((*this)(x - sx, y - sy));
      }
    }
    return image;
  }
};

} // namespace reference

#endif
