#include "SparseGridInspection.h"

#include "vtkSparseGridRepresentation.h"

#include <vtkAbstractArray.h>
#include <vtkDataArray.h>
#include <vtkFieldData.h>
#include <vtkImageData.h>
#include <vtkPointData.h>
#include <vtkPolyData.h>
#include <vtkVariant.h>

#include <sparsegrid/codec.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace sparsegrid_inspector
{
namespace
{
using Representation = vtkSparseGridRepresentation;

/// The validated representation of `data` (coded streams included); false with a message.
bool ReadContents(vtkDataObject* data, Representation::Contents& contents, std::string& message)
{
  vtkPolyData* poly = vtkPolyData::SafeDownCast(data);
  if (!poly || !Representation::HasRepresentation(poly->GetFieldData()))
  {
    message = "not a compressed dataset (no SparseGrid.* field data)";
    return false;
  }
  return Representation::FromPolyData(poly, contents, &message);
}

/// Bytes of the coded streams of array `i` (all pieces and components).
std::uint64_t ArrayStreamBytes(const Representation::Contents& contents, std::size_t i)
{
  std::uint64_t bytes = 0;
  if (!contents.Streams || contents.StreamOffsets.empty())
  {
    return 0;
  }
  for (int p = 0; p < contents.Info.NumberOfPieces(); ++p)
  {
    for (int c = 0; c < contents.Info.Components[i]; ++c)
    {
      const std::size_t k = contents.StreamIndex(p, i, c);
      bytes += contents.StreamOffsets[k + 1] - contents.StreamOffsets[k];
    }
  }
  return bytes;
}

template<typename T>
RatePoint CodeOnce(const Sample& sample,
  const std::vector<T>& values,
  double relative,
  std::vector<std::uint64_t>* histogram,
  double histogramBound,
  std::string& message)
{
  RatePoint point;
  point.RelativeBound = relative;
  const double range = sample.Max - sample.Min;
  point.AbsoluteBound = histogram ? histogramBound : relative * (range > 0 ? range : 1.0);
  sparsegrid::codec::Layout layout;
  layout.dims = { { sample.Dims[0], sample.Dims[1], sample.Dims[2] } };
  sparsegrid::ExecutionOptions options;
  options.backend = sparsegrid::Backend::CPU;
  options.threads = 1;
  std::vector<std::uint8_t> stream;
  sparsegrid::Status status =
    sparsegrid::codec::encode(values.data(), layout, point.AbsoluteBound, stream, options);
  std::vector<T> decoded(values.size());
  if (status.ok())
  {
    status =
      sparsegrid::codec::decode(stream.data(), stream.size(), decoded.data(), layout, -1, options);
  }
  if (!status.ok())
  {
    message = status.message();
    return point;
  }
  double sum = 0;
  for (std::size_t v = 0; v < values.size(); ++v)
  {
    const double e = std::abs(static_cast<double>(decoded[v]) - static_cast<double>(values[v]));
    point.MaxError = std::max(point.MaxError, e);
    sum += e * e;
    if (histogram)
    {
      const double f = point.AbsoluteBound > 0 ? e / point.AbsoluteBound : 0.0;
      const std::size_t bin = std::min<std::size_t>(
        histogram->size() - 1, static_cast<std::size_t>(std::max(0.0, f) * histogram->size()));
      ++(*histogram)[bin];
    }
  }
  const double rmse = values.empty() ? 0.0 : std::sqrt(sum / static_cast<double>(values.size()));
  point.Ratio = static_cast<double>(values.size() * sizeof(T)) /
    static_cast<double>(std::max<std::size_t>(1, stream.size()));
  point.PSNR = rmse > 0 ? 20.0 * std::log10((range > 0 ? range : 1.0) / rmse)
                        : std::numeric_limits<double>::infinity();
  return point;
}

template<typename T>
RateDistortion Sweep(const Sample& sample,
  const std::vector<double>& relativeBounds,
  double histogramBound,
  std::atomic<int>* done,
  const std::atomic<bool>* cancel)
{
  RateDistortion result;
  const std::vector<T> values(sample.Values.begin(), sample.Values.end());
  for (double relative : relativeBounds)
  {
    if (cancel && cancel->load())
    {
      result.Cancelled = true;
      return result;
    }
    result.Points.push_back(CodeOnce<T>(sample, values, relative, nullptr, 0, result.Message));
    if (!result.Message.empty())
    {
      return result;
    }
    if (done)
    {
      ++(*done);
    }
  }
  if (histogramBound > 0 && !(cancel && cancel->load()))
  {
    result.Histogram.assign(10, 0);
    result.HistogramBound = histogramBound;
    CodeOnce<T>(sample, values, 0, &result.Histogram, histogramBound, result.Message);
    if (done)
    {
      ++(*done);
    }
  }
  return result;
}
} // namespace

//------------------------------------------------------------------------------------------------
Inspection Inspect(vtkDataObject* data)
{
  Inspection out;
  Representation::Contents contents;
  if (!ReadContents(data, contents, out.Message))
  {
    return out;
  }
  const Representation::Description& info = contents.Info;
  out.Valid = true;
  out.Coded = info.Kind == sparsegrid::Encoding::ErrorBounded;
  vtkAbstractArray* summary = data->GetFieldData()->GetAbstractArray("SparseGrid.Summary");
  out.Summary = summary && summary->GetNumberOfValues() > 0 ? summary->GetVariantValue(0).ToString()
                                                            : info.Summary;
  out.Ratio = info.CompressionRatio;
  out.StoredBytes = info.StoredBytes;
  out.Backend = info.Backend;
  out.BackendNote = info.BackendNote;
  out.Seconds = info.TimeSeconds;
  out.BoundMode = info.BoundMode == sparsegrid::BoundRelative
    ? "Relative"
    : (info.BoundMode == sparsegrid::BoundAbsolute ? "Absolute" : "Off");
  out.RequestedBound = info.RequestedBound;
  out.LevelOfDetail = info.LevelOfDetail;
  const std::uint64_t points = static_cast<std::uint64_t>(info.ImageDimensions[0]) *
    static_cast<std::uint64_t>(info.ImageDimensions[1]) *
    static_cast<std::uint64_t>(info.ImageDimensions[2]);
  const std::uint64_t valueBytes = info.Precision == sparsegrid::Precision::Float ? 4 : 8;
  for (std::size_t i = 0; i < info.ArrayNames.size(); ++i)
  {
    ArrayRow row;
    row.Name = info.ArrayNames[i];
    row.Components = i < info.Components.size() ? info.Components[i] : 1;
    row.Bound = i < info.AbsoluteBound.size() ? info.AbsoluteBound[i] : 0.0;
    row.HasMetrics = i < info.MaxAbsError.size() && i < info.RMSE.size() && i < info.PSNR.size();
    if (row.HasMetrics)
    {
      row.MaxError = info.MaxAbsError[i];
      row.RMSE = info.RMSE[i];
      row.PSNR = info.PSNR[i];
    }
    row.Bytes = out.Coded ? ArrayStreamBytes(contents, i) : 0;
    row.RawBytes = points * static_cast<std::uint64_t>(row.Components) * valueBytes;
    out.Arrays.push_back(row);
  }
  if (out.Coded)
  {
    std::vector<double> bounds;
    std::string ignored;
    Representation::LevelOfDetailBounds(contents, 0, bounds, out.Levels, &ignored);
  }
  return out;
}

//------------------------------------------------------------------------------------------------
LevelCost InspectLevel(vtkDataObject* data, int level)
{
  LevelCost out;
  Representation::Contents contents;
  if (!ReadContents(data, contents, out.Message))
  {
    return out;
  }
  if (!Representation::LevelOfDetailBounds(contents, level, out.Bounds, out.Levels, &out.Message))
  {
    return out;
  }
  out.Level = level <= 0 || level > out.Levels ? 0 : level;
  out.Measured = out.Level > 0 && contents.Info.MeasuredLevels() > 0;
  const std::uint8_t* all = contents.Streams->GetPointer(0);
  for (std::size_t k = 0; k + 1 < contents.StreamOffsets.size(); ++k)
  {
    const std::size_t size =
      static_cast<std::size_t>(contents.StreamOffsets[k + 1] - contents.StreamOffsets[k]);
    sparsegrid::codec::StreamInfo header;
    if (!sparsegrid::codec::inspect(all + contents.StreamOffsets[k], size, header).ok() ||
      header.levelEnd.empty())
    {
      out.Message = "a coded stream is damaged";
      return out;
    }
    out.TotalBytes += size;
    const std::size_t index = out.Level == 0
      ? header.levelEnd.size() - 1
      : std::min<std::size_t>(header.levelEnd.size() - 1, static_cast<std::size_t>(out.Level - 1));
    out.Bytes += std::min<std::uint64_t>(size, header.levelEnd[index]);
  }
  out.Valid = true;
  return out;
}

//------------------------------------------------------------------------------------------------
std::vector<std::uint8_t> FirstStream(vtkDataObject* data, std::string& message)
{
  Representation::Contents contents;
  if (!ReadContents(data, contents, message))
  {
    return {};
  }
  if (!contents.Streams || contents.StreamOffsets.size() < 2)
  {
    message = "no coded streams (fixed-level sparse grid)";
    return {};
  }
  const std::uint8_t* first = contents.Streams->GetPointer(0) + contents.StreamOffsets[0];
  return std::vector<std::uint8_t>(
    first, first + (contents.StreamOffsets[1] - contents.StreamOffsets[0]));
}

//------------------------------------------------------------------------------------------------
template<typename T>
Preview DecodeTyped(const std::vector<std::uint8_t>& stream,
  const sparsegrid::codec::StreamInfo& info,
  int level)
{
  Preview preview;
  preview.Level = level;
  sparsegrid::codec::Layout layout;
  layout.dims = info.dims;
  std::vector<T> values(info.dims[0] * info.dims[1] * info.dims[2]);
  sparsegrid::ExecutionOptions options;
  options.backend = sparsegrid::Backend::CPU;
  const int index = level <= 0 || level > info.levels ? -1 : level - 1;
  const sparsegrid::Status status =
    sparsegrid::codec::decode(stream.data(), stream.size(), values.data(), layout, index, options);
  if (!status.ok())
  {
    preview.Message = status.message();
    return preview;
  }
  // The slice across the last axis with more than one voxel, in its middle.
  const std::uint64_t nx = info.dims[0];
  const std::uint64_t ny = info.dims[2] > 1 ? info.dims[1] : 1;
  const std::uint64_t offset = info.dims[2] > 1 ? nx * ny * (info.dims[2] / 2) : 0;
  const std::uint64_t rows = info.dims[2] > 1 ? ny : info.dims[1];
  preview.Width = static_cast<int>(nx);
  preview.Height = static_cast<int>(rows);
  preview.Values.resize(nx * rows);
  for (std::uint64_t i = 0; i < nx * rows; ++i)
  {
    preview.Values[i] = static_cast<float>(values[offset + i]);
  }
  const auto range = std::minmax_element(preview.Values.begin(), preview.Values.end());
  preview.Min = preview.Values.empty() ? 0.0 : *range.first;
  preview.Max = preview.Values.empty() ? 0.0 : *range.second;
  return preview;
}

//------------------------------------------------------------------------------------------------
Preview DecodePreview(const std::vector<std::uint8_t>& stream, int level)
{
  sparsegrid::codec::StreamInfo info;
  const sparsegrid::Status status = sparsegrid::codec::inspect(stream.data(), stream.size(), info);
  if (!status.ok())
  {
    Preview preview;
    preview.Message = status.message();
    return preview;
  }
  if (info.dims[0] * info.dims[1] * info.dims[2] > (1ull << 27))
  {
    Preview preview;
    preview.Message = "the image is too large to preview here";
    return preview;
  }
  return info.type == sparsegrid::codec::ValueType::Float32
    ? DecodeTyped<float>(stream, info, level)
    : DecodeTyped<double>(stream, info, level);
}

//------------------------------------------------------------------------------------------------
Sample MakeSample(vtkImageData* image, const std::string& name, int component, int edge)
{
  Sample sample;
  vtkDataArray* array = image ? image->GetPointData()->GetArray(name.c_str()) : nullptr;
  if (!array || component < 0 || component >= array->GetNumberOfComponents())
  {
    sample.Message = "the original array '" + name + "' is not available here";
    return sample;
  }
  sample.Float = array->GetDataType() != VTK_DOUBLE;
  double range[2];
  array->GetRange(range, component);
  sample.Min = range[0];
  sample.Max = range[1];
  int dims[3];
  image->GetDimensions(dims);
  int start[3];
  for (int a = 0; a < 3; ++a)
  {
    const int n = std::min(dims[a], std::max(1, edge));
    sample.Dims[a] = static_cast<std::uint64_t>(n);
    start[a] = (dims[a] - n) / 2;
  }
  sample.Values.reserve(sample.Dims[0] * sample.Dims[1] * sample.Dims[2]);
  for (int k = 0; k < static_cast<int>(sample.Dims[2]); ++k)
  {
    for (int j = 0; j < static_cast<int>(sample.Dims[1]); ++j)
    {
      for (int i = 0; i < static_cast<int>(sample.Dims[0]); ++i)
      {
        const vtkIdType id = (static_cast<vtkIdType>(start[2] + k) * dims[1] + start[1] + j) *
            static_cast<vtkIdType>(dims[0]) +
          start[0] + i;
        const double v = array->GetComponent(id, component);
        if (!std::isfinite(v))
        {
          sample.Values.clear();
          sample.Message = "the sample holds a NaN or infinite value";
          return sample;
        }
        sample.Values.push_back(v);
      }
    }
  }
  return sample;
}

//------------------------------------------------------------------------------------------------
std::vector<double> SweepBounds()
{
  return { 1e-1, 3e-2, 1e-2, 3e-3, 1e-3, 3e-4, 1e-4, 3e-5, 1e-5 };
}

//------------------------------------------------------------------------------------------------
RateDistortion ComputeRateDistortion(const Sample& sample,
  const std::vector<double>& relativeBounds,
  double histogramBound,
  std::atomic<int>* done,
  const std::atomic<bool>* cancel)
{
  if (sample.Values.empty())
  {
    RateDistortion result;
    result.Message = sample.Message.empty() ? "no sample" : sample.Message;
    return result;
  }
  return sample.Float ? Sweep<float>(sample, relativeBounds, histogramBound, done, cancel)
                      : Sweep<double>(sample, relativeBounds, histogramBound, done, cancel);
}

//------------------------------------------------------------------------------------------------
std::string FormatBytes(std::uint64_t bytes)
{
  char text[64];
  if (bytes < 1024)
  {
    std::snprintf(text, sizeof(text), "%llu B", static_cast<unsigned long long>(bytes));
  }
  else if (bytes < 1024ull * 1024)
  {
    std::snprintf(text, sizeof(text), "%.1f KiB", bytes / 1024.0);
  }
  else
  {
    std::snprintf(text, sizeof(text), "%.2f MiB", bytes / (1024.0 * 1024.0));
  }
  return text;
}
}
