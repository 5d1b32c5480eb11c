// Names, validation, lag windows, operation counts and the Auto choice.
#include "Internal.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace correlation
{

const char* toString(Shape shape)
{
  static const char* const names[] = { "one-to-one", "one-to-many", "n-to-mn", "n-to-m" };
  return execution::nameOf(shape, names);
}

const char* toString(Mode mode)
{
  static const char* const names[] = { "full", "same", "valid" };
  return execution::nameOf(mode, names);
}

const char* toString(Normalization normalization)
{
  static const char* const names[] = { "none", "NCC", "ZNCC" };
  return execution::nameOf(normalization, names);
}

const char* toString(Algorithm algorithm)
{
  static const char* const names[] = { "Auto", "Direct", "FFT" };
  return execution::nameOf(algorithm, names);
}

const char* toString(DirectKernel kernel)
{
  static const char* const names[] = { "auto",
    "baseline",
    "warp-shuffle",
    "register-tiled",
    "split-tiled",
    "pair-per-lane",
    "tensor-3xtf32",
    "tensor-2xf16" };
  return execution::nameOf(kernel, names);
}

const char* toString(WorkDistribution distribution)
{
  static const char* const names[] = { "none", "rectangle", "triangle" };
  return execution::nameOf(distribution, names);
}

Status lagWindow(const Batch& batch, Mode mode, LagWindow& window)
{
  // Sizes are bounded so that lag arithmetic and one map's index stay far inside int.
  constexpr int maxEdge = 1 << 15;
  const Size2 l = batch.left;
  const Size2 r = batch.right;
  if (l.width < 1 || l.height < 1 || r.width < 1 || r.height < 1)
  {
    return { ErrorCode::InvalidArgument,
      "empty matrix: left " + std::to_string(l.width) + "x" + std::to_string(l.height) +
        ", right " + std::to_string(r.width) + "x" + std::to_string(r.height) };
  }
  if (l.width > maxEdge || l.height > maxEdge || r.width > maxEdge || r.height > maxEdge)
  {
    return { ErrorCode::TooLarge, "matrix edge above " + std::to_string(maxEdge) };
  }
  if (batch.n < 1 || batch.m < 1)
  {
    return { ErrorCode::InvalidArgument, "n and m must be at least 1" };
  }
  if (batch.shape == Shape::OneToOne && (batch.n != 1 || batch.m != 1))
  {
    return { ErrorCode::InvalidArgument, "one-to-one needs n = m = 1" };
  }
  if (batch.shape == Shape::OneToMany && batch.n != 1)
  {
    return { ErrorCode::InvalidArgument, "one-to-many needs n = 1" };
  }
  switch (mode)
  {
    case Mode::Full:
      window = { -(l.width - 1), -(l.height - 1), l.width + r.width - 1, l.height + r.height - 1 };
      break;
    case Mode::Same:
      window = { -(r.width / 2), -(r.height / 2), r.width, r.height };
      break;
    case Mode::Valid:
    {
      const bool leftInside = l.width <= r.width && l.height <= r.height;
      const bool rightInside = r.width <= l.width && r.height <= l.height;
      if (!leftInside && !rightInside)
      {
        return { ErrorCode::InvalidArgument,
          "valid mode needs one matrix to fit inside the other in both axes" };
      }
      if (leftInside)
      {
        window = { 0, 0, r.width - l.width + 1, r.height - l.height + 1 };
      }
      else
      {
        window = { -(l.width - r.width),
          -(l.height - r.height),
          l.width - r.width + 1,
          l.height - r.height + 1 };
      }
      break;
    }
  }
  return Status::Ok();
}

namespace
{
// Overlap length of a left extent a and a right extent b at lag d.
inline std::int64_t overlap1D(int a, int b, int d)
{
  const int begin = std::max(0, -d);
  const int end = std::min(a, b - d);
  return std::max(0, end - begin);
}
}

std::uint64_t directOperations(const Batch& batch, const LagWindow& window)
{
  // The overlap area is the product of the per-axis overlaps, so the sum over lags factors.
  std::uint64_t sx = 0, sy = 0;
  for (int i = 0; i < window.width; ++i)
  {
    sx += overlap1D(batch.left.width, batch.right.width, window.x0 + i);
  }
  for (int j = 0; j < window.height; ++j)
  {
    sy += overlap1D(batch.left.height, batch.right.height, window.y0 + j);
  }
  return sx * sy * batch.pairs();
}

Algorithm autoAlgorithm(const Batch& batch, const LagWindow& window, Backend backend)
{
  const double px = detail::fftFriendlySize(batch.left.width + batch.right.width - 1);
  const double py = detail::fftFriendlySize(batch.left.height + batch.right.height - 1);
  const double p = px * py;
  const double transforms =
    static_cast<double>(batch.leftCount() + batch.rightCount() + batch.pairs());
  const double fftCost = transforms * p * std::log2(std::max(p, 2.0)) + 4.0 * batch.pairs() * p;
  const double direct = static_cast<double>(directOperations(batch, window));
  // Direct multiply-adds per FFT "operation" at the end-to-end crossovers measured on an H100
  // and its 16-core host (docs/correlation.md): one-to-one 96x96 on the GPU (ratio 46 there,
  // 22 at 64x64 where direct still wins); on the CPU FFTW wins from 16x16 one-to-one on.
  const double ratio = backend == Backend::CUDA ? 40.0 : 1.0;
  return direct > ratio * fftCost ? Algorithm::FFT : Algorithm::Direct;
}

template<typename T>
Status checkFinite(const T* data, std::size_t n, const char* what)
{
  for (std::size_t i = 0; i < n; ++i)
  {
    if (!std::isfinite(data[i]))
    {
      return { ErrorCode::NonFinite,
        std::string(what) + " holds a non-finite value (NaN or Inf) at index " +
          std::to_string(i) };
    }
  }
  return Status::Ok();
}
template Status checkFinite<float>(const float*, std::size_t, const char*);
template Status checkFinite<double>(const double*, std::size_t, const char*);

namespace detail
{

int fftFriendlySize(int minimum, bool powerOfTwo)
{
  for (int n = std::max(1, minimum);; ++n)
  {
    int k = n;
    for (int p : { 2, 3, 5, 7 })
    {
      if (powerOfTwo && p > 2)
      {
        break;
      }
      while (k % p == 0)
      {
        k /= p;
      }
    }
    if (k == 1)
    {
      return n;
    }
  }
}

} // namespace detail
} // namespace correlation
