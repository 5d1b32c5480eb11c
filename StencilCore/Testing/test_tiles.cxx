// Row tiles of the CUDA image path, run here through their host emulation (ImageTiles.h: the
// kernel's geometry, copies, ring slots, register window and expressions, with the barriers as
// phases): every value against the brute-force reference, on sizes that no band, span or vector
// divides, so that the indexing is checked on a machine without a GPU. The kernel itself is
// compared with the reference and the strips in test_image (CUDA cases).
#include "common.h"
#include "reference.h"

#include "ImageTiles.h"

namespace
{
template<typename T>
stencil::detail::ImageArgs<T> argsFor(const stencil::ImageGrid& g,
  const T* u,
  T* out,
  bool laplap,
  bool zeroFlux)
{
  stencil::detail::ImageArgs<T> a;
  a.u = u;
  a.out = out;
  for (int axis = 0; axis < 3; ++axis)
  {
    a.dims[axis] = static_cast<long long>(g.dims[axis]);
    // Horizontal operators: axis 2 is never active.
    a.active[axis] = axis < 2 && g.dims[axis] > 1;
    a.weight[axis] =
      a.active[axis] ? static_cast<T>(1.0 / (g.spacing[axis] * g.spacing[axis])) : T(0);
  }
  a.stride[0] = 1;
  a.stride[1] = a.dims[0];
  a.stride[2] = a.dims[0] * a.dims[1];
  a.laplap = laplap;
  a.zeroFlux = zeroFlux;
  a.fill = std::numeric_limits<T>::quiet_NaN();
  return a;
}

/// Every block of the tile grid through the host emulation; unwritten values stay at -12345.
template<typename T>
std::vector<T> emulate(const stencil::ImageGrid& g,
  const std::vector<T>& u,
  bool laplap,
  bool zeroFlux,
  int threads,
  int span,
  long long resident,
  stencil::detail::TileGrid* geometry = nullptr)
{
  std::vector<T> out(u.size(), T(-12345));
  const auto a = argsFor(g, u.data(), out.data(), laplap, zeroFlux);
  const auto tg =
    stencil::detail::tileGrid(a.dims, stencil::detail::tileVector<T>(), threads, span, resident);
  for (long long block = 0; block < tg.blocks; ++block)
  {
    if (laplap)
      stencil::detail::emulateTileBlock<T, true>(a, tg, block);
    else
      stencil::detail::emulateTileBlock<T, false>(a, tg, block);
  }
  if (geometry)
    *geometry = tg;
  return out;
}

template<typename T>
void checkSizes(const std::vector<std::array<std::size_t, 3>>& sizes, double eps)
{
  constexpr int VW = stencil::detail::tileVector<T>();
  for (const auto& dims : sizes)
  {
    ASSERT_EQ(dims[0] % VW, 0u) << "the tiles need whole vectors per row";
    stencil::ImageGrid g;
    g.dims = dims;
    g.spacing = { 0.7, 1.3, 0.9 };
    std::vector<double> u(g.size());
    for (std::size_t i = 0; i < u.size(); ++i)
      u[i] = std::sin(0.37 * i) + 0.01 * (i % 13) + 1e-3 * (i % 70) * (i % 70);
    const std::vector<T> uT(u.begin(), u.end());
    // threads x span: one band and several, one row per block, spans that do not divide ny, one
    // span for all rows, and the automatic span (as if 50 blocks were resident).
    const int shapes[][2] = {
      { 32, 0 }, { 64, 1 }, { 32, 3 }, { 32, 7 }, { 64, 1000 }, { 256, 0 }
    };
    for (bool laplap : { false, true })
      for (bool zeroFlux : { false, true })
      {
        auto expected = reference::imageLaplacian(u, g, true, zeroFlux);
        if (laplap)
          expected = reference::imageLaplacian(expected, g, true, zeroFlux);
        // eps |u| amplified by the operator (sum 4 / h^2, squared for the laplap), 64 times.
        const double lap = 4 * (1 / 0.49 + 1 / 1.69);
        const double tol = 64 * eps * maxAbs(u) * (laplap ? lap * lap : lap);
        for (const auto& shape : shapes)
        {
          stencil::detail::TileGrid tg;
          const auto out = emulate(g, uT, laplap, zeroFlux, shape[0], shape[1], 50, &tg);
          EXPECT_TRUE(closeWithNaN(out, expected, tol))
            << (laplap ? "laplap" : "Laplacian") << (zeroFlux ? " zero flux" : " fill") << " "
            << dims[0] << "x" << dims[1] << "x" << dims[2] << " threads " << shape[0] << " span "
            << shape[1] << " (" << tg.span << " rows, " << tg.bands << " bands)";
        }
      }
  }
}

TEST(RowTilesEmulated, MatchBruteForceFloat)
{
  // Rows of 1 vector (all frame), of part of one band, of more than one band (32 threads x 4 =
  // 128 columns) with a partial last band; 2, 3 and 5 rows (frame only for the laplap), 45.
  checkSizes<float>({ { 4, 9, 1 },
                      { 8, 2, 1 },
                      { 12, 3, 2 },
                      { 20, 5, 1 },
                      { 72, 45, 3 },
                      { 132, 11, 2 },
                      { 260, 13, 1 } },
    1.2e-7);
}

TEST(RowTilesEmulated, MatchBruteForceDouble)
{
  checkSizes<double>(
    { { 2, 6, 1 }, { 6, 3, 2 }, { 70, 45, 3 }, { 66, 5, 1 }, { 130, 9, 2 }, { 514, 7, 1 } },
    2.2e-16);
}

/// The emulated tiles against the library's CPU path: same expressions, so equal to round-off
/// of the order of the terms (both evaluate the strips' order; only contraction may differ).
TEST(RowTilesEmulated, MatchTheCpuPath)
{
  stencil::ImageGrid g;
  g.dims = { 136, 37, 3 };
  g.spacing = { 0.8, 1.1, 0.6 };
  std::vector<double> u(g.size());
  for (std::size_t i = 0; i < u.size(); ++i)
    u[i] = std::cos(0.013 * i) + 0.2 * std::sin(1.7 * (i % 136));
  for (stencil::Operator op :
    { stencil::Operator::HorizontalLaplacian, stencil::Operator::HorizontalLaplap })
    for (stencil::BoundaryMode mode :
      { stencil::BoundaryMode::Fill, stencil::BoundaryMode::ZeroFlux })
    {
      stencil::StencilOptions s;
      s.op = op;
      s.boundary = mode;
      std::vector<double> cpu(u.size());
      ASSERT_TRUE(
        stencil::apply(g, u.data(), cpu.data(), s, optionsFor(stencil::Backend::CPU)).ok());
      const bool laplap = op == stencil::Operator::HorizontalLaplap;
      const auto tiles = emulate(g, u, laplap, mode == stencil::BoundaryMode::ZeroFlux, 32, 5, 0);
      EXPECT_TRUE(closeWithNaN(tiles, cpu, 1e-13 * std::max(1.0, maxAbs(cpu))))
        << stencil::toString(op) << " " << stencil::toString(mode);
    }
}

TEST(RowTilesEmulated, GridCoversTheImage)
{
  const long long dims[3] = { 520, 300, 7 };
  // Float: 4 columns per thread; 64 threads make bands of 256 columns, 3 of them for 520.
  auto g = stencil::detail::tileGrid(dims, 4, 64, 0, 21 * 8);
  EXPECT_EQ(g.bands, 3);
  EXPECT_EQ(g.rowValues, 66 * 4);
  // 168 resident blocks over 21 band layers: 8 spans of ceil(300 / 8) = 38 rows.
  EXPECT_EQ(g.span, 38);
  EXPECT_EQ(g.spans, 8);
  EXPECT_EQ(g.blocks, 3LL * 8 * 7);
  // Few resident blocks: one span; many: spans of at least MinAutoTileRows rows.
  g = stencil::detail::tileGrid(dims, 4, 64, 0, 1);
  EXPECT_EQ(g.span, 300);
  EXPECT_EQ(g.spans, 1);
  g = stencil::detail::tileGrid(dims, 4, 64, 0, 100000);
  EXPECT_EQ(g.span, stencil::detail::MinAutoTileRows);
  EXPECT_EQ(
    g.spans, (300 + stencil::detail::MinAutoTileRows - 1) / stencil::detail::MinAutoTileRows);
  // A span beyond the rows is one span of all rows.
  g = stencil::detail::tileGrid(dims, 2, 32, 5000, 0);
  EXPECT_EQ(g.span, 300);
  EXPECT_EQ(g.bands, (520 + 63) / 64);
}
} // namespace
