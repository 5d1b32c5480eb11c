// Independent references for the tests: plain loops in double over the mapping, written from the
// definitions (sum / mean over the entries naming a target; the edge flux formula).
#ifndef meshloop_test_reference_h
#define meshloop_test_reference_h

#include <meshloop/meshloop.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace reference
{

inline std::size_t at(bool soa, std::int64_t i, int c, std::int64_t n, int components)
{
  return static_cast<std::size_t>(soa ? c * n + i : i * components + c);
}

/// Per target: sum and count of the entries naming it (the brute force of Cell Data to Point
/// Data: a point's value is the mean over the cells that list it).
template<typename T>
std::vector<double> scatter(const meshloop::Mapping& m,
  const std::vector<T>& in,
  int components,
  bool soa,
  bool average)
{
  const std::int64_t to = m.toCount, from = m.fromCount();
  std::vector<double> out(static_cast<std::size_t>(to * components), 0.0);
  for (std::int64_t t = 0; t < to; ++t)
  {
    for (int c = 0; c < components; ++c)
    {
      double sum = 0;
      int count = 0;
      // Deliberately the slow way round: scan every cell for the point.
      for (std::int64_t e = 0; e < from; ++e)
      {
        for (std::int64_t j = m.offsets[e]; j < m.offsets[e + 1]; ++j)
        {
          if (m.targets[j] == t)
          {
            sum += static_cast<double>(in[at(soa, e, c, from, components)]);
            ++count;
          }
        }
      }
      out[at(soa, t, c, to, components)] = average ? (count ? sum / count : 0.0) : sum;
    }
  }
  return out;
}

template<typename T>
std::vector<double> edgeFlux(const meshloop::Mapping& m,
  const std::vector<T>& q,
  const std::vector<T>& w,
  int components,
  bool soa)
{
  const std::int64_t to = m.toCount;
  std::vector<double> res(static_cast<std::size_t>(to * components), 0.0);
  for (std::int64_t e = 0; e < m.fromCount(); ++e)
  {
    const std::int64_t a = m.targets[m.offsets[e]], b = m.targets[m.offsets[e] + 1];
    for (int c = 0; c < components; ++c)
    {
      const double flux = static_cast<double>(w[e]) *
        (static_cast<double>(q[at(soa, b, c, to, components)]) -
          static_cast<double>(q[at(soa, a, c, to, components)]));
      res[at(soa, a, c, to, components)] += flux;
      res[at(soa, b, c, to, components)] -= flux;
    }
  }
  return res;
}

template<typename T>
std::vector<T> randomValues(std::size_t n, unsigned seed)
{
  std::mt19937 random(seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  std::vector<T> v(n);
  for (auto& x : v)
  {
    x = static_cast<T>(dist(random));
  }
  return v;
}

/// A mixed mesh: hexahedra, wedges, tetrahedra, a pyramid, a triangle, a degenerate cell that
/// lists one point twice, cells with no points, and points no cell uses.
inline meshloop::Mapping mixed()
{
  meshloop::Mapping m;
  m.toCount = 40;
  const std::vector<std::vector<std::int32_t>> cells = { { 0, 1, 2, 3, 4, 5, 6, 7 },
    { 4, 5, 6, 7, 8, 9, 10, 11 },
    { 1, 12, 2, 5, 13, 6 },
    { 2, 12, 14, 6, 13, 15 },
    { 8, 9, 16, 17 },
    {},
    { 9, 10, 16 },
    { 16, 17, 18, 19, 20 },
    { 3, 3, 7, 21 },
    {},
    { 22, 23, 24, 25 },
    { 30, 31, 32, 33, 34, 35, 36, 37 },
    { 33, 34, 38 } };
  for (const auto& cell : cells)
  {
    m.targets.insert(m.targets.end(), cell.begin(), cell.end());
    m.offsets.push_back(static_cast<std::int64_t>(m.targets.size()));
  }
  return m;
}

} // namespace reference

#endif
