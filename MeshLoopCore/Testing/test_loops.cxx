// Every backend x strategy x layout x reordering x precision against the brute-force reference,
// on hexahedra, tetrahedra, a mixed mesh and the dual edges (Airfoil-like loop).
#include "reference.h"

#include <gtest/gtest.h>

#include <limits>
#include <tuple>

using namespace meshloop;

namespace
{

struct MeshCase
{
  const char* name;
  Mapping (*make)();
};

Mapping hexShuffled()
{
  return generate::hexahedra(7, 5, 4, true, 3);
}
Mapping tetShuffled()
{
  return generate::tetrahedra(4, 3, 3, true, 5);
}
Mapping mixedMesh()
{
  return reference::mixed();
}

const MeshCase meshes[] = { { "hex", hexShuffled },
  { "tet", tetShuffled },
  { "mixed", mixedMesh } };

using Param = std::tuple<Backend, Strategy, Layout, Reordering>;

class Loops : public ::testing::TestWithParam<Param>
{
protected:
  void SetUp() override
  {
    if (std::get<0>(GetParam()) == Backend::CUDA)
    {
      std::string why;
      if (!cudaAvailable(&why))
      {
        GTEST_SKIP() << "no CUDA device: " << why;
      }
    }
    if (std::get<3>(GetParam()) == Reordering::Partition && !metisAvailable())
    {
      GTEST_SKIP() << "built without METIS: partition reordering unavailable";
    }
  }

  ExecutionOptions options() const
  {
    ExecutionOptions o;
    o.backend = std::get<0>(GetParam());
    o.strictBackend = true; // a CUDA case must really run on the device
    o.strategy = std::get<1>(GetParam());
    o.layout = std::get<2>(GetParam());
    o.threads = 3;
    return o;
  }

  template<typename T>
  void checkScatter(bool average, int blockSize)
  {
    const ExecutionOptions o = options();
    const bool soa = o.layout == Layout::SoA;
    // Relative to the magnitude of the sums; float accumulates in float.
    const double tolerance = std::is_same<T, float>::value ? 2e-5 : 1e-12;
    for (const MeshCase& mesh : meshes)
    {
      const Mapping m = mesh.make();
      for (int components : { 1, 3, 7 })
      {
        MeshLoop loop;
        ASSERT_TRUE(loop.setMapping(m, std::get<3>(GetParam()), blockSize));
        const auto in = reference::randomValues<T>(
          static_cast<std::size_t>(m.fromCount() * components), 11u + components);
        std::vector<T> out(static_cast<std::size_t>(m.toCount * components), T(-99));
        ExecutionReport report;
        const Status status = loop.scatter(average ? Reduction::Mean : Reduction::Sum,
          in.data(),
          components,
          out.data(),
          o,
          &report);
        ASSERT_TRUE(status) << status.message();
        EXPECT_EQ(report.backendUsed, o.backend);
        const auto expected = reference::scatter(m, in, components, soa, average);
        for (std::size_t i = 0; i < expected.size(); ++i)
        {
          ASSERT_NEAR(out[i], expected[i], tolerance * 8)
            << mesh.name << " entry " << i << " components " << components;
        }
      }
    }
  }

  template<typename T>
  void checkEdges()
  {
    const ExecutionOptions o = options();
    const bool soa = o.layout == Layout::SoA;
    const double tolerance = std::is_same<T, float>::value ? 2e-5 : 1e-12;
    const Mapping m = generate::dualEdges(6, 5, 4, true, 9);
    for (int components : { 1, 4, 9 })
    {
      MeshLoop loop;
      ASSERT_TRUE(loop.setMapping(m, std::get<3>(GetParam()), 64));
      const auto q =
        reference::randomValues<T>(static_cast<std::size_t>(m.toCount * components), 5);
      const auto w = reference::randomValues<T>(static_cast<std::size_t>(m.fromCount()), 6);
      std::vector<T> res(q.size(), T(7));
      const Status status = loop.edgeFlux(q.data(), w.data(), components, res.data(), o);
      ASSERT_TRUE(status) << status.message();
      const auto expected = reference::edgeFlux(m, q, w, components, soa);
      for (std::size_t i = 0; i < expected.size(); ++i)
      {
        ASSERT_NEAR(res[i], expected[i], tolerance * 16) << "entry " << i;
      }
    }
  }
};

TEST_P(Loops, ScatterDouble)
{
  checkScatter<double>(false, 64);
}
TEST_P(Loops, ScatterFloat)
{
  checkScatter<float>(false, 32);
}
TEST_P(Loops, AverageDouble)
{
  checkScatter<double>(true, 128);
}
TEST_P(Loops, AverageFloat)
{
  checkScatter<float>(true, 16);
}
TEST_P(Loops, EdgeFluxDouble)
{
  checkEdges<double>();
}
TEST_P(Loops, EdgeFluxFloat)
{
  checkEdges<float>();
}

std::string name(const ::testing::TestParamInfo<Param>& info)
{
  return std::string(toString(std::get<0>(info.param))) + "_" + toString(std::get<1>(info.param)) +
    "_" + toString(std::get<2>(info.param)) + "_" + toString(std::get<3>(info.param));
}

INSTANTIATE_TEST_SUITE_P(All,
  Loops,
  ::testing::Combine(::testing::Values(Backend::CPU, Backend::CUDA),
    ::testing::Values(Strategy::GlobalAtomics,
      Strategy::GlobalColouring,
      Strategy::HierarchicalColouring),
    ::testing::Values(Layout::AoS, Layout::SoA),
    ::testing::Values(Reordering::None, Reordering::GPS, Reordering::Partition)),
  name);

} // namespace
