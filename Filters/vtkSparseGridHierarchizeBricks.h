/**
 * @file vtkSparseGridHierarchizeBricks.h
 * @brief Private part of Sparse Grid Hierarchize: the error-bounded encoding, each process's
 * piece coded as independent bricks (docs/distributed.md), and what both encodings share.
 */
#ifndef vtkSparseGridHierarchizeBricks_h
#define vtkSparseGridHierarchizeBricks_h

#include "vtkSparseGridParallel.h"
#include "vtkSparseGridRepresentation.h"

#include <sparsegrid/codec.h>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>
#include <vector>

class vtkDataArray;
class vtkImageData;
class vtkMultiProcessController;
class vtkPolyData;
class vtkSparseGridExecution;

namespace vtkSparseGridHierarchizeBricks
{
using vtkSparseGridParallel::ImageHeader;
using vtkSparseGridParallel::Outcome;

struct CodedJob
{
  /// The image this process received and its arrays (nullptr / empty without a piece); bricks
  /// are cut from it one at a time.
  vtkImageData* Image = nullptr;
  std::vector<vtkDataArray*> Arrays;
  std::vector<std::string> Names;
  std::vector<int> Components;
  /// This process's bricks, 6 values each, in the image's own index space.
  std::vector<int> Bricks;
  int Mode = vtkSparseGridRepresentation::BOUND_RELATIVE;
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
  /// This process's streams (brick by brick, array by array, component by component) and
  /// their index entries.
  vtkSparseGridParallel::CodedPiece Piece;
  double Seconds = 0;
  std::string Error;
};

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

/// Bytes of the compressed arrays in the input: the whole image, whichever piece this process
/// holds.
double InputBytes(const ImageHeader& header, const vtkSparseGridRepresentation::Description& info);

/**
 * Error-bounded compression of this process's piece, brick by brick, then the representation:
 * the processes exchange the index of their bricks (never a stream), and each emits its own
 * streams with the global index. Collective in a distributed run.
 */
Outcome CompressErrorBounded(CodedJob& job,
  int brickSize,
  const vtkSparseGridParallel::ImagePartition& partition,
  vtkImageData* image,
  const ImageHeader& header,
  const std::vector<vtkDataArray*>& arrays,
  bool useDouble,
  vtkSparseGridRepresentation::Description& info,
  vtkPolyData* output);

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
  std::string& error);
}

#endif
// VTK-HeaderTest-Exclude: vtkSparseGridHierarchizeBricks.h
