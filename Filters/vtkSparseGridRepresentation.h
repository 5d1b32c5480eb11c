/**
 * @class vtkSparseGridRepresentation
 * @brief Converts a sparse grid with its coefficient arrays and metadata to and from the
 * vtkPolyData described in docs/representation.md.
 *
 * API (kept small and stable: the filters, the .sgrid reader and the writer all use it):
 *
 * @code
 * // Core -> VTK: points, vertex cells, one coefficient array per name, SparseGrid.* field data.
 * vtkSparseGridRepresentation::Description d; // d.Grid, d.AxisMap, d.Bounds, d.ArrayNames, ...
 * std::string error;
 * bool ok = vtkSparseGridRepresentation::ToPolyData(d, coefficientArrays, polyData, &error);
 *
 * // VTK -> core: validates field data and coefficient arrays (they may come from an untrusted
 * // file), builds the sparsegrid::Grid, and never crashes on malformed input.
 * vtkSparseGridRepresentation::Contents c;
 * ok = vtkSparseGridRepresentation::FromPolyData(polyData, c, &error);
 *
 * // Metadata only (a reader's header, say): the same validation, no coefficient arrays.
 * ok = vtkSparseGridRepresentation::ReadFieldData(fieldData, d, &error);
 * vtkSparseGridRepresentation::WriteFieldData(d, fieldData);
 * @endcode
 *
 * Every function returns false with a message in `error` instead of throwing.
 * The class is not wrapped: its API uses sparsegrid:: types.
 */
#ifndef vtkSparseGridRepresentation_h
#define vtkSparseGridRepresentation_h

#include "SparseGridFiltersModule.h" // for the export macro
#include "vtkSmartPointer.h"         // for Contents::Coefficients

#include <sparsegrid/sparsegrid.h> // for sparsegrid::Grid

#include <cstdint>
#include <string>
#include <vector>

class vtkDataArray;
class vtkFieldData;
class vtkPolyData;

class SPARSEGRIDFILTERS_EXPORT vtkSparseGridRepresentation
{
public:
  /// Value of SparseGrid.FormatVersion written and accepted.
  static constexpr int FormatVersion = 1;

  /// The SparseGrid.* field data as C++ values (names follow docs/representation.md).
  struct Description
  {
    sparsegrid::Grid Grid;    ///< dimensions, level, caps and boundary of the sparse grid
    std::vector<int> AxisMap; ///< image axis (0, 1, 2) of each grid axis; Grid.dimensions() long
    double Bounds[6] = { 0, 1, 0, 1, 0, 1 }; ///< physical box mapped onto the unit cube
    int ImageDimensions[3] = { 1, 1, 1 };
    double ImageOrigin[3] = { 0, 0, 0 };
    double ImageSpacing[3] = { 1, 1, 1 };
    sparsegrid::Precision Precision = sparsegrid::Precision::Float;
    std::vector<std::string> ArrayNames; ///< one per coefficient array
    double CompressionRatio = 0;
    std::string Backend = "CPU";
    std::string BackendNote;
    double TimeSeconds = 0;
    /// Empty, or one value per array (all components together).
    std::vector<double> MaxAbsError, RMSE, PSNR;

    /**
     * Maps a physical point to unit coordinates (Grid.dimensions() values). Returns false when
     * the point lies outside the box by more than `tolerance` (absolute, in physical units) on a
     * grid axis, or off the plane/line of a 2-D/1-D grid on another axis; `unit` is clamped to
     * [0,1] either way.
     */
    bool PhysicalToUnit(const double point[3], double* unit, double tolerance) const;
    /// Maps unit coordinates (Grid.dimensions() values) to a physical point.
    void UnitToPhysical(const double* unit, double point[3]) const;
    /// Absolute tolerance used for "inside the box": a tiny fraction of the box diagonal.
    double Tolerance() const;
  };

  /// A validated representation: metadata plus one float/double array per name.
  struct Contents
  {
    Description Info;
    std::vector<vtkSmartPointer<vtkDataArray>> Coefficients; ///< same order as Info.ArrayNames
  };

  /**
   * Fills `output` (cleared first) with points at the physical positions of the grid points,
   * one vertex cell per point, the coefficient arrays (shallow, renamed after ArrayNames) and
   * the field data. Each coefficient array must hold Grid.size() tuples and be a vtkFloatArray
   * or vtkDoubleArray matching `info.Precision`.
   */
  static bool ToPolyData(const Description& info,
    const std::vector<vtkDataArray*>& coefficients,
    vtkPolyData* output,
    std::string* error);

  /**
   * Validates and reads a representation. `memoryLimitBytes` caps the grid that a malformed or
   * hostile file may ask for (0: the machine's available memory).
   */
  static bool FromPolyData(vtkPolyData* input,
    Contents& contents,
    std::string* error,
    std::uint64_t memoryLimitBytes = 0);

  /// Reads and validates the SparseGrid.* field data and builds info.Grid.
  static bool ReadFieldData(vtkFieldData* fieldData,
    Description& info,
    std::string* error,
    std::uint64_t memoryLimitBytes = 0);

  /// Replaces the SparseGrid.* arrays of `fieldData` with those of `info`.
  static void WriteFieldData(const Description& info, vtkFieldData* fieldData);

  /// True when `fieldData` carries SparseGrid.FormatVersion (a quick "is this ours?" test).
  static bool HasRepresentation(vtkFieldData* fieldData);
};

#endif
// VTK-HeaderTest-Exclude: vtkSparseGridRepresentation.h
