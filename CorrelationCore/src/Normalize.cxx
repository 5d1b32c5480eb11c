// NCC / ZNCC from the raw maps: per-lag overlap sums of L, L^2, R, R^2 from summed-area tables.
#include "Internal.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace correlation
{
namespace detail
{
namespace
{
// Summed-area tables of v and v^2 of one matrix, (w + 1) x (h + 1), in double.
struct Integral
{
  int w = 0;
  std::vector<double> sum, sq;
  template<typename T>
  void build(const T* m, Size2 s)
  {
    this->w = s.width;
    const std::size_t stride = s.width + 1;
    this->sum.assign(stride * (s.height + 1), 0.0);
    this->sq.assign(stride * (s.height + 1), 0.0);
    for (int y = 0; y < s.height; ++y)
    {
      double rs = 0, rq = 0;
      for (int x = 0; x < s.width; ++x)
      {
        const double v = m[static_cast<std::size_t>(y) * s.width + x];
        rs += v;
        rq += v * v;
        this->sum[(y + 1) * stride + x + 1] = this->sum[y * stride + x + 1] + rs;
        this->sq[(y + 1) * stride + x + 1] = this->sq[y * stride + x + 1] + rq;
      }
    }
  }
  static double rect(const std::vector<double>& t,
    std::size_t stride,
    int x0,
    int x1,
    int y0,
    int y1)
  {
    return t[y1 * stride + x1] - t[y0 * stride + x1] - t[y1 * stride + x0] + t[y0 * stride + x0];
  }
  double sumOf(int x0, int x1, int y0, int y1) const
  {
    return rect(this->sum, this->w + 1, x0, x1, y0, y1);
  }
  double sqOf(int x0, int x1, int y0, int y1) const
  {
    return rect(this->sq, this->w + 1, x0, x1, y0, y1);
  }
};
}

template<typename T>
Status normalize(const Maps<T>& maps, const ExecutionOptions& options)
{
  const Batch& batch = maps.batch;
  const LagWindow& window = maps.window;
  const Normalization normalization = maps.normalization;
  if (normalization == Normalization::None)
  {
    return Status::Ok();
  }
  const std::size_t nl = batch.leftCount(), nr = batch.rightCount();
  std::vector<Integral> tables(nl + nr);
  execution::parallelFor(options,
    nl + nr,
    0,
    [&](std::size_t begin, std::size_t end)
    {
      for (std::size_t k = begin; k < end; ++k)
      {
        if (k < nl)
        {
          tables[k].build(maps.lefts + k * batch.left.count(), batch.left);
        }
        else
        {
          tables[k].build(maps.rights + (k - nl) * batch.right.count(), batch.right);
        }
      }
    });
  const double minArea = options.minOverlapFraction *
    static_cast<double>(std::min(batch.left.count(), batch.right.count()));
  // Below this relative size an energy or variance is rounding noise, not signal.
  const double eps = sizeof(T) == 4 ? 1e-5 : 1e-11;
  const bool zero = normalization == Normalization::ZNCC;
  execution::parallelFor(options,
    batch.pairs() * window.height,
    0,
    [&](std::size_t begin, std::size_t end)
    {
      forEachLag(maps,
        begin,
        end,
        [&](std::size_t pair, const Overlap& o, T& value)
        {
          const int x0 = o.x0, x1 = o.x1, y0 = o.y0, y1 = o.y1, dx = o.dx, dy = o.dy;
          const Integral& tl = tables[pair / batch.m];
          const Integral& tr = tables[nl + batch.rightOf(pair / batch.m, pair % batch.m)];
          const double area = static_cast<double>(std::max(0, x1 - x0)) * std::max(0, y1 - y0);
          if (area <= 0 || area < minArea)
          {
            value = T(0);
            return;
          }
          double ll = tl.sqOf(x0, x1, y0, y1);
          double rr = tr.sqOf(x0 + dx, x1 + dx, y0 + dy, y1 + dy);
          double c = value;
          if (zero)
          {
            const double sl = tl.sumOf(x0, x1, y0, y1);
            const double sr = tr.sumOf(x0 + dx, x1 + dx, y0 + dy, y1 + dy);
            const double vl = ll - sl * sl / area, vr = rr - sr * sr / area;
            if (vl <= eps * ll || vr <= eps * rr)
            {
              value = T(0);
              return;
            }
            c -= sl * sr / area;
            ll = vl;
            rr = vr;
          }
          if (ll <= 0 || rr <= 0)
          {
            value = T(0);
            return;
          }
          value = static_cast<T>(std::clamp(c / std::sqrt(ll * rr), -1.0, 1.0));
        });
    });
  return Status::Ok();
}

template Status normalize(const Maps<float>&, const ExecutionOptions&);
template Status normalize(const Maps<double>&, const ExecutionOptions&);

} // namespace detail
} // namespace correlation
