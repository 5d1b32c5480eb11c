/**
 * @file reference.h
 * @brief Brute-force double-precision references for the stencil tests, written independently of
 * the library's kernels: a plain adjacency list, the Laplacian applied twice through a temporary.
 */
#ifndef stencil_test_reference_h
#define stencil_test_reference_h

#include "stencil/Stencil.h"

#include <cmath>
#include <cstddef>
#include <limits>
#include <vector>

namespace reference
{
/// One Laplacian pass on an image; NaN where a neighbour is missing (fill) or clamped (zero flux).
inline std::vector<double> imageLaplacian(const std::vector<double>& u,
  const stencil::ImageGrid& g,
  bool horizontal,
  bool zeroFlux)
{
  const long long n[3] = { (long long)g.dims[0], (long long)g.dims[1], (long long)g.dims[2] };
  std::vector<double> out(u.size());
  for (long long k = 0; k < n[2]; ++k)
    for (long long j = 0; j < n[1]; ++j)
      for (long long i = 0; i < n[0]; ++i)
      {
        const long long p[3] = { i, j, k };
        const double centre = u[i + n[0] * (j + n[1] * k)];
        double sum = 0;
        for (int a = 0; a < 3; ++a)
        {
          if (n[a] == 1 || (horizontal && a == 2))
            continue;
          for (int side = -1; side <= 1; side += 2)
          {
            long long q[3] = { p[0], p[1], p[2] };
            q[a] += side;
            if (q[a] < 0 || q[a] >= n[a])
            {
              if (!zeroFlux)
              {
                sum = std::numeric_limits<double>::quiet_NaN();
                continue;
              }
              q[a] = p[a];
            }
            sum += (u[q[0] + n[0] * (q[1] + n[1] * q[2])] - centre) / (g.spacing[a] * g.spacing[a]);
          }
        }
        out[i + n[0] * (j + n[1] * k)] = sum;
      }
  return out;
}

/// Column mesh from a plain adjacency list (-1 missing); vertical part when `vertical`.
inline std::vector<double> columnLaplacian(const std::vector<double>& u,
  const std::vector<std::vector<int>>& adjacency,
  const std::vector<std::vector<double>>& weights,
  std::size_t layers,
  double layerSpacing,
  bool vertical,
  bool zeroFlux)
{
  const std::size_t cells = adjacency.size();
  std::vector<double> out(u.size());
  for (std::size_t k = 0; k < layers; ++k)
    for (std::size_t c = 0; c < cells; ++c)
    {
      const double centre = u[k * cells + c];
      double sum = 0;
      for (std::size_t j = 0; j < adjacency[c].size(); ++j)
      {
        int m = adjacency[c][j];
        if (m < 0)
        {
          if (!zeroFlux)
          {
            sum = std::numeric_limits<double>::quiet_NaN();
            continue;
          }
          m = (int)c;
        }
        sum += weights[c][j] * (u[k * cells + m] - centre);
      }
      if (vertical)
      {
        for (int side = -1; side <= 1; side += 2)
        {
          long long q = (long long)k + side;
          if (q < 0 || q >= (long long)layers)
          {
            if (!zeroFlux)
            {
              sum = std::numeric_limits<double>::quiet_NaN();
              continue;
            }
            q = (long long)k;
          }
          sum += (u[q * cells + c] - centre) / (layerSpacing * layerSpacing);
        }
      }
      out[k * cells + c] = sum;
    }
  return out;
}
} // namespace reference

#endif
