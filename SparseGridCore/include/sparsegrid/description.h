/**
 * @file description.h
 * @brief The one model of a compressed dataset (what a representation or a .sgrid file says
 * about its data besides the payload) and its one validator.
 *
 * The plugin stores a compressed image in two forms: the `SparseGrid.*` field data of a
 * vtkPolyData (Filters/vtkSparseGridRepresentation) and the HDF5 `.sgrid` file
 * (Readers/SparseGridFile). Both are serialisations of this Description: each reads its own
 * layout into one, and `validate` decides, for both, whether it describes a dataset the plugin
 * can decode. A file the reader accepts is therefore one the filters accept, and the other way
 * round (docs/representation.md).
 *
 * Member names follow the `SparseGrid.*` field-data entries they are stored under
 * (docs/representation.md), hence their capitals; where a name differs, its comment names the
 * entry.
 */
#ifndef SPARSEGRID_DESCRIPTION_H
#define SPARSEGRID_DESCRIPTION_H

#include <sparsegrid/sparsegrid.h>

#include <cstdint>
#include <string>
#include <vector>

namespace sparsegrid
{

/// How the values are stored.
enum class Encoding
{
  SparseGrid,  ///< fixed-level sparse grid: hierarchical surpluses of a truncated grid
  ErrorBounded ///< error-bounded codec streams (sparsegrid/codec.h), one per piece/component
};

///@{
/// Values of Description::BoundMode (and of Sparse Grid Hierarchize's ErrorBoundMode).
constexpr int BoundOff = 0; ///< the fixed-level sparse grid: no bound
constexpr int BoundAbsolute = 1;
constexpr int BoundRelative = 2; ///< relative to each array's value range
///@}

///@{
/// Limits every serialisation enforces before it sizes anything from what it reads.
constexpr std::size_t MaxArrays = 4096;
constexpr int MaxComponents = 4096;
constexpr std::size_t MaxPieces = 1 << 16;
constexpr int MaxImageDimension = 1 << 30;
constexpr int MaxLevelOfDetail = 1 << 10;
///@}

/// A compressed image dataset: grid, axes, geometry, arrays, precision, provenance, metrics.
struct Description
{
  Encoding Kind = Encoding::SparseGrid; ///< SparseGrid.Encoding (and FormatVersion)
  /// Fixed level only: SparseGrid.Dimensions, Level, LevelCaps and Boundary, built.
  sparsegrid::Grid Grid;
  std::vector<int> AxisMap;                ///< image axis (0, 1, 2) of each grid axis, increasing
  double Bounds[6] = { 0, 1, 0, 1, 0, 1 }; ///< physical box mapped onto the unit cube
  int ImageDimensions[3] = { 1, 1, 1 };
  double ImageOrigin[3] = { 0, 0, 0 };
  double ImageSpacing[3] = { 1, 1, 1 };
  sparsegrid::Precision Precision = sparsegrid::Precision::Float;
  std::vector<std::string> ArrayNames; ///< one per compressed array
  ///@{
  /// Provenance (optional: 0 or empty when unknown).
  double CompressionRatio = 0; ///< bytes of the input arrays / bytes stored
  std::string Backend = "CPU";
  std::string BackendNote;
  double TimeSeconds = 0;
  ///@}
  /// Error metrics measured on every voxel: empty, or one value per array (all components
  /// together). A lossless array's PSNR is +inf.
  std::vector<double> MaxAbsError, RMSE, PSNR;
  /// One line for the Information panel: ratio, error against the bound, size.
  std::string Summary;

  ///@{
  /// Error-bounded encoding only.
  int BoundMode = BoundOff;          ///< ErrorBoundMode: BoundAbsolute or BoundRelative
  double RequestedBound = 0;         ///< ErrorBound, as requested (relative or absolute)
  std::vector<int> Components;       ///< ArrayComponents: per array
  std::vector<double> AbsoluteBound; ///< AbsoluteErrorBound: per array, kept by every voxel
  /// Pieces the image was coded in (one per process that held data), 6 extent values each,
  /// 0-based in ImageDimensions. Pieces may share a boundary layer, as VTK's pieces do.
  std::vector<int> PieceExtents;
  /// Levels of detail the streams hold (0 = all) and the bound that then holds, per array
  /// (LevelOfDetailBound; empty: the full bound).
  int LevelOfDetail = 0;
  std::vector<double> LevelBound;
  /// LevelMaxAbsError: the max error measured on every voxel of the input when decoding levels
  /// 1..k, for k = 1..L (array-major: L values per array, the last the full decode); empty
  /// when not measured.
  std::vector<double> LevelMaxAbsError;
  /// L of LevelMaxAbsError (0 when empty).
  int MeasuredLevels() const;
  /// Bytes of the coded streams (what a file stores for the arrays).
  std::uint64_t StoredBytes = 0;
  ///@}

  int Dimensions() const { return static_cast<int>(this->AxisMap.size()); }
  int NumberOfPieces() const { return static_cast<int>(this->PieceExtents.size() / 6); }
  int TotalComponents() const;

  /**
   * Maps a physical point to unit coordinates (Dimensions() values). Returns false when the
   * point lies outside the box by more than `tolerance` (absolute, in physical units) on a grid
   * axis, or off the plane/line of a 2-D/1-D grid on another axis; `unit` is clamped to [0,1]
   * either way.
   */
  bool PhysicalToUnit(const double point[3], double* unit, double tolerance) const;
  /// Maps unit coordinates (Dimensions() values) to a physical point.
  void UnitToPhysical(const double* unit, double point[3]) const;
  /// Absolute tolerance used for "inside the box": a tiny fraction of the box diagonal.
  double Tolerance() const;
};

/**
 * The layout rules: axes, image geometry, precision and the encoding's own parameters (bound,
 * pieces, level of detail); nothing about arrays or the grid. What a header can be checked
 * against before anything is sized from it. InvalidArgument naming the first rule broken.
 */
[[nodiscard]] Status validateLayout(const Description& description);

/**
 * Every rule: validateLayout, then the grid (fixed level: created, with one axis per entry of
 * AxisMap), the arrays (1 to MaxArrays distinct non-empty names; error-bounded: components and
 * a positive absolute bound per array) and the metrics (each empty or one non-negative value
 * per array). InvalidArgument naming the first rule broken.
 */
[[nodiscard]] Status validate(const Description& description);

/**
 * Whether image pieces tile the whole extent `whole` (x0, x1, y0, y1, z0, z1, inclusive) as VTK's
 * pieces do: each inside `whole`, together covering every point, two of them sharing at most one
 * layer of points (the boundary points that neighbouring pieces share). `extents` holds 6 values
 * per piece; an empty piece (an upper end below its lower end) is passed over. Empty when they
 * tile, otherwise what is wrong, naming the pieces by their index. `shared`, when given, receives
 * for each pair of pieces that share points their indices p < q and the shared box (8 values).
 * Pairs are found along the axis with the most distinct lower ends, so a regular split of P
 * pieces costs about P^1.5 comparisons.
 */
std::string pieceTilingProblem(const int whole[6],
  const std::vector<int>& extents,
  std::vector<int>* shared = nullptr);

} // namespace sparsegrid

#endif
