// The definition on the CPU: one loop nest per lag, threads over (pair, lag row).
#include "Internal.h"

#include <algorithm>

namespace correlation
{
namespace detail
{

template<typename T>
Status cpuDirect(const Batch& batch,
  const LagWindow& window,
  const T* lefts,
  const T* rights,
  T* out,
  const ExecutionOptions& options)
{
  const int lw = batch.left.width, lh = batch.left.height;
  const int rw = batch.right.width, rh = batch.right.height;
  const std::size_t rows = batch.pairs() * static_cast<std::size_t>(window.height);
  return execution::checkedParallelFor(
    options,
    rows,
    0,
    [&](std::size_t begin, std::size_t end)
    {
      for (std::size_t row = begin; row < end; ++row)
      {
        const std::size_t pair = row / window.height;
        const int j = static_cast<int>(row % window.height);
        const T* left = lefts + (pair / batch.m) * batch.left.count();
        const T* right =
          rights + batch.rightOf(pair / batch.m, pair % batch.m) * batch.right.count();
        const int dy = window.y0 + j;
        const int y0 = std::max(0, -dy), y1 = std::min(lh, rh - dy);
        T* line = out + pair * window.size() + static_cast<std::size_t>(j) * window.width;
        for (int i = 0; i < window.width; ++i)
        {
          const int dx = window.x0 + i;
          const int x0 = std::max(0, -dx), x1 = std::min(lw, rw - dx);
          if (x0 >= x1 || y0 >= y1)
          {
            line[i] = T(0);
            continue;
          }
          // Double accumulation: the CPU path doubles as the float path's accuracy yardstick.
          double sum = 0;
          for (int y = y0; y < y1; ++y)
          {
            const T* l = left + static_cast<std::size_t>(y) * lw;
            const T* r = right + static_cast<std::size_t>(y + dy) * rw + dx;
            for (int x = x0; x < x1; ++x)
            {
              sum += static_cast<double>(l[x]) * r[x];
            }
          }
          line[i] = static_cast<T>(sum);
        }
      }
    },
    0,
    ComputeProgress);
}

template Status cpuDirect<float>(const Batch&,
  const LagWindow&,
  const float*,
  const float*,
  float*,
  const ExecutionOptions&);
template Status cpuDirect<double>(const Batch&,
  const LagWindow&,
  const double*,
  const double*,
  double*,
  const ExecutionOptions&);

} // namespace detail
} // namespace correlation
