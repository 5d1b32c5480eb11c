#include "vtkSparseGridProbe.h"

#include "vtkSparseGridArrays.h"
#include "vtkSparseGridExecution.h"
#include "vtkSparseGridParallel.h"

#include "vtkAOSDataArrayTemplate.h"
#include "vtkCharArray.h"
#include "vtkDataSet.h"
#include "vtkDataSetAttributes.h"
#include "vtkDoubleArray.h"
#include "vtkFieldData.h"
#include "vtkIntArray.h"
#include "vtkPointData.h"
#include "vtkSmartPointer.h"
#include "vtkStringArray.h"
#include "vtkTypeInt64Array.h"

#include <sparsegrid/codec.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <limits>
#include <thread>
#include <utility>
#include <vector>

namespace
{
using Contents = vtkSparseGridRepresentation::Contents;
using Result = vtkSparseGridProbe::Result;

Result Fail(std::string* error, const char* what, const sparsegrid::Status& status)
{
  if (status.code() == sparsegrid::ErrorCode::Aborted)
  {
    return Result::Aborted;
  }
  if (error)
  {
    *error = vtkSparseGridExecution::Describe(what, status);
  }
  return Result::Failed;
}

/// The coefficient array's tuples as the core reads them (components interleaved).
template<typename T>
const T* CoefficientTuples(vtkDataArray* coefficients)
{
  return vtkArrayDownCast<vtkAOSDataArrayTemplate<T>>(coefficients)->GetPointer(0);
}

/// Zero-filled output arrays named after the compressed ones, plus the mask.
template<typename T>
std::vector<vtkSmartPointer<vtkSparseGridArrays::ArrayOf<T>>> MakeOutputs(const Contents& contents,
  vtkIdType n)
{
  std::vector<vtkSmartPointer<vtkSparseGridArrays::ArrayOf<T>>> arrays;
  for (std::size_t i = 0; i < contents.Info.ArrayNames.size(); ++i)
  {
    auto array = vtkSmartPointer<vtkSparseGridArrays::ArrayOf<T>>::New();
    array->SetName(contents.Info.ArrayNames[i].c_str());
    array->SetNumberOfComponents(i < contents.Coefficients.size()
        ? contents.Coefficients[i]->GetNumberOfComponents()
        : contents.Info.Components[i]);
    array->SetNumberOfTuples(n);
    array->FillValue(T(0));
    arrays.push_back(array);
  }
  return arrays;
}

template<typename T>
void Attach(const std::vector<vtkSmartPointer<vtkSparseGridArrays::ArrayOf<T>>>& arrays,
  vtkCharArray* mask,
  vtkDataSetAttributes* out)
{
  // AddArray replaces an input array of the same name: the reconstruction takes its place.
  for (const auto& array : arrays)
  {
    out->AddArray(array);
  }
  out->AddArray(mask);
  if (!arrays.empty())
  {
    out->SetActiveScalars(arrays[0]->GetName());
  }
}

/// Point-by-point evaluation in batches; points outside the compressed box are masked. Each
/// coefficient array is prepared once (on the GPU: uploaded once, all components together), so
/// the batches move only points and results.
template<typename T, typename PointAt>
Result EvaluatePoints(const Contents& contents,
  vtkIdType n,
  PointAt&& pointAt,
  vtkSparseGridExecution& exec,
  vtkDataSetAttributes* out,
  std::string* error)
{
  const auto& info = contents.Info;
  const sparsegrid::Grid& grid = info.Grid;
  const int D = grid.dimensions();
  const double tolerance = info.Tolerance();
  auto arrays = MakeOutputs<T>(contents, n);
  vtkNew<vtkCharArray> mask;
  mask->SetName(vtkSparseGridProbe::MaskName);
  mask->SetNumberOfTuples(n);
  mask->FillValue(0);
  if (n == 0)
  {
    Attach<T>(arrays, mask, out);
    return Result::Done;
  }

  std::vector<sparsegrid::PreparedGrid<T>> prepared(contents.Coefficients.size());
  for (std::size_t i = 0; i < prepared.size(); ++i)
  {
    vtkDataArray* coefficients = contents.Coefficients[i];
    sparsegrid::ExecutionReport report;
    const sparsegrid::Status status = prepared[i].prepare(grid,
      CoefficientTuples<T>(coefficients),
      sparsegrid::ComponentLayout::interleaved(coefficients->GetNumberOfComponents()),
      exec.Options(),
      &report);
    if (!status.ok())
    {
      return Fail(error, "preparing the sparse grid", status);
    }
    if (!report.note.empty())
    {
      exec.Record(report);
    }
  }

  // Batches bound the memory of the coordinates; Auto weighs each batch against
  // autoGpuPreparedThreshold (the coefficients are uploaded at most once).
  const vtkIdType Batch = std::max<vtkIdType>(1, std::min<vtkIdType>(n, vtkIdType(1) << 24));
  std::vector<T> unit(static_cast<std::size_t>(Batch * D));
  std::vector<vtkIdType> ids(static_cast<std::size_t>(Batch));
  std::vector<T> tuples;
  double x[3];
  double u[sparsegrid::MaxDimensions];
  for (vtkIdType begin = 0; begin < n; begin += Batch)
  {
    const vtkIdType end = std::min(n, begin + Batch);
    exec.SetProgressRange(static_cast<double>(begin) / n, static_cast<double>(end) / n);
    if (exec.Options().abort && exec.Options().abort())
    {
      return Result::Aborted;
    }
    std::size_t m = 0;
    for (vtkIdType id = begin; id < end; ++id)
    {
      pointAt(id, x);
      if (info.PhysicalToUnit(x, u, tolerance))
      {
        ids[m] = id;
        std::copy(u, u + D, unit.begin() + static_cast<std::ptrdiff_t>(m * D));
        mask->SetValue(id, 1);
        ++m;
      }
    }
    if (m == 0)
    {
      continue;
    }
    // A batch inside the box (the usual case) is evaluated straight into the output tuples;
    // otherwise into a buffer of the inside points' tuples, which are then set one by one.
    const bool whole = m == static_cast<std::size_t>(end - begin);
    for (std::size_t i = 0; i < arrays.size(); ++i)
    {
      const int nc = arrays[i]->GetNumberOfComponents();
      const auto layout = sparsegrid::ComponentLayout::interleaved(nc);
      if (!whole)
      {
        tuples.resize(m * static_cast<std::size_t>(nc));
      }
      T* target = whole ? arrays[i]->GetPointer(begin * nc) : tuples.data();
      sparsegrid::ExecutionReport report;
      const sparsegrid::Status status =
        prepared[i].evaluate(unit.data(), m, target, layout, exec.Options(), &report);
      if (!status.ok())
      {
        return Fail(error, "evaluating the sparse grid", status);
      }
      exec.Record(report);
      if (!whole)
      {
        for (std::size_t j = 0; j < m; ++j)
        {
          arrays[i]->SetTypedTuple(ids[j], tuples.data() + j * static_cast<std::size_t>(nc));
        }
      }
    }
  }
  Attach<T>(arrays, mask, out);
  return Result::Done;
}

/// The exact fast path: the whole image lies inside the compressed box.
template<typename T>
Result ReconstructImage(const Contents& contents,
  const sparsegrid::RegularGrid& target,
  vtkSparseGridExecution& exec,
  vtkDataSetAttributes* out,
  std::string* error)
{
  const vtkIdType n = static_cast<vtkIdType>(target.numberOfPoints());
  auto arrays = MakeOutputs<T>(contents, n);
  vtkNew<vtkCharArray> mask;
  mask->SetName(vtkSparseGridProbe::MaskName);
  mask->SetNumberOfTuples(n);
  mask->FillValue(1);

  const std::size_t count = arrays.size();
  for (std::size_t i = 0; i < count; ++i)
  {
    exec.SetProgressRange(static_cast<double>(i) / count, static_cast<double>(i + 1) / count);
    const auto layout =
      sparsegrid::ComponentLayout::interleaved(arrays[i]->GetNumberOfComponents());
    sparsegrid::ExecutionReport report;
    const sparsegrid::Status status = sparsegrid::reconstructImage(contents.Info.Grid,
      CoefficientTuples<T>(contents.Coefficients[i]),
      layout,
      target,
      arrays[i]->GetPointer(0),
      layout,
      exec.Options(),
      &report);
    if (!status.ok())
    {
      return Fail(error, "reconstructing the image", status);
    }
    exec.Record(report);
  }
  Attach<T>(arrays, mask, out);
  return Result::Done;
}

//------------------------------------------------------------------------------------------------
// Error-bounded encoding: decode the voxels, then interpolate multilinearly between them (the
// hat-function interpolant of the finest level), so every probe geometry works as before.
//------------------------------------------------------------------------------------------------

/// The voxel box the probe reads (inclusive), as VoxelBox gives it, with its sizes.
struct Box
{
  int Lo[3] = { 0, 0, 0 };
  int Hi[3] = { -1, -1, -1 };
  std::size_t Size(int a) const { return static_cast<std::size_t>(std::max(0, Hi[a] - Lo[a] + 1)); }
  std::size_t Voxels() const { return Size(0) * Size(1) * Size(2); }
};

/// A box of voxels, inclusive per axis, in VTK's extent order (x0, x1, y0, y1, z0, z1).
using VoxelExtent = std::array<int, 6>;

/// The common voxels of two extents into `out`; false when they share none.
bool Clip(const int* a, const int* b, VoxelExtent& out)
{
  for (int k = 0; k < 3; ++k)
  {
    out[2 * k] = std::max(a[2 * k], b[2 * k]);
    out[2 * k + 1] = std::min(a[2 * k + 1], b[2 * k + 1]);
    if (out[2 * k] > out[2 * k + 1])
    {
      return false;
    }
  }
  return true;
}

/// The voxels of `region` that none of `covers` (each inside `region`) holds, as disjoint boxes:
/// the region is cut along y and z at the covers' faces, and each cell's x row keeps the spans
/// between the covers that hold the whole cell.
std::vector<VoxelExtent> Uncovered(const VoxelExtent& region,
  const std::vector<VoxelExtent>& covers)
{
  if (covers.empty())
  {
    return { region };
  }
  std::vector<int> cuts[2]; // first voxel of each cell along y, then z (and one past the last)
  for (int k = 0; k < 2; ++k)
  {
    const int a = k + 1;
    cuts[k] = { region[2 * a], region[2 * a + 1] + 1 };
    for (const VoxelExtent& c : covers)
    {
      cuts[k].push_back(c[2 * a]);
      cuts[k].push_back(c[2 * a + 1] + 1);
    }
    std::sort(cuts[k].begin(), cuts[k].end());
    cuts[k].erase(std::unique(cuts[k].begin(), cuts[k].end()), cuts[k].end());
  }
  std::vector<VoxelExtent> parts;
  std::vector<std::pair<int, int>> spans;
  for (std::size_t zi = 0; zi + 1 < cuts[1].size(); ++zi)
  {
    const int z0 = cuts[1][zi], z1 = cuts[1][zi + 1] - 1;
    for (std::size_t yi = 0; yi + 1 < cuts[0].size(); ++yi)
    {
      const int y0 = cuts[0][yi], y1 = cuts[0][yi + 1] - 1;
      spans.clear();
      for (const VoxelExtent& c : covers)
      {
        if (c[2] <= y0 && y1 <= c[3] && c[4] <= z0 && z1 <= c[5])
        {
          spans.emplace_back(c[0], c[1]);
        }
      }
      std::sort(spans.begin(), spans.end());
      int x = region[0];
      for (const auto& span : spans)
      {
        if (span.first > x)
        {
          parts.push_back({ x, span.first - 1, y0, y1, z0, z1 });
        }
        x = std::max(x, span.second + 1);
      }
      if (x <= region[1])
      {
        parts.push_back({ x, region[1], y0, y1, z0, z1 });
      }
    }
  }
  return parts;
}

/// One brick to decode and the parts of the box whose voxels it gives.
struct BrickPlan
{
  int Piece = 0;
  std::vector<VoxelExtent> Parts;
};

/**
 * The bricks that fill the voxels `box` (VTK extent order): every voxel takes its value from the
 * first brick holding it, in the order of the bricks flagged in `local` first, then the others,
 * each group by index. Bricks that give no voxel are left out (a layer that two neighbouring
 * pieces share comes from the local one).
 */
std::vector<BrickPlan> PlanBricks(const vtkSparseGridRepresentation::Description& info,
  const int box[6],
  const std::vector<char>& local)
{
  std::vector<BrickPlan> plan;
  const int pieces = info.NumberOfPieces();
  std::vector<int> order;
  for (int pass = 1; pass >= 0; --pass)
  {
    for (int p = 0; p < pieces; ++p)
    {
      const bool isLocal = static_cast<std::size_t>(p) < local.size() && local[p] != 0;
      if (isLocal == (pass == 1))
      {
        order.push_back(p);
      }
    }
  }
  std::vector<VoxelExtent> taken; // the parts of the box held by the bricks before, in order
  std::vector<VoxelExtent> covers;
  for (int p : order)
  {
    VoxelExtent region;
    if (!Clip(info.PieceExtents.data() + 6 * p, box, region))
    {
      continue;
    }
    covers.clear();
    for (const VoxelExtent& t : taken)
    {
      VoxelExtent c;
      if (Clip(t.data(), region.data(), c))
      {
        covers.push_back(c);
      }
    }
    std::vector<VoxelExtent> parts = Uncovered(region, covers);
    taken.push_back(region);
    if (!parts.empty())
    {
      plan.push_back({ p, std::move(parts) });
    }
  }
  return plan;
}

/// The bricks whose voxels a probe prefers: those this process held before fetching the others
/// (vtkSparseGridProbe::SelectBricks), or those it holds when nothing was selected.
std::vector<char> LocalBricks(const Contents& contents)
{
  if (!contents.LocalPieces.empty())
  {
    return contents.LocalPieces;
  }
  std::vector<char> local(static_cast<std::size_t>(contents.Info.NumberOfPieces()), 0);
  for (std::size_t p = 0; p < local.size(); ++p)
  {
    local[p] = contents.Holds(static_cast<int>(p)) ? 1 : 0;
  }
  return local;
}

/// What decoding one brick gave: its status, the array it failed on, the codec's reports.
struct BrickOutcome
{
  sparsegrid::Status Status;
  std::size_t Array = 0;
  std::vector<sparsegrid::ExecutionReport> Reports;
};

/**
 * Decodes one brick, every array and component, into the images on the voxels `box` (components
 * interleaved): straight into the images with the codec's stride when the brick is the box,
 * otherwise into `buffer` (one brick, one component) and placed part by part (codec::Layout has
 * no row strides). Only the brick's own parts are written, so bricks may run concurrently.
 */
template<typename T>
void DecodeBrick(const Contents& contents,
  const Box& box,
  const BrickPlan& brick,
  const std::vector<T*>& images,
  const sparsegrid::ExecutionOptions& options,
  std::vector<T>& buffer,
  BrickOutcome& outcome)
{
  const auto& info = contents.Info;
  const int* extent = info.PieceExtents.data() + 6 * brick.Piece;
  sparsegrid::codec::Layout layout;
  for (int a = 0; a < 3; ++a)
  {
    layout.dims[a] = static_cast<std::uint64_t>(extent[2 * a + 1] - extent[2 * a] + 1);
  }
  const std::size_t nx = box.Size(0);
  const std::size_t nxy = nx * box.Size(1);
  bool whole = brick.Parts.size() == 1;
  for (int a = 0; a < 3; ++a)
  {
    whole = whole && extent[2 * a] == box.Lo[a] && extent[2 * a + 1] == box.Hi[a] &&
      brick.Parts[0][2 * a] == box.Lo[a] && brick.Parts[0][2 * a + 1] == box.Hi[a];
  }
  buffer.resize(
    whole ? 0 : static_cast<std::size_t>(layout.dims[0] * layout.dims[1] * layout.dims[2]));
  const int levelIndex = info.LevelOfDetail > 0 ? info.LevelOfDetail - 1 : -1;
  for (std::size_t i = 0; i < images.size(); ++i)
  {
    const int nc = info.Components[i];
    for (int c = 0; c < nc; ++c)
    {
      const std::size_t k = contents.StreamIndex(brick.Piece, i, c);
      sparsegrid::codec::StreamInfo header;
      sparsegrid::Status status =
        sparsegrid::codec::inspect(contents.StreamData(k), contents.StreamSize(k), header);
      const int level = levelIndex < 0 || levelIndex >= header.levels ? -1 : levelIndex;
      sparsegrid::ExecutionReport report;
      sparsegrid::codec::Layout target = layout;
      target.stride = whole ? static_cast<std::uint64_t>(nc) : 1;
      if (status.ok())
      {
        status = sparsegrid::codec::decode(contents.StreamData(k),
          contents.StreamSize(k),
          whole ? images[i] + c : buffer.data(),
          target,
          level,
          options,
          &report);
      }
      if (!status.ok())
      {
        outcome.Status = status;
        outcome.Array = i;
        return;
      }
      outcome.Reports.push_back(report);
      if (whole)
      {
        continue;
      }
      T* image = images[i];
      for (const VoxelExtent& part : brick.Parts)
      {
        for (int z = part[4]; z <= part[5]; ++z)
        {
          for (int y = part[2]; y <= part[3]; ++y)
          {
            std::size_t at = (static_cast<std::size_t>(z - extent[4]) * layout.dims[1] +
                               static_cast<std::size_t>(y - extent[2])) *
                layout.dims[0] +
              static_cast<std::size_t>(part[0] - extent[0]);
            std::size_t out = (static_cast<std::size_t>(z - box.Lo[2]) * nxy +
                                static_cast<std::size_t>(y - box.Lo[1]) * nx +
                                static_cast<std::size_t>(part[0] - box.Lo[0])) *
                static_cast<std::size_t>(nc) +
              static_cast<std::size_t>(c);
            for (int x = part[0]; x <= part[1]; ++x, ++at, out += static_cast<std::size_t>(nc))
            {
              image[out] = buffer[at];
            }
          }
        }
      }
    }
  }
}

/**
 * Decodes every array on the voxels of `box` into `images` (one pointer per array, box-sized,
 * components interleaved as VTK stores them), from the bricks PlanBricks picks only. The bricks
 * decode concurrently on the filter's threads (its parallel loop), each worker with one
 * brick-sized buffer; as many at once as the box holds bricks' worth of voxels (at least one),
 * so the buffers never outgrow the decoded box. Bricks that may decode on the GPU go one after
 * the other (the codec's device buffers are one set per process). The result does not depend on
 * the number of threads: every voxel is written by the one brick the plan gives it to. Counts
 * the bricks and their voxels in contents.BricksDecoded and VoxelsDecoded.
 */
template<typename T>
Result DecodeImages(const Contents& contents,
  const Box& box,
  const std::vector<T*>& images,
  vtkSparseGridExecution& exec,
  std::string* error)
{
  const auto& info = contents.Info;
  const int range[6] = { box.Lo[0], box.Hi[0], box.Lo[1], box.Hi[1], box.Lo[2], box.Hi[2] };
  const std::vector<BrickPlan> plan =
    box.Voxels() > 0 ? PlanBricks(info, range, LocalBricks(contents)) : std::vector<BrickPlan>();
  contents.BricksDecoded = plan.size();
  contents.VoxelsDecoded = 0;
  std::uint64_t largest = 0;
  for (const BrickPlan& brick : plan)
  {
    if (!contents.Holds(brick.Piece))
    {
      if (error)
      {
        *error =
          "the coded streams of piece " + std::to_string(brick.Piece) + " are not on this process";
      }
      return Result::Failed;
    }
    const int* e = info.PieceExtents.data() + 6 * brick.Piece;
    const std::uint64_t voxels = static_cast<std::uint64_t>(e[1] - e[0] + 1) *
      static_cast<std::uint64_t>(e[3] - e[2] + 1) * static_cast<std::uint64_t>(e[5] - e[4] + 1);
    contents.VoxelsDecoded += voxels;
    largest = std::max(largest, voxels);
  }
  if (plan.empty())
  {
    return Result::Done;
  }
  const sparsegrid::ExecutionOptions& options = exec.Options();
  const bool gpu = options.backend != sparsegrid::Backend::CPU && sparsegrid::cudaCompiled() &&
    (options.backend == sparsegrid::Backend::CUDA || largest >= options.autoGpuThreshold) &&
    sparsegrid::cudaAvailable();
  std::size_t slots = std::min<std::size_t>(
    plan.size(), static_cast<std::size_t>(std::max(1, execution::threadCount(options))));
  slots = std::min<std::size_t>(slots, std::max<std::uint64_t>(1, box.Voxels() / largest));
  if (gpu || !options.parallelFor)
  {
    slots = 1;
  }
  sparsegrid::Status status =
    sparsegrid::checkAllocation(slots * largest * sizeof(T), "the brick decode buffers");
  if (!status.ok())
  {
    return Fail(error, "decoding", status);
  }
  // Concurrent bricks decode each on one thread; one brick at a time keeps the codec's own
  // threads. Progress is reported here, from the calling thread, as bricks complete.
  sparsegrid::ExecutionOptions inner = options;
  inner.progress = nullptr;
  if (slots > 1)
  {
    inner.parallelFor = nullptr;
    inner.threads = 1;
  }
  std::vector<BrickOutcome> outcomes(plan.size());
  std::atomic<std::size_t> next{ 0 };
  std::atomic<std::size_t> done{ 0 };
  std::atomic<bool> stop{ false };
  const std::thread::id caller = std::this_thread::get_id();
  exec.SetProgressRange(0, 0.8);
  auto worker = [&](std::size_t, std::size_t)
  {
    std::vector<T> buffer;
    while (!stop.load())
    {
      const std::size_t t = next.fetch_add(1);
      if (t >= plan.size())
      {
        return;
      }
      if (inner.abort && inner.abort())
      {
        outcomes[t].Status = sparsegrid::Status(sparsegrid::ErrorCode::Aborted, "aborted");
      }
      else
      {
        DecodeBrick<T>(contents, box, plan[t], images, inner, buffer, outcomes[t]);
      }
      if (!outcomes[t].Status.ok())
      {
        stop.store(true);
        return;
      }
      const std::size_t finished = done.fetch_add(1) + 1;
      if (options.progress && std::this_thread::get_id() == caller)
      {
        options.progress(static_cast<double>(finished) / plan.size());
      }
    }
  };
  if (slots > 1)
  {
    options.parallelFor(slots, worker);
  }
  else
  {
    worker(0, 1);
  }
  for (std::size_t t = 0; t < plan.size(); ++t)
  {
    for (const auto& report : outcomes[t].Reports)
    {
      exec.Record(report);
    }
  }
  for (std::size_t t = 0; t < plan.size(); ++t)
  {
    if (!outcomes[t].Status.ok())
    {
      return Fail(error,
        ("decoding '" + info.ArrayNames[outcomes[t].Array] + "'").c_str(),
        outcomes[t].Status);
    }
  }
  return Result::Done;
}

/// The continuous voxel coordinate of x on axis a (as the interpolation computes it), clamped
/// to the image.
double VoxelCoordinate(const vtkSparseGridRepresentation::Description& info, int a, double x)
{
  const double dims = info.ImageDimensions[a];
  if (dims <= 1)
  {
    return 0;
  }
  return std::min(dims - 1, std::max(0.0, (x - info.Bounds[2 * a]) / info.ImageSpacing[a]));
}

/// A probe on a voxel (the original geometry, up to rounding of origin + i * spacing) takes
/// that voxel's value exactly, so the bound holds there to the last bit.
double SnapToVoxel(double u)
{
  const double nearest = std::round(u);
  return std::abs(u - nearest) < 1e-9 ? nearest : u;
}

/// Whether the points of `image` are exactly the voxels of `box` (the original geometry or a
/// part of it, up to the rounding that SnapToVoxel forgives): then every point takes its voxel's
/// decoded value, which is what the interpolation gives there.
bool OnVoxels(const vtkSparseGridRepresentation::Description& info,
  const vtkSparseGridProbe::ImageGeometry& image,
  const Box& box)
{
  const double tolerance = info.Tolerance();
  for (int a = 0; a < 3; ++a)
  {
    if (static_cast<std::size_t>(image.Dimensions[a]) != box.Size(a))
    {
      return false;
    }
    const double first = image.Origin[a];
    const double last = image.Origin[a] + (image.Dimensions[a] - 1) * image.Spacing[a];
    if (info.ImageDimensions[a] <= 1)
    {
      if (!(first >= info.Bounds[2 * a] - tolerance && first <= info.Bounds[2 * a + 1] + tolerance))
      {
        return false;
      }
      continue;
    }
    if (image.Dimensions[a] > 1 && !(image.Spacing[a] > 0))
    {
      return false;
    }
    const double u0 = (first - info.Bounds[2 * a]) / info.ImageSpacing[a];
    const double u1 = (last - info.Bounds[2 * a]) / info.ImageSpacing[a];
    if (SnapToVoxel(u0) != box.Lo[a] || SnapToVoxel(u1) != box.Hi[a])
    {
      return false;
    }
  }
  return true;
}

/// Multilinear interpolation of the decoded voxels at the points given by `pointAt` (all inside
/// `bounds`); points outside the image box (beyond a tiny tolerance) are masked and set to 0.
/// When `image` (optional) says the points are the voxels themselves (OnVoxels), the voxels are
/// decoded straight into the output arrays: no image-sized buffer besides the output.
template<typename T, typename PointAt>
Result InterpolateDecoded(const Contents& contents,
  vtkIdType n,
  const double bounds[6],
  PointAt&& pointAt,
  const vtkSparseGridProbe::ImageGeometry* image,
  vtkSparseGridExecution& exec,
  vtkDataSetAttributes* out,
  std::string* error)
{
  const auto& info = contents.Info;
  int range[6];
  vtkSparseGridProbe::VoxelBox(info, bounds, range);
  Box box;
  for (int a = 0; a < 3; ++a)
  {
    box.Lo[a] = range[2 * a];
    box.Hi[a] = range[2 * a + 1];
  }
  const std::size_t voxels = box.Voxels();
  auto arrays = MakeOutputs<T>(contents, n);
  vtkNew<vtkCharArray> mask;
  mask->SetName(vtkSparseGridProbe::MaskName);
  mask->SetNumberOfTuples(n);
  if (image && n > 0 && static_cast<std::size_t>(n) == voxels && OnVoxels(info, *image, box))
  {
    std::vector<T*> targets;
    for (const auto& array : arrays)
    {
      targets.push_back(array->GetPointer(0));
    }
    const Result decoded = DecodeImages<T>(contents, box, targets, exec, error);
    if (decoded != Result::Done)
    {
      return decoded;
    }
    mask->FillValue(1);
    Attach<T>(arrays, mask, out);
    return Result::Done;
  }
  mask->FillValue(0);
  std::uint64_t bytes = 0;
  for (int nc : info.Components)
  {
    bytes += voxels * static_cast<std::uint64_t>(nc) * sizeof(T);
  }
  const sparsegrid::Status status = sparsegrid::checkAllocation(bytes, "the decoded image");
  if (!status.ok())
  {
    return Fail(error, "decoding", status);
  }
  std::vector<std::vector<T>> images(info.ArrayNames.size());
  std::vector<T*> targets;
  for (std::size_t i = 0; i < images.size(); ++i)
  {
    images[i].resize(voxels * static_cast<std::size_t>(info.Components[i]));
    targets.push_back(images[i].data());
  }
  const Result decoded = DecodeImages<T>(contents, box, targets, exec, error);
  if (decoded != Result::Done)
  {
    return decoded;
  }
  char* valid = mask->GetPointer(0);
  const double tolerance = info.Tolerance();
  const vtkIdType dims[3] = {
    info.ImageDimensions[0], info.ImageDimensions[1], info.ImageDimensions[2]
  };
  const vtkIdType strides[3] = {
    1, static_cast<vtkIdType>(box.Size(0)), static_cast<vtkIdType>(box.Size(0) * box.Size(1))
  };
  std::size_t offset = 0; // first point of the current block
  auto body = [&](std::size_t begin, std::size_t end)
  {
    double x[3];
    for (std::size_t id = offset + begin; id < offset + end; ++id)
    {
      pointAt(static_cast<vtkIdType>(id), x);
      vtkIdType base[3] = { 0, 0, 0 };
      double t[3] = { 0, 0, 0 };
      bool inside = true;
      for (int a = 0; a < 3; ++a)
      {
        const double lo = info.Bounds[2 * a];
        const double hi = info.Bounds[2 * a + 1];
        if (!(x[a] >= lo - tolerance && x[a] <= hi + tolerance))
        {
          inside = false;
          break;
        }
        if (dims[a] > 1)
        {
          const double u = SnapToVoxel(VoxelCoordinate(info, a, x[a]));
          base[a] = std::min(dims[a] - 2, static_cast<vtkIdType>(u));
          t[a] = u - static_cast<double>(base[a]);
        }
      }
      if (!inside)
      {
        continue;
      }
      valid[id] = 1;
      for (std::size_t i = 0; i < arrays.size(); ++i)
      {
        const int nc = info.Components[i];
        const T* decodedVoxels = targets[i];
        T* values = arrays[i]->GetPointer(0);
        for (int c = 0; c < nc; ++c)
        {
          double sum = 0;
          // The 2^3 corners; a weight of exactly 0 skips the corner, so a probe point on a voxel
          // returns that voxel's decoded value exactly (and a corner outside the box is never
          // read).
          for (int corner = 0; corner < 8; ++corner)
          {
            double w = 1;
            vtkIdType at = 0;
            for (int a = 0; a < 3; ++a)
            {
              const int bit = (corner >> a) & 1;
              w *= bit ? t[a] : 1 - t[a];
              at += (base[a] + bit - box.Lo[a]) * strides[a];
            }
            if (w != 0)
            {
              sum += w * static_cast<double>(decodedVoxels[at * nc + c]);
            }
          }
          values[static_cast<vtkIdType>(id) * nc + c] = static_cast<T>(sum);
        }
      }
    }
  };
  // Blocks run one after the other so that progress and abort are handled on the calling
  // thread only (VTK's abort check and progress events are not for worker threads).
  const std::size_t total = static_cast<std::size_t>(n);
  const std::size_t block = std::max<std::size_t>(1 << 16, total / 32 + 1);
  for (offset = 0; offset < total; offset += block)
  {
    exec.SetProgressRange(
      0.8 + 0.2 * offset / total, 0.8 + 0.2 * std::min(total, offset + block) / total);
    if (exec.Options().abort && exec.Options().abort())
    {
      return Result::Aborted;
    }
    const std::size_t count = std::min(block, total - offset);
    if (exec.Options().parallelFor)
    {
      exec.Options().parallelFor(count, body);
    }
    else
    {
      body(0, count);
    }
  }
  Attach<T>(arrays, mask, out);
  return Result::Done;
}

/// The probe's output arrays and mask, checked against what this process may still allocate
/// before anything is allocated: a huge SamplingDimensions is a clear error, not an abort.
bool CheckOutputSize(const Contents& contents, vtkIdType n, std::string* error)
{
  const auto& info = contents.Info;
  std::uint64_t components = 0;
  for (std::size_t i = 0; i < info.ArrayNames.size(); ++i)
  {
    components += static_cast<std::uint64_t>(i < contents.Coefficients.size()
        ? contents.Coefficients[i]->GetNumberOfComponents()
        : info.Components[i]);
  }
  const std::uint64_t bytesPerValue = info.Precision == sparsegrid::Precision::Double ? 8 : 4;
  const long double bytes =
    static_cast<long double>(n) * (static_cast<long double>(components) * bytesPerValue + 1);
  const sparsegrid::Status status = bytes > 1.8e19L
    ? sparsegrid::Status(sparsegrid::ErrorCode::TooLarge, "more than 2^64 bytes")
    : sparsegrid::checkAllocation(static_cast<std::uint64_t>(bytes),
        ("the reconstructed arrays of " + std::to_string(n) + " points").c_str());
  if (!status.ok() && error)
  {
    *error = "The output is too large for this process: " + status.message() +
      ". Reduce the sampling dimensions or probe fewer points.";
  }
  return status.ok();
}
} // namespace

//------------------------------------------------------------------------------------------------
void vtkSparseGridProbe::ImageBounds(const ImageGeometry& image, double bounds[6])
{
  for (int a = 0; a < 3; ++a)
  {
    const double first = image.Origin[a];
    const double last = image.Origin[a] + (image.Dimensions[a] - 1) * image.Spacing[a];
    bounds[2 * a] = std::min(first, last);
    bounds[2 * a + 1] = std::max(first, last);
  }
}

//------------------------------------------------------------------------------------------------
void vtkSparseGridProbe::VoxelBox(const vtkSparseGridRepresentation::Description& info,
  const double bounds[6],
  int box[6])
{
  const double tolerance = info.Tolerance();
  for (int a = 0; a < 3; ++a)
  {
    const int last = info.ImageDimensions[a] - 1;
    const double lo = info.Bounds[2 * a];
    const double hi = info.Bounds[2 * a + 1];
    if (!(bounds[2 * a] <= bounds[2 * a + 1]) || bounds[2 * a + 1] < lo - tolerance ||
      bounds[2 * a] > hi + tolerance)
    {
      std::fill(box, box + 6, 0);
      box[1] = box[3] = box[5] = -1; // no point inside the image
      return;
    }
    // The voxels around each end, snapped to a voxel as the interpolation snaps (so a probe
    // on the voxels reads no neighbour).
    const double u0 = SnapToVoxel(VoxelCoordinate(info, a, bounds[2 * a]));
    const double u1 = SnapToVoxel(VoxelCoordinate(info, a, bounds[2 * a + 1]));
    box[2 * a] = std::max(0, static_cast<int>(std::floor(u0)));
    box[2 * a + 1] = std::min(last, static_cast<int>(std::ceil(u1)));
  }
}

//------------------------------------------------------------------------------------------------
std::vector<char> vtkSparseGridProbe::SelectBricks(vtkSparseGridRepresentation::Contents& contents,
  const int box[6])
{
  contents.LocalPieces = LocalBricks(contents);
  std::vector<char> selected(static_cast<std::size_t>(contents.Info.NumberOfPieces()), 0);
  bool empty = false;
  for (int a = 0; a < 3; ++a)
  {
    empty = empty || box[2 * a] > box[2 * a + 1];
  }
  if (empty)
  {
    return selected;
  }
  for (const BrickPlan& brick : PlanBricks(contents.Info, box, contents.LocalPieces))
  {
    selected[static_cast<std::size_t>(brick.Piece)] = 1;
  }
  return selected;
}

//------------------------------------------------------------------------------------------------
void vtkSparseGridProbe::AddCounts(const vtkSparseGridRepresentation::Contents& contents,
  vtkFieldData* fieldData)
{
  const std::pair<const char*, std::uint64_t> counts[3] = { { "SparseGridLocal.BricksDecoded",
                                                              contents.BricksDecoded },
    { "SparseGridLocal.VoxelsDecoded", contents.VoxelsDecoded },
    { "SparseGridLocal.BytesReceived", contents.BytesReceived } };
  for (const auto& count : counts)
  {
    vtkNew<vtkTypeInt64Array> array;
    array->SetName(count.first);
    array->InsertNextValue(static_cast<vtkTypeInt64>(count.second));
    fieldData->AddArray(array);
  }
}

//------------------------------------------------------------------------------------------------
vtkSparseGridProbe::Result vtkSparseGridProbe::ProbeImage(const Contents& contents,
  const ImageGeometry& image,
  vtkSparseGridExecution& exec,
  vtkDataSetAttributes* out,
  std::string* error,
  bool* usedFastPath)
{
  const auto& info = contents.Info;
  const double tolerance = info.Tolerance();
  const bool isDouble = info.Precision == sparsegrid::Precision::Double;
  const vtkIdType nx = image.Dimensions[0];
  const vtkIdType nxy = nx * image.Dimensions[1];
  const vtkIdType n = nxy * image.Dimensions[2];
  auto pointAt = [&](vtkIdType id, double x[3])
  {
    const vtkIdType ijk[3] = { id % nx, (id / nx) % image.Dimensions[1], id / nxy };
    for (int a = 0; a < 3; ++a)
    {
      x[a] = image.Origin[a] + ijk[a] * image.Spacing[a];
    }
  };
  if (!CheckOutputSize(contents, n, error))
  {
    return Result::Failed;
  }
  if (info.Kind == vtkSparseGridRepresentation::Encoding::ErrorBounded)
  {
    if (usedFastPath)
    {
      *usedFastPath = false;
    }
    double bounds[6];
    vtkSparseGridProbe::ImageBounds(image, bounds);
    return isDouble
      ? InterpolateDecoded<double>(contents, n, bounds, pointAt, &image, exec, out, error)
      : InterpolateDecoded<float>(contents, n, bounds, pointAt, &image, exec, out, error);
  }
  bool isGridAxis[3] = { false, false, false };
  for (int a : info.AxisMap)
  {
    isGridAxis[a] = true;
  }
  bool fast = true;
  for (int a = 0; a < 3; ++a)
  {
    double lo = image.Origin[a];
    double hi = image.Origin[a] + (image.Dimensions[a] - 1) * image.Spacing[a];
    if (lo > hi)
    {
      std::swap(lo, hi);
    }
    const bool inside =
      lo >= info.Bounds[2 * a] - tolerance && hi <= info.Bounds[2 * a + 1] + tolerance;
    // The fast path spans the grid axes only: elsewhere the image must be a single sample.
    const bool regular =
      isGridAxis[a] ? (image.Dimensions[a] == 1 || image.Spacing[a] > 0) : image.Dimensions[a] == 1;
    fast = fast && inside && regular;
  }
  if (usedFastPath)
  {
    *usedFastPath = fast;
  }
  if (fast)
  {
    sparsegrid::RegularGrid target;
    for (int a : info.AxisMap)
    {
      const double width = info.Bounds[2 * a + 1] - info.Bounds[2 * a];
      target.dims.push_back(static_cast<std::size_t>(image.Dimensions[a]));
      target.origin.push_back((image.Origin[a] - info.Bounds[2 * a]) / width);
      target.spacing.push_back(image.Spacing[a] / width);
    }
    return isDouble ? ReconstructImage<double>(contents, target, exec, out, error)
                    : ReconstructImage<float>(contents, target, exec, out, error);
  }
  return isDouble ? EvaluatePoints<double>(contents, n, pointAt, exec, out, error)
                  : EvaluatePoints<float>(contents, n, pointAt, exec, out, error);
}

//------------------------------------------------------------------------------------------------
vtkSparseGridProbe::Result vtkSparseGridProbe::ProbePoints(const Contents& contents,
  vtkDataSet* points,
  vtkSparseGridExecution& exec,
  vtkDataSetAttributes* out,
  std::string* error)
{
  const vtkIdType n = points->GetNumberOfPoints();
  auto pointAt = [points](vtkIdType id, double x[3]) { points->GetPoint(id, x); };
  if (!CheckOutputSize(contents, n, error))
  {
    return Result::Failed;
  }
  if (contents.Info.Kind == vtkSparseGridRepresentation::Encoding::ErrorBounded)
  {
    // vtkDataSet::GetPoint is thread safe once the dataset is built; build it here, serially.
    if (n > 0)
    {
      double x[3];
      points->GetPoint(0, x);
    }
    double bounds[6];
    points->GetBounds(bounds);
    return contents.Info.Precision == sparsegrid::Precision::Double
      ? InterpolateDecoded<double>(contents, n, bounds, pointAt, nullptr, exec, out, error)
      : InterpolateDecoded<float>(contents, n, bounds, pointAt, nullptr, exec, out, error);
  }
  return contents.Info.Precision == sparsegrid::Precision::Double
    ? EvaluatePoints<double>(contents, n, pointAt, exec, out, error)
    : EvaluatePoints<float>(contents, n, pointAt, exec, out, error);
}

//------------------------------------------------------------------------------------------------
vtkSparseGridProbe::Result vtkSparseGridProbe::Conclude(Result probed,
  const Contents& contents,
  vtkDataSet* output,
  std::string* error)
{
  if (probed == Result::Done && !AnnotateBounds(contents, output->GetFieldData(), error))
  {
    probed = Result::Failed;
  }
  // Finite coefficients can still sum past the precision's range (a damaged file, or data at
  // the float limit): a clear error, never an image of Inf. (Error-bounded streams keep the
  // NaN/Inf voxels of their input, and the codec checks its own values.)
  const bool coded = contents.Info.Kind == vtkSparseGridRepresentation::Encoding::ErrorBounded;
  for (std::size_t i = 0; probed == Result::Done && !coded && i < contents.Info.ArrayNames.size();
       ++i)
  {
    const std::string& name = contents.Info.ArrayNames[i];
    const sparsegrid::Status status =
      vtkSparseGridArrays::CheckFinite(output->GetPointData()->GetArray(name.c_str()), name);
    if (!status.ok())
    {
      probed = Result::Failed;
      if (error)
      {
        *error = "the reconstruction of '" + name + "' overflows: " + status.message() +
          ". The coefficients are finite but their sums leave the range of " +
          (contents.Info.Precision == sparsegrid::Precision::Float ? "float" : "double") +
          " (compress with Double precision, or rescale the data).";
      }
    }
  }
  if (probed == Result::Aborted)
  {
    output->Initialize();
  }
  return probed;
}

//------------------------------------------------------------------------------------------------
bool vtkSparseGridProbe::AnnotateBounds(const Contents& contents,
  vtkFieldData* fieldData,
  std::string* error)
{
  if (contents.Info.Kind != vtkSparseGridRepresentation::Encoding::ErrorBounded || !fieldData)
  {
    return true;
  }
  std::vector<double> bounds;
  int levels = 0;
  if (!vtkSparseGridRepresentation::LevelOfDetailBounds(
        contents, contents.Info.LevelOfDetail, bounds, levels, error))
  {
    return false;
  }
  // The level actually decoded: a request beyond the streams' levels decodes them all.
  vtkSparseGridRepresentation::Description shown = contents.Info;
  const int requested = contents.Info.LevelOfDetail;
  const int measuredLevels = shown.MeasuredLevels();
  shown.LevelOfDetail =
    requested > 0 && requested < (measuredLevels > 0 ? measuredLevels : levels) ? requested : 0;
  vtkNew<vtkStringArray> summary;
  summary->SetName("SparseGrid.Summary");
  summary->InsertNextValue(vtkSparseGridRepresentation::MakeSummary(shown));
  fieldData->AddArray(summary);
  vtkNew<vtkDoubleArray> bound;
  bound->SetName("SparseGrid.AbsoluteErrorBound");
  for (double b : bounds)
  {
    bound->InsertNextValue(b);
  }
  fieldData->AddArray(bound);
  const std::vector<double> measured =
    vtkSparseGridRepresentation::MeasuredErrors(shown, shown.LevelOfDetail);
  if (measured.size() == bounds.size())
  {
    vtkNew<vtkDoubleArray> error;
    error->SetName("SparseGrid.MaxAbsError");
    for (double e : measured)
    {
      error->InsertNextValue(e);
    }
    fieldData->AddArray(error);
  }
  vtkNew<vtkIntArray> lod;
  lod->SetName("SparseGrid.LevelOfDetail");
  lod->InsertNextValue(shown.LevelOfDetail > 0 ? shown.LevelOfDetail : levels);
  fieldData->AddArray(lod);
  vtkNew<vtkIntArray> available;
  available->SetName("SparseGrid.LevelsAvailable");
  available->InsertNextValue(levels);
  fieldData->AddArray(available);
  return true;
}

//------------------------------------------------------------------------------------------------
int vtkSparseGridProbe::CompareWithOriginal(const Contents& contents,
  vtkDataSetAttributes* original,
  vtkDataSetAttributes* out,
  bool clamp,
  bool errors,
  vtkMultiProcessController* controller)
{
  // The pairs compared, in the representation's order (the same on every process).
  struct Pair
  {
    vtkDataArray* Original = nullptr;
    vtkDataArray* Reconstructed = nullptr;
  };
  const auto& names = contents.Info.ArrayNames;
  std::vector<Pair> pairs(names.size());
  std::size_t components = 0;
  for (std::size_t i = 0; i < names.size(); ++i)
  {
    vtkDataArray* o = original ? original->GetArray(names[i].c_str()) : nullptr;
    vtkDataArray* r = out->GetArray(names[i].c_str());
    const int nc = i < contents.Info.Components.size() ? contents.Info.Components[i] : 1;
    if (o && r && o != r && o->GetNumberOfComponents() == nc && r->GetNumberOfComponents() == nc &&
      o->GetNumberOfTuples() == r->GetNumberOfTuples())
    {
      pairs[i] = { o, r };
    }
    components += static_cast<std::size_t>(nc);
  }
  if (clamp)
  {
    // Per component: (max, -min) of the original, -inf where this process has no such array.
    std::vector<double> local(2 * components, -std::numeric_limits<double>::infinity());
    std::vector<double> global(local.size());
    std::size_t k = 0;
    for (std::size_t i = 0; i < names.size(); ++i)
    {
      const int nc = i < contents.Info.Components.size() ? contents.Info.Components[i] : 1;
      for (int c = 0; c < nc; ++c, ++k)
      {
        if (pairs[i].Original && pairs[i].Original->GetNumberOfTuples() > 0)
        {
          double range[2];
          pairs[i].Original->GetRange(range, c);
          local[2 * k] = range[1];
          local[2 * k + 1] = -range[0];
        }
      }
    }
    if (!vtkSparseGridParallel::MaxAll(controller, local.data(), global.data(), local.size()))
    {
      global = local;
    }
    k = 0;
    for (std::size_t i = 0; i < names.size(); ++i)
    {
      const int nc = i < contents.Info.Components.size() ? contents.Info.Components[i] : 1;
      vtkDataArray* r = pairs[i].Reconstructed;
      for (int c = 0; c < nc; ++c, ++k)
      {
        const double high = global[2 * k], low = -global[2 * k + 1];
        if (!r || !(low <= high))
        {
          continue;
        }
        for (vtkIdType t = 0, n = r->GetNumberOfTuples(); t < n; ++t)
        {
          const double v = r->GetComponent(t, c);
          r->SetComponent(t, c, std::min(high, std::max(low, v)));
        }
      }
      if (r)
      {
        r->Modified();
      }
    }
  }
  vtkDataArray* mask = out->GetArray(MaskName);
  int compared = 0;
  for (std::size_t i = 0; i < names.size(); ++i)
  {
    const Pair& p = pairs[i];
    if (!p.Original)
    {
      continue;
    }
    ++compared;
    if (!errors)
    {
      continue;
    }
    vtkSmartPointer<vtkDataArray> difference =
      vtkSmartPointer<vtkDataArray>::Take(p.Reconstructed->NewInstance());
    difference->SetName((names[i] + "_error").c_str());
    difference->SetNumberOfComponents(p.Reconstructed->GetNumberOfComponents());
    difference->SetNumberOfTuples(p.Reconstructed->GetNumberOfTuples());
    for (vtkIdType t = 0, n = p.Reconstructed->GetNumberOfTuples(); t < n; ++t)
    {
      const bool inside = !mask || mask->GetComponent(t, 0) != 0;
      for (int c = 0; c < p.Reconstructed->GetNumberOfComponents(); ++c)
      {
        difference->SetComponent(t,
          c,
          inside ? p.Reconstructed->GetComponent(t, c) - p.Original->GetComponent(t, c) : 0.0);
      }
    }
    out->AddArray(difference);
    if (compared == 1)
    {
      out->SetActiveScalars(difference->GetName());
    }
  }
  return compared;
}
