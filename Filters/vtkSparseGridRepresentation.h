/**
 * @class vtkSparseGridRepresentation
 * @brief Converts a sparse grid with its coefficient arrays and metadata to and from the
 * vtkPolyData described in docs/representation.md.
 *
 * API (kept small and stable: the filters, the .sgrid reader and the writer all use it):
 *
 * @code
 * // Core -> VTK: SparseGrid.* field data and one "<array> Surpluses" field array per name;
 * // with gridPoints also a point and a vertex per coefficient (the same arrays as point data).
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
 * Two encodings share the metadata (image geometry, arrays, precision, metrics):
 * - `Encoding::SparseGrid` (FormatVersion 3): the fixed-level sparse grid; the hierarchical
 *   surpluses of each array as one field array `<array> Surpluses` (no per-point geometry, so
 *   the representation in memory is the coefficient bytes plus a few hundred bytes), and on
 *   request the grid points as points, vertices and point data that share those arrays. The
 *   first form (FormatVersion 1: one point per coefficient, the surpluses as point data under
 *   the arrays' own names) is still read.
 * - `Encoding::ErrorBounded` (FormatVersion 2): the error-bounded codec of
 *   `sparsegrid/codec.h`; no points at all, the coded streams live in the field data
 *   (`SparseGrid.Streams`, one byte array, and `SparseGrid.StreamOffsets`), so the
 *   representation in memory is the stored bytes plus a few hundred bytes of metadata.
 *
 * Every function returns false with a message in `error` instead of throwing.
 * The class is not wrapped: its API uses sparsegrid:: types.
 */
#ifndef vtkSparseGridRepresentation_h
#define vtkSparseGridRepresentation_h

#include "SparseGridFiltersModule.h" // for the export macro
#include "vtkSmartPointer.h"         // for Contents::Coefficients
#include "vtkUnsignedCharArray.h"    // for Contents::Streams

#include <sparsegrid/description.h> // for sparsegrid::Description

#include <cstdint>
#include <string>
#include <vector>

class vtkDataArray;
class vtkInformationDoubleVectorKey;
class vtkFieldData;
class vtkPolyData;

class SPARSEGRIDFILTERS_EXPORT vtkSparseGridRepresentation
{
public:
  /// SparseGrid.FormatVersion of the fixed-level encoding: surpluses in the field data.
  static constexpr int FormatVersion = 3;
  /// The first fixed-level form (surpluses as point data of one point per coefficient): read,
  /// never written.
  static constexpr int GridPointsFormatVersion = 1;
  /// SparseGrid.FormatVersion of the error-bounded encoding (readers of version 1 refuse it).
  static constexpr int ErrorBoundedFormatVersion = 2;

  /// The encodings (sparsegrid/description.h).
  using Encoding = sparsegrid::Encoding;
  /// ErrorBoundMode of Sparse Grid Hierarchize; Off is the fixed-level sparse grid.
  enum BoundModes
  {
    BOUND_OFF = sparsegrid::BoundOff,
    BOUND_ABSOLUTE = sparsegrid::BoundAbsolute,
    BOUND_RELATIVE = sparsegrid::BoundRelative
  };

  /**
   * The SparseGrid.* field data as C++ values: the plugin's one model of a compressed dataset
   * (sparsegrid/description.h), which the .sgrid file serialises too; ReadFieldData validates
   * it with sparsegrid::validate, as the file reader does.
   */
  using Description = sparsegrid::Description;

  /// A validated representation: metadata plus one float/double array per name (fixed-level
  /// encoding) or the coded streams (error-bounded encoding).
  struct Contents
  {
    Description Info;
    std::vector<vtkSmartPointer<vtkDataArray>> Coefficients; ///< same order as Info.ArrayNames
    /// Error-bounded, the global stream table: all streams back to back, piece-major, then
    /// array, then component; stream k is bytes [StreamOffsets[k], StreamOffsets[k + 1]) of
    /// that sequence, whichever process holds them.
    std::vector<std::uint64_t> StreamOffsets;
    /// Per piece, the process that coded it (distributed Hierarchize); empty otherwise.
    std::vector<int> PieceOwners;
    /// Per stream, its levels of detail, and the bound of each level (all streams' levels back
    /// to back); empty where the representation does not carry them (its streams' headers say).
    std::vector<int> StreamLevels;
    std::vector<double> StreamLevelBounds;
    /// The bytes this process holds: every stream (SparseGrid.Streams), or the streams of the
    /// pieces it coded (SparseGrid.StreamChunks, distributed).
    vtkSmartPointer<vtkUnsignedCharArray> Streams;
    /// Per piece, where its streams start in memory; nullptr where this process does not hold
    /// them (vtkSparseGridParallel::FetchPieces brings them).
    std::vector<const std::uint8_t*> PieceData;
    /// Streams received from other processes, kept alive here.
    std::vector<vtkSmartPointer<vtkUnsignedCharArray>> Received;
    /// Counts of the last decode and exchange: pieces decoded, their voxels, bytes received.
    mutable std::uint64_t BricksDecoded = 0;
    mutable std::uint64_t VoxelsDecoded = 0;
    std::uint64_t BytesReceived = 0;
    /// Per piece, whether this process held it before fetching others (set when the probe's
    /// bricks are selected, vtkSparseGridProbe::SelectBricks); empty: the pieces it holds.
    std::vector<char> LocalPieces;
    /// Stream index of (piece, array, component).
    std::size_t StreamIndex(int piece, std::size_t array, int component) const;
    /// Stream k's bytes, nullptr where this process does not hold them.
    const std::uint8_t* StreamData(std::size_t k) const;
    std::size_t StreamSize(std::size_t k) const
    {
      return static_cast<std::size_t>(this->StreamOffsets[k + 1] - this->StreamOffsets[k]);
    }
    /// Bytes of piece p's streams (all arrays and components).
    std::uint64_t PieceBytes(int piece) const;
    bool Holds(int piece) const
    {
      return piece >= 0 && static_cast<std::size_t>(piece) < this->PieceData.size() &&
        this->PieceData[static_cast<std::size_t>(piece)] != nullptr;
    }
  };

  /// Bytes per point of SparseGrid.StreamChunks (the distributed form of the streams).
  static constexpr int ChunkBytes = 4096;

  /**
   * Error-bounded encoding: an output with no points whose field data holds the metadata and
   * the streams (shallow). `streams` and `offsets` as in Contents.
   */
  static bool ToCodedPolyData(const Description& info,
    vtkUnsignedCharArray* streams,
    const std::vector<std::uint64_t>& offsets,
    vtkPolyData* output,
    std::string* error);

  /**
   * Error-bounded, distributed: the output of one process that holds the streams of the pieces
   * it coded only, with the global index (`index`: Info, StreamOffsets, PieceOwners,
   * StreamLevels, StreamLevelBounds). `mine` holds the streams of the pieces owned by `owner`,
   * back to back in piece order. They go into the point data (`SparseGrid.StreamChunks`,
   * ChunkBytes per point, one point per chunk at the image origin, no cells), so that
   * appending the processes' outputs (ParaView's Fetch, the GUI's delivery) appends the streams
   * in process order and gives back the whole representation.
   */
  static bool ToDistributedPolyData(const Contents& index,
    const std::vector<std::uint8_t>& mine,
    int owner,
    vtkPolyData* output,
    std::string* error);

  /**
   * The one place that words SparseGrid.Summary (Hierarchize, the consumers, the .sgrid reader):
   * ratio, max error against the bound, PSNR, size; at a coarser level of detail
   * (info.LevelOfDetail, IsPartialLevel) that level and its own error come first.
   */
  static std::string MakeSummary(const Description& info);

  /// True when decoding `levelOfDetail` levels leaves out levels the streams hold (0: all).
  static bool IsPartialLevel(const Description& info, int levelOfDetail);

  /**
   * The max error, per array, measured on every voxel of the input when compressed, for a decode
   * of `levelOfDetail` levels (0: all, where MaxAbsError is the answer); empty when unknown
   * (no SparseGrid.LevelMaxAbsError at a coarser level).
   */
  static std::vector<double> MeasuredErrors(const Description& info, int levelOfDetail);

  /**
   * Fills `output` (cleared first) with the field data and the coefficient arrays as field
   * arrays named SurplusesName(ArrayNames[i]) (shallow). With `gridPoints`, also points at the
   * physical positions of the grid points, one vertex cell per point and the same arrays as
   * point data, for users who want to see the grid. Each coefficient array must hold
   * Grid.size() tuples and be a vtkFloatArray or vtkDoubleArray matching `info.Precision`.
   * SparseGrid.MemoryBytes then says how many bytes the output holds.
   */
  static bool ToPolyData(const Description& info,
    const std::vector<vtkDataArray*>& coefficients,
    vtkPolyData* output,
    std::string* error,
    bool gridPoints = false);

  /// Name of the field (and, with grid points, point) array that holds the hierarchical
  /// surpluses of `arrayName`: not data values, so not under the data's own name.
  static std::string SurplusesName(const std::string& arrayName);

  /**
   * Bytes the arrays of `data` hold (field data, point data not shared with the field data,
   * points and cells): what a representation costs in memory. Written by ToPolyData and
   * ToCodedPolyData as SparseGrid.MemoryBytes on the piece that holds the payload.
   */
  static std::uint64_t MemoryBytes(vtkPolyData* data);

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

  /**
   * Information key set by the producers of a representation (Hierarchize from its input's
   * information, the .sgrid reader from the file header) in the information pass: 9 values,
   * the compressed image's dimensions, origin (of its first point) and spacing. Consumers read
   * the geometry from it without running the pipeline or any collective call.
   */
  static vtkInformationDoubleVectorKey* IMAGE_GEOMETRY();

  /// Name of the field array that holds the coded streams (error-bounded encoding).
  static constexpr const char* StreamsArrayName = "SparseGrid.Streams";
  /// Name of the point array that holds one process's streams in a distributed run.
  static constexpr const char* StreamChunksArrayName = "SparseGrid.StreamChunks";

  /// True when `data` is one process's part of a distributed error-bounded representation
  /// (it carries SparseGrid.PieceOwners, as every process's output of a distributed
  /// Hierarchize does).
  static bool IsDistributed(vtkPolyData* data);

  /// True when `data` holds the payload (coefficients or coded streams), not only metadata: in a
  /// distributed run only piece 0 does.
  static bool HoldsPayload(vtkPolyData* data);

  /**
   * Error-bounded: the bound that holds, per array, when consumers decode `levelOfDetail`
   * levels (0: all) and the number of levels the streams have (the smallest over streams).
   * At a coarser level that is the error measured when compressing (LevelMaxAbsError) where the
   * representation carries it, else the codec's guarantee for that level.
   */
  static bool LevelOfDetailBounds(const Contents& contents,
    int levelOfDetail,
    std::vector<double>& bounds,
    int& levels,
    std::string* error);

  /// True when `fieldData` carries SparseGrid.FormatVersion (a quick "is this ours?" test).
  static bool HasRepresentation(vtkFieldData* fieldData);
};

#endif
// VTK-HeaderTest-Exclude: vtkSparseGridRepresentation.h
