/**
 * @file vtkSparseGridProbe.h
 * @brief Private helper of the reconstruct and resample filters: evaluates a compressed
 * representation at the points of a dataset, with ParaView's probe conventions (arrays under
 * their original names, vtkValidPointMask = 0 and value 0 outside the compressed bounds).
 */
#ifndef vtkSparseGridProbe_h
#define vtkSparseGridProbe_h

#include "vtkSparseGridRepresentation.h"

#include <string>
#include <vector>

class vtkDataSet;
class vtkDataSetAttributes;
class vtkFieldData;
class vtkMultiProcessController;
class vtkSparseGridExecution;

namespace vtkSparseGridProbe
{
enum class Result
{
  Done,
  Failed,
  Aborted
};

/**
 * The levels a probing filter decodes: `requested` (its Level Of Detail; 0: all) out of those
 * the representation holds (`held`, its SparseGrid.LevelOfDetail; 0: all, a reader at a
 * coarser level holds fewer). 0 decodes what is held; never more levels than are held.
 */
inline int LevelToDecode(int held, int requested)
{
  return requested <= 0 ? held : (held <= 0 ? requested : (requested < held ? requested : held));
}

/// Name of the mask array, as ParaView's probe filters call it.
constexpr const char* MaskName = "vtkValidPointMask";

/// An axis-aligned image: Dimensions[a] points along axis a from Origin, Spacing apart.
struct ImageGeometry
{
  int Dimensions[3] = { 1, 1, 1 };
  double Origin[3] = { 0, 0, 0 };
  double Spacing[3] = { 1, 1, 1 };
};

/// The box (xmin, xmax, ..., zmax) of an image's points.
void ImageBounds(const ImageGeometry& image, double bounds[6]);

/**
 * Error-bounded: the voxels of the compressed image (0-based, inclusive, per axis) that probing
 * points inside `bounds` (physical) may read; empty (lo > hi) when the box misses the image.
 */
void VoxelBox(const vtkSparseGridRepresentation::Description& info,
  const double bounds[6],
  int box[6]);

/**
 * Error-bounded: one flag per coded piece (brick), whether a probe reading the voxels `box`
 * decodes it. Every voxel takes its value from the first brick holding it, the bricks this
 * process holds now first, then the others, each group by index; so a process whose output lies
 * on its own bricks decodes only those, and a layer that two neighbouring pieces share comes from
 * the local brick. Remembers the bricks held now (contents.LocalPieces), so that the decode after
 * fetching the others (vtkSparseGridParallel::FetchPieces) keeps the same choice. The probes
 * decode the bricks this would select for their voxels, concurrently on the filter's threads.
 */
std::vector<char> SelectBricks(vtkSparseGridRepresentation::Contents& contents, const int box[6]);

/**
 * Adds SparseGridLocal.BricksDecoded, SparseGridLocal.VoxelsDecoded (the voxels of those bricks)
 * and SparseGridLocal.BytesReceived (int64) to `fieldData`: what this process decoded and
 * received for its output (outside the SparseGrid.* names: they differ between processes).
 */
void AddCounts(const vtkSparseGridRepresentation::Contents& contents, vtkFieldData* fieldData);

/**
 * Adds the reconstructed arrays and the mask to `out` for the points of an axis-aligned image.
 * When the image lies inside the compressed box it uses sparsegrid::reconstructImage (exact and
 * fast); otherwise it evaluates point by point. `usedFastPath` (optional) tells which.
 */
Result ProbeImage(const vtkSparseGridRepresentation::Contents& contents,
  const ImageGeometry& image,
  vtkSparseGridExecution& exec,
  vtkDataSetAttributes* out,
  std::string* error,
  bool* usedFastPath = nullptr);

/**
 * Error-bounded representations: records in `fieldData` what holds for the level decoded:
 * SparseGrid.LevelOfDetail and SparseGrid.LevelsAvailable, per array the bound that holds at
 * every voxel of the original image (SparseGrid.AbsoluteErrorBound) and the max error measured
 * there when compressed (SparseGrid.MaxAbsError, when known), and SparseGrid.Summary for that
 * level. No-op for the fixed level.
 */
bool AnnotateBounds(const vtkSparseGridRepresentation::Contents& contents,
  vtkFieldData* fieldData,
  std::string* error);

/**
 * What every probing filter does once the probe has run: on success annotates `output`'s field
 * data (AnnotateBounds); when aborted empties `output`, the documented state of an aborted
 * filter. Returns the outcome (Failed with `error` set when annotating fails).
 */
Result Conclude(Result probed,
  const vtkSparseGridRepresentation::Contents& contents,
  vtkDataSet* output,
  std::string* error);

/**
 * The compare step of Sparse Grid Reconstruct, after a successful probe. `original` holds the
 * probed dataset's own point arrays (e.g. the image that was compressed), `out` the
 * reconstruction. For every compressed array that `original` has under the same name with the
 * same number of components and tuples:
 * - `clamp`: each component of the reconstruction is clamped to that component's range in
 *   `original` (over all processes of `controller`, collective; nullptr: this process). Where
 *   `original` is what was compressed, this never increases the error.
 * - `errors`: adds `<name>_error` = reconstructed - original (after clamping), 0 where the
 *   mask is 0 (outside the compressed bounds); the first such array becomes the active scalars.
 * Returns the number of arrays compared.
 */
int CompareWithOriginal(const vtkSparseGridRepresentation::Contents& contents,
  vtkDataSetAttributes* original,
  vtkDataSetAttributes* out,
  bool clamp,
  bool errors,
  vtkMultiProcessController* controller);

/// Adds the reconstructed arrays and the mask to `out` for the points of any dataset.
Result ProbePoints(const vtkSparseGridRepresentation::Contents& contents,
  vtkDataSet* points,
  vtkSparseGridExecution& exec,
  vtkDataSetAttributes* out,
  std::string* error);
}

#endif
// VTK-HeaderTest-Exclude: vtkSparseGridProbe.h
