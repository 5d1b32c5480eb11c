#include "vtkSparseGridHierarchize.h"

#include "vtkSparseGridArrays.h"
#include "vtkSparseGridExecution.h"
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
using vtkSparseGridParallel::ImageHeader;
using vtkSparseGridParallel::Outcome;

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
  if (local != Outcome::Failed)
  {
    job.Error.clear();
  }
  return vtkSparseGridParallel::Agree(job.Controller, local, job.Error);
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
      &mine,
      static_cast<std::size_t>(nc),
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

/// Collective: the metrics of one array from every process's partial sums, appended to the
/// job's (fixed-level or coded).
template<typename AnyJob>
Outcome AppendMetrics(AnyJob& job, sparsegrid::ErrorSums sums)
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

struct CodedJob
{
  std::vector<vtkDataArray*> Arrays; ///< this piece's arrays (empty for an empty piece)
  std::vector<std::string> Names;
  std::vector<int> Components;
  int PieceDims[3] = { 0, 0, 0 }; ///< samples of this piece per image axis (0: no piece)
  int Mode = vtkSparseGridHierarchize::BOUND_RELATIVE;
  double Bound = 1e-3;
  sparsegrid::codec::SpecialValues Specials; ///< kept bit for bit, outside the bound and metrics
  vtkSparseGridExecution* Exec = nullptr;
  vtkMultiProcessController* Controller = nullptr;

  // results
  std::vector<double> AbsoluteBound, MaxAbsError, RMSE, PSNR;
  double SpecialVoxels = 0; ///< over every array and process
  /// Per array, the max error of a decode of levels 1..k for every k (Description's
  /// LevelMaxAbsError, one row per array, each as long as its streams' levels).
  std::vector<std::vector<double>> LevelMaxAbsError;
  /// This piece's streams, array by array, component by component.
  vtkSparseGridParallel::CodedPiece Piece;
  double Seconds = 0;
  std::string Error;
};

/// One component's layout, contiguous.
sparsegrid::codec::Layout plain(sparsegrid::codec::Layout layout)
{
  layout.stride = 1;
  return layout;
}

/**
 * Collective: the per-level errors of one array's components on every process, merged into
 * one row (as many levels as the most any stream has; a stream with fewer shows its full
 * decode at the levels beyond its own) and appended to job.LevelMaxAbsError.
 */
Outcome ReduceLevelErrors(CodedJob& job, const std::vector<std::vector<long double>>& components)
{
  double levels = 0, all = 0;
  for (const auto& errors : components)
  {
    levels = std::max(levels, static_cast<double>(errors.size()));
  }
  if (!vtkSparseGridParallel::MaxAll(job.Controller, &levels, &all, 1))
  {
    job.Error = "reducing the level errors over the processes failed";
    return Outcome::Failed;
  }
  std::vector<double> row(static_cast<std::size_t>(all), 0.0), merged(row.size(), 0.0);
  for (const auto& errors : components)
  {
    for (std::size_t k = 0; k < row.size() && !errors.empty(); ++k)
    {
      row[k] =
        std::max(row[k], vtkSparseGridArrays::RoundUp(errors[std::min(k, errors.size() - 1)]));
    }
  }
  if (!row.empty() &&
    !vtkSparseGridParallel::MaxAll(job.Controller, row.data(), merged.data(), row.size()))
  {
    job.Error = "reducing the level errors over the processes failed";
    return Outcome::Failed;
  }
  job.LevelMaxAbsError.push_back(merged);
  return Outcome::Done;
}

template<typename T>
Outcome RunCoded(CodedJob& job)
{
  using Clock = std::chrono::steady_clock;
  const bool hasPiece = !job.Arrays.empty();
  sparsegrid::codec::Layout layout;
  std::size_t voxels = 1;
  for (int a = 0; a < 3; ++a)
  {
    layout.dims[a] = static_cast<std::uint64_t>(std::max(1, job.PieceDims[a]));
    voxels *= static_cast<std::size_t>(layout.dims[a]);
  }
  int stages = 0;
  for (int nc : job.Components)
  {
    stages += 2 * nc;
  }
  int stage = 0;
  auto nextStage = [&]()
  {
    job.Exec->SetProgressRange(
      static_cast<double>(stage) / stages, static_cast<double>(stage + 1) / stages);
    ++stage;
  };
  auto check = [&](const std::string& what, const sparsegrid::Status& status)
  {
    Outcome local = Outcome::Done;
    if (status.code() == sparsegrid::ErrorCode::Aborted)
    {
      local = Outcome::Aborted;
    }
    else if (!status.ok())
    {
      job.Error = vtkSparseGridExecution::Describe(what.c_str(), status);
      if (status.code() == sparsegrid::ErrorCode::NonFinite)
      {
        job.Error += " Replace or remove the NaN/Inf values first (e.g. with the Calculator).";
      }
      local = Outcome::Failed;
    }
    if (local != Outcome::Failed)
    {
      job.Error.clear();
    }
    return vtkSparseGridParallel::Agree(job.Controller, local, job.Error);
  };

  std::vector<T> decoded(hasPiece ? voxels : 0);
  for (std::size_t i = 0; i < job.Components.size(); ++i)
  {
    const std::string& name = job.Names[i];
    const int nc = job.Components[i];
    std::vector<T> storage;
    const T* values =
      hasPiece ? vtkSparseGridArrays::ContiguousValues<T>(job.Arrays[i], storage) : nullptr;
    layout.stride = static_cast<std::uint64_t>(nc);

    // 1. The value range of the whole array (all components, all processes) over its voxels
    // that are not special (NaN, Inf, the fill value): the relative bound's reference.
    double range[2] = { -std::numeric_limits<double>::infinity(),
      -std::numeric_limits<double>::infinity() }; // max, -min
    sparsegrid::Status status;
    double specials = 0;
    for (int c = 0; c < nc && hasPiece && status.ok(); ++c)
    {
      double lo = 0, hi = 0;
      std::uint64_t count = 0;
      status = sparsegrid::codec::valueRange(
        values + c, layout, job.Specials, lo, hi, count, job.Exec->Options());
      range[0] = std::max(range[0], hi);
      range[1] = std::max(range[1], -lo);
      specials += static_cast<double>(count);
    }
    Outcome outcome = check("array '" + name + "'", status);
    if (outcome != Outcome::Done)
    {
      return outcome;
    }
    double global[2], allSpecials = specials;
    if (!vtkSparseGridParallel::MaxAll(job.Controller, range, global, 2) ||
      (job.Controller &&
        !vtkSparseGridParallel::SumAll(job.Controller, &specials, &allSpecials, 1)))
    {
      job.Error = "reducing the value range over the processes failed";
      return Outcome::Failed;
    }
    job.SpecialVoxels += allSpecials;
    if (!(global[0] >= -global[1]))
    {
      global[0] = global[1] = 0; // every voxel is special: any bound keeps the (no) others
    }
    const double width = global[0] + global[1];
    double bound =
      job.Mode == vtkSparseGridHierarchize::BOUND_ABSOLUTE ? job.Bound : job.Bound * width;
    if (!(bound > 0))
    {
      // A constant array: any positive bound keeps it; scale the relative one to its value.
      bound = job.Bound * std::max(1.0, std::abs(global[0]));
    }
    // Overflow is found before anything is emitted: the quantiser works on (value / bound),
    // which must stay finite, and so must the range itself.
    if (!std::isfinite(width) || !std::isfinite(bound) || !std::isfinite(global[0] / bound) ||
      !std::isfinite(global[1] / bound))
    {
      std::ostringstream os;
      os << "Array '" << name << "': its value range (" << -global[1] << " to " << global[0]
         << ") with the bound " << bound << " overflows the codec's arithmetic: "
         << (!std::isfinite(width) || !std::isfinite(bound)
                ? "the range or the bound is too large for double. Use a smaller bound, or "
                  "rescale"
                : "the bound is too small for values this large. Use a larger bound, or rescale")
         << " the array (Calculator) before compressing it.";
      job.Error = os.str();
      return vtkSparseGridParallel::Agree(job.Controller, Outcome::Failed, job.Error);
    }
    job.AbsoluteBound.push_back(bound);

    // 2. Code each component of this piece, then keep the promise in check: decode what was
    // coded and compare every voxel of the piece with the input, in double. (A layer that two
    // pieces share counts twice in the RMSE; the maximum error is exact either way.)
    sparsegrid::ErrorSums partials;
    long double largest = 0; // against the original values, in their own type
    std::vector<std::vector<long double>> levelErrors(static_cast<std::size_t>(nc));
    for (int c = 0; c < nc; ++c)
    {
      nextStage();
      std::vector<std::uint8_t> stream;
      sparsegrid::ExecutionReport report;
      const auto start = Clock::now();
      status = hasPiece
        ? sparsegrid::codec::encode(
            values + c, layout, bound, job.Specials, stream, job.Exec->Options(), &report)
        : sparsegrid::Status();
      job.Seconds += std::chrono::duration<double>(Clock::now() - start).count();
      if ((outcome = check("coding '" + name + "'", status)) != Outcome::Done)
      {
        return outcome;
      }
      nextStage();
      if (hasPiece)
      {
        job.Exec->Record(report);
        status = sparsegrid::codec::decode(
          stream.data(), stream.size(), -1, decoded.data(), plain(layout), job.Exec->Options());
      }
      if ((outcome = check("checking the bound of '" + name + "'", status)) != Outcome::Done)
      {
        return outcome;
      }
      if (hasPiece)
      {
        // Against the input array itself, not the copy converted to the codec's type.
        long double full = 0;
        vtkSparseGridArrays::MeasureError(
          job.Arrays[i], c, decoded.data(), voxels, &partials, full, &job.Specials);
        largest = std::max(largest, full);
        status = vtkSparseGridArrays::MeasureLevels(values + c,
          static_cast<std::size_t>(nc),
          stream,
          decoded,
          plain(layout),
          job.Exec->Options(),
          levelErrors[static_cast<std::size_t>(c)]);
        levelErrors[static_cast<std::size_t>(c)].push_back(full);
        job.Piece.Bytes.insert(job.Piece.Bytes.end(), stream.begin(), stream.end());
        job.Piece.Lengths.push_back(stream.size());
      }
      if ((outcome = check("measuring the levels of '" + name + "'", status)) != Outcome::Done)
      {
        return outcome;
      }
    }
    partials.maxAbsError = vtkSparseGridArrays::RoundUp(largest);
    if ((outcome = AppendMetrics(job, partials)) != Outcome::Done ||
      (outcome = ReduceLevelErrors(job, levelErrors)) != Outcome::Done)
    {
      return outcome;
    }
    if (!(job.MaxAbsError.back() <= bound))
    {
      // Never expected (the encoder verifies every voxel); refusing beats a broken promise.
      job.Error = "Array '" + name + "': the coded data miss the error bound (" +
        std::to_string(job.MaxAbsError.back()) + " > " + std::to_string(bound) +
        "); this is a bug, please report it with the data.";
      return Outcome::Failed;
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

/// Bytes of the compressed arrays in the input: the whole image, whichever piece this process
/// holds.
double InputBytes(const ImageHeader& header, const vtkSparseGridRepresentation::Description& info)
{
  const double voxels = static_cast<double>(info.ImageDimensions[0]) * info.ImageDimensions[1] *
    info.ImageDimensions[2];
  double bytes = 0;
  for (std::size_t i = 0; i < header.Names.size(); ++i)
  {
    bytes += voxels * header.Components[i] * header.TypeSizes[i];
  }
  return bytes;
}

/**
 * Error-bounded compression of this process's piece, then the representation: the coded
 * streams of every piece are gathered on piece 0's process (compressed bytes only), which
 * emits them; the other pieces emit the metadata. Collective in a distributed run.
 */
Outcome CompressErrorBounded(CodedJob& job,
  int piece,
  const vtkSparseGridParallel::ImagePartition& partition,
  vtkImageData* image,
  const ImageHeader& header,
  const std::vector<vtkDataArray*>& arrays,
  bool useDouble,
  vtkSparseGridRepresentation::Description& info,
  vtkPolyData* output)
{
  vtkNew<vtkImageData> cropped;
  job.Names = header.Names;
  job.Components = header.Components;
  job.Piece.HasPiece = partition.HasPiece();
  if (job.Piece.HasPiece)
  {
    // Each voxel is coded once: a piece leaves a boundary plane it shares with the next piece
    // to that piece (coding it twice cost 3 % of the ratio on three ranks).
    int extent[6];
    std::copy(partition.Extent, partition.Extent + 6, extent);
    for (int a = 0; a < 3 && partition.SharedFaces; ++a)
    {
      if (extent[2 * a + 1] < header.WholeExtent[2 * a + 1] && extent[2 * a + 1] > extent[2 * a])
      {
        --extent[2 * a + 1];
      }
    }
    job.Arrays = vtkSparseGridParallel::CropToPiece(image, extent, header.Names, arrays, cropped);
    for (int a = 0; a < 3; ++a)
    {
      job.Piece.Extent[2 * a] = extent[2 * a] - header.WholeExtent[2 * a];
      job.Piece.Extent[2 * a + 1] = extent[2 * a + 1] - header.WholeExtent[2 * a];
      job.PieceDims[a] = extent[2 * a + 1] - extent[2 * a] + 1;
    }
  }
  for (int nc : header.Components)
  {
    job.Piece.Streams += nc;
  }
  const Outcome outcome = useDouble ? RunCoded<double>(job) : RunCoded<float>(job);
  if (outcome != Outcome::Done)
  {
    return outcome;
  }
  vtkNew<vtkUnsignedCharArray> streams;
  vtkSparseGridParallel::CodedPieces pieces;
  pieces.Bytes = streams;
  if (!vtkSparseGridParallel::GatherCodedPieces(job.Controller, job.Piece, pieces, job.Error))
  {
    return Outcome::Failed;
  }
  const std::vector<std::uint64_t>& offsets = pieces.Offsets;
  info.PieceExtents = pieces.Extents;
  info.Kind = vtkSparseGridRepresentation::Encoding::ErrorBounded;
  info.Components = header.Components;
  info.Precision = useDouble ? sparsegrid::Precision::Double : sparsegrid::Precision::Float;
  info.BoundMode = job.Mode;
  info.RequestedBound = job.Bound;
  info.AbsoluteBound = job.AbsoluteBound;
  info.MaxAbsError = job.MaxAbsError;
  info.RMSE = job.RMSE;
  info.PSNR = job.PSNR;
  // One row per array, all as long as the longest (an array whose streams have fewer levels
  // decodes in full beyond them).
  std::size_t levels = 0;
  for (const auto& row : job.LevelMaxAbsError)
  {
    levels = std::max(levels, row.size());
  }
  info.LevelMaxAbsError.clear();
  for (const auto& row : job.LevelMaxAbsError)
  {
    for (std::size_t k = 0; k < levels; ++k)
    {
      info.LevelMaxAbsError.push_back(row.empty() ? 0.0 : row[std::min(k, row.size() - 1)]);
    }
  }
  info.StoredBytes = offsets.back();
  info.CompressionRatio =
    info.StoredBytes > 0 ? InputBytes(header, info) / static_cast<double>(info.StoredBytes) : 0.0;
  vtkSparseGridParallel::MaxAll(job.Controller, &job.Seconds, &info.TimeSeconds, 1);
  info.Backend = job.Exec->BackendUsed();
  info.BackendNote = job.Exec->Note();
  info.Summary = vtkSparseGridRepresentation::MakeSummary(info);
  if (job.SpecialVoxels > 0)
  {
    std::ostringstream os;
    os << "; " << static_cast<std::uint64_t>(job.SpecialVoxels)
       << " special voxel values (NaN, Inf, fill value) kept exactly, outside the bound and the "
          "metrics";
    info.Summary += os.str();
  }
  const int rank = job.Controller ? job.Controller->GetLocalProcessId() : 0;
  if (piece == 0 && rank == 0)
  {
    std::string error;
    if (!vtkSparseGridRepresentation::ToCodedPolyData(info, streams, offsets, output, &error))
    {
      job.Error = "Cannot build the output: " + error;
      return Outcome::Failed;
    }
  }
  else
  {
    output->Initialize();
    vtkSparseGridRepresentation::WriteFieldData(info, output->GetFieldData());
  }
  return Outcome::Done;
}

/**
 * Collective: what the error-bounded encoding accepts, checked on every process's arrays in
 * their own type before anything is coded. 64-bit integers a double cannot hold are refused;
 * the processes agree on one precision that holds every piece's values (`useDouble` in: the
 * requested Double; out: the agreed one); the pieces must tile the image (a gap would come
 * back as zeros, and of two pieces that disagree on shared points one would silently win).
 */
Outcome AcceptCodedInput(vtkMultiProcessController* controller,
  Outcome local,
  const vtkSparseGridParallel::ImagePartition& partition,
  vtkImageData* image,
  const ImageHeader& header,
  const std::vector<vtkDataArray*>& arrays,
  bool& useDouble,
  std::string& error)
{
  double needsDouble = useDouble ? 1 : 0;
  for (std::size_t i = 0; local == Outcome::Done && partition.HasPiece() && i < arrays.size(); ++i)
  {
    std::uint64_t largest = 0;
    if (!vtkSparseGridArrays::ExactInDouble(arrays[i], largest))
    {
      error = "Array '" + header.Names[i] + "' holds 64-bit integers up to " +
        std::to_string(largest) +
        " in magnitude, beyond 2^53: no decoded value (double) can keep a bound on them. "
        "Subtract an offset (its minimum, say) in integer arithmetic before compressing it.";
      local = Outcome::Failed;
    }
    needsDouble = vtkSparseGridArrays::NeedsDouble(arrays[i]->GetDataType()) ? 1 : needsDouble;
  }
  if (local != Outcome::Failed)
  {
    error.clear();
  }
  if (const Outcome agreed = vtkSparseGridParallel::Agree(controller, local, error);
      agreed != Outcome::Done)
  {
    return agreed;
  }
  double agreed = needsDouble;
  if (!vtkSparseGridParallel::MaxAll(controller, &needsDouble, &agreed, 1))
  {
    error = "agreeing on the precision over the processes failed";
    return Outcome::Failed;
  }
  useDouble = agreed > 0;
  return vtkSparseGridParallel::CheckTiling(controller,
    partition,
    image,
    partition.HasPiece() ? arrays : std::vector<vtkDataArray*>(),
    error);
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
      this->Backend, std::nullopt, this->ChunkSize, this->NumberOfThreads) };
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
  vtkImageData* image = vtkImageData::SafeDownCast(input);
  vtkInformation* inInfo = inputVector[0]->GetInformationObject(0);
  vtkInformation* outInfo = outputVector->GetInformationObject(0);
  // Distributed runs: every step below that involves the controller is collective, and every
  // process runs every step, whatever happened to it (see vtkSparseGridParallel.h).
  vtkMultiProcessController* controller = vtkSparseGridParallel::DistributedController(outInfo);
  const int piece = outInfo->Has(vtkStreamingDemandDrivenPipeline::UPDATE_PIECE_NUMBER())
    ? outInfo->Get(vtkStreamingDemandDrivenPipeline::UPDATE_PIECE_NUMBER())
    : 0;
  if (!controller && piece > 0)
  {
    // One process streaming pieces: each request saw the whole image and only piece 0 carries
    // the result, so that the pieces do not duplicate it.
    return 1;
  }
  // Every failure goes through Errors: shown once, however often ParaView updates the filter,
  // with an empty output (never a half-made representation).
  const vtkMTimeType inputTime = input ? input->GetMTime() : 0;
  auto fail = [&](const std::string& message)
  {
    if (output)
    {
      output->Initialize();
    }
    return this->Errors->Report(this, outInfo, inputTime, message);
  };
  // Settings are the same on every process, so all of them leave here together, before any
  // collective call.
  const std::string invalid = this->InvalidSettings();
  if (!invalid.empty())
  {
    return fail(invalid);
  }
  const int rank = controller ? controller->GetLocalProcessId() : 0;
  std::string error;
  auto agree = [&](Outcome local)
  {
    if (local != Outcome::Failed)
    {
      error.clear();
    }
    return vtkSparseGridParallel::Agree(controller, local, error);
  };
  // What RequestData returns when the processes agreed on not going on.
  auto stop = [&](Outcome agreed) { return agreed == Outcome::Failed ? fail(error) : 0; };
  // The last step of both encodings, once the output is made.
  auto finish = [&](const vtkSparseGridRepresentation::Description& info, const char* advice)
  {
    if (!info.BackendNote.empty())
    {
      vtkWarningMacro(<< info.BackendNote);
    }
    if (info.CompressionRatio < 1 && rank == 0)
    {
      vtkWarningMacro("The compressed data are larger than the input (ratio "
        << info.CompressionRatio << ":1): " << advice);
    }
    AddLocalInputPoints(output, image->GetNumberOfPoints());
    this->Errors->Clear();
    this->UpdateProgress(1.0);
    return 1;
  };

  // 1. Read pieces: each process keeps its own piece of the image (vtkSparseGridParallel).
  Outcome local = Outcome::Done;
  if (!image)
  {
    error =
      std::string("Sparse Grid Hierarchize needs image data (vtkImageData) but the input is ") +
      (input ? input->GetClassName() : "missing") +
      ". Resample it to an image first (Resample To Image).";
    local = Outcome::Failed;
  }
  else if (image->GetNumberOfPoints() > 0 && !image->GetDirectionMatrix()->IsIdentity())
  {
    error = "Oriented images (a direction matrix other than the identity) are not supported.";
    local = Outcome::Failed;
  }
  if (const Outcome agreed = agree(local); agreed != Outcome::Done)
  {
    return stop(agreed);
  }
  const vtkSparseGridParallel::ImagePartition partition =
    vtkSparseGridParallel::PartitionImage(controller, inInfo, piece, image);
  if (partition.Leader < 0)
  {
    return fail("The input image is empty.");
  }
  // What is compressed: the first process with a piece decides, every other process with a piece
  // finds the same arrays.
  ImageHeader header;
  std::vector<vtkDataArray*> arrays;
  local = rank == partition.Leader
    ? SelectArrays(image, partition.WholeExtent, this->Internals->ArrayNames, header, arrays, error)
    : Outcome::Done;
  if (const Outcome agreed = agree(local); agreed != Outcome::Done)
  {
    return stop(agreed);
  }
  vtkSparseGridParallel::BroadcastHeader(controller, partition.Leader, header);
  if (partition.HasPiece() && rank != partition.Leader)
  {
    local = FindArrays(image, header, partition.Leader, arrays, error);
  }
  vtkSparseGridRepresentation::Description info;
  Job job;
  if (local == Outcome::Done)
  {
    local = DescribeImage(header, partition, info, job, error);
  }

  if (this->ErrorBoundMode != BOUND_OFF)
  {
    if (local == Outcome::Done && !(this->ErrorBound > 0 && std::isfinite(this->ErrorBound)))
    {
      error = "ErrorBound must be a positive, finite number (got " +
        std::to_string(this->ErrorBound) + ").";
      local = Outcome::Failed;
    }
    bool useDouble = this->Precision == DOUBLE;
    if (const Outcome agreed =
          AcceptCodedInput(controller, local, partition, image, header, arrays, useDouble, error);
        agreed != Outcome::Done)
    {
      return stop(agreed);
    }
    // 2-4. Code each piece within the bound, check it, and emit the coded streams.
    vtkSparseGridExecution exec(
      this, this->Backend, this->NumberOfThreads, sparsegrid::Optimizations());
    CodedJob coded;
    coded.Mode = this->ErrorBoundMode;
    coded.Bound = this->ErrorBound;
    coded.Specials.useFillValue = this->UseFillValue;
    coded.Specials.fillValue = this->FillValue;
    coded.Exec = &exec;
    coded.Controller = controller;
    const Outcome outcome = CompressErrorBounded(
      coded, piece, partition, image, header, arrays, useDouble > 0, info, output);
    if (outcome != Outcome::Done)
    {
      // Aborted or failed: an empty output, never a half-made representation.
      output->Initialize();
      return outcome == Outcome::Aborted ? 1 : fail(coded.Error);
    }
    return finish(info,
      "most values could not be predicted within the bound and are stored exactly (a bound "
      "close to the resolution of the data, or noise-like or extreme values). A larger Error "
      "Bound compresses.");
  }

  // 2. The fixed-level grid, the same on every process.
  std::uint64_t outputBytes = 0;
  if (local == Outcome::Done)
  {
    local = MakeGrid(this, header, info, outputBytes, error);
  }
  if (const Outcome agreed = agree(local); agreed != Outcome::Done)
  {
    return stop(agreed);
  }
  // Of two pieces that disagree on shared points one would silently win (the other checks of
  // the tiling follow from the grid points each piece owns).
  if (const Outcome agreed = vtkSparseGridParallel::CheckTiling(controller,
        partition,
        image,
        partition.HasPiece() ? arrays : std::vector<vtkDataArray*>(),
        error);
      agreed != Outcome::Done)
  {
    return stop(agreed);
  }
  vtkNew<vtkImageData> cropped;
  job.Arrays = partition.HasPiece()
    ? vtkSparseGridParallel::CropToPiece(image, partition.Extent, header.Names, arrays, cropped)
    : std::vector<vtkDataArray*>();
  job.Grid = &info.Grid;
  job.Names = header.Names;
  job.Components = header.Components;
  job.ComputeError = this->ComputeError;
  job.Controller = controller;
  vtkSparseGridExecution exec(this, this->Backend, this->NumberOfThreads, Optimizations(this));
  job.Exec = &exec;

  // 3-6. Sample, reduce, hierarchize and measure, array by array.
  const Outcome outcome = info.Precision == sparsegrid::Precision::Double
    ? CompressFixedLevel<double>(job)
    : CompressFixedLevel<float>(job);
  if (outcome != Outcome::Done)
  {
    output->Initialize(); // an aborted or failed filter leaves an empty output
    return outcome == Outcome::Aborted ? 1 : fail(job.Error);
  }

  // 7. Emit: the representation on piece 0, its metadata on the other pieces.
  // The slowest process sets the pace; all report the same time.
  vtkSparseGridParallel::MaxAll(controller, &job.Seconds, &info.TimeSeconds, 1);
  info.CompressionRatio =
    outputBytes > 0 ? InputBytes(header, info) / static_cast<double>(outputBytes) : 0.0;
  info.MaxAbsError = job.MaxAbsError;
  info.RMSE = job.RMSE;
  info.PSNR = job.PSNR;
  info.Backend = exec.BackendUsed();
  info.BackendNote = exec.Note();
  if (piece == 0)
  {
    std::vector<vtkDataArray*> coefficients(job.Coefficients.begin(), job.Coefficients.end());
    if (!vtkSparseGridRepresentation::ToPolyData(
          info, coefficients, output, &error, this->OutputGridPoints))
    {
      return fail("Cannot build the output: " + error);
    }
  }
  else
  {
    // The other pieces carry the metadata but no payload: ParaView's data information then
    // counts the representation once, and every process still sees what it describes.
    output->Initialize();
    vtkSparseGridRepresentation::WriteFieldData(info, output->GetFieldData());
  }
  return finish(info,
    "the level is high for this image, or its sizes are far from 2^n + 1 samples (the grid "
    "resolves each axis at the next 2^n + 1). Use the error-bounded mode, or a lower Level.");
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
