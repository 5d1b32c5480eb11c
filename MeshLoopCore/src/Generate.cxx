// Generated lattice meshes for tests and benchmarks.
#include "Internal.h"

#include <numeric>
#include <random>

namespace meshloop
{
namespace generate
{

namespace
{

/// Renumbers both sets at random: a mesh written by a generator with poor locality.
Mapping shuffled(const Mapping& m, unsigned seed)
{
  std::mt19937 random(seed);
  Permutation p;
  p.fromOrder.resize(static_cast<std::size_t>(m.fromCount()));
  std::iota(p.fromOrder.begin(), p.fromOrder.end(), 0);
  std::shuffle(p.fromOrder.begin(), p.fromOrder.end(), random);
  p.toOrder.resize(static_cast<std::size_t>(m.toCount));
  std::iota(p.toOrder.begin(), p.toOrder.end(), 0);
  std::shuffle(p.toOrder.begin(), p.toOrder.end(), random);
  Mapping out;
  // A permutation of both sets always fits the mapping it was made for.
  return applyPermutation(m, p, &out) ? out : m;
}

std::int32_t pointId(int i, int j, int k, int nx, int ny)
{
  return static_cast<std::int32_t>((static_cast<std::int64_t>(k) * (ny + 1) + j) * (nx + 1) + i);
}

} // namespace

Mapping hexahedra(int nx, int ny, int nz, bool shuffle, unsigned seed)
{
  Mapping m;
  m.toCount = static_cast<std::int64_t>(nx + 1) * (ny + 1) * (nz + 1);
  const std::int64_t cells = static_cast<std::int64_t>(nx) * ny * nz;
  m.offsets.reserve(static_cast<std::size_t>(cells) + 1);
  m.targets.reserve(static_cast<std::size_t>(cells) * 8);
  for (int k = 0; k < nz; ++k)
  {
    for (int j = 0; j < ny; ++j)
    {
      for (int i = 0; i < nx; ++i)
      {
        // VTK_HEXAHEDRON order: bottom face counter-clockwise, then the top face.
        const std::int32_t ids[8] = { pointId(i, j, k, nx, ny),
          pointId(i + 1, j, k, nx, ny),
          pointId(i + 1, j + 1, k, nx, ny),
          pointId(i, j + 1, k, nx, ny),
          pointId(i, j, k + 1, nx, ny),
          pointId(i + 1, j, k + 1, nx, ny),
          pointId(i + 1, j + 1, k + 1, nx, ny),
          pointId(i, j + 1, k + 1, nx, ny) };
        m.targets.insert(m.targets.end(), ids, ids + 8);
        m.offsets.push_back(static_cast<std::int64_t>(m.targets.size()));
      }
    }
  }
  return shuffle ? shuffled(m, seed) : m;
}

Mapping tetrahedra(int nx, int ny, int nz, bool shuffle, unsigned seed)
{
  const Mapping hex = hexahedra(nx, ny, nz, false);
  // Six tetrahedra around the diagonal 0-6 of every hexahedron.
  static const int split[6][4] = {
    { 0, 1, 2, 6 }, { 0, 2, 3, 6 }, { 0, 3, 7, 6 }, { 0, 7, 4, 6 }, { 0, 4, 5, 6 }, { 0, 5, 1, 6 }
  };
  Mapping m;
  m.toCount = hex.toCount;
  for (std::int64_t c = 0; c < hex.fromCount(); ++c)
  {
    const std::int32_t* ids = hex.targets.data() + hex.offsets[c];
    for (const auto& tet : split)
    {
      for (int v : tet)
      {
        m.targets.push_back(ids[v]);
      }
      m.offsets.push_back(static_cast<std::int64_t>(m.targets.size()));
    }
  }
  return shuffle ? shuffled(m, seed) : m;
}

Mapping dualEdges(int nx, int ny, int nz, bool shuffle, unsigned seed)
{
  Mapping m;
  m.toCount = static_cast<std::int64_t>(nx) * ny * nz;
  auto cell = [&](int i, int j, int k)
  { return static_cast<std::int32_t>((static_cast<std::int64_t>(k) * ny + j) * nx + i); };
  for (int k = 0; k < nz; ++k)
  {
    for (int j = 0; j < ny; ++j)
    {
      for (int i = 0; i < nx; ++i)
      {
        const int next[3][3] = { { i + 1, j, k }, { i, j + 1, k }, { i, j, k + 1 } };
        const bool inside[3] = { i + 1 < nx, j + 1 < ny, k + 1 < nz };
        for (int d = 0; d < 3; ++d)
        {
          if (inside[d])
          {
            m.targets.push_back(cell(i, j, k));
            m.targets.push_back(cell(next[d][0], next[d][1], next[d][2]));
            m.offsets.push_back(static_cast<std::int64_t>(m.targets.size()));
          }
        }
      }
    }
  }
  return shuffle ? shuffled(m, seed) : m;
}

} // namespace generate
} // namespace meshloop
