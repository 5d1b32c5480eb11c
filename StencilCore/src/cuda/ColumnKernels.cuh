/**
 * @file ColumnKernels.cuh
 * @brief The column-mesh kernels, one per access strategy, templated on the table layout.
 *
 * Values are stored layer by layer (index = k * cells + c), so the neighbour table of layer 0
 * serves every layer after adding k * cells: the strategies differ only in how often and by whom
 * the table is read.
 */
#ifndef stencil_ColumnKernels_cuh
#define stencil_ColumnKernels_cuh

#include "CudaCommon.cuh"

namespace stencil
{
namespace detail
{
namespace
{
constexpr int LinearBlock = 128;
constexpr int SharedBlockCells = 32;
constexpr int SharedBlockLayers = 8;

/// Shared-memory slots per cell: the smallest odd count >= E, so that the same entry of
/// consecutive cells falls into different banks.
__host__ __device__ constexpr int paddedEntries(int e)
{
  return (e % 2 == 0) ? e + 1 : e;
}

/// A thread per cell, grid rows over the layers: the table read for each entry (Resolve false,
/// the naive kernel), or the cell's entries resolved into registers for each layer first (idxvar).
template<typename T, typename Table, bool Resolve>
__global__ void __launch_bounds__(LinearBlock, Table::K <= 4 ? 6 : 1)
  linearKernel(ColumnArgs<T> args, Table table)
{
  // Local copies: binding references to kernel parameters would force them into local memory.
  const ColumnArgs<T> a = args;
  const Table t = table;
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= a.cells)
  {
    return;
  }
  for (int k = blockIdx.y; k < a.layers; k += gridDim.y)
  {
    if constexpr (Resolve)
    {
      int nb[Table::K + Table::K * Table::K];
      T wt[Table::K + Table::K * Table::K];
      resolve(t, c, a.laplap, nb, wt);
      a.out[static_cast<long long>(k) * a.cells + c] =
        columnValue<T, Table::K>(a, c, k, ArraySource<T, Table::K>{ nb, wt });
    }
    else
    {
      a.out[static_cast<long long>(k) * a.cells + c] =
        columnValue<T, Table::K>(a, c, k, NaiveSource<Table>{ t, c });
    }
  }
}

template<typename T, typename Table>
__global__ void __launch_bounds__(SharedBlockCells* SharedBlockLayers)
  sharedKernel(ColumnArgs<T> args, Table table)
{
  // Local copies: binding references to kernel parameters would force them into local memory.
  const ColumnArgs<T> a = args;
  const Table t = table;
  constexpr int E = Table::K + Table::K * Table::K;
  constexpr int P = paddedEntries(E);
  __shared__ int sharedIndex[SharedBlockCells * P];
  __shared__ T sharedWeight[SharedBlockCells * P];
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  int* nb = sharedIndex + threadIdx.x * P;
  T* wt = sharedWeight + threadIdx.x * P;
  // Leader threads (first layer of the block) read the table once for the whole block.
  if (threadIdx.z == 0 && c < a.cells)
  {
    resolve(t, c, a.laplap, nb, wt);
  }
  __syncthreads();
  if (c >= a.cells)
  {
    return;
  }
  for (int k = blockIdx.z * blockDim.z + threadIdx.z; k < a.layers; k += gridDim.z * blockDim.z)
  {
    a.out[static_cast<long long>(k) * a.cells + c] =
      columnValue<T, Table::K>(a, c, k, ArraySource<T, Table::K>{ nb, wt });
  }
}

template<typename T, typename Table>
__global__ void __launch_bounds__(LinearBlock, Table::K <= 4 ? 6 : 1)
  zloopKernel(ColumnArgs<T> args, Table table, int slice)
{
  const ColumnArgs<T> a = args;
  const Table t = table;
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= a.cells)
  {
    return;
  }
  int nb[Table::K + Table::K * Table::K];
  T wt[Table::K + Table::K * Table::K];
  resolve(t, c, a.laplap, nb, wt);
  const ArraySource<T, Table::K> source{ nb, wt };
  for (int first = blockIdx.y * slice; first < a.layers; first += gridDim.y * slice)
  {
    const int last = min(a.layers, first + slice);
    for (int k = first; k < last; ++k)
    {
      a.out[static_cast<long long>(k) * a.cells + c] = columnValue<T, Table::K>(a, c, k, source);
    }
  }
}

/// One block per (tile, column slice): binds a Context (TileContext or StagedContext) to the
/// block's scratch memory and runs runSlice(context, first, last, forEachThread, barrier) for
/// the calling thread.
template<typename Context, typename State, typename T, typename Table, typename RunSlice>
__device__ __forceinline__ void tileBlock(const ColumnArgs<T>& args,
  const Table& table,
  const TileLists& lists,
  int slice,
  RunSlice&& runSlice)
{
  extern __shared__ __align__(16) unsigned char scratch[];
  Context x;
  x.a = args;
  x.table = table;
  x.lists = lists;
  x.weighted = table.p.weights != nullptr;
  x.bind(scratch, blockIdx.x);
  const int first = blockIdx.y * slice;
  const int last = min(args.layers, first + slice);
  State state;
  const int t = threadIdx.x;
  runSlice(
    x, first, last, [&](auto&& f) { f(t, state); }, []() { __syncthreads(); });
}

/// The z-loops' laplap: one block per (tile, column slice), L layers per step; see
/// TiledColumns.h.
template<typename T, typename Table, int L, bool Prefetch>
__global__ void __launch_bounds__(TileCells, (TileMinBlocks<T, L, Prefetch>))
  tiledLaplapKernel(ColumnArgs<T> args, Table table, TileLists lists, int slice)
{
  tileBlock<TileContext<T, Table, L>, TileThread<T, Table::K, L>>(args,
    table,
    lists,
    slice,
    [](auto& x, int first, int last, auto&& forEach, auto&& barrier)
    { tileSlice<Prefetch>(x, first, last, forEach, barrier); });
}

/// The staged horizontal laplap: one block per (tile, column slice); see StagedColumns.h.
template<typename T, typename Table, int L, bool Wide>
__global__ void __launch_bounds__(TileCells, (StagedMinBlocks<T, Wide>))
  stagedLaplapKernel(ColumnArgs<T> args, Table table, TileLists lists, int slice)
{
  tileBlock<StagedContext<T, Table, L>, StagedThread<T, Table::K>>(args,
    table,
    lists,
    slice,
    [](auto& x, int first, int last, auto&& forEach, auto&& barrier)
    { stagedSlice(x, first, last, forEach, barrier); });
}

/// The staged horizontal laplap with async copies of the next step (StagedColumns.h); the
/// register cap of the narrow staged kernel.
template<typename T, typename Table, int L>
__global__ void __launch_bounds__(TileCells, (StagedMinBlocks<T, false>))
  stagedAsyncLaplapKernel(ColumnArgs<T> args, Table table, TileLists lists, int slice)
{
  tileBlock<StagedAsyncContext<T, Table, L>, StagedAsyncThread<T, Table::K, L>>(args,
    table,
    lists,
    slice,
    [](auto& x, int first, int last, auto&& forEach, auto&& barrier)
    { stagedAsyncSlice(x, first, last, forEach, barrier); });
}

/// The staged horizontal laplap with its rings staged as groups of 4 cells (GroupedColumns.h):
/// float, 4 layers per step, tiles of GroupTileCells cells, 2048 threads per SM (32 registers).
template<typename Table, bool Weighted>
__global__ void __launch_bounds__(GroupTileCells, 2048 / GroupTileCells)
  stagedGroupLaplapKernel(ColumnArgs<float> args, Table table, TileLists lists, int slice)
{
  tileBlock<GroupContext<float, Table, Weighted>, GroupThread<float, Table::K>>(args,
    table,
    lists,
    slice,
    [](auto& x, int first, int last, auto&& forEach, auto&& barrier)
    { groupSlice(x, first, last, forEach, barrier); });
}

/// The staged horizontal laplap with the lanes over layers (LaneColumns.h): two blocks of
/// about 100 KB of shared memory per SM (quads, z-curve tiles).
template<typename T, typename Table>
__global__ void __launch_bounds__(TileCells, 2)
  laneLaplapKernel(ColumnArgs<T> args, Table table, TileLists lists, int slice)
{
  tileBlock<LaneContext<T, Table>, LaneThread>(args,
    table,
    lists,
    slice,
    [](auto& x, int first, int last, auto&& forEach, auto&& barrier)
    { laneSlice(x, first, last, forEach, barrier); });
}

/// Sets the dynamic shared memory a kernel needs; false when the device cannot give it.
template<typename Kernel>
bool allowSharedBytes(Kernel kernel, std::size_t bytes)
{
  int device = 0;
  int optin = 0;
  cudaGetDevice(&device);
  cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
  if (bytes > static_cast<std::size_t>(optin))
  {
    return false;
  }
  if (bytes > 48 * 1024 &&
    cudaFuncSetAttribute(
      kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)) != cudaSuccess)
  {
    cudaGetLastError();
    return false;
  }
  return true;
}

/// Launches a tile kernel (one block per tile and column slice) when its scratch fits the
/// block's shared memory; false otherwise.
template<typename Kernel, typename T, typename Table>
bool launchTileKernel(Kernel kernel,
  std::size_t bytes,
  const Table& table,
  const ColumnArgs<T>& a,
  const TileLists& lists,
  int slice,
  const ExecutionOptions& options,
  double& seconds,
  Status& status,
  int cellsPerTile = TileCells)
{
  if (!allowSharedBytes(kernel, bytes))
  {
    return false;
  }
  const unsigned tiles = static_cast<unsigned>((a.cells + cellsPerTile - 1) / cellsPerTile);
  const unsigned slices = static_cast<unsigned>(std::min(65535, (a.layers + slice - 1) / slice));
  status = timeKernel(
    options.tuning.timingRepeats,
    [&]() { kernel<<<dim3(tiles, slices), cellsPerTile, bytes>>>(a, table, lists, slice); },
    seconds);
  return true;
}

template<typename T, typename Table>
Status launchColumns(const Table& table,
  const ColumnArgs<T>& a,
  const TileLists* tiles,
  bool staged,
  const ExecutionOptions& options,
  ExecutionReport& report)
{
  report.columnKernel = "per cell";
  double seconds = 0;
  Status status;
  // A tile kernel over `slice` layers per block; false when its scratch does not fit.
  auto launchTiles = [&](auto kernel, std::size_t bytes, int slice)
  { return launchTileKernel(kernel, bytes, table, a, *tiles, slice, options, seconds, status); };
  if (tiles && runsStaged(options, a, staged))
  {
    const int slice =
      options.tuning.stagedSlice > 0 ? std::min(options.tuning.stagedSlice, a.layers) : a.layers;
    const LaneLayout<T, Table::K> lanes{
      tiles->halo.max, tiles->outer.max, table.p.weights != nullptr
    };
    if (stagedLayerLanes(options) && lanes.fits() && (a.layers + slice - 1) / slice <= 65535 &&
      launchTiles(laneLaplapKernel<T, Table>, lanes.bytes(), slice))
    {
      report.columnKernel = laneKernelName<T>();
      report.kernelSeconds = seconds;
      return status;
    }
    if (stagedLayerLanes(options))
    {
      report.note += "staged lanes over layers do not fit shared memory: ran the staged laplap "
                     "with lanes over cells. ";
    }
    if constexpr (std::is_same<T, float>::value)
    {
      // Groups are 16-byte loads: the device copy of the values is cudaMalloc'd (aligned).
      if (stagedRingGroups<T, Table::K>(options, *tiles) &&
        reinterpret_cast<std::uintptr_t>(a.u) % 16 == 0 && (a.layers + slice - 1) / slice <= 65535)
      {
        const GroupLayout<T, Table::K> layout{
          tiles->groupRing.max, tiles->groups.max, table.p.weights != nullptr
        };
        auto launchGroups = [&](auto kernel)
        {
          return launchTileKernel(kernel,
            layout.bytes(),
            table,
            a,
            *tiles,
            slice,
            options,
            seconds,
            status,
            GroupTileCells);
        };
        if (table.p.weights != nullptr ? launchGroups(stagedGroupLaplapKernel<Table, true>)
                                       : launchGroups(stagedGroupLaplapKernel<Table, false>))
        {
          report.columnKernel = stagedKernelName<T, Table::K>(options, report) + ", ring groups";
          report.kernelSeconds = seconds;
          return status;
        }
        report.note += "staged ring groups do not fit shared memory: ran the staged laplap "
                       "with one load per ring cell. ";
      }
    }
    if ((a.layers + slice - 1) / slice <= 65535 &&
      withStagedLayers<T, Table::K>(options,
        [&](auto layers, auto wide)
        {
          constexpr int L = decltype(layers)::value;
          if (stagedAsync<T>(options))
          {
            const StagedLayout<T, Table::K, L> layout{
              tiles->halo.max, tiles->outer.max, table.p.weights != nullptr, 2
            };
            return launchTiles(stagedAsyncLaplapKernel<T, Table, L>, layout.bytes(), slice);
          }
          const StagedLayout<T, Table::K, L> layout{
            tiles->halo.max, tiles->outer.max, table.p.weights != nullptr
          };
          return launchTiles(
            stagedLaplapKernel<T, Table, L, decltype(wide)::value>, layout.bytes(), slice);
        }))
    {
      report.columnKernel = stagedKernelName<T, Table::K>(options, report);
      report.kernelSeconds = seconds;
      return status;
    }
    report.note += "staged rings too large for shared memory: ran as z-loop. ";
  }
  else if (options.strategy == AccessStrategy::StagedZLoop)
  {
    report.note += StagedOnlyNote;
  }
  const unsigned cellBlocks = static_cast<unsigned>((a.cells + LinearBlock - 1) / LinearBlock);
  const unsigned layerBlocks = static_cast<unsigned>(std::min(a.layers, 65535));
  switch (options.strategy)
  {
    case AccessStrategy::Naive:
      status = timeKernel(
        options.tuning.timingRepeats,
        [&]() {
          linearKernel<T, Table, false><<<dim3(cellBlocks, layerBlocks), LinearBlock>>>(a, table);
        },
        seconds);
      break;
    case AccessStrategy::IdxVar:
      status = timeKernel(
        options.tuning.timingRepeats,
        [&]()
        { linearKernel<T, Table, true><<<dim3(cellBlocks, layerBlocks), LinearBlock>>>(a, table); },
        seconds);
      break;
    case AccessStrategy::Shared:
    {
      const dim3 block(SharedBlockCells, 1, SharedBlockLayers);
      const dim3 grid(static_cast<unsigned>((a.cells + SharedBlockCells - 1) / SharedBlockCells),
        1,
        static_cast<unsigned>(
          std::min(65535, (a.layers + SharedBlockLayers - 1) / SharedBlockLayers)));
      status = timeKernel(
        options.tuning.timingRepeats,
        [&]() { sharedKernel<T, Table><<<grid, block>>>(a, table); },
        seconds);
      break;
    }
    case AccessStrategy::ZLoop:
    case AccessStrategy::SlicedZLoop:
    case AccessStrategy::StagedZLoop:
    {
      const int slice =
        options.strategy == AccessStrategy::SlicedZLoop ? std::max(1, options.sliceSize) : a.layers;
      if (tiles && a.laplap && (a.layers + slice - 1) / slice <= 65535)
      {
        const bool launched = withTileVariant<T, Table::K>(options,
          [&](auto layers, auto prefetch)
          {
            constexpr int L = decltype(layers)::value;
            const TileLayout<T, Table::K, L> layout{ tiles->halo.max, table.p.weights != nullptr };
            return launchTiles(
              tiledLaplapKernel<T, Table, L, decltype(prefetch)::value>, layout.bytes(), slice);
          });
        if (launched)
        {
          report.columnKernel = tiledKernelName<T, Table::K>(options, report);
          break;
        }
        report.note += "tile halos too large for shared memory: per-cell z-loop. ";
      }
      const unsigned slices =
        static_cast<unsigned>(std::min(65535, (a.layers + slice - 1) / slice));
      status = timeKernel(
        options.tuning.timingRepeats,
        [&]()
        { zloopKernel<T, Table><<<dim3(cellBlocks, slices), LinearBlock>>>(a, table, slice); },
        seconds);
      break;
    }
  }
  report.kernelSeconds = seconds;
  return status;
}

/// Calls run with the table object of the prepared layout, for one chasing kind only (each kind
/// compiles in its own file; Internal.h's withTable would instantiate both).
template<typename T, bool Chasing, int K, typename Run>
Status runWithTable(const PreparedTable<T>& table, const TablePointers<T>& pointers, Run&& run)
{
  if (table.compressed)
  {
    return run(
      std::conditional_t<Chasing, CompressedChasing<T, K>, CompressedNonChasing<T, K>>{ pointers });
  }
  return run(std::conditional_t<Chasing, PlainChasing<T, K>, PlainNonChasing<T, K>>{ pointers });
}

/// A HostCellLists on the device.
struct DeviceLists
{
  DeviceBuffer start;
  DeviceBuffer cells;
  int max = 0;
  Status upload(const HostCellLists& host, const char* what)
  {
    this->max = host.max;
    Status uploaded = this->start.upload(host.start, what);
    return uploaded ? this->cells.upload(host.cells, what) : uploaded;
  }
  CellLists view() const
  {
    return { this->start.as<std::int32_t>(), this->cells.as<std::int32_t>(), this->max };
  }
};

/// Copies the table and the values to the device, runs the chosen strategy, copies back.
template<typename T, bool Chasing>
Status runColumns(const PreparedTable<T>& table,
  const ColumnArgs<T>& args,
  const ExecutionOptions& options,
  ExecutionReport& report)
{
  const std::size_t values = static_cast<std::size_t>(args.cells) * args.layers;
  const std::size_t bytes = values * sizeof(T);
  Status status = checkDeviceMemory(2 * bytes + table.bytes());
  DeviceBuffer in;
  DeviceBuffer out;
  DeviceBuffer index;
  DeviceBuffer offsets;
  DeviceBuffer weights;
  DeviceLists halo;
  DeviceLists outer;
  DeviceBuffer stagedSlots;
  DeviceLists groupRing;
  DeviceLists groups;
  DeviceBuffer groupSlots;
  if (!status || !(status = outer.upload(table.outer, "ring lists")) ||
    !(status = stagedSlots.upload(table.stagedSlots, "ring lists")) ||
    !(status = groupRing.upload(table.groupRing, "ring groups")) ||
    !(status = groups.upload(table.groups, "ring groups")) ||
    !(status = groupSlots.upload(table.groupSlots, "ring groups")) ||
    !(status = halo.upload(table.halo, "halo lists")) ||
    !(status = in.allocate(bytes, "cudaMalloc input")) ||
    !(status = out.allocate(bytes, "cudaMalloc output")) ||
    !(status = index.upload(table.index, "neighbour table")) ||
    !(status = offsets.upload(table.offsets, "neighbour table")) ||
    !(status = weights.upload(table.weights, "neighbour weights")))
  {
    return status;
  }
  TileLists lists;
  lists.halo = halo.view();
  lists.outer = outer.view();
  lists.stagedSlots = table.stagedSlots.empty() ? nullptr : stagedSlots.as<std::int32_t>();
  lists.groupRing = groupRing.view();
  lists.groups = groups.view();
  lists.groupSlots = table.groupSlots.empty() ? nullptr : groupSlots.as<std::int32_t>();
  const TileLists* tiles = table.tiled() ? &lists : nullptr;
  if (!(status =
          fromCuda(cudaMemcpy(in.as<T>(), args.u, bytes, cudaMemcpyHostToDevice), "copy in")))
  {
    return status;
  }
  TablePointers<T> pointers;
  pointers.index = index.as<std::int32_t>();
  pointers.offsets = table.offsets.empty() ? nullptr : offsets.as<std::int32_t>();
  pointers.weights = table.weights.empty() ? nullptr : weights.as<T>();
  pointers.uniformWeight = table.uniformWeight;
  ColumnArgs<T> device = args;
  device.u = in.as<T>();
  device.out = out.as<T>();
  auto run = [&](auto view)
  { return launchColumns<T>(view, device, tiles, table.staged(), options, report); };
  switch (table.K)
  {
    case 3:
      status = runWithTable<T, Chasing, 3>(table, pointers, run);
      break;
    case 4:
      status = runWithTable<T, Chasing, 4>(table, pointers, run);
      break;
    case 6:
      status = runWithTable<T, Chasing, 6>(table, pointers, run);
      break;
    case 8:
      status = runWithTable<T, Chasing, 8>(table, pointers, run);
      break;
    default:
      return Status(ErrorCode::Internal, "unsupported padded neighbour count");
  }
  if (!status)
  {
    return status;
  }
  return fromCuda(cudaMemcpy(args.out, out.as<T>(), bytes, cudaMemcpyDeviceToHost), "copy out");
}
} // namespace
} // namespace detail
} // namespace stencil

#endif
