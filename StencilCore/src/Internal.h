/**
 * @file Internal.h
 * @brief Declarations shared by the CPU implementation and the CUDA backend (not installed).
 */
#ifndef stencil_Internal_h
#define stencil_Internal_h

#include "GroupedColumns.h"
#include "Kernels.h"
#include "LaneColumns.h"
#include "StagedColumns.h"
#include "TiledColumns.h"
#include "stencil/Stencil.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

namespace stencil
{
namespace detail
{
/// Cell lists per tile in host memory, built one tile at a time: tile b's are
/// cells[start[b] .. start[b + 1]); max: the longest list (TileLists).
struct HostCellLists
{
  std::vector<std::int32_t> start;
  std::vector<std::int32_t> cells;
  int max = 0;
  /// Built, with no tile yet.
  void begin() { *this = HostCellLists{ { 0 }, {}, 0 }; }
  /// Appends the next tile's list.
  void append(const std::vector<std::int32_t>& list)
  {
    cells.insert(cells.end(), list.begin(), list.end());
    start.push_back(static_cast<std::int32_t>(cells.size()));
    max = std::max(max, static_cast<int>(list.size()));
  }
  /// Not built.
  void clear() { *this = HostCellLists{}; }
  /// The lists for the CPU kernels (null pointers when not built).
  CellLists view() const
  {
    return { start.empty() ? nullptr : start.data(), cells.empty() ? nullptr : cells.data(), max };
  }
};

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
  HostCellLists halo;
  /// Second rings of the staged laplap (StagedZLoop); empty when not used.
  HostCellLists outer;
  /// The staged laplap's neighbour slots per tile (TileLists::stagedSlots).
  std::vector<std::int32_t> stagedSlots;
  /// The grouped staged laplap's rings, groups and slots (TileLists::groupRing and after);
  /// empty when not built (double, cells per layer not a multiple of 4, stagedRingGroups 0).
  HostCellLists groupRing;
  HostCellLists groups;
  std::vector<std::int32_t> groupSlots;
  bool tiled() const { return !halo.start.empty(); }
  bool staged() const { return !outer.start.empty(); }

  TileLists hostTiles() const
  {
    TileLists lists;
    lists.halo = halo.view();
    lists.outer = outer.view();
    lists.stagedSlots = stagedSlots.empty() ? nullptr : stagedSlots.data();
    lists.groupRing = groupRing.view();
    lists.groups = groups.view();
    lists.groupSlots = groupSlots.empty() ? nullptr : groupSlots.data();
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
 * Calls f(std::integral_constant<int, L>, std::bool_constant<Flag>) with L = `layers` (1, 2 or
 * 4; otherwise DefaultLayers) and Flag = `flag` for K = 4 (the quad meshes the benchmark
 * compares; instantiating every variant for every K would multiply the CUDA build), and with
 * DefaultLayers and false otherwise.
 */
template<int DefaultLayers, int K, typename F>
decltype(auto) withLayerVariant(int layers, bool flag, F&& f)
{
  if constexpr (K == 4)
  {
    auto withLayers = [&](auto chosenFlag) -> decltype(auto)
    {
      switch (layers)
      {
        case 1:
          return f(std::integral_constant<int, 1>{}, chosenFlag);
        case 2:
          return f(std::integral_constant<int, 2>{}, chosenFlag);
        case 4:
          return f(std::integral_constant<int, 4>{}, chosenFlag);
        default:
          return f(std::integral_constant<int, DefaultLayers>{}, chosenFlag);
      }
    };
    return flag ? withLayers(std::true_type{}) : withLayers(std::false_type{});
  }
  return f(std::integral_constant<int, DefaultLayers>{}, std::false_type{});
}

/// The tiled laplap's variant: f(L, Prefetch) from Tuning::tileLayers and tilePrefetch.
template<typename T, int K, typename F>
decltype(auto) withTileVariant(const ExecutionOptions& options, F&& f)
{
  return withLayerVariant<DefaultTileLayers<T>, K>(
    options.tuning.tileLayers, options.tuning.tilePrefetch, f);
}

/// The staged laplap's variant: f(L, Wide) from Tuning::tileLayers and
/// stagedWideRegisters (DefaultStagedLayers by default).
template<typename T, int K, typename F>
decltype(auto) withStagedLayers(const ExecutionOptions& options, F&& f)
{
  return withLayerVariant<DefaultStagedLayers<T>, K>(
    options.tuning.tileLayers, options.tuning.stagedWideRegisters, f);
}

/// Whether the staged laplap runs with async copies (Tuning::stagedAsyncCopies; -1:
/// the measured default). H200, 512 x 512 x 64 (docs/stencil.md, column meshes):
/// double 126.6-128.3 us with them against 147.0-148.2 us without (2 layers per step); float
/// 88.6-89.3 us against 82.2-82.5 us (4 layers; the async kernel spills 36 bytes under the
/// 32-register cap of 8 blocks per SM), so float keeps the synchronous staging.
template<typename T>
constexpr bool DefaultStagedAsync = sizeof(T) == 8;
template<typename T>
bool stagedAsync(const ExecutionOptions& options)
{
  return options.tuning.stagedAsyncCopies < 0 ? DefaultStagedAsync<T>
                                              : options.tuning.stagedAsyncCopies > 0;
}

/// Whether the staged laplap runs with the lanes over layers (Tuning::stagedLayerLanes;
/// -1: the measured default, off: on the H200 at 512 x 512 x 64 it took 94 us in float and
/// 156 us in double against 76.4 and 114.5 us with the lanes over cells, docs/stencil.md).
constexpr bool DefaultStagedLayerLanes = false;
inline bool stagedLayerLanes(const ExecutionOptions& options)
{
  return options.tuning.stagedLayerLanes < 0 ? DefaultStagedLayerLanes
                                             : options.tuning.stagedLayerLanes > 0;
}

/// Whether the staged laplap stages its rings as groups (GroupedColumns.h;
/// Tuning::stagedRingGroups, -1 or 1: where it applies): float, 4 layers per step,
/// without the async copies, the wide registers or the lanes over layers, and lists built for
/// it (prepareTable: cells per layer a multiple of 4). H200, 512 x 512 x 64, z-curve quads
/// (docs/stencil.md).
template<typename T, int K>
bool stagedRingGroups(const ExecutionOptions& options, const TileLists& lists)
{
  if (!std::is_same<T, float>::value || options.tuning.stagedRingGroups == 0 ||
    lists.groupSlots == nullptr || stagedAsync<T>(options) || stagedLayerLanes(options))
  {
    return false;
  }
  int layers = 0;
  bool wide = false;
  withStagedLayers<T, K>(options,
    [&](auto l, auto w)
    {
      layers = decltype(l)::value;
      wide = decltype(w)::value;
      return 0;
    });
  return layers == GroupLayers && !wide;
}

/// "staged laplap, lanes over L layers".
template<typename T>
std::string laneKernelName()
{
  return "staged laplap, lanes over " + std::to_string(LaneLayers<T>) + " layers";
}

/// "staged laplap, L layers per step[, wide registers | , async copies]", with a note when a
/// requested variant was not used (the async copies have one register cap: the narrow one).
template<typename T, int K>
std::string stagedKernelName(const ExecutionOptions& options, ExecutionReport& report)
{
  int layers = 0;
  bool wide = false;
  const bool async = stagedAsync<T>(options);
  withStagedLayers<T, K>(options,
    [&](auto l, auto w)
    {
      layers = decltype(l)::value;
      wide = decltype(w)::value;
      return 0;
    });
  if ((options.tuning.tileLayers > 0 && options.tuning.tileLayers != layers) ||
    options.tuning.stagedWideRegisters != wide)
  {
    report.note += "staged variants are offered for 4 neighbours per cell only: used " +
      std::to_string(layers) + " layers per step. ";
  }
  if (async && wide)
  {
    report.note += "the staged async copies have the narrow register cap only. ";
  }
  return "staged laplap, " + std::to_string(layers) + (layers == 1 ? " layer" : " layers") +
    " per step" + (async ? ", async copies" : (wide ? ", wide registers" : ""));
}

/// Why a StagedZLoop request ran as z-loop (the report's note).
constexpr const char* StagedOnlyNote = "staged z-loop stages only the horizontal laplap (rings "
                                       "below 65536 cells, layers below 2^29 cells): ran as "
                                       "z-loop. ";

/// The staged laplap runs for the horizontal laplap of the StagedZLoop strategy when its lists
/// were prepared; the other operators run as z-loop (tiled laplap or per cell).
template<typename T>
bool runsStaged(const ExecutionOptions& options, const ColumnArgs<T>& a, bool prepared)
{
  return options.strategy == AccessStrategy::StagedZLoop && a.laplap && !a.vertical && prepared;
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
  if ((options.tuning.tileLayers > 0 && options.tuning.tileLayers != layers) ||
    options.tuning.tilePrefetch != prefetch)
  {
    report.note += "tile variants (layers per step, prefetch) are offered for 4 neighbours per "
                   "cell only: used " +
      std::to_string(layers) + (prefetch ? " with prefetch. " : " without prefetch. ");
  }
  return "tiled laplap, " + std::to_string(layers) + (layers == 1 ? " layer" : " layers") +
    " per step" + (prefetch ? ", prefetch" : "");
}

// CUDA backend (src/cuda); CudaUnavailable.cxx answers BackendUnavailable when not compiled.
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
/// The copy kernel's bandwidth, and (memcpyBytesPerSecond not null) cudaMemcpy's.
Status cudaBandwidth(std::size_t bytes,
  int repeats,
  double& bytesPerSecond,
  double* memcpyBytesPerSecond);

/// The instances of the CUDA entry points for value type T, in the translation unit that
/// defines them (src/cuda/Device.cu, or CudaUnavailable.cxx).
#define STENCIL_CUDA_ENTRY_POINTS(T)                                                               \
  template Status cudaImage<T>(                                                                    \
    const ImageArgs<T>&, std::size_t, const ExecutionOptions&, ExecutionReport&);                  \
  template Status cudaColumns<T>(                                                                  \
    const PreparedTable<T>&, const ColumnArgs<T>&, const ExecutionOptions&, ExecutionReport&)

} // namespace detail
} // namespace stencil

#endif
