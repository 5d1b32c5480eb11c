#include "vtkSparseGridHierarchize.h"

#include "vtkSparseGridArrays.h"
#include "vtkSparseGridExecution.h"
#include "vtkSparseGridHierarchizeBricks.h"
#include "vtkSparseGridParallel.h"
#include "vtkSparseGridRepresentation.h"

#include "vtkCellData.h"
#include "vtkCommunicator.h"
#include "vtkDataObject.h"
#include "vtkDoubleArray.h"
#include "vtkFieldData.h"
#include "vtkFloatArray.h"
#include "vtkImageData.h"
#include "vtkInformation.h"
#include "vtkInformationVector.h"
#include "vtkMatrix3x3.h"
#include "vtkMultiProcessController.h"
#include "vtkObjectFactory.h"
#include "vtkPointData.h"
#include "vtkPolyData.h"
#include "vtkSmartPointer.h"
#include "vtkStreamingDemandDrivenPipeline.h"
#include "vtkTypeInt64Array.h"
#include "vtkUnsignedCharArray.h"

#include <sparsegrid/codec.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

vtkStandardNewMacro(vtkSparseGridHierarchize);

struct vtkSparseGridHierarchize::vtkInternals
{
  std::vector<std::string> ArrayNames;
};

namespace
{
using vtkSparseGridHierarchizeBricks::CompressCoded;
using vtkSparseGridHierarchizeBricks::InputBytes;
using vtkSparseGridParallel::ImageHeader;
using vtkSparseGridParallel::Outcome;

/// Every process learns whether all went well; `error` is the agreed message. Collective.
Outcome AgreeOn(vtkMultiProcessController* controller, Outcome local, std::string& error)
{
  if (local != Outcome::Failed)
  {
    error.clear();
  }
  return vtkSparseGridParallel::Agree(controller, local, error);
}

/// Everything the fixed-level compression needs, and what it produces.
struct Job
{
  const sparsegrid::Grid* Grid = nullptr;
  std::vector<std::size_t> GridDims; ///< samples per grid axis of the whole image
  /// This process's piece, per grid axis (dims all 0 for an empty piece).
  sparsegrid::ImagePiece Piece;
  /// The piece's points that count for the error metrics: each image point belongs to exactly
  /// one piece ([offset, offset + dims - 1) per axis, the last sample to the last piece), so
  /// that points shared by neighbouring pieces are counted once.
  std::vector<std::size_t> OwnedDims; ///< from the piece's first point
  std::vector<vtkDataArray*> Arrays;  ///< this piece's arrays (empty for an empty piece)
  std::vector<std::string> Names;     ///< per array, from the header
  std::vector<int> Components;        ///< per array, from the header
  bool ComputeError = false;
  vtkSparseGridExecution* Exec = nullptr;
  vtkMultiProcessController* Controller = nullptr; ///< nullptr: serial

  // results
  std::vector<vtkSmartPointer<vtkDataArray>> Coefficients;
  std::vector<double> MaxAbsError, RMSE, PSNR;
  double Seconds = 0;
  std::string Error;

  // progress: one stage per core call
  int Stage = 0;
  int Stages = 1;
  void NextStage()
  {
    this->Exec->SetProgressRange(static_cast<double>(this->Stage) / this->Stages,
      static_cast<double>(this->Stage + 1) / this->Stages);
    ++this->Stage;
  }
};

/// The local outcome of a core call, with its message in job.Error.
Outcome Check(Job& job, const std::string& what, const sparsegrid::Status& status)
{
  if (status.ok())
  {
    return Outcome::Done;
  }
  if (status.code() == sparsegrid::ErrorCode::Aborted)
  {
    return Outcome::Aborted;
  }
  job.Error = vtkSparseGridExecution::Describe(what.c_str(), status);
  return Outcome::Failed;
}

/// Every process learns whether all went well (collective in a distributed run).
Outcome Agree(Job& job, Outcome local)
{
  return AgreeOn(job.Controller, local, job.Error);
}

/// Collective: the metrics of one array from every process's partial sums, appended to the
/// job's.
Outcome AppendMetrics(Job& job, sparsegrid::ErrorSums sums)
{
  if (!vtkSparseGridParallel::ReduceErrorSums(job.Controller, sums))
  {
    job.Error = "reducing the error metrics over the processes failed";
    return Outcome::Failed;
  }
  const sparsegrid::ErrorMetrics metrics = sums.metrics();
  if (!std::isfinite(metrics.maxAbsError) || !std::isfinite(metrics.rmse) ||
    std::isnan(metrics.psnr))
  {
    // The same sums, hence the same verdict, on every process.
    std::ostringstream os;
    os << "Array '" << job.Names[job.MaxAbsError.size()]
       << "': its error cannot be measured in double (max error " << metrics.maxAbsError
       << ", RMSE " << metrics.rmse << "): its values (up to "
       << std::max(sums.maximum, sums.negatedMinimum)
       << " in magnitude) are too large. Rescale the array (Calculator) before compressing it.";
    job.Error = os.str();
    return Outcome::Failed;
  }
  job.MaxAbsError.push_back(metrics.maxAbsError);
  job.RMSE.push_back(metrics.rmse);
  job.PSNR.push_back(metrics.psnr);
  return Outcome::Done;
}

/// Finite values beyond float's range would become Inf in the conversion and then be reported
/// as "NaN or Inf" although the image holds none: say what happened instead. Collective.
template<typename T>
Outcome CheckRange(Job& job, vtkDataArray* array, const std::string& name)
{
  Outcome range = Outcome::Done;
  for (int c = 0; array && std::is_same<T, float>::value && c < array->GetNumberOfComponents() &&
       range == Outcome::Done;
       ++c)
  {
    double r[2];
    array->GetFiniteRange(r, c);
    const double largest = std::max(std::abs(r[0]), std::abs(r[1]));
    if (largest > std::numeric_limits<float>::max())
    {
      job.Error = "Array '" + name + "' holds values beyond the range of Float (up to " +
        std::to_string(largest) +
        "). Set Precision to Double, or rescale the array, before compressing it.";
      range = Outcome::Failed;
    }
  }
  return Agree(job, range);
}

/**
 * Sample, then reduce: each process samples the grid points its piece owns (0 elsewhere) and
 * the processes sum what they sampled. The sum is the sampling of the whole image, exactly:
 * each point has one owner and x + 0 is exact in floating point. Collective.
 */
template<typename T>
Outcome SampleAndReduce(Job& job,
  const std::string& name,
  const T* image,
  int nc,
  int c,
  std::vector<T>& values,
  bool& tilingChecked)
{
  const std::size_t size = values.size();
  std::uint64_t mine = 0;
  job.NextStage();
  Outcome outcome = Check(job,
    "array '" + name + "'",
    sparsegrid::sampleImagePiece(*job.Grid,
      image ? image + c : nullptr,
      job.Piece,
      values.data(),
      sparsegrid::ComponentLayout::strided(static_cast<std::size_t>(nc)),
      {},
      &mine,
      job.Exec->Options()));
  if ((outcome = Agree(job, outcome)) != Outcome::Done || !job.Controller)
  {
    return outcome;
  }
  std::vector<T> sum(size);
  if (!vtkSparseGridParallel::SumAll(job.Controller, values.data(), sum.data(), size))
  {
    job.Error = "summing the sampled values over the processes failed";
    return Outcome::Failed;
  }
  values.swap(sum);
  if (!tilingChecked)
  {
    // Ownership depends on the pieces only: check once that they tile the image.
    std::uint64_t total = 0;
    vtkSparseGridParallel::SumAll(job.Controller, &mine, &total, 1);
    tilingChecked = true;
    if (total != size)
    {
      job.Error = "the image pieces of the processes do not tile the image (they own " +
        std::to_string(total) + " of the " + std::to_string(size) +
        " grid points): neighbouring pieces must share their boundary layer of samples, as "
        "the pieces of VTK's extent translator do (redistribute the image, or read it with a "
        "reader that reads pieces)";
      return Outcome::Failed; // the same sum, hence the same verdict, everywhere
    }
  }
  return Outcome::Done;
}

/**
 * Hierarchize the sampled values in place. Small (grid-sized) and deterministic: every process
 * hierarchizes the same values and gets the same coefficients, so no broadcast is needed.
 */
template<typename T>
Outcome HierarchizeValues(Job& job, const std::string& name, std::vector<T>& values)
{
  job.NextStage();
  sparsegrid::ExecutionReport report;
  Outcome outcome = Check(job,
    "hierarchizing '" + name + "'",
    sparsegrid::hierarchize(*job.Grid, values.data(), job.Exec->Options(), &report));
  // Surpluses of values near the largest float overflow (v - (a + b) / 2 can exceed it): found
  // here, before anything is emitted, with a true message.
  if (outcome == Outcome::Done && !sparsegrid::checkFinite(values.data(), values.size(), "c").ok())
  {
    job.Error = "Array '" + name + "': its hierarchical surpluses overflow " +
      (std::is_same<T, float>::value ? std::string("Float") : std::string("Double")) +
      " (the values are close to the largest representable number). Set Precision to Double, "
      "or rescale the array, before compressing it.";
    outcome = Outcome::Failed;
  }
  if ((outcome = Agree(job, outcome)) == Outcome::Done)
  {
    job.Exec->Record(report);
  }
  return outcome;
}

/**
 * Measure: reconstruct the array on this piece's own points and compare with the original
 * values, read as double so that a float precision does not hide part of its own error. Each
 * process measures the points it owns; the partial sums are reduced. Collective.
 */
template<typename T>
Outcome Measure(Job& job,
  vtkDataArray* array,
  const std::string& name,
  int nc,
  const T* coefficients)
{
  const std::size_t size = static_cast<std::size_t>(job.Grid->size());
  const std::size_t D = job.GridDims.size();
  std::size_t owned = 1;
  for (std::size_t n : job.OwnedDims)
  {
    owned *= n;
  }
  // The sub-box of the unit cube that the owned points span, with the whole image's spacing,
  // so that the points fall where the serial reconstruction puts them.
  sparsegrid::RegularGrid target;
  for (std::size_t t = 0; t < D; ++t)
  {
    const double spacing = 1.0 / static_cast<double>(job.GridDims[t] - 1);
    target.dims.push_back(job.OwnedDims[t]);
    target.origin.push_back(static_cast<double>(job.Piece.offset[t]) * spacing);
    target.spacing.push_back(spacing);
  }
  std::vector<T> values(size), component(owned);
  std::vector<T> approx(owned * static_cast<std::size_t>(nc));
  for (int c = 0; c < nc; ++c)
  {
    for (std::size_t p = 0; p < size; ++p)
    {
      values[p] = coefficients[p * nc + c];
    }
    job.NextStage();
    Outcome outcome = Outcome::Done;
    if (owned > 0)
    {
      sparsegrid::ExecutionReport report;
      outcome = Check(job,
        "measuring the error of '" + name + "'",
        sparsegrid::reconstructImage(
          *job.Grid, values.data(), target, component.data(), job.Exec->Options(), &report));
      if (outcome == Outcome::Done)
      {
        job.Exec->Record(report);
      }
    }
    if ((outcome = Agree(job, outcome)) != Outcome::Done)
    {
      return outcome;
    }
    for (std::size_t p = 0; p < owned; ++p)
    {
      approx[p * nc + c] = component[p];
    }
  }
  // Local partial sums over the owned points, in the serial order (points, then components),
  // so that one process reproduces the core's computeErrorMetrics exactly.
  sparsegrid::ErrorSums sums;
  if (owned > 0)
  {
    std::vector<double> storage;
    const double* reference = vtkSparseGridArrays::ContiguousValues<double>(array, storage);
    std::vector<std::size_t> pieceStride(D), ijk(D, 0);
    std::size_t s = 1;
    for (std::size_t t = 0; t < D; ++t)
    {
      pieceStride[t] = s;
      s *= job.Piece.dims[t];
    }
    for (std::size_t p = 0; p < owned; ++p)
    {
      std::size_t at = 0;
      for (std::size_t t = 0; t < D; ++t)
      {
        at += ijk[t] * pieceStride[t];
      }
      for (int c = 0; c < nc; ++c)
      {
        sums.add(reference[at * nc + c], static_cast<double>(approx[p * nc + c]));
      }
      for (std::size_t t = 0; t < D && ++ijk[t] == job.OwnedDims[t]; ++t)
      {
        ijk[t] = 0;
      }
    }
  }
  return AppendMetrics(job, sums);
}

/// The fixed-level sparse grid of every array: sample, reduce, hierarchize, measure.
template<typename T>
Outcome CompressFixedLevel(Job& job)
{
  using Clock = std::chrono::steady_clock;
  const std::size_t size = static_cast<std::size_t>(job.Grid->size());
  const bool hasPiece = !job.Arrays.empty(); // false for an empty piece, which still takes part
  job.Stage = 0;
  job.Stages = 0;
  for (int nc : job.Components)
  {
    job.Stages += nc * (job.ComputeError ? 3 : 2);
  }
  bool tilingChecked = false;
  for (std::size_t i = 0; i < job.Components.size(); ++i)
  {
    const std::string& name = job.Names[i];
    const int nc = job.Components[i];
    vtkDataArray* array = hasPiece ? job.Arrays[i] : nullptr;
    Outcome outcome = CheckRange<T>(job, array, name);
    if (outcome != Outcome::Done)
    {
      return outcome;
    }
    const auto start = Clock::now();
    std::vector<T> storage;
    const T* image = array ? vtkSparseGridArrays::ContiguousValues<T>(array, storage) : nullptr;
    vtkNew<vtkSparseGridArrays::ArrayOf<T>> coefficients;
    coefficients->SetNumberOfComponents(nc);
    coefficients->SetNumberOfTuples(static_cast<vtkIdType>(size));
    T* out = coefficients->GetPointer(0);
    std::vector<T> values(size);
    for (int c = 0; c < nc; ++c)
    {
      if ((outcome = SampleAndReduce<T>(job, name, image, nc, c, values, tilingChecked)) !=
          Outcome::Done ||
        (outcome = HierarchizeValues<T>(job, name, values)) != Outcome::Done)
      {
        return outcome;
      }
      for (std::size_t p = 0; p < size; ++p)
      {
        out[p * nc + c] = values[p];
      }
    }
    job.Seconds += std::chrono::duration<double>(Clock::now() - start).count();
    job.Coefficients.emplace_back(coefficients.Get());
    std::vector<T>().swap(storage); // the converted image is not needed to measure
    if (job.ComputeError && (outcome = Measure<T>(job, array, name, nc, out)) != Outcome::Done)
    {
      return outcome;
    }
  }
  return Outcome::Done;
}

/// Per process, how much of the image it received (distributed runs: its piece). Outside the
/// SparseGrid.* names on purpose: those are the representation, identical on every process
/// and kept by .sgrid files; this value is neither.
void AddLocalInputPoints(vtkPolyData* output, vtkIdType points)
{
  vtkNew<vtkTypeInt64Array> received;
  received->SetName("SparseGridLocal.InputPoints");
  received->InsertNextValue(static_cast<vtkTypeInt64>(points));
  output->GetFieldData()->AddArray(received);
}

/**
 * The choice of what is compressed, made by the first process with a piece: the requested point
 * arrays (or the active scalars), with a message that says what is wrong when one cannot be
 * compressed.
 */
Outcome SelectArrays(vtkImageData* image,
  const int whole[6],
  const std::vector<std::string>& requested,
  ImageHeader& header,
  std::vector<vtkDataArray*>& arrays,
  std::string& error)
{
  std::copy(whole, whole + 6, header.WholeExtent);
  image->GetOrigin(header.Origin);
  image->GetSpacing(header.Spacing);
  // Geometry first: a one-point image has nothing to compress, whatever its arrays.
  if (vtkSparseGridParallel::IsEmptyExtent(whole) ||
    (whole[0] == whole[1] && whole[2] == whole[3] && whole[4] == whole[5]))
  {
    error = "The input image has a single point: there is nothing to compress.";
    return Outcome::Failed;
  }
  for (int a = 0; a < 3; ++a)
  {
    if (!std::isfinite(header.Origin[a]) || !std::isfinite(header.Spacing[a]) ||
      (whole[2 * a + 1] > whole[2 * a] && header.Spacing[a] == 0))
    {
      std::ostringstream os;
      os << "The input image's origin and spacing must be finite, with a non-zero spacing "
            "along every axis that has more than one sample (origin "
         << header.Origin[0] << " " << header.Origin[1] << " " << header.Origin[2] << ", spacing "
         << header.Spacing[0] << " " << header.Spacing[1] << " " << header.Spacing[2] << ").";
      error = os.str();
      return Outcome::Failed;
    }
  }
  vtkPointData* pd = image->GetPointData();
  std::vector<std::string> names = requested;
  if (names.empty())
  {
    vtkDataArray* scalars = pd->GetScalars();
    if (!scalars || !scalars->GetName())
    {
      error = "No array is selected and the input has no (named) active point scalars.";
      return Outcome::Failed;
    }
    names.emplace_back(scalars->GetName());
  }
  for (const std::string& name : names)
  {
    if (std::find(header.Names.begin(), header.Names.end(), name) != header.Names.end())
    {
      continue;
    }
    vtkDataArray* array = pd->GetArray(name.c_str());
    if (!array)
    {
      std::ostringstream available;
      for (int i = 0; i < pd->GetNumberOfArrays(); ++i)
      {
        if (pd->GetArray(i) && pd->GetArray(i)->GetName())
        {
          available << (available.tellp() > 0 ? ", " : "") << pd->GetArray(i)->GetName();
        }
      }
      if (pd->GetAbstractArray(name.c_str()))
      {
        error = "Point array '" + name + "' is not numeric.";
      }
      else if (image->GetCellData()->GetAbstractArray(name.c_str()))
      {
        error = "'" + name +
          "' is a cell array; only point arrays can be compressed (apply Cell Data to Point "
          "Data first).";
      }
      else
      {
        error = "The input has no point array named '" + name +
          "' (point arrays: " + (available.tellp() > 0 ? available.str() : std::string("none")) +
          ").";
      }
      return Outcome::Failed;
    }
    arrays.push_back(array);
    header.Names.push_back(name);
    header.Components.push_back(array->GetNumberOfComponents());
    header.TypeSizes.push_back(array->GetDataTypeSize());
    header.DataTypes.push_back(array->GetDataType());
  }
  return Outcome::Done;
}

/// Every other process with a piece finds the first piece's arrays in its own piece.
Outcome FindArrays(vtkImageData* image,
  const ImageHeader& header,
  int leader,
  std::vector<vtkDataArray*>& arrays,
  std::string& error)
{
  vtkPointData* pd = image->GetPointData();
  for (std::size_t i = 0; i < header.Names.size(); ++i)
  {
    vtkDataArray* array = pd->GetArray(header.Names[i].c_str());
    if (!array || array->GetNumberOfComponents() != header.Components[i])
    {
      std::ostringstream os;
      os << "This piece of the image "
         << (array ? "has a different number of components in" : "lacks") << " point array '"
         << header.Names[i] << "' (process " << leader << " has " << header.Components[i]
         << " components).";
      error = os.str();
      return Outcome::Failed;
    }
    arrays.push_back(array);
  }
  return Outcome::Done;
}

/**
 * The compressed image's geometry (the same on every process) and this process's piece of
 * it along each grid axis (the image axes with more than one sample).
 */
Outcome DescribeImage(const ImageHeader& header,
  const vtkSparseGridParallel::ImagePartition& partition,
  vtkSparseGridRepresentation::Description& info,
  Job& job,
  std::string& error)
{
  info.ArrayNames = header.Names;
  const bool hasPiece = partition.HasPiece();
  const int* extent = partition.Extent;
  for (int a = 0; a < 3; ++a)
  {
    const int n = header.WholeExtent[2 * a + 1] - header.WholeExtent[2 * a] + 1;
    info.ImageDimensions[a] = n;
    info.ImageSpacing[a] = header.Spacing[a];
    // The position of the first point, so that the extent is implicitly 0-based.
    info.ImageOrigin[a] = header.Origin[a] + header.WholeExtent[2 * a] * header.Spacing[a];
    info.Bounds[2 * a] = info.Bounds[2 * a + 1] = info.ImageOrigin[a];
    if (n < 2)
    {
      continue;
    }
    if (!(header.Spacing[a] > 0))
    {
      error = "The input image has a non-positive spacing on axis " + std::to_string(a) + ".";
      return Outcome::Failed;
    }
    info.AxisMap.push_back(a);
    job.GridDims.push_back(static_cast<std::size_t>(n));
    info.Bounds[2 * a + 1] = info.ImageOrigin[a] + (n - 1) * header.Spacing[a];
    // This piece along the axis, and the samples it owns for the error metrics (each sample
    // once: the shared boundary layer belongs to the piece after it).
    const std::size_t dims =
      hasPiece ? static_cast<std::size_t>(extent[2 * a + 1] - extent[2 * a] + 1) : 0;
    const bool last = extent[2 * a + 1] == header.WholeExtent[2 * a + 1];
    job.Piece.wholeDims.push_back(static_cast<std::size_t>(n));
    job.Piece.offset.push_back(
      hasPiece ? static_cast<std::size_t>(extent[2 * a] - header.WholeExtent[2 * a]) : 0);
    job.Piece.dims.push_back(dims);
    job.OwnedDims.push_back(dims == 0 ? 0 : (last ? dims : dims - 1));
  }
  if (info.AxisMap.empty())
  {
    error = "The input image has a single point: there is nothing to compress.";
    return Outcome::Failed;
  }
  return Outcome::Done;
}

/// The loop optimisations of the fastsg papers as the filter's properties set them.
sparsegrid::Optimizations Optimizations(vtkSparseGridHierarchize* self)
{
  sparsegrid::Optimizations optimizations;
  optimizations.inv1 = self->GetInv1();
  optimizations.inv2 = self->GetInv2();
  optimizations.inv3 = self->GetInv3();
  optimizations.inv4 = self->GetInv4();
  optimizations.ichg1 = self->GetIchg1();
  optimizations.ichg2 = self->GetIchg2();
  optimizations.vec1 = self->GetVec1();
  optimizations.sred1 = self->GetSred1();
  optimizations.chunkSize = self->GetChunkSize();
  return optimizations;
}

/**
 * The fixed-level grid: the core's default rule (sparsegrid::imageGridSpec) for what is not
 * set, checked against the memory of this process (each one holds the grid-sized sum).
 */
Outcome MakeGrid(vtkSparseGridHierarchize* self,
  const ImageHeader& header,
  vtkSparseGridRepresentation::Description& info,
  std::uint64_t& outputBytes,
  std::string& error)
{
  const int level = self->GetLevel();
  if (level < 0 || level > 3 * sparsegrid::MaxAxisLevel)
  {
    error = "Level must be 0 (automatic) or 1 to " + std::to_string(3 * sparsegrid::MaxAxisLevel) +
      " (got " + std::to_string(level) + ").";
    return Outcome::Failed;
  }
  std::vector<std::size_t> samples;
  std::vector<int> capLimits;
  for (int a : info.AxisMap)
  {
    samples.push_back(static_cast<std::size_t>(info.ImageDimensions[a]));
    capLimits.push_back(self->GetLevelLimits()[a]);
  }
  const sparsegrid::GridSpec spec =
    sparsegrid::imageGridSpec(samples, self->GetBoundary(), level, capLimits);
  info.Precision = self->GetPrecision() == vtkSparseGridHierarchize::DOUBLE
    ? sparsegrid::Precision::Double
    : sparsegrid::Precision::Float;
  sparsegrid::Status status = sparsegrid::Grid::create(spec, info.Grid);
  if (!status.ok())
  {
    error = vtkSparseGridExecution::Describe("Cannot build the sparse grid", status);
    return Outcome::Failed;
  }
  int components = 0;
  for (int nc : header.Components)
  {
    components += nc;
  }
  outputBytes = sparsegrid::compressedBytes(info.Grid, info.Precision, components);
  // The peak, not the payload: the coefficients, one grid-sized buffer of sampled values, and
  // with Output Grid Points the points (3 floats) and their vertex cells (an offset and a
  // connectivity entry, 8 bytes each): 28 bytes per point (about 30 measured).
  const double points = static_cast<double>(info.Grid.size());
  const double valueBytes = info.Precision == sparsegrid::Precision::Double ? 8 : 4;
  const double peak = static_cast<double>(outputBytes) + points * valueBytes +
    (self->GetOutputGridPoints() ? points * (3 * sizeof(float) + 2 * sizeof(vtkIdType)) : 0.0);
  status = sparsegrid::checkAllocation(static_cast<std::uint64_t>(peak),
    self->GetOutputGridPoints() ? "the sparse-grid coefficients and grid points"
                                : "the sparse-grid coefficients");
  if (!status.ok())
  {
    error = vtkSparseGridExecution::Describe("Level too large", status);
    return Outcome::Failed;
  }
  return Outcome::Done;
}

/// What both encodings start from (vtkSparseGridHierarchizeBricks::ImagePiece), and what the
/// fixed-level encoding needs besides.
struct Input : vtkSparseGridHierarchizeBricks::ImagePiece
{
  Job Fixed; ///< the piece along each grid axis
};

/**
 * Collective: each process keeps its own piece of the image (vtkSparseGridParallel), the first
 * process with a piece chooses the arrays, every other one finds them in its piece, and the
 * image's geometry is described.
 */
Outcome ReadInput(vtkDataObject* input,
  vtkInformation* inInfo,
  int piece,
  const std::vector<std::string>& names,
  Input& in,
  std::string& error)
{
  in.Image = vtkImageData::SafeDownCast(input);
  Outcome local = Outcome::Done;
  if (!in.Image)
  {
    error =
      std::string("Sparse Grid Hierarchize needs image data (vtkImageData) but the input is ") +
      (input ? input->GetClassName() : "missing") +
      ". Resample it to an image first (Resample To Image).";
    local = Outcome::Failed;
  }
  else if (in.Image->GetNumberOfPoints() > 0 && !in.Image->GetDirectionMatrix()->IsIdentity())
  {
    error = "Oriented images (a direction matrix other than the identity) are not supported.";
    local = Outcome::Failed;
  }
  if ((local = AgreeOn(in.Controller, local, error)) != Outcome::Done)
  {
    return local;
  }
  in.Partition = vtkSparseGridParallel::PartitionImage(in.Controller, inInfo, piece, in.Image);
  if (in.Partition.Leader < 0)
  {
    error = "The input image is empty."; // the same partition, hence verdict, everywhere
    return Outcome::Failed;
  }
  const int rank = in.Controller ? in.Controller->GetLocalProcessId() : 0;
  local = rank == in.Partition.Leader
    ? SelectArrays(in.Image, in.Partition.WholeExtent, names, in.Header, in.Arrays, error)
    : Outcome::Done;
  if ((local = AgreeOn(in.Controller, local, error)) != Outcome::Done)
  {
    return local;
  }
  vtkSparseGridParallel::BroadcastHeader(in.Controller, in.Partition.Leader, in.Header);
  if (in.Partition.HasPiece() && rank != in.Partition.Leader)
  {
    local = FindArrays(in.Image, in.Header, in.Partition.Leader, in.Arrays, error);
  }
  if (local == Outcome::Done)
  {
    local = DescribeImage(in.Header, in.Partition, in.Info, in.Fixed, error);
  }
  return AgreeOn(in.Controller, local, error);
}

/**
 * The fixed-level sparse grid: the grid, the same on every process; then sample, reduce,
 * hierarchize and measure, array by array; the representation on piece 0, its metadata on the
 * other pieces. Collective.
 */
Outcome CompressFixed(vtkSparseGridHierarchize* self,
  Input& in,
  int piece,
  vtkPolyData* output,
  std::string& error)
{
  std::uint64_t outputBytes = 0;
  Outcome local = MakeGrid(self, in.Header, in.Info, outputBytes, error);
  if ((local = AgreeOn(in.Controller, local, error)) != Outcome::Done)
  {
    return local;
  }
  // Of two pieces that disagree on shared points one would silently win (the other checks of
  // the tiling follow from the grid points each piece owns).
  if (const Outcome agreed = vtkSparseGridParallel::CheckTiling(in.Controller,
        in.Partition,
        in.Image,
        in.Partition.HasPiece() ? in.Arrays : std::vector<vtkDataArray*>(),
        error);
      agreed != Outcome::Done)
  {
    return agreed;
  }
  Job& job = in.Fixed;
  vtkNew<vtkImageData> cropped;
  job.Arrays = in.Partition.HasPiece()
    ? vtkSparseGridParallel::CropToPiece(
        in.Image, in.Partition.Extent, in.Header.Names, in.Arrays, cropped)
    : std::vector<vtkDataArray*>();
  vtkSparseGridRepresentation::Description& info = in.Info;
  job.Grid = &info.Grid;
  job.Names = in.Header.Names;
  job.Components = in.Header.Components;
  job.ComputeError = self->GetComputeError();
  job.Controller = in.Controller;
  vtkSparseGridExecution exec(
    self, self->GetBackend(), self->GetNumberOfThreads(), Optimizations(self));
  job.Exec = &exec;
  const Outcome outcome = info.Precision == sparsegrid::Precision::Double
    ? CompressFixedLevel<double>(job)
    : CompressFixedLevel<float>(job);
  if (outcome != Outcome::Done)
  {
    error = job.Error;
    return outcome;
  }
  // The slowest process sets the pace; all report the same time.
  vtkSparseGridParallel::MaxAll(in.Controller, &job.Seconds, &info.TimeSeconds, 1);
  info.CompressionRatio =
    outputBytes > 0 ? InputBytes(in.Header, info) / static_cast<double>(outputBytes) : 0.0;
  info.MaxAbsError = job.MaxAbsError;
  info.RMSE = job.RMSE;
  info.PSNR = job.PSNR;
  info.Backend = exec.BackendUsed();
  info.BackendNote = exec.Note();
  if (piece != 0)
  {
    // The other pieces carry the metadata but no payload: ParaView's data information then
    // counts the representation once, and every process still sees what it describes.
    output->Initialize();
    vtkSparseGridRepresentation::WriteFieldData(info, output->GetFieldData());
    return Outcome::Done;
  }
  std::vector<vtkDataArray*> coefficients(job.Coefficients.begin(), job.Coefficients.end());
  if (!vtkSparseGridRepresentation::ToPolyData(
        info, coefficients, output, &error, self->GetOutputGridPoints()))
  {
    error = "Cannot build the output: " + error;
    return Outcome::Failed;
  }
  return Outcome::Done;
}
} // namespace

//------------------------------------------------------------------------------------------------
vtkSparseGridHierarchize::vtkSparseGridHierarchize()
  : Internals(new vtkInternals)
  , Errors(new vtkSparseGridErrorOnce)
{
}

//------------------------------------------------------------------------------------------------
vtkSparseGridHierarchize::~vtkSparseGridHierarchize() = default;

//------------------------------------------------------------------------------------------------
void vtkSparseGridHierarchize::AddArrayName(const char* name)
{
  if (name && *name)
  {
    this->Internals->ArrayNames.emplace_back(name);
    this->Modified();
  }
}

//------------------------------------------------------------------------------------------------
void vtkSparseGridHierarchize::ClearArrayNames()
{
  if (!this->Internals->ArrayNames.empty())
  {
    this->Internals->ArrayNames.clear();
    this->Modified();
  }
}

//------------------------------------------------------------------------------------------------
int vtkSparseGridHierarchize::GetNumberOfArrayNames() const
{
  return static_cast<int>(this->Internals->ArrayNames.size());
}

//------------------------------------------------------------------------------------------------
const char* vtkSparseGridHierarchize::GetArrayName(int index) const
{
  if (index < 0 || index >= this->GetNumberOfArrayNames())
  {
    return nullptr;
  }
  return this->Internals->ArrayNames[static_cast<std::size_t>(index)].c_str();
}

//------------------------------------------------------------------------------------------------
int vtkSparseGridHierarchize::FillInputPortInformation(int, vtkInformation* info)
{
  // Any dataset is accepted so that a wrong input gets an explanation from RequestData rather
  // than the executive's generic type error.
  info->Set(vtkAlgorithm::INPUT_REQUIRED_DATA_TYPE(), "vtkDataSet");
  return 1;
}

//------------------------------------------------------------------------------------------------
int vtkSparseGridHierarchize::RequestInformation(vtkInformation*,
  vtkInformationVector** inputVector,
  vtkInformationVector* outputVector)
{
  // The compressed image's geometry is the input's, known before any data: downstream filters
  // (Resample To Image with its original geometry) read it here instead of running the pipeline.
  vtkInformation* inInfo = inputVector[0]->GetInformationObject(0);
  vtkInformation* outInfo = outputVector->GetInformationObject(0);
  outInfo->Remove(vtkSparseGridRepresentation::IMAGE_GEOMETRY());
  if (inInfo && inInfo->Has(vtkStreamingDemandDrivenPipeline::WHOLE_EXTENT()) &&
    inInfo->Has(vtkDataObject::ORIGIN()) && inInfo->Has(vtkDataObject::SPACING()))
  {
    int whole[6];
    double origin[3], spacing[3], geometry[9];
    inInfo->Get(vtkStreamingDemandDrivenPipeline::WHOLE_EXTENT(), whole);
    inInfo->Get(vtkDataObject::ORIGIN(), origin);
    inInfo->Get(vtkDataObject::SPACING(), spacing);
    if (!vtkSparseGridParallel::IsEmptyExtent(whole))
    {
      for (int a = 0; a < 3; ++a)
      {
        geometry[a] = whole[2 * a + 1] - whole[2 * a] + 1;
        geometry[3 + a] = origin[a] + whole[2 * a] * spacing[a];
        geometry[6 + a] = spacing[a];
      }
      outInfo->Set(vtkSparseGridRepresentation::IMAGE_GEOMETRY(), geometry, 9);
    }
  }
  return 1;
}

//------------------------------------------------------------------------------------------------
int vtkSparseGridHierarchize::RequestUpdateExtent(vtkInformation*,
  vtkInformationVector** inputVector,
  vtkInformationVector* outputVector)
{
  vtkInformation* inInfo = inputVector[0]->GetInformationObject(0);
  vtkInformation* outInfo = outputVector->GetInformationObject(0);
  // Ghost layers would make neighbouring pieces overlap by more than the one shared layer that
  // the core's ownership rule expects.
  inInfo->Set(vtkStreamingDemandDrivenPipeline::UPDATE_NUMBER_OF_GHOST_LEVELS(), 0);
  if (vtkSparseGridParallel::DistributedController(outInfo))
  {
    // Distributed: each process reads only its own piece of the image and the processes then
    // combine grid-sized sums; no process ever holds the whole image. The request is the whole
    // extent split into pieces: the executive of a producer that can produce sub-extents cuts
    // it with the extent translator (pieces that share their boundary layer, as the core's
    // ownership rule expects); RequestData cuts what other producers send.
    inInfo->Set(vtkStreamingDemandDrivenPipeline::UPDATE_PIECE_NUMBER(),
      outInfo->Get(vtkStreamingDemandDrivenPipeline::UPDATE_PIECE_NUMBER()));
    inInfo->Set(vtkStreamingDemandDrivenPipeline::UPDATE_NUMBER_OF_PIECES(),
      outInfo->Get(vtkStreamingDemandDrivenPipeline::UPDATE_NUMBER_OF_PIECES()));
  }
  else
  {
    // Serial (one process, possibly streaming several pieces): the sparse grid spans the whole
    // image, so ask for all of it.
    inInfo->Set(vtkStreamingDemandDrivenPipeline::UPDATE_PIECE_NUMBER(), 0);
    inInfo->Set(vtkStreamingDemandDrivenPipeline::UPDATE_NUMBER_OF_PIECES(), 1);
  }
  if (inInfo->Has(vtkStreamingDemandDrivenPipeline::WHOLE_EXTENT()))
  {
    inInfo->Set(vtkStreamingDemandDrivenPipeline::UPDATE_EXTENT(),
      inInfo->Get(vtkStreamingDemandDrivenPipeline::WHOLE_EXTENT()),
      6);
  }
  return 1;
}

//------------------------------------------------------------------------------------------------
std::string vtkSparseGridHierarchize::InvalidSettings() const
{
  std::vector<std::string> problems = { vtkSparseGridExecution::OutOfRange("Error Bound Mode",
                                          this->ErrorBoundMode,
                                          BOUND_OFF,
                                          BOUND_RELATIVE,
                                          " (0 Off, 1 Absolute, 2 Relative)"),
    vtkSparseGridExecution::OutOfRange(
      "Precision", this->Precision, FLOAT, DOUBLE, " (0 Float, 1 Double)"),
    vtkSparseGridExecution::InvalidSettings(
      this->Backend, std::nullopt, this->ChunkSize, this->NumberOfThreads),
    vtkSparseGridExecution::OutOfRange(
      "Brick Size", this->BrickSize, 8, 65536, " (samples per axis of each coded brick)") };
  if (this->ErrorBoundMode != BOUND_OFF &&
    !(this->ErrorBound > 0 && std::isfinite(this->ErrorBound)))
  {
    problems.push_back("ErrorBound must be a positive, finite number (got " +
      std::to_string(this->ErrorBound) + ").");
  }
  const char* axes[3] = { "Level Limits (x)", "Level Limits (y)", "Level Limits (z)" };
  for (int a = 0; a < 3; ++a)
  {
    // Caps above MaxAxisLevel are refused by the grid specification with its own message.
    if (this->LevelLimits[a] < -1)
    {
      problems.push_back(std::string(axes[a]) + " must be 0 or -1 (automatic) or 1 to " +
        std::to_string(sparsegrid::MaxAxisLevel) + " (got " + std::to_string(this->LevelLimits[a]) +
        ").");
    }
  }
  for (const std::string& m : problems)
  {
    if (!m.empty())
    {
      return m;
    }
  }
  return std::string();
}

//------------------------------------------------------------------------------------------------
int vtkSparseGridHierarchize::RequestData(vtkInformation*,
  vtkInformationVector** inputVector,
  vtkInformationVector* outputVector)
{
  vtkDataObject* input = vtkDataObject::GetData(inputVector[0], 0);
  vtkPolyData* output = vtkPolyData::GetData(outputVector, 0);
  vtkInformation* outInfo = outputVector->GetInformationObject(0);
  // Distributed runs: every step below that involves the controller is collective, and every
  // process runs every step, whatever happened to it (see vtkSparseGridParallel.h).
  Input in;
  in.Controller = vtkSparseGridParallel::DistributedController(outInfo);
  const int piece = outInfo->Has(vtkStreamingDemandDrivenPipeline::UPDATE_PIECE_NUMBER())
    ? outInfo->Get(vtkStreamingDemandDrivenPipeline::UPDATE_PIECE_NUMBER())
    : 0;
  if (!in.Controller && piece > 0)
  {
    // One process streaming pieces: each request saw the whole image and only piece 0 carries
    // the result, so that the pieces do not duplicate it.
    return 1;
  }
  // Settings are the same on every process, so all of them leave here together, before any
  // collective call.
  std::string error = this->InvalidSettings();
  Outcome outcome = error.empty() ? ReadInput(input,
                                      inputVector[0]->GetInformationObject(0),
                                      piece,
                                      this->Internals->ArrayNames,
                                      in,
                                      error)
                                  : Outcome::Failed;
  const bool coded = this->ErrorBoundMode != BOUND_OFF;
  if (outcome == Outcome::Done)
  {
    outcome = coded ? CompressCoded(this, in, output, error)
                    : CompressFixed(this, in, piece, output, error);
  }
  if (outcome != Outcome::Done)
  {
    // Aborted or failed: an empty output, never a half-made representation; each failure is
    // shown once, however often ParaView updates the filter.
    output->Initialize();
    return outcome == Outcome::Aborted
      ? 1
      : this->Errors->Report(this, outInfo, input ? input->GetMTime() : 0, error);
  }
  const vtkSparseGridRepresentation::Description& info = in.Info;
  if (!info.BackendNote.empty())
  {
    vtkWarningMacro(<< info.BackendNote);
  }
  if (info.CompressionRatio < 1 && (!in.Controller || in.Controller->GetLocalProcessId() == 0))
  {
    vtkWarningMacro("The compressed data are larger than the input (ratio "
      << info.CompressionRatio << ":1): "
      << (coded ? "most values could not be predicted within the bound and are stored exactly (a "
                  "bound close to the resolution of the data, or noise-like or extreme values). "
                  "A larger Error Bound compresses."
                : "the level is high for this image, or its sizes are far from 2^n + 1 samples "
                  "(the grid resolves each axis at the next 2^n + 1). Use the error-bounded "
                  "mode, or a lower Level."));
  }
  AddLocalInputPoints(output, in.Image->GetNumberOfPoints());
  this->Errors->Clear();
  this->UpdateProgress(1.0);
  return 1;
}

//------------------------------------------------------------------------------------------------
void vtkSparseGridHierarchize::PrintSelf(ostream& os, vtkIndent indent)
{
  this->Superclass::PrintSelf(os, indent);
  os << indent << "ArrayNames:";
  for (const auto& name : this->Internals->ArrayNames)
  {
    os << " " << name;
  }
  os << "\n";
  os << indent << "UseFillValue: " << this->UseFillValue << "\n";
  os << indent << "FillValue: " << this->FillValue << "\n";
  os << indent << "Level: " << this->Level << "\n";
  os << indent << "LevelLimits: " << this->LevelLimits[0] << " " << this->LevelLimits[1] << " "
     << this->LevelLimits[2] << "\n";
  os << indent << "Boundary: " << this->Boundary << "\n";
  os << indent << "Precision: " << (this->Precision == DOUBLE ? "Double" : "Float") << "\n";
  os << indent << "Backend: " << this->Backend << "\n";
  os << indent << "ComputeError: " << this->ComputeError << "\n";
  os << indent << "OutputGridPoints: " << this->OutputGridPoints << "\n";
  os << indent << "inv1 inv2 inv3 inv4 ichg1 ichg2 vec1 sred1: " << this->Inv1 << this->Inv2
     << this->Inv3 << this->Inv4 << this->Ichg1 << this->Ichg2 << this->Vec1 << this->Sred1 << "\n";
  os << indent << "ChunkSize: " << this->ChunkSize << "\n";
  os << indent << "NumberOfThreads: " << this->NumberOfThreads << "\n";
}
