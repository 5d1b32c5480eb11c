// Bad input gives a clear Status; empty meshes, cells without points and NaN give defined
// results; a CUDA request without a device falls back (and says so) or fails when strict.
#include "reference.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace meshloop;

namespace
{

TEST(Errors, InvalidMappings)
{
  Mapping m;
  m.toCount = 3;
  m.offsets = { 0, 2 };
  m.targets = { 0, 5 };
  Status s = validate(m);
  EXPECT_EQ(s.code(), ErrorCode::InvalidArgument);
  EXPECT_NE(s.message().find("outside"), std::string::npos) << s.message();
  m.targets = { 0 };
  EXPECT_EQ(validate(m).code(), ErrorCode::InvalidArgument);
  m.offsets = { 0, 2, 1 };
  m.targets = { 0, 1 };
  EXPECT_NE(validate(m).message().find("end"), std::string::npos);
  m.offsets = {};
  EXPECT_FALSE(validate(m));
  MeshLoop loop;
  EXPECT_EQ(loop.setMapping(m).code(), ErrorCode::InvalidArgument);
  EXPECT_EQ(loop.setMapping(generate::hexahedra(2, 2, 2), Reordering::None, 0).code(),
    ErrorCode::InvalidArgument);
}

TEST(Errors, BadCallArguments)
{
  MeshLoop loop;
  ASSERT_TRUE(loop.setMapping(generate::hexahedra(2, 2, 2)));
  std::vector<double> in(8), out(27);
  ExecutionOptions o;
  o.backend = Backend::CPU;
  EXPECT_EQ(
    loop.scatter(Reduction::Mean, in.data(), 0, out.data(), o).code(), ErrorCode::InvalidArgument);
  EXPECT_EQ(loop.scatter<double>(Reduction::Mean, nullptr, 1, out.data(), o).code(),
    ErrorCode::InvalidArgument);
  EXPECT_EQ(loop.scatter<double>(Reduction::Mean, in.data(), 1, nullptr, o).code(),
    ErrorCode::InvalidArgument);
  // Hexahedra are not edges.
  EXPECT_EQ(
    loop.edgeFlux(in.data(), in.data(), 1, out.data(), o).code(), ErrorCode::InvalidArgument);
}

TEST(Errors, EmptyMeshes)
{
  for (Strategy s :
    { Strategy::GlobalAtomics, Strategy::GlobalColouring, Strategy::HierarchicalColouring })
  {
    ExecutionOptions o;
    o.backend = Backend::CPU;
    o.strategy = s;
    MeshLoop none;
    ASSERT_TRUE(none.setMapping(Mapping(), Reordering::GPS));
    EXPECT_TRUE(none.scatter<double>(Reduction::Mean, nullptr, 2, nullptr, o));
    // Points but no cells: every point is unused and gets 0.
    Mapping pointsOnly;
    pointsOnly.toCount = 4;
    MeshLoop loop;
    ASSERT_TRUE(loop.setMapping(pointsOnly, Reordering::GPS));
    std::vector<float> out(8, 5.0f);
    ASSERT_TRUE(loop.scatter<float>(Reduction::Mean, nullptr, 2, out.data(), o));
    for (float v : out)
    {
      EXPECT_EQ(v, 0.0f);
    }
  }
}

TEST(Errors, CellsWithoutPointsContributeNothing)
{
  Mapping m;
  m.toCount = 3;
  m.offsets = { 0, 0, 2, 2, 3 }; // cells 0 and 2 have no points
  m.targets = { 0, 1, 1 };
  MeshLoop loop;
  ASSERT_TRUE(loop.setMapping(m));
  const std::vector<double> in = { 100, 2, 200, 4 };
  std::vector<double> out(3, -1);
  ExecutionOptions o;
  o.backend = Backend::CPU;
  ASSERT_TRUE(loop.scatter(Reduction::Mean, in.data(), 1, out.data(), o));
  EXPECT_DOUBLE_EQ(out[0], 2.0);
  EXPECT_DOUBLE_EQ(out[1], 3.0);
  EXPECT_DOUBLE_EQ(out[2], 0.0);
}

TEST(Errors, NaNReachesExactlyThePointsOfItsCell)
{
  const Mapping m = generate::hexahedra(3, 1, 1);
  for (Strategy s :
    { Strategy::GlobalAtomics, Strategy::GlobalColouring, Strategy::HierarchicalColouring })
  {
    for (Backend b : { Backend::CPU, Backend::CUDA })
    {
      if (b == Backend::CUDA && !cudaAvailable())
      {
        continue;
      }
      MeshLoop loop;
      ASSERT_TRUE(loop.setMapping(m, Reordering::GPS, 2));
      std::vector<double> in = { 1, std::nan(""), 3 };
      std::vector<double> out(static_cast<std::size_t>(m.toCount));
      ExecutionOptions o;
      o.backend = b;
      o.strictBackend = true;
      o.strategy = s;
      ASSERT_TRUE(loop.scatter(Reduction::Mean, in.data(), 1, out.data(), o));
      for (std::int64_t p = 0; p < m.toCount; ++p)
      {
        const int i = static_cast<int>(p % 4);
        const bool inMiddleCell = i == 1 || i == 2;
        EXPECT_EQ(std::isnan(out[p]), inMiddleCell) << "point " << p;
        if (!inMiddleCell)
        {
          EXPECT_DOUBLE_EQ(out[p], i == 0 ? 1.0 : 3.0);
        }
      }
    }
  }
}

TEST(Errors, CudaRequestWithoutDevice)
{
  std::string why;
  if (cudaAvailable(&why))
  {
    GTEST_SKIP() << "a CUDA device is present: the fallback cannot be exercised";
  }
  EXPECT_FALSE(why.empty());
  MeshLoop loop;
  const Mapping m = generate::tetrahedra(2, 2, 2);
  ASSERT_TRUE(loop.setMapping(m));
  std::vector<double> in(static_cast<std::size_t>(m.fromCount()), 1.0), out(27);
  ExecutionOptions o;
  o.backend = Backend::CUDA;
  ExecutionReport report;
  ASSERT_TRUE(loop.scatter(Reduction::Mean, in.data(), 1, out.data(), o, &report));
  EXPECT_EQ(report.backendUsed, Backend::CPU);
  EXPECT_NE(report.note.find("ran on the CPU"), std::string::npos) << report.note;
  EXPECT_DOUBLE_EQ(out[0], 1.0);
  o.strictBackend = true;
  EXPECT_EQ(loop.scatter(Reduction::Mean, in.data(), 1, out.data(), o).code(),
    ErrorCode::BackendUnavailable);
}

TEST(Errors, AbortStopsColouredLoops)
{
  MeshLoop loop;
  const Mapping m = generate::hexahedra(4, 4, 4);
  ASSERT_TRUE(loop.setMapping(m));
  std::vector<double> in(64, 1.0), out(125);
  ExecutionOptions o;
  o.backend = Backend::CPU;
  o.strategy = Strategy::GlobalColouring;
  o.abort = [] { return true; };
  EXPECT_EQ(loop.scatter(Reduction::Mean, in.data(), 1, out.data(), o).code(), ErrorCode::Aborted);
}

TEST(Errors, PartitionWithoutMetisSaysSo)
{
  if (metisAvailable())
  {
    GTEST_SKIP() << "METIS is built in";
  }
  MeshLoop loop;
  const Status s = loop.setMapping(generate::hexahedra(2, 2, 2), Reordering::Partition);
  EXPECT_EQ(s.code(), ErrorCode::BackendUnavailable);
  EXPECT_NE(s.message().find("METIS"), std::string::npos);
}

TEST(Execution, ProgressRisesToOneAndAbortStopsEveryStrategy)
{
  MeshLoop loop;
  ASSERT_TRUE(loop.setMapping(generate::hexahedra(12, 12, 12)));
  std::vector<double> in(static_cast<std::size_t>(loop.fromCount()), 1.0);
  std::vector<double> out(static_cast<std::size_t>(loop.toCount()));
  for (Strategy strategy :
    { Strategy::GlobalAtomics, Strategy::GlobalColouring, Strategy::HierarchicalColouring })
  {
    ExecutionOptions o;
    o.backend = Backend::CPU;
    o.strategy = strategy;
    o.threads = 2;
    std::vector<double> seen;
    o.progress = [&](double f) { seen.push_back(f); };
    ASSERT_TRUE(loop.scatter(Reduction::Mean, in.data(), 1, out.data(), o)) << toString(strategy);
    ASSERT_GE(seen.size(), 2u) << toString(strategy);
    EXPECT_DOUBLE_EQ(seen.back(), 1.0);
    for (std::size_t i = 1; i < seen.size(); ++i)
    {
      EXPECT_GE(seen[i], seen[i - 1]) << toString(strategy);
    }

    ExecutionOptions stop;
    stop.backend = Backend::CPU;
    stop.strategy = strategy;
    stop.threads = 1;
    int polls = 0;
    stop.abort = [&] { return ++polls > 1; };
    EXPECT_EQ(
      loop.scatter(Reduction::Mean, in.data(), 1, out.data(), stop).code(), ErrorCode::Aborted)
      << toString(strategy);
  }
}

} // namespace
