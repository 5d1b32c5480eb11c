// Session 10: times StencilCore's grouped staged laplap kernel (src/GroupedColumns.h through
// src/cuda/ColumnKernels.cuh) on the benchmark's mesh (512 x 512 x 64 z-curve quads, float,
// chasing/plain table) with the lists of StencilCore's own prepareTable, so that variants of the
// header compile in seconds instead of rebuilding the library (12 minutes on the development
// machine). Each variant is a copy of StencilCore/src with one header changed; the harness is
// compiled once per copy:
//   nvcc -O3 -arch=sm_90 -std=c++17 --expt-relaxed-constexpr -DSTENCIL_HAVE_CUDA=1
//     -DVARIANT_HEADER='"<copy>/src/cuda/ColumnKernels.cuh"' -IStencilCore/include
//     scripts/gpu/stencil-session10-variants.cu
//     build-stencil8-gpu/libStencilCore.a -o <binary>
// With "double" as second argument it times the double default instead (the async staged laplap,
// 2 layers per step). It checks every value against StencilCore's CPU backend (the same staged laplap, itself tested
// against the brute-force reference) and prints the median of 6 repeats of the median of 20
// launches (CUDA events), as stencil-bench does.
#ifndef VARIANT_HEADER
#define VARIANT_HEADER "../../StencilCore/src/cuda/ColumnKernels.cuh"
#endif
#include VARIANT_HEADER

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <type_traits>
#include <vector>

using namespace stencil;
using namespace stencil::detail;

#define CHECK(x)                                                                                   \
  do                                                                                               \
  {                                                                                                \
    cudaError_t e_ = (x);                                                                          \
    if (e_ != cudaSuccess)                                                                         \
    {                                                                                              \
      std::printf("CUDA error %s at line %d: %s\n", #x, __LINE__, cudaGetErrorString(e_));         \
      return 1;                                                                                    \
    }                                                                                              \
  } while (0)

template<typename V>
static V* upload(const std::vector<V>& v)
{
  V* p = nullptr;
  cudaMalloc(&p, std::max<std::size_t>(1, v.size()) * sizeof(V));
  cudaMemcpy(p, v.data(), v.size() * sizeof(V), cudaMemcpyHostToDevice);
  return p;
}

/// Times the float grouped staged laplap (the float default) or the double async staged laplap
/// (the double default, 2 layers per step) of the header copy this binary was built from.
template<typename T>
int run(const char* name)
{
  GeneratedColumns gen;
  if (!generateColumns(HorizontalShape::Quad, 512, 512, 64, 1.0, 1.0, Ordering::ZCurve, gen))
  {
    std::printf("mesh failed\n");
    return 1;
  }
  const ColumnMesh& mesh = gen.mesh;
  ExecutionOptions options;
  options.strategy = AccessStrategy::StagedZLoop;
  options.chasingTable = true;
  options.compressedTable = false;
  PreparedTable<T> table;
  if (!prepareTable<T>(mesh, false, true, options, table) || table.stagedSlots.empty())
  {
    std::printf("no staged lists\n");
    return 1;
  }
  const std::size_t cells = mesh.cellsPerLayer();
  const std::size_t values = cells * mesh.layers();
  std::vector<T> u(values);
  std::uint32_t seed = 7;
  for (auto& x : u)
  {
    seed = seed * 1664525u + 1013904223u;
    x = static_cast<T>((seed >> 8) & 0xffff) / T(65536) * T(2) - T(1);
  }
  // Reference: StencilCore's CPU backend, the horizontal laplap.
  std::vector<T> expected(values);
  StencilOptions s;
  s.op = Operator::HorizontalLaplap;
  s.fillValue = NAN;
  ExecutionOptions cpu = options;
  cpu.backend = Backend::CPU;
  if (!applyColumns(mesh, u.data(), expected.data(), s, cpu))
  {
    std::printf("CPU reference failed\n");
    return 1;
  }
  T* du = upload(u);
  T* dout = nullptr;
  CHECK(cudaMalloc(&dout, values * sizeof(T)));
  TileLists lists;
  lists.haloStart = upload(table.haloStart);
  lists.haloCells = upload(table.haloCells);
  lists.maxHalo = table.maxHalo;
  lists.outerStart = upload(table.outerStart);
  lists.outerCells = upload(table.outerCells);
  lists.maxOuter = table.maxOuter;
  lists.stagedSlots = upload(table.stagedSlots);
  lists.groupRingStart = upload(table.groupRingStart);
  lists.groupRingCells = upload(table.groupRingCells);
  lists.maxGroupRing = table.maxGroupRing;
  lists.groupStart = upload(table.groupStart);
  lists.groupIds = upload(table.groupIds);
  lists.maxGroups = table.maxGroups;
  lists.groupSlots = upload(table.groupSlots);
  TablePointers<T> pointers;
  pointers.index = upload(table.index);
  pointers.uniformWeight = table.uniformWeight;
  const PlainChasing<T, 4> view{ pointers };
  ColumnArgs<T> a;
  a.u = du;
  a.out = dout;
  a.cells = static_cast<long long>(cells);
  a.layers = static_cast<int>(mesh.layers());
  a.laplap = true;
  a.fill = NAN;
  auto launch = [&]()
  {
    if constexpr (std::is_same<T, float>::value)
    {
      const GroupLayout<float, 4> layout{ table.maxGroupRing, table.maxGroups, false };
      const unsigned tiles = static_cast<unsigned>((cells + GroupTileCells - 1) / GroupTileCells);
      stagedGroupLaplapKernel<PlainChasing<float, 4>, false>
        <<<dim3(tiles, 1), GroupTileCells, layout.bytes()>>>(a, view, lists, a.layers);
    }
    else
    {
      const StagedLayout<double, 4, 2> layout{ table.maxHalo, table.maxOuter, false, 2 };
      const unsigned tiles = static_cast<unsigned>((cells + TileCells - 1) / TileCells);
      stagedAsyncLaplapKernel<double, PlainChasing<double, 4>, 2>
        <<<dim3(tiles, 1), TileCells, layout.bytes()>>>(a, view, lists, a.layers);
    }
  };
  CHECK(cudaMemset(dout, 0xff, values * sizeof(T)));
  launch();
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  std::vector<T> got(values);
  CHECK(cudaMemcpy(got.data(), dout, values * sizeof(T), cudaMemcpyDeviceToHost));
  std::size_t wrong = 0;
  const T tolerance = std::is_same<T, float>::value ? T(1e-5) : T(1e-12);
  for (std::size_t i = 0; i < values; ++i)
  {
    const bool nanE = std::isnan(expected[i]);
    if (nanE != std::isnan(got[i]) ||
      (!nanE && std::fabs(got[i] - expected[i]) > tolerance * (1 + std::fabs(expected[i]))))
    {
      ++wrong;
    }
  }
  cudaEvent_t e0, e1;
  CHECK(cudaEventCreate(&e0));
  CHECK(cudaEventCreate(&e1));
  std::vector<double> medians;
  for (int r = 0; r < 6; ++r)
  {
    std::vector<double> times;
    for (int i = 0; i < 20; ++i)
    {
      CHECK(cudaEventRecord(e0));
      launch();
      CHECK(cudaEventRecord(e1));
      CHECK(cudaEventSynchronize(e1));
      float ms = 0;
      CHECK(cudaEventElapsedTime(&ms, e0, e1));
      times.push_back(ms * 1000.0);
    }
    std::sort(times.begin(), times.end());
    medians.push_back(times[times.size() / 2]);
  }
  std::sort(medians.begin(), medians.end());
  std::printf("| %s | %.1f | %.1f-%.1f | %zu wrong of %zu |\n", name, medians[medians.size() / 2],
    medians.front(), medians.back(), wrong, values);
  return wrong == 0 ? 0 : 2;
}

int main(int argc, char** argv)
{
  const char* name = argc > 1 ? argv[1] : "variant";
  const bool precisionDouble = argc > 2 && std::string(argv[2]) == "double";
  return precisionDouble ? run<double>(name) : run<float>(name);
}
