/**
 * @file SparseGridInspection.h
 * @brief What the Compression Inspector panel shows, computed without Qt: the numbers of a
 * compressed dataset read from its SparseGrid.* field data (vtkSparseGridRepresentation, the one
 * reader of that field data), the bytes and bound of each level of detail, and a rate-distortion
 * sweep with an error histogram on a sample of the original image (SparseGridCore's codec only,
 * so it runs on a worker thread).
 */
#ifndef SparseGridInspection_h
#define SparseGridInspection_h

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

class vtkDataObject;
class vtkImageData;

namespace sparsegrid_inspector
{

/// One compressed array.
struct ArrayRow
{
  std::string Name;
  int Components = 1;
  double Bound = 0;           ///< SparseGrid.AbsoluteErrorBound (error-bounded encoding)
  bool HasMetrics = false;    ///< the filter measured the error (SparseGrid.MaxAbsError, ...)
  double MaxError = 0;        ///< SparseGrid.MaxAbsError
  double RMSE = 0;            ///< SparseGrid.RMSE
  double PSNR = 0;            ///< SparseGrid.PSNR (+inf: lossless)
  std::uint64_t Bytes = 0;    ///< bytes of this array's coded streams
  std::uint64_t RawBytes = 0; ///< points x components x bytes per value (the precision's)
};

/// A compressed dataset as the panel shows it.
struct Inspection
{
  bool Valid = false;
  std::string Message; ///< why not valid
  bool Coded = false;  ///< error-bounded encoding (else the fixed-level sparse grid)
  std::string Summary;
  double Ratio = 0;              ///< SparseGrid.CompressionRatio
  std::uint64_t StoredBytes = 0; ///< SparseGrid.StoredBytes
  std::string Backend;
  std::string BackendNote;
  double Seconds = 0; ///< SparseGrid.TimeSeconds
  std::string BoundMode;
  double RequestedBound = 0; ///< SparseGrid.ErrorBound (as requested: relative or absolute)
  int LevelOfDetail = 0;     ///< SparseGrid.LevelOfDetail (0: all levels)
  int Levels = 0;            ///< levels of detail of the streams (0: none)
  std::vector<ArrayRow> Arrays;
};

/// Reads `data`'s SparseGrid.* field data (a Hierarchize output or a reader's representation).
Inspection Inspect(vtkDataObject* data);

/// What decoding levels 1..level (0: all) of `data` costs and guarantees.
struct LevelCost
{
  bool Valid = false;
  std::string Message;
  int Level = 0;
  int Levels = 0;
  std::uint64_t Bytes = 0;      ///< stream bytes read for that level
  std::uint64_t TotalBytes = 0; ///< all stream bytes
  std::vector<double> Bounds;   ///< per array: the bound that holds at that level
  /// Bounds are the max errors measured when compressing (SparseGrid.LevelMaxAbsError), not
  /// the codec's guarantee for the level.
  bool Measured = false;
};
LevelCost InspectLevel(vtkDataObject* data, int level);

/// The middle slice (across the last axis with more than one voxel) of the first coded stream
/// (first piece, first array, first component) decoded at a level of detail.
struct Preview
{
  std::vector<float> Values; ///< Width x Height, row-major, first axis fastest
  int Width = 0, Height = 0;
  int Level = 0; ///< 1-based, 0: all levels
  double Min = 0, Max = 0;
  std::string Message; ///< why empty
};
/// A copy of the first coded stream of `data` (empty, with a message, when there is none).
std::vector<std::uint8_t> FirstStream(vtkDataObject* data, std::string& message);
/// Decodes `stream` at `level` (1-based, 0: all) and cuts its middle slice; SparseGridCore only
/// (safe on a worker thread). Images above 2^27 voxels are not previewed.
Preview DecodePreview(const std::vector<std::uint8_t>& stream, int level);

/// A centred block of one component of an image array, copied for a worker thread.
struct Sample
{
  std::vector<double> Values;
  bool Float = true; ///< the array is float (coded as float), else as double
  std::uint64_t Dims[3] = { 1, 1, 1 };
  double Min = 0, Max = 0; ///< range of the whole component (the relative bound's reference)
  std::string Message;     ///< why empty
};
/// At most `edge` voxels along each axis, from the middle of `image`'s point array `array`.
Sample MakeSample(vtkImageData* image, const std::string& array, int component, int edge);

struct RatePoint
{
  double RelativeBound = 0;
  double AbsoluteBound = 0;
  double Ratio = 0; ///< sample bytes / stream bytes
  double PSNR = 0;  ///< dB, over the sample's value range (+inf: exact)
  double MaxError = 0;
};

struct RateDistortion
{
  std::vector<RatePoint> Points;
  /// Histogram of |error| / bound at `HistogramBound` (absolute), 10 bins over [0, 1].
  std::vector<std::uint64_t> Histogram;
  double HistogramBound = 0;
  bool Cancelled = false;
  std::string Message; ///< an error of the codec
};

/// The relative bounds of the sweep, loosest first.
std::vector<double> SweepBounds();

/// Encodes and decodes `sample` once per bound (SparseGridCore only; safe on a worker thread).
/// `done` counts the finished codings; `cancel` stops between codings.
RateDistortion ComputeRateDistortion(const Sample& sample,
  const std::vector<double>& relativeBounds,
  double histogramBound,
  std::atomic<int>* done,
  const std::atomic<bool>* cancel);

/// "12.3 KiB"
std::string FormatBytes(std::uint64_t bytes);
}

#endif
