#include "vtkSparseGridHierarchize.h"

#include "vtkSparseGridArrays.h"
#include "vtkSparseGridExecution.h"
#include "vtkSparseGridParallel.h"
#include "vtkSparseGridRepresentation.h"

#include "vtkCellData.h"
#include "vtkCommunicator.h"
#include "vtkDataObject.h"
#include "vtkDoubleArray.h"
#include "vtkExtentTranslator.h"
#include "vtkFieldData.h"
#include "vtkFloatArray.h"
#include "vtkImageData.h"
#include "vtkInformation.h"
#include "vtkInformationIntegerRequestKey.h"
#include "vtkInformationVector.h"
#include "vtkMatrix3x3.h"
#include "vtkMultiProcessController.h"
#include "vtkMultiProcessStream.h"
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
using vtkSparseGridParallel::Outcome;

/**
 * What every process must know about the whole image before it can take part: its extent,
 * geometry and the arrays to compress. The lowest process with a non-empty piece decides it and
 * broadcasts it, since a process with an empty piece may have no arrays at all.
 */
struct ImageHeader
{
  int WholeExtent[6] = { 0, -1, 0, -1, 0, -1 };
  double Origin[3] = { 0, 0, 0 };
  double Spacing[3] = { 1, 1, 1 };
  std::vector<std::string> Names;
  std::vector<int> Components;
  std::vector<int> TypeSizes;
  std::vector<int> DataTypes;

  void Push(vtkMultiProcessStream& stream) const
  {
    for (int v : this->WholeExtent)
    {
      stream << v;
    }
    for (int a = 0; a < 3; ++a)
    {
      stream << this->Origin[a] << this->Spacing[a];
    }
    stream << static_cast<int>(this->Names.size());
    for (std::size_t i = 0; i < this->Names.size(); ++i)
    {
      stream << this->Names[i] << this->Components[i] << this->TypeSizes[i] << this->DataTypes[i];
    }
  }

  void Pop(vtkMultiProcessStream& stream)
  {
    for (int& v : this->WholeExtent)
    {
      stream >> v;
    }
    for (int a = 0; a < 3; ++a)
    {
      stream >> this->Origin[a] >> this->Spacing[a];
    }
    int n = 0;
    stream >> n;
    this->Names.resize(static_cast<std::size_t>(n));
    this->Components.resize(static_cast<std::size_t>(n));
    this->TypeSizes.resize(static_cast<std::size_t>(n));
    this->DataTypes.resize(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i)
    {
      stream >> this->Names[i] >> this->Components[i] >> this->TypeSizes[i] >> this->DataTypes[i];
    }
  }
};

bool IsEmpty(const int extent[6])
{
  return extent[1] < extent[0] || extent[3] < extent[2] || extent[5] < extent[4];
}

/// Max error, max, -min, sum of squares and count of one array on the points a process owns:
/// partial results that processes combine (max, max, max, sum, sum) into the metrics of the
/// whole image, exactly as sparsegrid::computeErrorMetrics computes them in one process.
struct ErrorPartials
{
  double Maxima[3] = { 0,
    -std::numeric_limits<double>::infinity(),
    -std::numeric_limits<double>::infinity() };
  double Sums[2] = { 0, 0 };

  void Add(double reference, double approx)
  {
    const double e = std::abs(approx - reference);
    this->Maxima[0] = std::max(this->Maxima[0], e);
    this->Maxima[1] = std::max(this->Maxima[1], reference);
    this->Maxima[2] = std::max(this->Maxima[2], -reference);
    this->Sums[0] += e * e;
  }

  /// Collective: appends max error, RMSE and PSNR of the whole image to the vectors.
  bool Finish(vtkMultiProcessController* controller,
    std::vector<double>& maxAbsError,
    std::vector<double>& rmse,
    std::vector<double>& psnr) const
  {
    double maxima[3], sums[2];
    if (!vtkSparseGridParallel::MaxAll(controller, this->Maxima, maxima, 3) ||
      !vtkSparseGridParallel::SumAll(controller, this->Sums, sums, 2))
    {
      return false;
    }
    const double count = sums[1];
    const double r = count > 0 ? std::sqrt(sums[0] / count) : 0.0;
    const double range = count > 0 ? maxima[1] + maxima[2] : 0.0;
    double p = 0;
    if (count > 0)
    {
      // The conventions of sparsegrid::computeErrorMetrics.
      p = r == 0     ? std::numeric_limits<double>::infinity()
        : range == 0 ? -std::numeric_limits<double>::infinity()
                     : 20.0 * std::log10(range / r);
    }
    maxAbsError.push_back(maxima[0]);
    rmse.push_back(r);
    psnr.push_back(p);
    return true;
  }
};

/// Everything the typed part of RequestData needs.
struct Job
{
  const sparsegrid::Grid* Grid = nullptr;
  std::vector<std::size_t> GridDims; ///< samples per grid axis of the whole image
  /// This process's piece, per grid axis (dims all 0 for an empty piece).
  sparsegrid::ImagePiece Piece;
  /// The piece's points that count for the error metrics: each image point belongs to exactly
  /// one piece ([offset, offset + dims - 1) per axis, the last sample to the last piece), so
  /// that points shared by neighbouring pieces are counted once.
  std::vector<std::size_t> OwnedBegin, OwnedDims; ///< relative to the piece
  std::vector<vtkDataArray*> Arrays; ///< this piece's arrays (empty for an empty piece)
  std::vector<std::string> Names;    ///< per array, from the header
  std::vector<int> Components;       ///< per array, from the header
  bool ComputeError = false;
  vtkSparseGridExecution* Exec = nullptr;
  vtkMultiProcessController* Controller = nullptr; ///< nullptr: serial

  // results
  std::vector<vtkSmartPointer<vtkDataArray>> Coefficients;
  std::vector<double> MaxAbsError, RMSE, PSNR;
  double Seconds = 0;
  std::string Error;
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

template<typename T>
Outcome Run(Job& job)
{
  using Clock = std::chrono::steady_clock;
  const sparsegrid::Grid& grid = *job.Grid;
  const std::size_t size = static_cast<std::size_t>(grid.size());
  const bool hasPiece = !job.Arrays.empty(); // false for an empty piece, which still takes part
  std::size_t owned = 1;
  for (std::size_t n : job.OwnedDims)
  {
    owned *= n;
  }
  int stages = 0;
  for (int nc : job.Components)
  {
    stages += nc * (job.ComputeError ? 3 : 2);
  }
  int stage = 0;
  auto nextStage = [&]()
  {
    job.Exec->SetProgressRange(
      static_cast<double>(stage) / stages, static_cast<double>(stage + 1) / stages);
    ++stage;
  };

  bool tilingChecked = false;
  for (std::size_t i = 0; i < job.Components.size(); ++i)
  {
    const std::string& name = job.Names[i];
    const int nc = job.Components[i];
    vtkDataArray* array = hasPiece ? job.Arrays[i] : nullptr;
    const auto start = Clock::now();

    std::vector<T> storage;
    // Finite values beyond float's range would become Inf in the conversion and then be
    // reported as "NaN or Inf" although the image holds none: say what happened instead.
    Outcome range = Outcome::Done;
    if (array && std::is_same<T, float>::value)
    {
      for (int c = 0; c < nc && range == Outcome::Done; ++c)
      {
        double r[2];
        array->GetFiniteRange(r, c);
        if (std::max(std::abs(r[0]), std::abs(r[1])) > std::numeric_limits<float>::max())
        {
          job.Error = "Array '" + name + "' holds values beyond the range of Float (up to " +
            std::to_string(std::max(std::abs(r[0]), std::abs(r[1]))) +
            "). Set Precision to Double, or rescale the array, before compressing it.";
          range = Outcome::Failed;
        }
      }
    }
    if ((range = Agree(job, range)) != Outcome::Done)
    {
      return range;
    }
    const T* image = array ? vtkSparseGridArrays::ContiguousValues<T>(array, storage) : nullptr;

    vtkNew<vtkSparseGridArrays::ArrayOf<T>> coefficients;
    coefficients->SetNumberOfComponents(nc);
    coefficients->SetNumberOfTuples(static_cast<vtkIdType>(size));
    T* out = coefficients->GetPointer(0);
    std::vector<T> values(size);
    std::vector<T> sum(job.Controller ? size : 0);
    for (int c = 0; c < nc; ++c)
    {
      // Each process samples the grid points its piece owns (0 elsewhere); the sum over the
      // processes is the sampling of the whole image, exactly: each point has one owner and
      // x + 0 is exact in floating point.
      nextStage();
      std::uint64_t mine = 0;
      Outcome outcome = Check(job,
        "array '" + name + "'",
        sparsegrid::sampleImagePiece(grid,
          image ? image + c : nullptr,
          job.Piece,
          values.data(),
          &mine,
          static_cast<std::size_t>(nc),
          job.Exec->Options()));
      if ((outcome = Agree(job, outcome)) != Outcome::Done)
      {
        return outcome;
      }
      if (job.Controller)
      {
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
              " grid points): neighbouring pieces must share their boundary layer of "
              "samples, as the pieces of VTK's extent translator do (redistribute the image, "
              "or read it with a reader that reads pieces)";
            return Outcome::Failed; // the same sum, hence the same verdict, everywhere
          }
        }
      }
      // Small (grid-sized) and deterministic: every process hierarchizes the same values and
      // gets the same coefficients, so no broadcast is needed.
      nextStage();
      sparsegrid::ExecutionReport report;
      outcome = Check(job,
        "hierarchizing '" + name + "'",
        sparsegrid::hierarchize(grid, values.data(), job.Exec->Options(), &report));
      // Surpluses of values near the largest float overflow (v - (a + b) / 2 can exceed it):
      // found here, before anything is emitted, with a true message.
      if (outcome == Outcome::Done && !sparsegrid::checkFinite(values.data(), size, "c").ok())
      {
        job.Error = "Array '" + name + "': its hierarchical surpluses overflow " +
          (std::is_same<T, float>::value ? std::string("Float") : std::string("Double")) +
          " (the values are close to the largest representable number). Set Precision to "
          "Double, or rescale the array, before compressing it.";
        outcome = Outcome::Failed;
      }
      if ((outcome = Agree(job, outcome)) != Outcome::Done)
      {
        return outcome;
      }
      job.Exec->Record(report);
      for (std::size_t p = 0; p < size; ++p)
      {
        out[p * nc + c] = values[p];
      }
    }
    job.Seconds += std::chrono::duration<double>(Clock::now() - start).count();
    job.Coefficients.emplace_back(coefficients.Get());

    if (job.ComputeError)
    {
      // Reconstruct on this piece's own points and compare with the original values, read as
      // double so that a float precision does not hide part of its own error. Each process
      // measures the points it owns; max, sum of squares, count, min and max are reduced.
      storage.clear();
      storage.shrink_to_fit();
      std::vector<T> approx(owned * static_cast<std::size_t>(nc));
      std::vector<T> component(owned);
      sparsegrid::RegularGrid target;
      for (std::size_t t = 0; t < job.GridDims.size(); ++t)
      {
        // The sub-box of the unit cube that the owned points span, with the whole image's
        // spacing, so that the points fall where the serial reconstruction puts them.
        const double spacing = 1.0 / static_cast<double>(job.GridDims[t] - 1);
        target.dims.push_back(job.OwnedDims[t]);
        target.origin.push_back(
          static_cast<double>(job.Piece.offset[t] + job.OwnedBegin[t]) * spacing);
        target.spacing.push_back(spacing);
      }
      for (int c = 0; c < nc; ++c)
      {
        for (std::size_t p = 0; p < size; ++p)
        {
          values[p] = out[p * nc + c];
        }
        nextStage();
        Outcome outcome = Outcome::Done;
        if (owned > 0)
        {
          sparsegrid::ExecutionReport report;
          outcome = Check(job,
            "measuring the error of '" + name + "'",
            sparsegrid::reconstructImage(
              grid, values.data(), target, component.data(), job.Exec->Options(), &report));
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
      // Local partial sums over the owned points, in the serial order (points, then
      // components), so that one process reproduces the core's computeErrorMetrics exactly.
      ErrorPartials partials;
      if (owned > 0)
      {
        std::vector<double> referenceStorage;
        const double* reference =
          vtkSparseGridArrays::ContiguousValues<double>(array, referenceStorage);
        const std::size_t D = job.GridDims.size();
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
            at += (job.OwnedBegin[t] + ijk[t]) * pieceStride[t];
          }
          for (int c = 0; c < nc; ++c)
          {
            partials.Add(reference[at * nc + c], static_cast<double>(approx[p * nc + c]));
          }
          for (std::size_t t = 0; t < D && ++ijk[t] == job.OwnedDims[t]; ++t)
          {
            ijk[t] = 0;
          }
        }
        partials.Sums[1] = static_cast<double>(owned) * nc;
      }
      if (!partials.Finish(job.Controller, job.MaxAbsError, job.RMSE, job.PSNR))
      {
        job.Error = "reducing the error metrics over the processes failed";
        return Outcome::Failed;
      }
    }
  }
  return Outcome::Done;
}

/// The error-bounded path: each process codes its own piece; nothing image-sized moves.
struct CodedJob
{
  std::vector<vtkDataArray*> Arrays; ///< this piece's arrays (empty for an empty piece)
  std::vector<std::string> Names;
  std::vector<int> Components;
  int PieceDims[3] = { 0, 0, 0 }; ///< samples of this piece per image axis (0: no piece)
  int Mode = vtkSparseGridHierarchize::BOUND_RELATIVE;
  double Bound = 1e-3;
  vtkSparseGridExecution* Exec = nullptr;
  vtkMultiProcessController* Controller = nullptr;

  // results
  std::vector<double> AbsoluteBound, MaxAbsError, RMSE, PSNR;
  std::vector<std::uint8_t> Bytes;    ///< this piece's streams, array by array, component by
  std::vector<std::uint64_t> Lengths; ///< component; the length of each
  double Seconds = 0;
  std::string Error;
};

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

    // 1. The value range of the whole array (all components, all processes): the relative
    // bound's reference, and the NaN/Inf check.
    double range[2] = { -std::numeric_limits<double>::infinity(),
      -std::numeric_limits<double>::infinity() }; // max, -min
    sparsegrid::Status status;
    for (int c = 0; c < nc && hasPiece && status.ok(); ++c)
    {
      double lo = 0, hi = 0;
      status = sparsegrid::codec::valueRange(values + c, layout, lo, hi, job.Exec->Options());
      range[0] = std::max(range[0], hi);
      range[1] = std::max(range[1], -lo);
    }
    Outcome outcome = check("array '" + name + "'", status);
    if (outcome != Outcome::Done)
    {
      return outcome;
    }
    double global[2];
    if (!vtkSparseGridParallel::MaxAll(job.Controller, range, global, 2))
    {
      job.Error = "reducing the value range over the processes failed";
      return Outcome::Failed;
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
    if (!std::isfinite(width) || !std::isfinite(bound) || !std::isfinite(global[0] / bound))
    {
      job.Error = "Array '" + name + "': its value range (" + std::to_string(-global[1]) + " to " +
        std::to_string(global[0]) +
        ") overflows the codec's arithmetic for this bound. Use a larger bound, or rescale the "
        "array (Calculator) before compressing it.";
      return vtkSparseGridParallel::Agree(job.Controller, Outcome::Failed, job.Error);
    }
    job.AbsoluteBound.push_back(bound);

    // 2. Code each component of this piece, then keep the promise in check: decode what was
    // coded and compare every voxel of the piece with the input, in double. (A layer that two
    // pieces share counts twice in the RMSE; the maximum error is exact either way.)
    ErrorPartials partials;
    for (int c = 0; c < nc; ++c)
    {
      nextStage();
      std::vector<std::uint8_t> stream;
      sparsegrid::ExecutionReport report;
      const auto start = Clock::now();
      status = hasPiece
        ? sparsegrid::codec::encode(values + c, layout, bound, stream, job.Exec->Options(), &report)
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
        sparsegrid::codec::Layout plain = layout;
        plain.stride = 1;
        status = sparsegrid::codec::decode(
          stream.data(), stream.size(), -1, decoded.data(), plain, job.Exec->Options());
      }
      if ((outcome = check("checking the bound of '" + name + "'", status)) != Outcome::Done)
      {
        return outcome;
      }
      if (hasPiece)
      {
        for (std::size_t v = 0; v < voxels; ++v)
        {
          partials.Add(static_cast<double>(values[v * nc + c]), static_cast<double>(decoded[v]));
        }
        job.Bytes.insert(job.Bytes.end(), stream.begin(), stream.end());
        job.Lengths.push_back(stream.size());
      }
    }
    if (hasPiece)
    {
      partials.Sums[1] = static_cast<double>(voxels) * nc;
    }
    if (!partials.Finish(job.Controller, job.MaxAbsError, job.RMSE, job.PSNR))
    {
      job.Error = "reducing the error metrics over the processes failed";
      return Outcome::Failed;
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

/// The image's arrays restricted to this process's piece: producers that cannot split their
/// output send more than the piece, and each process keeps its own part only.
std::vector<vtkDataArray*> PieceArrays(vtkImageData* image,
  const int extent[6],
  const std::vector<std::string>& names,
  std::vector<vtkDataArray*> arrays,
  vtkImageData* cropped)
{
  int received[6];
  image->GetExtent(received);
  if (!std::equal(received, received + 6, extent))
  {
    cropped->ShallowCopy(image);
    cropped->Crop(extent);
    vtkPointData* pd = cropped->GetPointData();
    for (std::size_t i = 0; i < arrays.size(); ++i)
    {
      arrays[i] = pd->GetArray(names[i].c_str());
    }
  }
  return arrays;
}

/// Float decoding keeps the bound only for data that float holds exactly or nearly (float and
/// small integers); anything wider is coded and decoded in double.
bool NeedsDouble(const std::vector<int>& dataTypes)
{
  for (int type : dataTypes)
  {
    switch (type)
    {
      case VTK_FLOAT:
      case VTK_CHAR:
      case VTK_SIGNED_CHAR:
      case VTK_UNSIGNED_CHAR:
      case VTK_SHORT:
      case VTK_UNSIGNED_SHORT:
        break;
      default:
        return true;
    }
  }
  return false;
}

/**
 * Error-bounded compression of this process's piece, then the output: piece 0 gathers the
 * coded streams of every piece (compressed bytes only) and emits the representation; the other
 * pieces emit its metadata. Collective in a distributed run.
 */
Outcome CompressErrorBounded(CodedJob& job,
  int piece,
  bool hasPiece,
  vtkImageData* image,
  const int extent[6],
  const ImageHeader& header,
  const std::vector<vtkDataArray*>& arrays,
  bool useDouble,
  vtkSparseGridRepresentation::Description& info,
  vtkPolyData* output)
{
  vtkMultiProcessController* controller = job.Controller;
  vtkNew<vtkImageData> cropped;
  job.Names = header.Names;
  job.Components = header.Components;
  int pieceExtent[6] = { 0, -1, 0, -1, 0, -1 };
  if (hasPiece)
  {
    job.Arrays = PieceArrays(image, extent, header.Names, arrays, cropped);
    for (int a = 0; a < 3; ++a)
    {
      pieceExtent[2 * a] = extent[2 * a] - header.WholeExtent[2 * a];
      pieceExtent[2 * a + 1] = extent[2 * a + 1] - header.WholeExtent[2 * a];
      job.PieceDims[a] = extent[2 * a + 1] - extent[2 * a] + 1;
    }
  }
  const Outcome outcome = useDouble ? RunCoded<double>(job) : RunCoded<float>(job);
  if (outcome != Outcome::Done)
  {
    return outcome;
  }

  // Who holds what: a fixed-size record per process (has a piece, its extent, its lengths).
  int total = 0;
  for (int nc : header.Components)
  {
    total += nc;
  }
  const int processes = controller ? controller->GetNumberOfProcesses() : 1;
  const std::size_t record = 7 + static_cast<std::size_t>(total);
  std::vector<long long> mine(record, 0), all(record * static_cast<std::size_t>(processes), 0);
  mine[0] = hasPiece ? 1 : 0;
  for (int v = 0; v < 6; ++v)
  {
    mine[1 + v] = pieceExtent[v];
  }
  for (std::size_t k = 0; k < job.Lengths.size(); ++k)
  {
    mine[7 + k] = static_cast<long long>(job.Lengths[k]);
  }
  if (controller)
  {
    if (!controller->AllGather(mine.data(), all.data(), static_cast<vtkIdType>(record)))
    {
      job.Error = "the processes could not exchange the sizes of their coded pieces";
      return Outcome::Failed;
    }
  }
  else
  {
    all = mine;
  }
  std::vector<std::uint64_t> offsets(1, 0);
  std::vector<vtkIdType> byteCounts(static_cast<std::size_t>(processes), 0);
  std::vector<vtkIdType> byteOffsets(static_cast<std::size_t>(processes), 0);
  for (int p = 0; p < processes; ++p)
  {
    const long long* r = all.data() + record * static_cast<std::size_t>(p);
    byteOffsets[static_cast<std::size_t>(p)] = static_cast<vtkIdType>(offsets.back());
    if (!r[0])
    {
      continue;
    }
    info.PieceExtents.insert(info.PieceExtents.end(), r + 1, r + 7);
    for (int k = 0; k < total; ++k)
    {
      offsets.push_back(offsets.back() + static_cast<std::uint64_t>(r[7 + k]));
      byteCounts[static_cast<std::size_t>(p)] += static_cast<vtkIdType>(r[7 + k]);
    }
  }
  info.Kind = vtkSparseGridRepresentation::Encoding::ErrorBounded;
  info.Components = header.Components;
  info.Precision = useDouble ? sparsegrid::Precision::Double : sparsegrid::Precision::Float;
  info.BoundMode = job.Mode;
  info.RequestedBound = job.Bound;
  info.AbsoluteBound = job.AbsoluteBound;
  info.MaxAbsError = job.MaxAbsError;
  info.RMSE = job.RMSE;
  info.PSNR = job.PSNR;
  info.StoredBytes = offsets.back();
  double inputBytes = 0;
  const double voxels = static_cast<double>(info.ImageDimensions[0]) * info.ImageDimensions[1] *
    info.ImageDimensions[2];
  for (std::size_t i = 0; i < header.Names.size(); ++i)
  {
    inputBytes += voxels * header.Components[i] * header.TypeSizes[i];
  }
  info.CompressionRatio =
    info.StoredBytes > 0 ? inputBytes / static_cast<double>(info.StoredBytes) : 0.0;
  vtkSparseGridParallel::MaxAll(controller, &job.Seconds, &info.TimeSeconds, 1);
  info.Summary = vtkSparseGridRepresentation::MakeSummary(info);

  // The coded bytes travel to piece 0's process: compressed data only, never the image.
  vtkNew<vtkUnsignedCharArray> streams;
  const int holder = 0;
  const int rank = controller ? controller->GetLocalProcessId() : 0;
  if (rank == holder)
  {
    streams->SetNumberOfValues(static_cast<vtkIdType>(info.StoredBytes));
  }
  if (controller && processes > 1)
  {
    if (!controller->GatherV(job.Bytes.data(),
          rank == holder ? streams->GetPointer(0) : nullptr,
          static_cast<vtkIdType>(job.Bytes.size()),
          byteCounts.data(),
          byteOffsets.data(),
          holder))
    {
      job.Error = "gathering the coded pieces failed";
      return Outcome::Failed;
    }
  }
  else
  {
    std::copy(job.Bytes.begin(), job.Bytes.end(), streams->GetPointer(0));
  }
  if (piece == 0 && rank == holder)
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
} // namespace

//------------------------------------------------------------------------------------------------
vtkSparseGridHierarchize::vtkSparseGridHierarchize()
  : Internals(new vtkInternals)
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
    if (!IsEmpty(whole))
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
  const int rank = controller ? controller->GetLocalProcessId() : 0;
  const int processes = controller ? controller->GetNumberOfProcesses() : 1;
  std::string error;
  auto agree = [&](Outcome local)
  {
    if (local != Outcome::Failed)
    {
      error.clear();
    }
    const Outcome outcome = vtkSparseGridParallel::Agree(controller, local, error);
    if (outcome == Outcome::Failed)
    {
      vtkErrorMacro(<< error);
    }
    return outcome;
  };

  // 1. This process's piece. Producers that can produce sub-extents send the translator's
  // split of the whole extent (the request asks for that). Others send more: every process the
  // whole image (then each keeps the translator's piece), or one process all of it and the
  // others nothing (then that is the partition). Whether the pieces tile the image is checked
  // once the grid points are counted.
  Outcome local = Outcome::Done;
  int whole[6] = { 0, -1, 0, -1, 0, -1 };
  int extent[6] = { 0, -1, 0, -1, 0, -1 };
  int expected[6] = { 0, -1, 0, -1, 0, -1 };
  bool holdsExpected = true; // the data covers this process's share of the translator's split
  vtkIdType localInputPoints = 0;
  if (!image)
  {
    error =
      std::string("Sparse Grid Hierarchize needs image data (vtkImageData) but the input is ") +
      (input ? input->GetClassName() : "missing") +
      ". Resample it to an image first (Resample To Image).";
    local = Outcome::Failed;
  }
  else
  {
    localInputPoints = image->GetNumberOfPoints();
    image->GetExtent(extent);
    std::copy(extent, extent + 6, whole);
    if (controller && inInfo->Has(vtkStreamingDemandDrivenPipeline::WHOLE_EXTENT()))
    {
      inInfo->Get(vtkStreamingDemandDrivenPipeline::WHOLE_EXTENT(), whole);
      const int splitMode = inInfo->Has(vtkExtentTranslator::UPDATE_SPLIT_MODE())
        ? inInfo->Get(vtkExtentTranslator::UPDATE_SPLIT_MODE())
        : vtkExtentTranslator::BLOCK_MODE;
      vtkNew<vtkExtentTranslator> translator;
      if (!translator->PieceToExtentThreadSafe(
            piece, processes, 0, whole, expected, splitMode, 0) ||
        IsEmpty(expected))
      {
        std::fill(expected, expected + 6, 0);
        expected[1] = expected[3] = expected[5] = -1; // more pieces than cells: empty
      }
      else
      {
        holdsExpected = localInputPoints > 0;
        for (int a = 0; a < 3; ++a)
        {
          holdsExpected = holdsExpected && extent[2 * a] <= expected[2 * a] &&
            extent[2 * a + 1] >= expected[2 * a + 1];
        }
      }
    }
    if (localInputPoints < 1)
    {
      std::fill(extent, extent + 6, 0);
      extent[1] = extent[3] = extent[5] = -1;
    }
    if (!IsEmpty(extent) && !image->GetDirectionMatrix()->IsIdentity())
    {
      error = "Oriented images (a direction matrix other than the identity) are not supported.";
      local = Outcome::Failed;
    }
  }
  if (agree(local) != Outcome::Done)
  {
    return 0;
  }
  if (controller)
  {
    // Cut to the translator's split only when every process can: otherwise the data itself is
    // the partition (a reader that puts the whole image on one process, say).
    const int mine = holdsExpected ? 1 : 0;
    int all = 0;
    controller->AllReduce(&mine, &all, 1, vtkCommunicator::MIN_OP);
    if (all)
    {
      std::copy(expected, expected + 6, extent);
    }
  }
  const bool hasPiece = !IsEmpty(extent);

  // 2. The lowest process with a non-empty piece decides what is compressed: it knows the
  // arrays, which an empty piece may not even carry.
  int leader = hasPiece ? rank : -1;
  if (controller)
  {
    const int mine = hasPiece ? processes - rank : 0;
    int lowest = 0;
    controller->AllReduce(&mine, &lowest, 1, vtkCommunicator::MAX_OP);
    leader = lowest > 0 ? processes - lowest : -1;
  }
  if (leader < 0)
  {
    vtkErrorMacro("The input image is empty.");
    return 0;
  }
  ImageHeader header;
  std::vector<vtkDataArray*> arrays;
  local = Outcome::Done;
  if (rank == leader)
  {
    std::copy(whole, whole + 6, header.WholeExtent);
    image->GetOrigin(header.Origin);
    image->GetSpacing(header.Spacing);
    // Geometry first: a one-point image has nothing to compress, whatever its arrays.
    if (IsEmpty(whole) || (whole[0] == whole[1] && whole[2] == whole[3] && whole[4] == whole[5]))
    {
      error = "The input image has a single point: there is nothing to compress.";
      local = Outcome::Failed;
    }
    vtkPointData* pd = image->GetPointData();
    std::vector<std::string> names = this->Internals->ArrayNames;
    if (names.empty() && local == Outcome::Done)
    {
      vtkDataArray* scalars = pd->GetScalars();
      if (!scalars || !scalars->GetName())
      {
        error = "No array is selected and the input has no (named) active point scalars.";
        local = Outcome::Failed;
      }
      else
      {
        names.emplace_back(scalars->GetName());
      }
    }
    for (const std::string& name : names)
    {
      if (local != Outcome::Done ||
        std::find(header.Names.begin(), header.Names.end(), name) != header.Names.end())
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
        local = Outcome::Failed;
        continue;
      }
      arrays.push_back(array);
      header.Names.push_back(name);
      header.Components.push_back(array->GetNumberOfComponents());
      header.TypeSizes.push_back(array->GetDataTypeSize());
      header.DataTypes.push_back(array->GetDataType());
    }
  }
  if (agree(local) != Outcome::Done)
  {
    return 0;
  }
  if (controller)
  {
    vtkMultiProcessStream stream;
    if (rank == leader)
    {
      header.Push(stream);
    }
    controller->Broadcast(stream, leader);
    if (rank != leader)
    {
      header.Pop(stream);
    }
  }

  // 3. Every process with a piece finds the same arrays; every process builds the same grid.
  local = Outcome::Done;
  if (hasPiece && rank != leader)
  {
    vtkPointData* pd = image->GetPointData();
    for (std::size_t i = 0; i < header.Names.size() && local == Outcome::Done; ++i)
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
        local = Outcome::Failed;
      }
      arrays.push_back(array);
    }
  }
  vtkSparseGridRepresentation::Description info;
  info.ArrayNames = header.Names;
  std::vector<std::size_t> gridDims;
  sparsegrid::ImagePiece geometry;
  Job job;
  for (int a = 0; a < 3 && local == Outcome::Done; ++a)
  {
    const int n = header.WholeExtent[2 * a + 1] - header.WholeExtent[2 * a] + 1;
    info.ImageDimensions[a] = n;
    info.ImageSpacing[a] = header.Spacing[a];
    // The position of the first point, so that the extent is implicitly 0-based.
    info.ImageOrigin[a] = header.Origin[a] + header.WholeExtent[2 * a] * header.Spacing[a];
    info.Bounds[2 * a] = info.Bounds[2 * a + 1] = info.ImageOrigin[a];
    if (n > 1)
    {
      if (!(header.Spacing[a] > 0))
      {
        error = "The input image has a non-positive spacing on axis " + std::to_string(a) + ".";
        local = Outcome::Failed;
        break;
      }
      info.AxisMap.push_back(a);
      gridDims.push_back(static_cast<std::size_t>(n));
      info.Bounds[2 * a + 1] = info.ImageOrigin[a] + (n - 1) * header.Spacing[a];
      // This piece along the axis, and the samples it owns for the error metrics (each
      // sample once: the shared boundary layer belongs to the piece after it).
      const std::size_t dims =
        hasPiece ? static_cast<std::size_t>(extent[2 * a + 1] - extent[2 * a] + 1) : 0;
      const bool last = extent[2 * a + 1] == header.WholeExtent[2 * a + 1];
      geometry.wholeDims.push_back(static_cast<std::size_t>(n));
      geometry.offset.push_back(
        hasPiece ? static_cast<std::size_t>(extent[2 * a] - header.WholeExtent[2 * a]) : 0);
      geometry.dims.push_back(dims);
      job.OwnedBegin.push_back(0);
      job.OwnedDims.push_back(dims == 0 ? 0 : (last ? dims : dims - 1));
    }
  }
  const int D = static_cast<int>(info.AxisMap.size());
  if (local == Outcome::Done && D == 0)
  {
    error = "The input image has a single point: there is nothing to compress.";
    local = Outcome::Failed;
  }

  if (this->ErrorBoundMode != BOUND_OFF)
  {
    if (local == Outcome::Done && !(this->ErrorBound > 0 && std::isfinite(this->ErrorBound)))
    {
      error = "ErrorBound must be a positive, finite number (got " +
        std::to_string(this->ErrorBound) + ").";
      local = Outcome::Failed;
    }
    if (agree(local) != Outcome::Done)
    {
      return 0;
    }
    vtkSparseGridExecution exec(
      this, this->Backend, this->NumberOfThreads, sparsegrid::Optimizations());
    CodedJob job;
    job.Mode = this->ErrorBoundMode;
    job.Bound = this->ErrorBound;
    job.Exec = &exec;
    job.Controller = controller;
    const Outcome outcome = CompressErrorBounded(job,
      piece,
      hasPiece,
      image,
      extent,
      header,
      arrays,
      this->Precision == DOUBLE || NeedsDouble(header.DataTypes),
      info,
      output);
    if (outcome != Outcome::Done)
    {
      // Aborted or failed: an empty output, never a half-made representation.
      output->Initialize();
      if (outcome == Outcome::Failed)
      {
        vtkErrorMacro(<< job.Error);
      }
      return outcome == Outcome::Aborted ? 1 : 0;
    }
    info.Backend = exec.BackendUsed();
    info.BackendNote = exec.Note();
    if (!info.BackendNote.empty())
    {
      vtkWarningMacro(<< info.BackendNote);
    }
    if (info.CompressionRatio < 1 && rank == 0)
    {
      vtkWarningMacro("The compressed data are larger than the input (ratio "
        << info.CompressionRatio
        << ":1): most values could not be predicted within the bound and are stored exactly "
           "(a bound close to the resolution of the data, or noise-like or extreme values). A "
           "larger Error Bound compresses.");
    }
    AddLocalInputPoints(output, localInputPoints);
    this->UpdateProgress(1.0);
    return 1;
  }

  if (local == Outcome::Done && (this->Level < 0 || this->Level > 3 * sparsegrid::MaxAxisLevel))
  {
    error = "Level must be 0 (automatic) or 1 to " + std::to_string(3 * sparsegrid::MaxAxisLevel) +
      " (got " + std::to_string(this->Level) + ").";
    local = Outcome::Failed;
  }
  // Levels: caps from the image dimensions unless given; L = the largest cap + 2 unless given.
  sparsegrid::GridSpec spec;
  spec.dimensions = D;
  spec.boundary = this->Boundary;
  int largestCap = 1;
  for (int t = 0; t < D; ++t)
  {
    const int a = info.AxisMap[t];
    int cap = this->LevelLimits[a] > 0
      ? this->LevelLimits[a]
      : sparsegrid::levelForSamples(static_cast<std::size_t>(info.ImageDimensions[a]));
    if (!this->Boundary)
    {
      cap = std::max(cap, 1); // without boundary points an axis needs level 1 to exist at all
    }
    spec.caps.push_back(cap);
    largestCap = std::max(largestCap, cap);
  }
  // Default: two levels of mixed detail beyond the finest axis. Measured on the real volumes
  // (docs/core.md) this gives about 20-35:1 at 36-42 dB on smooth fields; the full grid is the
  // most that is ever useful.
  int fullGridLevel = 1;
  for (int c : spec.caps)
  {
    fullGridLevel += std::max(c, 1) - 1;
  }
  spec.level = this->Level > 0 ? this->Level : std::min(largestCap + 2, fullGridLevel);
  info.Precision =
    this->Precision == DOUBLE ? sparsegrid::Precision::Double : sparsegrid::Precision::Float;
  int components = 0;
  double inputBytes = 0; // of the whole image, whichever piece this process holds
  double wholePoints = 1;
  for (int n : info.ImageDimensions)
  {
    wholePoints *= n;
  }
  for (std::size_t i = 0; i < header.Names.size(); ++i)
  {
    components += header.Components[i];
    inputBytes += wholePoints * header.Components[i] * header.TypeSizes[i];
  }
  std::uint64_t outputBytes = 0;
  if (local == Outcome::Done)
  {
    sparsegrid::Status status = sparsegrid::Grid::create(spec, info.Grid);
    if (!status.ok())
    {
      error = vtkSparseGridExecution::Describe("Cannot build the sparse grid", status);
      local = Outcome::Failed;
    }
    else
    {
      outputBytes = sparsegrid::compressedBytes(info.Grid, info.Precision, components);
      // Each process holds the grid-sized sum, so each one checks its own memory.
      status = sparsegrid::checkAllocation(outputBytes, "the sparse-grid coefficients");
      if (!status.ok())
      {
        error = vtkSparseGridExecution::Describe("Level too large", status);
        local = Outcome::Failed;
      }
    }
  }
  if (agree(local) != Outcome::Done)
  {
    return 0;
  }

  // Producers that cannot split their output sent more than this piece: keep the piece only.
  vtkNew<vtkImageData> cropped;
  if (hasPiece)
  {
    arrays = PieceArrays(image, extent, header.Names, arrays, cropped);
  }
  else
  {
    arrays.clear();
  }

  sparsegrid::Optimizations optimizations;
  optimizations.inv1 = this->Inv1;
  optimizations.inv2 = this->Inv2;
  optimizations.inv3 = this->Inv3;
  optimizations.inv4 = this->Inv4;
  optimizations.ichg1 = this->Ichg1;
  optimizations.ichg2 = this->Ichg2;
  optimizations.vec1 = this->Vec1;
  optimizations.sred1 = this->Sred1;
  optimizations.chunkSize = this->ChunkSize;
  vtkSparseGridExecution exec(this, this->Backend, this->NumberOfThreads, optimizations);

  job.Grid = &info.Grid;
  job.GridDims = gridDims;
  job.Piece = geometry;
  job.Arrays = arrays;
  job.Names = header.Names;
  job.Components = header.Components;
  job.ComputeError = this->ComputeError;
  job.Exec = &exec;
  job.Controller = controller;
  const Outcome outcome =
    info.Precision == sparsegrid::Precision::Double ? Run<double>(job) : Run<float>(job);
  if (outcome == Outcome::Aborted)
  {
    output->Initialize(); // an aborted filter leaves an empty output
    return 1;
  }
  if (outcome == Outcome::Failed)
  {
    vtkErrorMacro(<< job.Error);
    output->Initialize();
    return 0;
  }

  info.Backend = exec.BackendUsed();
  info.BackendNote = exec.Note();
  if (!info.BackendNote.empty())
  {
    vtkWarningMacro(<< info.BackendNote);
  }
  // The slowest process sets the pace; all report the same time.
  vtkSparseGridParallel::MaxAll(controller, &job.Seconds, &info.TimeSeconds, 1);
  info.CompressionRatio = outputBytes > 0 ? inputBytes / static_cast<double>(outputBytes) : 0.0;
  if (info.CompressionRatio < 1 && rank == 0)
  {
    vtkWarningMacro("The sparse grid is larger than the input (ratio "
      << info.CompressionRatio
      << ":1): the level is high for this image, or its sizes are far from 2^n + 1 samples "
         "(the grid resolves each axis at the next 2^n + 1). Use the error-bounded mode, or a "
         "lower Level.");
  }
  info.MaxAbsError = job.MaxAbsError;
  info.RMSE = job.RMSE;
  info.PSNR = job.PSNR;

  if (piece == 0)
  {
    std::vector<vtkDataArray*> coefficients;
    for (const auto& array : job.Coefficients)
    {
      coefficients.push_back(array);
    }
    if (!vtkSparseGridRepresentation::ToPolyData(info, coefficients, output, &error))
    {
      vtkErrorMacro(<< "Cannot build the output: " << error);
      return 0;
    }
  }
  else
  {
    // The other pieces carry the metadata but no points: ParaView's data information then
    // counts the representation once, and every process still sees what it describes.
    output->Initialize();
    vtkSparseGridRepresentation::WriteFieldData(info, output->GetFieldData());
  }
  AddLocalInputPoints(output, localInputPoints);
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
  os << indent << "Level: " << this->Level << "\n";
  os << indent << "LevelLimits: " << this->LevelLimits[0] << " " << this->LevelLimits[1] << " "
     << this->LevelLimits[2] << "\n";
  os << indent << "Boundary: " << this->Boundary << "\n";
  os << indent << "Precision: " << (this->Precision == DOUBLE ? "Double" : "Float") << "\n";
  os << indent << "Backend: " << this->Backend << "\n";
  os << indent << "ComputeError: " << this->ComputeError << "\n";
  os << indent << "inv1 inv2 inv3 inv4 ichg1 ichg2 vec1 sred1: " << this->Inv1 << this->Inv2
     << this->Inv3 << this->Inv4 << this->Ichg1 << this->Ichg2 << this->Vec1 << this->Sred1 << "\n";
  os << indent << "ChunkSize: " << this->ChunkSize << "\n";
  os << indent << "NumberOfThreads: " << this->NumberOfThreads << "\n";
}
