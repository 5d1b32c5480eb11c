/**
 * @file Internal.h
 * @brief Declarations shared by the CPU implementation and the CUDA backend (not installed).
 */
#ifndef stencil_Internal_h
#define stencil_Internal_h

#include "Kernels.h"
#include "TiledColumns.h"
#include "stencil/Stencil.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

namespace stencil
{
namespace detail
{
/// A neighbour table in one of the four layouts, ready for the kernels (host memory).
template<typename T>
struct PreparedTable
{
  int K = 0; ///< padded to 3, 4, 6 or 8
  int E = 0; ///< entries per cell or pattern: K (chasing) or K + K * K
  bool chasing = true;
  bool compressed = true;
  std::vector<std::int32_t> index;
  std::vector<std::int32_t> offsets;
  std::vector<T> weights; ///< empty: uniform
  T uniformWeight = 1;
  std::size_t patterns = 0;
  /// Halo lists of the tiled laplap (z-loop strategies); empty when not used.
  std::vector<std::int32_t> haloStart;
  std::vector<std::int32_t> haloCells;
  int maxHalo = 0;
  bool tiled() const { return !haloStart.empty(); }
  TileLists hostTiles() const
  {
    TileLists lists;
    lists.haloStart = haloStart.data();
    lists.haloCells = haloCells.data();
    lists.maxHalo = maxHalo;
    return lists;
  }
  std::size_t bytes() const
  {
    return index.size() * sizeof(std::int32_t) + offsets.size() * sizeof(std::int32_t) +
      weights.size() * sizeof(T);
  }
  TablePointers<T> hostPointers() const
  {
    TablePointers<T> p;
    p.index = index.data();
    p.offsets = offsets.empty() ? nullptr : offsets.data();
    p.weights = weights.empty() ? nullptr : weights.data();
    p.uniformWeight = uniformWeight;
    return p;
  }
};

template<typename T>
Status prepareTable(const ColumnMesh& mesh,
  bool zeroFlux,
  bool needSecondRing,
  const ExecutionOptions& options,
  PreparedTable<T>& table);

/// Calls f with a table object of the prepared layout and padded K.
template<typename T, int K, typename F>
Status withTableK(const PreparedTable<T>& t, const TablePointers<T>& p, F&& f)
{
  if (t.compressed)
  {
    if (t.chasing)
    {
      return f(CompressedChasing<T, K>{ p });
    }
    return f(CompressedNonChasing<T, K>{ p });
  }
  if (t.chasing)
  {
    return f(PlainChasing<T, K>{ p });
  }
  return f(PlainNonChasing<T, K>{ p });
}

template<typename T, typename F>
Status withTable(const PreparedTable<T>& t, const TablePointers<T>& p, F&& f)
{
  switch (t.K)
  {
    case 3:
      return withTableK<T, 3>(t, p, f);
    case 4:
      return withTableK<T, 4>(t, p, f);
    case 6:
      return withTableK<T, 6>(t, p, f);
    case 8:
      return withTableK<T, 8>(t, p, f);
    default:
      return Status(ErrorCode::Internal, "unsupported padded neighbour count");
  }
}

/**
 * Calls f(std::integral_constant<int, L>, std::bool_constant<Prefetch>) with the variant of the
 * tiled laplap: ExecutionOptions::tileLayers and tilePrefetch for K = 4 (the quad meshes the
 * benchmark compares; instantiating every variant for every K would multiply the CUDA build),
 * DefaultTileLayers without prefetch otherwise.
 */
template<typename T, int K, typename F>
decltype(auto) withTileVariant(const ExecutionOptions& options, F&& f)
{
  if constexpr (K == 4)
  {
    auto layers = [&](auto prefetch) -> decltype(auto)
    {
      switch (options.tileLayers)
      {
        case 1:
          return f(std::integral_constant<int, 1>{}, prefetch);
        case 2:
          return f(std::integral_constant<int, 2>{}, prefetch);
        case 4:
          return f(std::integral_constant<int, 4>{}, prefetch);
        default:
          return f(std::integral_constant<int, DefaultTileLayers<T>>{}, prefetch);
      }
    };
    return options.tilePrefetch ? layers(std::true_type{}) : layers(std::false_type{});
  }
  return f(std::integral_constant<int, DefaultTileLayers<T>>{}, std::false_type{});
}

/// "tiled laplap, L layers per step[, prefetch]", with a note when a requested variant was not
/// used.
template<typename T, int K>
std::string tiledKernelName(const ExecutionOptions& options, ExecutionReport& report)
{
  int layers = 0;
  bool prefetch = false;
  withTileVariant<T, K>(options,
    [&](auto l, auto p)
    {
      layers = decltype(l)::value;
      prefetch = decltype(p)::value;
      return 0;
    });
  if ((options.tileLayers > 0 && options.tileLayers != layers) || options.tilePrefetch != prefetch)
  {
    report.note += "tile variants (layers per step, prefetch) are offered for 4 neighbours per "
                   "cell only: used " +
      std::to_string(layers) + (prefetch ? " with prefetch. " : " without prefetch. ");
  }
  return "tiled laplap, " + std::to_string(layers) + (layers == 1 ? " layer" : " layers") +
    " per step" + (prefetch ? ", prefetch" : "");
}

// CUDA backend (src/cuda); CudaUnavailable.cxx answers BackendUnavailable when not compiled.
bool cudaAvailableImpl(std::string* why);
std::string cudaDeviceNameImpl();
template<typename T>
Status cudaImage(const ImageArgs<T>& args,
  std::size_t size,
  const ExecutionOptions& options,
  ExecutionReport& report);
template<typename T>
Status cudaColumns(const PreparedTable<T>& table,
  const ColumnArgs<T>& args,
  const ExecutionOptions& options,
  ExecutionReport& report);
Status cudaBandwidth(std::size_t bytes, int repeats, double& bytesPerSecond);

} // namespace detail
} // namespace stencil

#endif
