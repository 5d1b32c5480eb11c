// Peak search with sub-pixel fits, and interrogation-window displacements (a batched n-to-mn).
#include "Internal.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

namespace correlation
{
namespace
{
// Offset of the extremum of the curve through (-1, a), (0, b), (1, c), in [-0.5, 0.5].
double fit3(double a, double b, double c, PeakFit fit)
{
  double offset = 0;
  if (fit == PeakFit::Gaussian && a > 0 && b > 0 && c > 0)
  {
    const double la = std::log(a), lb = std::log(b), lc = std::log(c);
    const double den = 2 * (la - 2 * lb + lc);
    offset = den < 0 ? (la - lc) / den : 0;
  }
  else if (fit != PeakFit::None)
  {
    const double den = 2 * (a - 2 * b + c);
    offset = den < 0 ? (a - c) / den : 0;
  }
  return std::clamp(offset, -0.5, 0.5);
}
}

template<typename T>
Peak findPeak(const T* map, const LagWindow& window, PeakFit fit, int exclusion)
{
  Peak peak;
  const int w = window.width, h = window.height;
  if (!map || w < 1 || h < 1)
  {
    return peak;
  }
  auto at = [&](int i, int j)
  { return static_cast<double>(map[static_cast<std::size_t>(j) * w + i]); };
  int pi = 0, pj = 0;
  double best = -std::numeric_limits<double>::infinity();
  for (int j = 0; j < h; ++j)
  {
    for (int i = 0; i < w; ++i)
    {
      if (at(i, j) > best)
      {
        best = at(i, j);
        pi = i;
        pj = j;
      }
    }
  }
  peak.x = window.x0 + pi;
  peak.y = window.y0 + pj;
  peak.value = best;
  peak.subX = peak.x;
  peak.subY = peak.y;
  if (pi > 0 && pi < w - 1)
  {
    peak.subX += fit3(at(pi - 1, pj), best, at(pi + 1, pj), fit);
  }
  if (pj > 0 && pj < h - 1)
  {
    peak.subY += fit3(at(pi, pj - 1), best, at(pi, pj + 1), fit);
  }
  peak.onBorder = (w > 1 && (pi == 0 || pi == w - 1)) || (h > 1 && (pj == 0 || pj == h - 1));
  // Second peak: the largest local maximum outside the primary's neighbourhood.
  double second = -std::numeric_limits<double>::infinity();
  for (int j = 0; j < h; ++j)
  {
    for (int i = 0; i < w; ++i)
    {
      if (std::abs(i - pi) <= exclusion && std::abs(j - pj) <= exclusion)
      {
        continue;
      }
      // On the map's edge a slope is cut off: a smooth primary peak would look like a second
      // peak there, so only interior samples (of axes longer than 2) qualify.
      if ((w > 2 && (i == 0 || i == w - 1)) || (h > 2 && (j == 0 || j == h - 1)))
      {
        continue;
      }
      const double v = at(i, j);
      if (v <= second)
      {
        continue;
      }
      bool isMax = true;
      for (int b = std::max(0, j - 1); b <= std::min(h - 1, j + 1) && isMax; ++b)
      {
        for (int a = std::max(0, i - 1); a <= std::min(w - 1, i + 1); ++a)
        {
          if (at(a, b) > v)
          {
            isMax = false;
            break;
          }
        }
      }
      if (isMax)
      {
        second = v;
      }
    }
  }
  peak.secondValue = std::isfinite(second) ? second : 0;
  peak.ratio =
    peak.secondValue > 0 ? best / peak.secondValue : std::numeric_limits<double>::infinity();
  const int zi = -window.x0, zj = -window.y0;
  peak.zeroLag = (zi >= 0 && zi < w && zj >= 0 && zj < h)
    ? at(zi, zj)
    : std::numeric_limits<double>::quiet_NaN();
  return peak;
}

template Peak findPeak<float>(const float*, const LagWindow&, PeakFit, int);
template Peak findPeak<double>(const double*, const LagWindow&, PeakFit, int);

template<typename T>
Status windowDisplacements(const ImagePair<T>& images,
  const WindowSpec& spec,
  DisplacementField& field,
  const ExecutionOptions& options,
  ExecutionReport* report)
{
  const auto start = std::chrono::steady_clock::now();
  const T* const reference = images.reference;
  const T* const image = images.image;
  const Size2 size = images.size;
  if (!reference || !image)
  {
    return { ErrorCode::InvalidArgument, "null image pointer" };
  }
  if (size.width < 1 || size.height < 1)
  {
    return { ErrorCode::InvalidArgument, "empty image" };
  }
  if (spec.windowSize < 2 || spec.step < 1 || spec.searchRadius < 1)
  {
    return { ErrorCode::InvalidArgument,
      "window size must be at least 2, step and search radius at least 1" };
  }
  const int ws = spec.windowSize, r = spec.searchRadius, region = ws + 2 * r;
  if (region > size.width || region > size.height)
  {
    return { ErrorCode::InvalidArgument,
      "window plus search margin (" + std::to_string(ws) + " + 2 x " + std::to_string(r) + " = " +
        std::to_string(region) + " px) is larger than the image (" + std::to_string(size.width) +
        " x " + std::to_string(size.height) + ")" };
  }
  Status status;
  if (!(status = checkFinite(reference, size.count(), "the reference image")) ||
    !(status = checkFinite(image, size.count(), "the image")))
  {
    return status;
  }
  const int half = ws / 2;
  field = DisplacementField();
  field.nx = (size.width - region) / spec.step + 1;
  field.ny = (size.height - region) / spec.step + 1;
  field.originX = half + r;
  field.originY = half + r;
  field.step = spec.step;
  const std::size_t n = static_cast<std::size_t>(field.nx) * field.ny;

  Batch batch{ Shape::NToMN, static_cast<int>(n), 1, { ws, ws }, { region, region } };
  std::vector<T> lefts(n * batch.left.count()), rights(n * batch.right.count());
  for (std::size_t k = 0; k < n; ++k)
  {
    const int cx = field.originX + static_cast<int>(k % field.nx) * spec.step;
    const int cy = field.originY + static_cast<int>(k / field.nx) * spec.step;
    for (int y = 0; y < region; ++y)
    {
      const std::size_t src = static_cast<std::size_t>(cy - half - r + y) * size.width;
      for (int x = 0; x < region; ++x)
      {
        rights[k * batch.right.count() + static_cast<std::size_t>(y) * region + x] =
          image[src + cx - half - r + x];
        if (x >= r && x < r + ws && y >= r && y < r + ws)
        {
          lefts[k * batch.left.count() + static_cast<std::size_t>(y - r) * ws + (x - r)] =
            reference[src + cx - half - r + x];
        }
      }
    }
  }
  LagWindow window;
  status = lagWindow(batch, Mode::Valid, window);
  if (!status)
  {
    return status;
  }
  std::vector<T> maps(n * window.size());
  ExecutionReport inner;
  status = correlate({ batch, lefts.data(), rights.data(), Mode::Valid, Normalization::ZNCC },
    maps.data(),
    options,
    &inner);
  if (!status)
  {
    return status;
  }
  field.dx.resize(n);
  field.dy.resize(n);
  field.peak.resize(n);
  field.ratio.resize(n);
  field.valid.resize(n);
  execution::parallelFor(options,
    n,
    0,
    [&](std::size_t begin, std::size_t end)
    {
      for (std::size_t k = begin; k < end; ++k)
      {
        const Peak p = findPeak(maps.data() + k * window.size(), window, spec.fit);
        field.dx[k] = p.subX - r;
        field.dy[k] = p.subY - r;
        field.peak[k] = p.value;
        field.ratio[k] = p.ratio;
        field.valid[k] = !p.onBorder && p.value >= spec.minPeak && p.ratio >= spec.minRatio;
      }
    });
  if (report)
  {
    *report = inner;
    report->seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  return Status::Ok();
}

template Status windowDisplacements(const ImagePair<float>&,
  const WindowSpec&,
  DisplacementField&,
  const ExecutionOptions&,
  ExecutionReport*);
template Status windowDisplacements(const ImagePair<double>&,
  const WindowSpec&,
  DisplacementField&,
  const ExecutionOptions&,
  ExecutionReport*);

} // namespace correlation
