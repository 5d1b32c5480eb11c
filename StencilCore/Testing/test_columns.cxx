// Column meshes: a quad mesh emulating an image equals the image path; every access strategy and
// table variant equals a brute-force reference; triangles and hexagons give the analytic
// Laplacian of quadratics; z-curve ordering only renumbers.
#include "common.h"
#include "reference.h"

#include <tuple>

using stencil::AccessStrategy;
using stencil::Backend;
using stencil::BoundaryMode;
using stencil::HorizontalShape;
using stencil::Operator;

namespace
{
class ColumnTest : public ::testing::TestWithParam<Backend>
{
};

const AccessStrategy AllStrategies[] = { AccessStrategy::Naive,
  AccessStrategy::IdxVar,
  AccessStrategy::Shared,
  AccessStrategy::ZLoop,
  AccessStrategy::SlicedZLoop,
  AccessStrategy::StagedZLoop };
const Operator AllOperators[] = { Operator::Laplacian,
  Operator::Laplap,
  Operator::HorizontalLaplacian,
  Operator::HorizontalLaplap };

bool isHorizontal(Operator op)
{
  return op == Operator::HorizontalLaplacian || op == Operator::HorizontalLaplap;
}
bool isTwice(Operator op)
{
  return op == Operator::Laplap || op == Operator::HorizontalLaplap;
}

std::vector<double> referenceColumns(const stencil::ColumnMesh& mesh,
  const std::vector<double>& u,
  Operator op,
  BoundaryMode mode)
{
  const int K = mesh.maxNeighbours();
  std::vector<std::vector<int>> adjacency(mesh.cellsPerLayer());
  std::vector<std::vector<double>> weights(mesh.cellsPerLayer());
  for (std::size_t c = 0; c < mesh.cellsPerLayer(); ++c)
    for (int j = 0; j < K; ++j)
    {
      adjacency[c].push_back(mesh.neighbours()[c * K + j]);
      weights[c].push_back(mesh.hasWeights() ? mesh.weights()[c * K + j] : mesh.uniformWeight());
    }
  const bool vertical = !isHorizontal(op) && mesh.layers() > 1;
  const bool zeroFlux = mode == BoundaryMode::ZeroFlux;
  auto once = [&](const std::vector<double>& v)
  {
    return reference::columnLaplacian(
      v, adjacency, weights, mesh.layers(), mesh.layerSpacing(), vertical, zeroFlux);
  };
  return isTwice(op) ? once(once(u)) : once(u);
}

std::vector<double> field(std::size_t n)
{
  std::vector<double> u(n);
  for (std::size_t i = 0; i < n; ++i)
    u[i] = std::sin(0.11 * i) * std::cos(0.013 * i) + 0.001 * (i % 17);
  return u;
}

/// A quad column mesh is an image whose z axis is the layer axis: same values to round-off.
TEST_P(ColumnTest, QuadMeshEqualsImagePath)
{
  STENCIL_SKIP_WITHOUT_DEVICE(GetParam());
  const std::size_t nx = 13, ny = 9, layers = 7;
  stencil::GeneratedColumns gen;
  ASSERT_TRUE(stencil::generateColumns(
    { HorizontalShape::Quad, nx, ny, layers, 0.5, 0.8, stencil::Ordering::RowMajor }, gen)
                .ok());
  stencil::ImageGrid g;
  g.dims = { nx, ny, layers };
  g.spacing = { 0.5, 0.5, 0.8 };
  const auto u = field(g.size());
  for (Operator op : AllOperators)
    for (BoundaryMode mode : { BoundaryMode::Fill, BoundaryMode::ZeroFlux })
    {
      stencil::StencilOptions s;
      s.op = op;
      s.boundary = mode;
      std::vector<double> image(u.size());
      std::vector<double> columns(u.size());
      ASSERT_TRUE(stencil::apply(g, u.data(), image.data(), s, optionsFor(Backend::CPU)).ok());
      ASSERT_TRUE(
        stencil::apply(gen.mesh, u.data(), columns.data(), s, optionsFor(GetParam())).ok());
      std::vector<double> expected(image.begin(), image.end());
      EXPECT_TRUE(closeWithNaN(columns, expected, 1e-12 * std::max(1.0, maxAbs(expected))))
        << stencil::toString(op) << " " << stencil::toString(mode);
    }
}

/// Strategy x table variant x operator x boundary on a hexagonal mesh with a brute-force reference.
template<typename T>
void everyVariant(Backend backend, HorizontalShape shape, double relTol)
{
  stencil::GeneratedColumns gen;
  ASSERT_TRUE(
    stencil::generateColumns({ shape, 11, 10, 9, 1.0, 1.5, stencil::Ordering::ZCurve }, gen).ok());
  const auto ud = field(gen.mesh.size());
  const std::vector<T> u(ud.begin(), ud.end());
  std::vector<double> rounded(u.begin(), u.end());
  for (Operator op : AllOperators)
    for (BoundaryMode mode : { BoundaryMode::Fill, BoundaryMode::ZeroFlux })
    {
      const auto expected = referenceColumns(gen.mesh, rounded, op, mode);
      const double tol = relTol * std::max(1.0, maxAbs(expected));
      for (AccessStrategy strategy : AllStrategies)
        for (bool chasing : { true, false })
          for (bool compressed : { true, false })
          {
            auto options = optionsFor(backend);
            options.strategy = strategy;
            options.sliceSize = 4; // 9 layers: a partial last slice
            options.tuning.chasingTable = chasing;
            options.tuning.compressedTable = compressed;
            stencil::StencilOptions s;
            s.op = op;
            s.boundary = mode;
            std::vector<T> out(u.size());
            stencil::ExecutionReport report;
            const auto status = stencil::apply(gen.mesh, u.data(), out.data(), s, options, &report);
            ASSERT_TRUE(status.ok()) << status.message();
            ASSERT_EQ(report.backendUsed, backend);
            EXPECT_TRUE(closeWithNaN(out, expected, tol))
              << stencil::toString(op) << " " << stencil::toString(mode) << " "
              << stencil::toString(strategy) << (chasing ? " chasing" : " non-chasing")
              << (compressed ? " compressed" : " plain");
            if (compressed)
            {
              EXPECT_GT(report.tablePatterns, 0u);
              EXPECT_LE(report.tablePatterns, gen.mesh.cellsPerLayer());
            }
          }
    }
}

TEST_P(ColumnTest, EveryStrategyAndTableDoubleHexagon)
{
  STENCIL_SKIP_WITHOUT_DEVICE(GetParam());
  everyVariant<double>(GetParam(), HorizontalShape::Hexagon, 1e-12);
}

TEST_P(ColumnTest, EveryStrategyAndTableFloatTriangle)
{
  STENCIL_SKIP_WITHOUT_DEVICE(GetParam());
  // float: ~1e-7 relative per operation, a few hundred operations per laplap value.
  everyVariant<float>(GetParam(), HorizontalShape::Triangle, 2e-5);
}

TEST_P(ColumnTest, EveryStrategyAndTableDoubleQuad)
{
  STENCIL_SKIP_WITHOUT_DEVICE(GetParam());
  everyVariant<double>(GetParam(), HorizontalShape::Quad, 1e-12);
}

/**
 * Meshes of several tiles (the z-loop laplap works on tiles of 256 cells that exchange first
 * Laplacians through their halos): the z-loops with every table layout against the brute-force
 * reference, for z-curve, row-major and shuffled numberings (the shuffled one has halos larger
 * than the tile) and per-entry weights, with partial last tiles and slices.
 */
template<typename T>
void multiTileVariants(Backend backend,
  HorizontalShape shape,
  double relTol,
  std::vector<AccessStrategy> strategies = { AccessStrategy::ZLoop, AccessStrategy::SlicedZLoop },
  int layers = 7,
  bool lanesOnly = false,
  int columnsX = 37)
{
  for (int numbering = 0; numbering < 4; ++numbering)
  {
    stencil::GeneratedColumns gen;
    ASSERT_TRUE(stencil::generateColumns(
      { shape,
        static_cast<std::size_t>(columnsX),
        29,
        static_cast<std::size_t>(layers),
        1.0,
        1.5,
        numbering == 1 ? stencil::Ordering::RowMajor : stencil::Ordering::ZCurve },
      gen)
                  .ok());
    stencil::ColumnMesh mesh = gen.mesh;
    const std::size_t cells = mesh.cellsPerLayer();
    ASSERT_GT(cells, 3u * 256u);
    if (numbering >= 2)
    {
      // A fixed pseudo-random permutation (Fisher-Yates with an LCG).
      std::vector<std::int32_t> order(cells);
      for (std::size_t i = 0; i < cells; ++i)
        order[i] = static_cast<std::int32_t>(i);
      std::uint64_t state = 12345;
      for (std::size_t i = cells - 1; i > 0; --i)
      {
        state = state * 6364136223846793005ULL + 1442695040888963407ULL;
        std::swap(order[i], order[(state >> 33) % (i + 1)]);
      }
      stencil::ColumnMesh shuffled;
      ASSERT_TRUE(mesh.permuted(order, shuffled).ok());
      mesh = shuffled;
    }
    if (numbering == 3)
    {
      // Different weights per table entry.
      std::vector<double> weights(mesh.neighbours().size());
      for (std::size_t e = 0; e < weights.size(); ++e)
        weights[e] = 0.5 + 0.25 * ((e * 7) % 5);
      stencil::ColumnMesh weighted;
      ASSERT_TRUE(stencil::ColumnMesh::create({ cells,
                                                mesh.layers(),
                                                mesh.maxNeighbours(),
                                                mesh.neighbours(),
                                                weights,
                                                1.0,
                                                mesh.layerSpacing() },
        weighted)
                    .ok());
      mesh = weighted;
    }
    const auto ud = field(mesh.size());
    const std::vector<T> u(ud.begin(), ud.end());
    const std::vector<double> rounded(u.begin(), u.end());
    for (Operator op : AllOperators)
      for (BoundaryMode mode : { BoundaryMode::Fill, BoundaryMode::ZeroFlux })
      {
        const auto expected = referenceColumns(mesh, rounded, op, mode);
        const double tol = relTol * std::max(1.0, maxAbs(expected));
        for (AccessStrategy strategy : strategies)
          for (bool chasing : { true, false })
            for (bool compressed : { true, false })
              for (int variant = 0; variant < 14; ++variant)
              {
                // Steps of 1, 2 or 4 layers (0: default), with and without prefetch; variants
                // 8-11 are the staged laplap's async copies (0-7 run it without); 12 and 13 its
                // lanes over layers (whole columns and slices of 3).
                const bool lanes = variant >= 12;
                const bool async = variant >= 8 && !lanes;
                if ((async || lanes) && strategy != AccessStrategy::StagedZLoop)
                {
                  continue;
                }
                if ((lanesOnly && !lanes) || (lanes && op != Operator::HorizontalLaplap))
                {
                  continue; // the lanes apply to the horizontal laplap only
                }
                const int tileLayers = variant % 4 == 3 ? 4 : variant % 4;
                const bool prefetch = variant >= 4 && !async && !lanes;
                auto options = optionsFor(backend);
                options.strategy = strategy;
                options.sliceSize = 3; // 7 layers: slices 0-2, 3-5 and a partial 6
                options.tuning.chasingTable = chasing;
                options.tuning.compressedTable = compressed;
                // Steps of 1, 2 or 4 layers: partial last steps in slices of 3 and columns of 7.
                options.tuning.tileLayers = tileLayers;
                options.tuning.tilePrefetch = prefetch;
                // Staged: whole columns, or slices of 3 (a partial last one); the register
                // variants where the tiled laplap prefetches.
                options.tuning.stagedSlice = variant % 2 == 1 ? 3 : 0;
                options.tuning.stagedWideRegisters = prefetch;
                options.tuning.stagedAsyncCopies = async ? 1 : 0;
                options.tuning.stagedLayerLanes = lanes ? 1 : 0;
                const bool quads = mesh.maxNeighbours() == 4;
                const bool staged =
                  strategy == AccessStrategy::StagedZLoop && op == Operator::HorizontalLaplap;
                // Default layers per step: 4, for the staged laplap in double 2.
                const int defaultLayers = staged && sizeof(T) == 8 ? 2 : 4;
                const int usedLayers = quads && tileLayers > 0 ? tileLayers : defaultLayers;
                const std::string perStep = std::to_string(usedLayers) +
                  (usedLayers == 1 ? " layer" : " layers") + " per step";
                stencil::StencilOptions s;
                s.op = op;
                s.boundary = mode;
                std::vector<T> out(u.size());
                stencil::ExecutionReport report;
                const auto status = stencil::apply(mesh, u.data(), out.data(), s, options, &report);
                ASSERT_TRUE(status.ok()) << status.message();
                ASSERT_EQ(report.backendUsed, backend);
                // The lanes over layers fall back to the lanes over cells when their slots do
                // not fit the device's shared memory (the shuffled numberings' large rings on
                // the GPU); the z-curve and row-major tiles must fit.
                const bool lanesRan = staged && lanes &&
                  (backend == Backend::CPU || numbering < 2 ||
                    report.note.find("do not fit shared memory") == std::string::npos);
                // The ring groups (float, 4 layers per step, synchronous, narrow registers)
                // where the cells per layer are a multiple of 4.
                const bool groupsRan = staged && sizeof(T) == 4 && usedLayers == 4 && !async &&
                  !lanes && !(quads && prefetch) && cells % 4 == 0 &&
                  report.note.find("ring groups do not fit") == std::string::npos;
                const std::string tiled = lanesRan
                  ? "staged laplap, lanes over " + std::to_string(sizeof(T) == 4 ? 32 : 16) +
                    " layers"
                  : (staged ? "staged laplap, " : "tiled laplap, ") + perStep +
                    (staged && async ? ", async copies" : "") +
                    (quads && prefetch ? (staged ? ", wide registers" : ", prefetch") : "") +
                    (groupsRan ? ", ring groups" : "");
                EXPECT_EQ(report.columnKernel, isTwice(op) ? tiled : "per cell") << report.note;
                EXPECT_TRUE(closeWithNaN(out, expected, tol))
                  << "numbering " << numbering << " " << stencil::toString(op) << " "
                  << stencil::toString(mode) << " " << stencil::toString(strategy)
                  << (chasing ? " chasing" : " non-chasing")
                  << (compressed ? " compressed" : " plain") << " tile layers " << tileLayers
                  << (prefetch ? " prefetch" : "") << (async ? " async copies" : "")
                  << (lanes ? " layer lanes" : "");
              }
      }
  }
}

TEST_P(ColumnTest, MultiTileZLoopsDoubleHexagon)
{
  STENCIL_SKIP_WITHOUT_DEVICE(GetParam());
  multiTileVariants<double>(GetParam(), HorizontalShape::Hexagon, 1e-12);
}

TEST_P(ColumnTest, MultiTileZLoopsFloatTriangle)
{
  STENCIL_SKIP_WITHOUT_DEVICE(GetParam());
  multiTileVariants<float>(GetParam(), HorizontalShape::Triangle, 2e-5);
}

TEST_P(ColumnTest, MultiTileZLoopsDoubleQuad)
{
  STENCIL_SKIP_WITHOUT_DEVICE(GetParam());
  multiTileVariants<double>(GetParam(), HorizontalShape::Quad, 1e-12);
}

/// The staged z-loop on the same meshes: the staged laplap for the horizontal laplap (first and
/// second rings, large shuffled rings, weights, slices of 3 layers, steps of 1, 2, 4 layers,
/// both register caps), the z-loop for the other operators.
TEST_P(ColumnTest, MultiTileStagedDoubleHexagon)
{
  STENCIL_SKIP_WITHOUT_DEVICE(GetParam());
  multiTileVariants<double>(
    GetParam(), HorizontalShape::Hexagon, 1e-12, { AccessStrategy::StagedZLoop });
}

/// The staged laplap's lanes over layers on columns of 37 layers: two chunks in float (32 + 5
/// layers), three in double (16 + 16 + 5), and slices of 3 layers (one partial chunk each).
TEST_P(ColumnTest, MultiTileLayerLanesFloatQuad)
{
  STENCIL_SKIP_WITHOUT_DEVICE(GetParam());
  multiTileVariants<float>(
    GetParam(), HorizontalShape::Quad, 2e-5, { AccessStrategy::StagedZLoop }, 37, true);
}

TEST_P(ColumnTest, MultiTileLayerLanesDoubleTriangle)
{
  STENCIL_SKIP_WITHOUT_DEVICE(GetParam());
  multiTileVariants<double>(
    GetParam(), HorizontalShape::Triangle, 1e-12, { AccessStrategy::StagedZLoop }, 37, true);
}

TEST_P(ColumnTest, MultiTileStagedFloatTriangle)
{
  STENCIL_SKIP_WITHOUT_DEVICE(GetParam());
  multiTileVariants<float>(
    GetParam(), HorizontalShape::Triangle, 2e-5, { AccessStrategy::StagedZLoop });
}

/// The ring groups (GroupedColumns.h) need cells per layer that are a multiple of 4: 36 x 29
/// quads (1044 cells: two of the grouped kernel's tiles of 512 and a partial one of 20) and
/// twice as many triangles (four tiles and one of 40); columns of 7 layers (a partial last step)
/// and 37 (slices of 3, and whole columns of 9 full steps and a partial one).
TEST_P(ColumnTest, MultiTileStagedGroupsFloatQuad)
{
  STENCIL_SKIP_WITHOUT_DEVICE(GetParam());
  multiTileVariants<float>(
    GetParam(), HorizontalShape::Quad, 2e-5, { AccessStrategy::StagedZLoop }, 37, false, 36);
}

TEST_P(ColumnTest, MultiTileStagedGroupsFloatTriangle)
{
  STENCIL_SKIP_WITHOUT_DEVICE(GetParam());
  multiTileVariants<float>(
    GetParam(), HorizontalShape::Triangle, 2e-5, { AccessStrategy::StagedZLoop }, 7, false, 36);
}

TEST_P(ColumnTest, MultiTileStagedDoubleQuad)
{
  STENCIL_SKIP_WITHOUT_DEVICE(GetParam());
  multiTileVariants<double>(
    GetParam(), HorizontalShape::Quad, 1e-12, { AccessStrategy::StagedZLoop });
}

/// Triangles and hexagons: the weights 4 / (K d^2) make the Laplacian exact for quadratics.
TEST_P(ColumnTest, QuadraticsOnTrianglesAndHexagons)
{
  STENCIL_SKIP_WITHOUT_DEVICE(GetParam());
  for (HorizontalShape shape : { HorizontalShape::Triangle, HorizontalShape::Hexagon })
  {
    stencil::GeneratedColumns gen;
    ASSERT_TRUE(
      stencil::generateColumns({ shape, 12, 10, 6, 0.5, 0.25, stencil::Ordering::RowMajor }, gen)
        .ok());
    const std::size_t cells = gen.mesh.cellsPerLayer();
    std::vector<double> u(gen.mesh.size());
    for (std::size_t k = 0; k < gen.mesh.layers(); ++k)
      for (std::size_t c = 0; c < cells; ++c)
      {
        const double x = gen.centres[2 * c] - 2, y = gen.centres[2 * c + 1] - 1, z = k * 0.25;
        u[k * cells + c] = 2 * x * x + 0.5 * y * y - x * y + 3 * z * z + x - 4 * y + z;
      }
    stencil::StencilOptions s;
    std::vector<double> out(u.size());
    const std::pair<Operator, double> cases[] = { { Operator::Laplacian, 11.0 },
      { Operator::HorizontalLaplacian, 5.0 },
      { Operator::Laplap, 0.0 },
      { Operator::HorizontalLaplap, 0.0 } };
    for (const auto& c : cases)
    {
      s.op = c.first;
      ASSERT_TRUE(stencil::apply(gen.mesh, u.data(), out.data(), s, optionsFor(GetParam())).ok());
      std::size_t finite = 0;
      for (double v : out)
        if (!std::isnan(v))
        {
          ++finite;
          // |u| <= 30, weights up to 4 / (3 * 0.25) and 16: 1e-10 is ~1e4 ulps of the terms.
          ASSERT_NEAR(v, c.second, 1e-9)
            << stencil::toString(shape) << " " << stencil::toString(c.first);
        }
      EXPECT_GT(finite, out.size() / 10)
        << stencil::toString(shape) << " " << stencil::toString(c.first);
    }
  }
}

/// A z-curve numbering is a renumbering: results permute with the cells.
TEST(ColumnOrdering, ZCurveOnlyRenumbers)
{
  stencil::GeneratedColumns rows, curve;
  ASSERT_TRUE(stencil::generateColumns(
    { HorizontalShape::Hexagon, 9, 7, 5, 1, 1, stencil::Ordering::RowMajor }, rows)
                .ok());
  ASSERT_TRUE(stencil::generateColumns(
    { HorizontalShape::Hexagon, 9, 7, 5, 1, 1, stencil::Ordering::ZCurve }, curve)
                .ok());
  const std::size_t cells = rows.mesh.cellsPerLayer();
  // Map curve cells to row-major cells through their centres.
  std::vector<std::size_t> toRow(cells);
  for (std::size_t i = 0; i < cells; ++i)
  {
    bool found = false;
    for (std::size_t r = 0; r < cells && !found; ++r)
      if (std::fabs(curve.centres[2 * i] - rows.centres[2 * r]) < 1e-12 &&
        std::fabs(curve.centres[2 * i + 1] - rows.centres[2 * r + 1]) < 1e-12)
      {
        toRow[i] = r;
        found = true;
      }
    ASSERT_TRUE(found);
  }
  const std::vector<double> uRows = field(rows.mesh.size());
  std::vector<double> uCurve(uRows.size());
  for (std::size_t k = 0; k < 5; ++k)
    for (std::size_t i = 0; i < cells; ++i)
      uCurve[k * cells + i] = uRows[k * cells + toRow[i]];
  stencil::StencilOptions s;
  s.op = Operator::Laplap;
  s.boundary = BoundaryMode::ZeroFlux;
  std::vector<double> outRows(uRows.size()), outCurve(uRows.size());
  ASSERT_TRUE(
    stencil::apply(rows.mesh, uRows.data(), outRows.data(), s, optionsFor(Backend::CPU)).ok());
  ASSERT_TRUE(
    stencil::apply(curve.mesh, uCurve.data(), outCurve.data(), s, optionsFor(Backend::CPU)).ok());
  for (std::size_t k = 0; k < 5; ++k)
    for (std::size_t i = 0; i < cells; ++i)
      EXPECT_NEAR(outCurve[k * cells + i], outRows[k * cells + toRow[i]], 1e-12);
  std::size_t moved = 0;
  for (std::size_t i = 0; i < cells; ++i)
    moved += toRow[i] != i;
  EXPECT_GT(moved, cells / 2); // the z-curve numbering really differs from row-major
}

TEST(ColumnDetection, RecognisesGeneratedColumnsAndTheirNeighbours)
{
  stencil::GeneratedColumns gen;
  ASSERT_TRUE(stencil::generateColumns(
    { HorizontalShape::Triangle, 6, 5, 4, 1, 0.5, stencil::Ordering::ZCurve }, gen)
                .ok());
  const std::size_t cells = gen.mesh.cellsPerLayer();
  std::vector<double> xyz;
  for (std::size_t k = 0; k < 4; ++k)
    for (std::size_t c = 0; c < cells; ++c)
    {
      xyz.push_back(gen.centres[2 * c]);
      xyz.push_back(gen.centres[2 * c + 1]);
      xyz.push_back(0.25 + 0.5 * k);
    }
  stencil::ColumnLayout layout;
  ASSERT_TRUE(stencil::detectColumns(xyz, layout).ok());
  EXPECT_EQ(layout.cellsPerLayer, cells);
  EXPECT_EQ(layout.layers, 4u);
  EXPECT_NEAR(layout.layerSpacing, 0.5, 1e-12);
  EXPECT_TRUE(layout.uniformSpacing);
  // Neighbours from shared polygon corners (two shared corners = a shared side).
  std::vector<std::int64_t> offsets(gen.polygonOffsets.begin(), gen.polygonOffsets.end());
  std::vector<std::int64_t> ids(gen.polygonPoints.begin(), gen.polygonPoints.end());
  std::vector<std::int32_t> table;
  int K = 0;
  ASSERT_TRUE(stencil::neighboursFromConnectivity(cells, offsets, ids, 2, table, K).ok());
  ASSERT_EQ(K, 3);
  for (std::size_t c = 0; c < cells; ++c)
  {
    std::vector<int> a(table.begin() + c * 3, table.begin() + c * 3 + 3);
    std::vector<int> b(
      gen.mesh.neighbours().begin() + c * 3, gen.mesh.neighbours().begin() + c * 3 + 3);
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    EXPECT_EQ(a, b) << "cell " << c;
  }
}

INSTANTIATE_TEST_SUITE_P(Backends,
  ColumnTest,
  ::testing::Values(Backend::CPU, Backend::CUDA),
  backendName);
} // namespace
