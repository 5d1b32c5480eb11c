// The definition on the CPU: one loop nest per lag, threads over (pair, lag row).
#include "Internal.h"

#include <algorithm>

namespace correlation
{
namespace detail
{

template<typename T>
Status cpuDirect(const Maps<T>& maps, const ExecutionOptions& options)
{
  const Batch& batch = maps.batch;
  const int lw = batch.left.width, rw = batch.right.width;
  return execution::checkedParallelFor(
    options,
    batch.pairs() * static_cast<std::size_t>(maps.window.height),
    0,
    [&](std::size_t begin, std::size_t end)
    {
      forEachLag(maps,
        begin,
        end,
        [&](std::size_t pair, const Overlap& o, T& value)
        {
          if (o.empty())
          {
            value = T(0);
            return;
          }
          const T* left = maps.lefts + (pair / batch.m) * batch.left.count();
          const T* right =
            maps.rights + batch.rightOf(pair / batch.m, pair % batch.m) * batch.right.count();
          // Double accumulation: the CPU path doubles as the float path's accuracy yardstick.
          double sum = 0;
          for (int y = o.y0; y < o.y1; ++y)
          {
            const T* l = left + static_cast<std::size_t>(y) * lw;
            const T* r = right + static_cast<std::size_t>(y + o.dy) * rw + o.dx;
            for (int x = o.x0; x < o.x1; ++x)
            {
              sum += static_cast<double>(l[x]) * r[x];
            }
          }
          value = static_cast<T>(sum);
        });
    },
    0,
    ComputeProgress);
}

template Status cpuDirect(const Maps<float>&, const ExecutionOptions&);
template Status cpuDirect(const Maps<double>&, const ExecutionOptions&);

} // namespace detail
} // namespace correlation
