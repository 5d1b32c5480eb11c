// Bad input gives a clear error (code + message), never a crash; CUDA requests fall back or fail
// (strict) with a reason.
#include "common.h"

#include <limits>

using stencil::Backend;
using stencil::ErrorCode;
using stencil::Operator;

namespace
{
TEST(StencilErrors, NaNInputIsRejectedWithItsPosition)
{
  stencil::ImageGrid g;
  g.dims = { 8, 8, 1 };
  std::vector<double> u(64, 1.0), out(64);
  u[37] = std::numeric_limits<double>::quiet_NaN();
  stencil::StencilOptions s;
  const auto status = stencil::apply(g, u.data(), out.data(), s, optionsFor(Backend::CPU));
  EXPECT_EQ(status.code(), ErrorCode::NonFinite);
  EXPECT_NE(status.message().find("37"), std::string::npos) << status.message();

  stencil::GeneratedColumns gen;
  ASSERT_TRUE(stencil::generateColumns(
    { stencil::HorizontalShape::Quad, 4, 4, 3, 1, 1, stencil::Ordering::RowMajor }, gen)
                .ok());
  std::vector<float> v(gen.mesh.size(), 0.f), w(gen.mesh.size());
  v[5] = std::numeric_limits<float>::infinity();
  EXPECT_EQ(stencil::apply(gen.mesh, v.data(), w.data(), s).code(), ErrorCode::NonFinite);
  // Propagation on request: the NaN spreads to its stencil neighbours only.
  s.rejectNonFinite = false;
  s.boundary = stencil::BoundaryMode::ZeroFlux;
  ASSERT_TRUE(stencil::apply(g, u.data(), out.data(), s, optionsFor(Backend::CPU)).ok());
  EXPECT_TRUE(std::isnan(out[37]) && std::isnan(out[36]) && std::isnan(out[45]));
  EXPECT_FALSE(std::isnan(out[0]));
}

TEST(StencilErrors, TooSmallGrids)
{
  stencil::StencilOptions s;
  std::vector<double> u(100, 0.0), out(100);
  stencil::ImageGrid g;
  g.dims = { 4, 10, 1 };
  s.op = Operator::Laplap;
  auto status = stencil::apply(g, u.data(), out.data(), s);
  EXPECT_EQ(status.code(), ErrorCode::TooSmall);
  EXPECT_NE(status.message().find("at least 5"), std::string::npos) << status.message();
  s.op = Operator::Laplacian;
  EXPECT_TRUE(stencil::apply(g, u.data(), out.data(), s).ok());
  g.dims = { 2, 10, 1 };
  EXPECT_EQ(stencil::apply(g, u.data(), out.data(), s).code(), ErrorCode::TooSmall);
  g.dims = { 1, 1, 1 };
  EXPECT_EQ(stencil::apply(g, u.data(), out.data(), s).code(), ErrorCode::TooSmall);
  g.dims = { 0, 1, 1 };
  EXPECT_EQ(stencil::apply(g, u.data(), out.data(), s).code(), ErrorCode::InvalidArgument);

  stencil::GeneratedColumns gen;
  ASSERT_TRUE(stencil::generateColumns(
    { stencil::HorizontalShape::Hexagon, 4, 4, 4, 1, 1, stencil::Ordering::RowMajor }, gen)
                .ok());
  s.op = Operator::Laplap; // vertical laplap needs 5 layers
  status = stencil::apply(gen.mesh, u.data(), out.data(), s);
  EXPECT_EQ(status.code(), ErrorCode::TooSmall);
  EXPECT_NE(status.message().find("4 layers"), std::string::npos) << status.message();
  s.op = Operator::HorizontalLaplap;
  EXPECT_TRUE(stencil::apply(gen.mesh, u.data(), out.data(), s).ok());
  EXPECT_EQ(stencil::generateColumns(
              { stencil::HorizontalShape::Quad, 1, 4, 4, 1, 1, stencil::Ordering::RowMajor }, gen)
              .code(),
    ErrorCode::TooSmall);
}

TEST(StencilErrors, NonColumnarCellsAreNamed)
{
  // Two layers of a 2 x 2 grid of cell centres, the second layer shifted sideways.
  std::vector<double> xyz = {
    0, 0, 0, 1, 0, 0, 0, 1, 0, 1, 1, 0, 0, 0, 1, 1, 0, 1, 0.3, 1, 1, 1, 1, 1
  };
  stencil::ColumnLayout layout;
  auto status = stencil::detectColumns(xyz, layout);
  EXPECT_EQ(status.code(), ErrorCode::NotColumnar);
  EXPECT_NE(status.message().find("cell 6"), std::string::npos) << status.message();
  // Not a multiple of the layer size.
  xyz.resize(15);
  EXPECT_EQ(stencil::detectColumns(xyz, layout).code(), ErrorCode::NotColumnar);
  // Scattered cells at different heights with nothing above cell 0.
  std::vector<double> scattered = { 0, 0, 0, 1, 0, 0.5, 2, 1, 0.7 };
  EXPECT_EQ(stencil::detectColumns(scattered, layout).code(), ErrorCode::NotColumnar);
  // A flat mesh is one layer.
  std::vector<double> flat = { 0, 0, 0, 1, 0, 0, 2, 1, 0 };
  ASSERT_TRUE(stencil::detectColumns(flat, layout).ok());
  EXPECT_EQ(layout.layers, 1u);
}

TEST(StencilErrors, BadMeshesAndArguments)
{
  stencil::ColumnMesh mesh;
  EXPECT_EQ(stencil::ColumnMesh::create({ 3, 2, 2, { 1, 2, 0, 7, 0, 1 }, {}, 1, 1 }, mesh).code(),
    ErrorCode::InvalidArgument);
  EXPECT_EQ(stencil::ColumnMesh::create({ 3, 2, 2, { 1, 2, 0 }, {}, 1, 1 }, mesh).code(),
    ErrorCode::InvalidArgument);
  EXPECT_EQ(
    stencil::ColumnMesh::create({ 3, 2, 9, std::vector<std::int32_t>(27, -1), {}, 1, 1 }, mesh)
      .code(),
    ErrorCode::InvalidArgument);
  EXPECT_EQ(stencil::ColumnMesh::create({ 3, 2, 2, { 1, 2, 0, 2, 0, 1 }, {}, 1, 0 }, mesh).code(),
    ErrorCode::InvalidArgument);
  ASSERT_TRUE(stencil::ColumnMesh::create({ 3, 2, 2, { 1, 2, 0, 2, 0, 1 }, {}, 1, 1 }, mesh).ok());
  std::vector<double> u(6, 1), out(6);
  stencil::StencilOptions s;
  EXPECT_EQ(stencil::apply(mesh, u.data(), u.data(), s).code(), ErrorCode::InvalidArgument);
  EXPECT_EQ(
    stencil::apply<double>(mesh, nullptr, out.data(), s).code(), ErrorCode::InvalidArgument);
  stencil::ExecutionOptions o;
  o.sliceSize = 0;
  o.strategy = stencil::AccessStrategy::SlicedZLoop;
  s.op = Operator::HorizontalLaplacian;
  EXPECT_EQ(stencil::apply(mesh, u.data(), out.data(), s, o).code(), ErrorCode::InvalidArgument);
  o.sliceSize = 8;
  for (int layers : { -1, 3, 8 })
  {
    o.tuning.tileLayers = layers;
    const auto st = stencil::apply(mesh, u.data(), out.data(), s, o);
    EXPECT_EQ(st.code(), ErrorCode::InvalidArgument);
    EXPECT_NE(st.message().find("tile layers"), std::string::npos) << st.message();
  }
  o.tuning.tileLayers = 0;
  o.strategy = stencil::AccessStrategy::StagedZLoop;
  o.tuning.stagedSlice = -1;
  const auto staged = stencil::apply(mesh, u.data(), out.data(), s, o);
  EXPECT_EQ(staged.code(), ErrorCode::InvalidArgument);
  EXPECT_NE(staged.message().find("staged"), std::string::npos) << staged.message();
  o.tuning.stagedSlice = 0;
  for (int value : { -2, 2 })
  {
    stencil::ExecutionOptions async = o;
    async.tuning.stagedAsyncCopies = value;
    const auto copies = stencil::apply(mesh, u.data(), out.data(), s, async);
    EXPECT_EQ(copies.code(), ErrorCode::InvalidArgument);
    EXPECT_NE(copies.message().find("async copies"), std::string::npos) << copies.message();
    stencil::ExecutionOptions lanes = o;
    lanes.tuning.stagedLayerLanes = value;
    const auto layerLanes = stencil::apply(mesh, u.data(), out.data(), s, lanes);
    EXPECT_EQ(layerLanes.code(), ErrorCode::InvalidArgument);
    EXPECT_NE(layerLanes.message().find("layer lanes"), std::string::npos) << layerLanes.message();
    stencil::ExecutionOptions groups = o;
    groups.tuning.stagedRingGroups = value;
    const auto ringGroups = stencil::apply(mesh, u.data(), out.data(), s, groups);
    EXPECT_EQ(ringGroups.code(), ErrorCode::InvalidArgument);
    EXPECT_NE(ringGroups.message().find("ring groups"), std::string::npos) << ringGroups.message();
  }
  stencil::ColumnMesh empty;
  EXPECT_EQ(stencil::apply(empty, u.data(), out.data(), s).code(), ErrorCode::InvalidArgument);
  double x = 1;
  EXPECT_EQ(stencil::hyperdiffuse(mesh, &x, { 1, 1.5, true }).code(), ErrorCode::InvalidArgument);
}

TEST(StencilErrors, CudaWithoutDeviceFallsBackOrFailsWhenStrict)
{
  std::string why;
  if (stencil::cudaAvailable(&why))
  {
    GTEST_SKIP() << "a CUDA device is present: the fall-back path cannot be exercised here";
  }
  stencil::ImageGrid g;
  g.dims = { 8, 8, 1 };
  std::vector<double> u(64), out(64);
  for (std::size_t i = 0; i < 64; ++i)
    u[i] = double((i % 8) * (i % 8)); // x^2: Laplacian 2 inside
  stencil::StencilOptions s;
  stencil::ExecutionOptions o;
  o.backend = Backend::CUDA;
  stencil::ExecutionReport report;
  ASSERT_TRUE(stencil::apply(g, u.data(), out.data(), s, o, &report).ok());
  EXPECT_EQ(report.backendUsed, Backend::CPU);
  EXPECT_NE(report.note.find("ran on the CPU"), std::string::npos) << report.note;
  EXPECT_DOUBLE_EQ(out[9], 2.0);
  o.strictBackend = true;
  EXPECT_EQ(stencil::apply(g, u.data(), out.data(), s, o).code(), ErrorCode::BackendUnavailable);
  o.strictBackend = false;
  o.backend = Backend::Auto;
  o.autoGpuThreshold = 0;
  ASSERT_TRUE(stencil::apply(g, u.data(), out.data(), s, o, &report).ok());
  EXPECT_EQ(report.backendUsed, Backend::CPU);
  EXPECT_TRUE(report.note.empty()) << "Auto falls back silently: " << report.note;
}

TEST(StencilErrors, AbortStopsTheCpuLoop)
{
  stencil::ImageGrid g;
  g.dims = { 64, 64, 8 };
  std::vector<float> u(g.size(), 1.f), out(g.size());
  stencil::StencilOptions s;
  stencil::ExecutionOptions o;
  o.backend = Backend::CPU;
  o.abort = []() { return true; };
  EXPECT_EQ(stencil::apply(g, u.data(), out.data(), s, o).code(), ErrorCode::Aborted);
}
} // namespace

namespace
{
/// The caller's threading hook runs every CPU loop (the VTK filter passes vtkSMPTools here).
TEST(StencilExecution, CallerThreadingHookIsUsed)
{
  stencil::GeneratedColumns gen;
  ASSERT_TRUE(stencil::generateColumns(
    { stencil::HorizontalShape::Hexagon, 9, 8, 6, 1, 1, stencil::Ordering::RowMajor }, gen)
                .ok());
  std::vector<double> u(gen.mesh.size());
  for (std::size_t i = 0; i < u.size(); ++i)
    u[i] = std::cos(0.2 * i);
  stencil::StencilOptions s;
  s.op = Operator::Laplap;
  s.boundary = stencil::BoundaryMode::ZeroFlux;
  std::vector<double> expected(u.size()), actual(u.size());
  ASSERT_TRUE(
    stencil::apply(gen.mesh, u.data(), expected.data(), s, optionsFor(Backend::CPU)).ok());
  std::size_t calls = 0, covered = 0, handed = 0;
  auto options = optionsFor(Backend::CPU);
  options.parallelFor = [&](
                          std::size_t n, const std::function<void(std::size_t, std::size_t)>& body)
  {
    handed += n;
    for (std::size_t begin = 0; begin < n; begin += 7)
    {
      ++calls;
      covered += std::min(n, begin + 7) - begin;
      body(begin, std::min(n, begin + 7));
    }
  };
  ASSERT_TRUE(stencil::apply(gen.mesh, u.data(), actual.data(), s, options).ok());
  EXPECT_GT(calls, 1u);
  EXPECT_EQ(covered, handed); // every range the hook was given ran
  EXPECT_EQ(actual, expected);
  options.abort = []() { return true; };
  EXPECT_EQ(
    stencil::apply(gen.mesh, u.data(), actual.data(), s, options).code(), ErrorCode::Aborted);
}
} // namespace
