#include "vtkSparseGridRepresentation.h"

#include "vtkCoreExecution.h"
#include "vtkSparseGridArrays.h"

#include "vtkAOSDataArrayTemplate.h"
#include "vtkArrayDispatch.h"
#include "vtkCellArray.h"
#include "vtkDoubleArray.h"
#include "vtkFieldData.h"
#include "vtkFloatArray.h"
#include "vtkIdTypeArray.h"
#include "vtkInformation.h"
#include "vtkInformationDoubleVectorKey.h"
#include "vtkIntArray.h"
#include "vtkPointData.h"
#include "vtkPoints.h"
#include "vtkPolyData.h"
#include "vtkSMPTools.h"
#include "vtkStringArray.h"
#include "vtkTypeInt64Array.h"
#include "vtkUnsignedCharArray.h"

#include <sparsegrid/codec.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

namespace
{
const char* const FormatVersionName = "SparseGrid.FormatVersion";
const char* const DimensionsName = "SparseGrid.Dimensions";
const char* const LevelName = "SparseGrid.Level";
const char* const LevelCapsName = "SparseGrid.LevelCaps";
const char* const BoundaryName = "SparseGrid.Boundary";
const char* const AxisMapName = "SparseGrid.AxisMap";
const char* const BoundsName = "SparseGrid.Bounds";
const char* const ImageDimensionsName = "SparseGrid.ImageDimensions";
const char* const ImageOriginName = "SparseGrid.ImageOrigin";
const char* const ImageSpacingName = "SparseGrid.ImageSpacing";
const char* const PrecisionName = "SparseGrid.Precision";
const char* const ArrayNamesName = "SparseGrid.ArrayNames";
const char* const NumberOfCoefficientsName = "SparseGrid.NumberOfCoefficients";
const char* const CompressionRatioName = "SparseGrid.CompressionRatio";
const char* const BackendName = "SparseGrid.Backend";
const char* const BackendNoteName = "SparseGrid.BackendNote";
const char* const TimeSecondsName = "SparseGrid.TimeSeconds";
const char* const MaxAbsErrorName = "SparseGrid.MaxAbsError";
const char* const RMSEName = "SparseGrid.RMSE";
const char* const PSNRName = "SparseGrid.PSNR";
/// How SparseGrid.PSNR stores +inf (lossless): see WriteFieldData.
constexpr double LosslessPSNR = 1e308;
const char* const SummaryName = "SparseGrid.Summary";
// Error-bounded encoding (FormatVersion 2).
const char* const EncodingName = "SparseGrid.Encoding";
const char* const ArrayComponentsName = "SparseGrid.ArrayComponents";
const char* const ErrorBoundModeName = "SparseGrid.ErrorBoundMode";
const char* const ErrorBoundName = "SparseGrid.ErrorBound";
const char* const AbsoluteErrorBoundName = "SparseGrid.AbsoluteErrorBound";
const char* const PieceExtentsName = "SparseGrid.PieceExtents";
const char* const LevelOfDetailName = "SparseGrid.LevelOfDetail";
const char* const LevelOfDetailBoundName = "SparseGrid.LevelOfDetailBound";
const char* const LevelMaxAbsErrorName = "SparseGrid.LevelMaxAbsError";
const char* const StoredBytesName = "SparseGrid.StoredBytes";
const char* const StreamsName = vtkSparseGridRepresentation::StreamsArrayName;
const char* const StreamOffsetsName = "SparseGrid.StreamOffsets";
const char* const StreamChunksName = vtkSparseGridRepresentation::StreamChunksArrayName;
const char* const StreamChunksFirstName = "SparseGrid.StreamChunksFirst";
const char* const PieceOwnersName = "SparseGrid.PieceOwners";
const char* const StreamLevelsName = "SparseGrid.StreamLevels";
const char* const StreamLevelBoundsName = "SparseGrid.StreamLevelBounds";
const char* const MemoryBytesName = "SparseGrid.MemoryBytes";
constexpr int MaxPieces = static_cast<int>(sparsegrid::MaxPieces);
constexpr int MaxArrays = static_cast<int>(sparsegrid::MaxArrays);
// A level no valid grid exceeds, checked before the grid's own memory check runs.
constexpr int MaxLevel = 3 * sparsegrid::MaxAxisLevel;

bool Fail(std::string* error, const std::string& message)
{
  if (error)
  {
    *error = message;
  }
  return false;
}

/// Reads exactly `n` numbers of a numeric field array (any VTK numeric type).
bool ReadNumbers(vtkFieldData* fd,
  const char* name,
  vtkIdType n,
  bool required,
  std::vector<double>& values,
  bool& present,
  std::string* error)
{
  values.clear();
  present = false;
  vtkAbstractArray* abstract = fd->GetAbstractArray(name);
  if (!abstract)
  {
    return required ? Fail(error, std::string("missing field data array ") + name) : true;
  }
  vtkDataArray* array = vtkDataArray::SafeDownCast(abstract);
  if (!array)
  {
    return Fail(error, std::string(name) + " is not a numeric array");
  }
  if (array->GetNumberOfValues() != n)
  {
    std::ostringstream os;
    os << name << " holds " << array->GetNumberOfValues() << " values, expected " << n;
    return Fail(error, os.str());
  }
  const int nc = std::max(1, array->GetNumberOfComponents());
  values.resize(static_cast<std::size_t>(n));
  for (vtkIdType i = 0; i < n; ++i)
  {
    values[static_cast<std::size_t>(i)] = array->GetComponent(i / nc, static_cast<int>(i % nc));
  }
  present = true;
  return true;
}

bool ReadIntegers(vtkFieldData* fd,
  const char* name,
  vtkIdType n,
  double lo,
  double hi,
  std::vector<int>& out,
  std::string* error)
{
  std::vector<double> values;
  bool present = false;
  if (!ReadNumbers(fd, name, n, true, values, present, error))
  {
    return false;
  }
  out.clear();
  for (double v : values)
  {
    if (!std::isfinite(v) || v != std::floor(v) || v < lo || v > hi)
    {
      std::ostringstream os;
      os << name << " holds " << v << ", expected an integer in [" << lo << ", " << hi << "]";
      return Fail(error, os.str());
    }
    out.push_back(static_cast<int>(v));
  }
  return true;
}

bool ReadFinite(vtkFieldData* fd,
  const char* name,
  vtkIdType n,
  bool required,
  std::vector<double>& out,
  bool& present,
  std::string* error)
{
  if (!ReadNumbers(fd, name, n, required, out, present, error))
  {
    return false;
  }
  for (double v : out)
  {
    if (!std::isfinite(v))
    {
      return Fail(error, std::string(name) + " holds a NaN or infinite value");
    }
  }
  return true;
}

/// Optional per-array metric: absent, or one value per array (sparsegrid::validate checks them).
bool ReadMetric(vtkFieldData* fd,
  const char* name,
  std::size_t arrays,
  std::vector<double>& out,
  std::string* error)
{
  bool present = false;
  return ReadNumbers(fd, name, static_cast<vtkIdType>(arrays), false, out, present, error);
}

bool ReadString(vtkFieldData* fd,
  const char* name,
  bool required,
  std::string& out,
  std::string* error)
{
  vtkAbstractArray* abstract = fd->GetAbstractArray(name);
  if (!abstract)
  {
    return required ? Fail(error, std::string("missing field data array ") + name) : true;
  }
  vtkStringArray* strings = vtkStringArray::SafeDownCast(abstract);
  if (!strings || strings->GetNumberOfValues() != 1)
  {
    return Fail(error, std::string(name) + " must be a string array holding one string");
  }
  out = strings->GetValue(0);
  return true;
}

template<typename ArrayT, typename ValueT>
void AddField(vtkFieldData* fd, const char* name, const ValueT* values, vtkIdType n)
{
  vtkNew<ArrayT> array;
  array->SetName(name);
  array->SetNumberOfValues(n);
  for (vtkIdType i = 0; i < n; ++i)
  {
    array->SetValue(i, values[i]);
  }
  fd->AddArray(array);
}

void AddString(vtkFieldData* fd, const char* name, const std::string& value)
{
  vtkNew<vtkStringArray> array;
  array->SetName(name);
  array->InsertNextValue(value);
  fd->AddArray(array);
}

int ExpectedDataType(sparsegrid::Precision precision)
{
  return precision == sparsegrid::Precision::Float ? VTK_FLOAT : VTK_DOUBLE;
}

/// SparseGrid.MemoryBytes: the bytes of `output`, this array's own eight included.
void AddMemoryBytes(vtkPolyData* output)
{
  const vtkTypeInt64 bytes = static_cast<vtkTypeInt64>(
    vtkSparseGridRepresentation::MemoryBytes(output) + sizeof(vtkTypeInt64));
  AddField<vtkTypeInt64Array>(output->GetFieldData(), MemoryBytesName, &bytes, 1);
}
} // namespace

//------------------------------------------------------------------------------------------------
bool vtkSparseGridRepresentation::HasRepresentation(vtkFieldData* fieldData)
{
  return fieldData && fieldData->GetAbstractArray(FormatVersionName) != nullptr;
}

//------------------------------------------------------------------------------------------------
std::size_t vtkSparseGridRepresentation::Contents::StreamIndex(int piece,
  std::size_t array,
  int component) const
{
  std::size_t index =
    static_cast<std::size_t>(piece) * static_cast<std::size_t>(this->Info.TotalComponents());
  for (std::size_t i = 0; i < array; ++i)
  {
    index += static_cast<std::size_t>(this->Info.Components[i]);
  }
  return index + static_cast<std::size_t>(component);
}

//------------------------------------------------------------------------------------------------
const std::uint8_t* vtkSparseGridRepresentation::Contents::StreamData(std::size_t k) const
{
  const std::size_t streams = static_cast<std::size_t>(this->Info.TotalComponents());
  const std::size_t piece = streams > 0 ? k / streams : 0;
  if (piece >= this->PieceData.size() || !this->PieceData[piece] ||
    k + 1 >= this->StreamOffsets.size())
  {
    return nullptr;
  }
  return this->PieceData[piece] + (this->StreamOffsets[k] - this->StreamOffsets[piece * streams]);
}

//------------------------------------------------------------------------------------------------
std::uint64_t vtkSparseGridRepresentation::Contents::PieceBytes(int piece) const
{
  const std::size_t streams = static_cast<std::size_t>(this->Info.TotalComponents());
  const std::size_t first = static_cast<std::size_t>(piece) * streams;
  return this->StreamOffsets[first + streams] - this->StreamOffsets[first];
}

//------------------------------------------------------------------------------------------------
std::string vtkSparseGridRepresentation::MakeSummary(const Description& info)
{
  std::ostringstream os;
  os.precision(3);
  auto largest = [](const std::vector<double>& values)
  {
    double worst = 0;
    for (double v : values)
    {
      worst = std::max(worst, v);
    }
    return worst;
  };
  const bool coded = info.Kind == Encoding::ErrorBounded;
  const int measured = info.MeasuredLevels();
  if (coded && IsPartialLevel(info, info.LevelOfDetail))
  {
    // What is shown is a coarser level: its own error first, the full decode's after it.
    os << "level " << info.LevelOfDetail;
    if (measured > 0)
    {
      os << " of " << measured << ": max error "
         << largest(MeasuredErrors(info, info.LevelOfDetail)) << " (measured when compressed)";
    }
    else if (info.LevelBound.size() == info.ArrayNames.size() && !info.LevelBound.empty())
    {
      os << ": error at most " << largest(info.LevelBound);
    }
    else
    {
      os << " (its error was not measured)";
    }
    os << "; all levels: ";
  }
  os << info.CompressionRatio << ":1";
  if (coded)
  {
    const double bound = largest(info.AbsoluteBound);
    if (!info.MaxAbsError.empty())
    {
      os << ", max error " << largest(info.MaxAbsError) << " <= bound " << bound;
    }
    else
    {
      os << ", bound " << bound;
    }
    os << " (" << (info.BoundMode == BOUND_RELATIVE ? "relative " : "absolute ")
       << info.RequestedBound << ")";
  }
  else
  {
    os << ", fixed level " << info.Grid.level() << " (no error bound)";
  }
  if (!info.PSNR.empty())
  {
    double psnr = info.PSNR[0];
    for (double p : info.PSNR)
    {
      psnr = std::min(psnr, p);
    }
    os << ", PSNR " << psnr << " dB";
  }
  if (coded && info.StoredBytes > 0)
  {
    os.precision(4);
    os << ", " << static_cast<double>(info.StoredBytes) / 1024.0 << " KiB";
  }
  return os.str();
}

//------------------------------------------------------------------------------------------------
bool vtkSparseGridRepresentation::IsPartialLevel(const Description& info, int levelOfDetail)
{
  const int measured = info.MeasuredLevels();
  return info.Kind == Encoding::ErrorBounded && levelOfDetail > 0 &&
    (measured == 0 || levelOfDetail < measured);
}

//------------------------------------------------------------------------------------------------
std::vector<double> vtkSparseGridRepresentation::MeasuredErrors(const Description& info,
  int levelOfDetail)
{
  const int levels = info.MeasuredLevels();
  if (!IsPartialLevel(info, levelOfDetail))
  {
    if (levels == 0)
    {
      return info.MaxAbsError;
    }
    levelOfDetail = levels;
  }
  else if (levels == 0)
  {
    return {};
  }
  std::vector<double> errors;
  for (std::size_t i = 0; i < info.ArrayNames.size(); ++i)
  {
    errors.push_back(info.LevelMaxAbsError[i * static_cast<std::size_t>(levels) +
      static_cast<std::size_t>(levelOfDetail - 1)]);
  }
  return errors;
}

//------------------------------------------------------------------------------------------------
void vtkSparseGridRepresentation::WriteFieldData(const Description& info, vtkFieldData* fd)
{
  if (!fd)
  {
    return;
  }
  // Stale arrays from an earlier representation (say, metrics no longer computed) must go.
  for (int i = fd->GetNumberOfArrays() - 1; i >= 0; --i)
  {
    const char* name = fd->GetAbstractArray(i) ? fd->GetAbstractArray(i)->GetName() : nullptr;
    if (name && std::string(name).rfind("SparseGrid.", 0) == 0)
    {
      fd->RemoveArray(i);
    }
  }
  // First, so that the Information panel shows it at the top.
  AddString(fd, SummaryName, info.Summary.empty() ? MakeSummary(info) : info.Summary);
  const bool coded = info.Kind == Encoding::ErrorBounded;
  const int version = coded ? ErrorBoundedFormatVersion : FormatVersion;
  const int dims = static_cast<int>(info.AxisMap.size());
  AddField<vtkIntArray>(fd, FormatVersionName, &version, 1);
  AddString(fd, EncodingName, coded ? "ErrorBounded" : "SparseGrid");
  AddField<vtkIntArray>(fd, DimensionsName, &dims, 1);
  if (!coded)
  {
    const int level = info.Grid.level();
    const int boundary = info.Grid.boundary() ? 1 : 0;
    AddField<vtkIntArray>(fd, LevelName, &level, 1);
    // An empty caps vector means "not truncated", i.e. every cap equals the level.
    std::vector<int> caps = info.Grid.caps();
    caps.resize(static_cast<std::size_t>(dims), level);
    AddField<vtkIntArray>(fd, LevelCapsName, caps.data(), dims);
    AddField<vtkIntArray>(fd, BoundaryName, &boundary, 1);
  }
  AddField<vtkIntArray>(fd, AxisMapName, info.AxisMap.data(), dims);
  AddField<vtkDoubleArray>(fd, BoundsName, info.Bounds, 6);
  AddField<vtkIntArray>(fd, ImageDimensionsName, info.ImageDimensions, 3);
  AddField<vtkDoubleArray>(fd, ImageOriginName, info.ImageOrigin, 3);
  AddField<vtkDoubleArray>(fd, ImageSpacingName, info.ImageSpacing, 3);
  AddString(fd, PrecisionName, sparsegrid::toString(info.Precision));
  vtkNew<vtkStringArray> names;
  names->SetName(ArrayNamesName);
  for (const auto& name : info.ArrayNames)
  {
    names->InsertNextValue(name);
  }
  fd->AddArray(names);
  const vtkIdType arrays = static_cast<vtkIdType>(info.ArrayNames.size());
  if (coded)
  {
    AddField<vtkIntArray>(fd, ArrayComponentsName, info.Components.data(), arrays);
    AddString(fd, ErrorBoundModeName, info.BoundMode == BOUND_RELATIVE ? "Relative" : "Absolute");
    AddField<vtkDoubleArray>(fd, ErrorBoundName, &info.RequestedBound, 1);
    AddField<vtkDoubleArray>(fd, AbsoluteErrorBoundName, info.AbsoluteBound.data(), arrays);
    AddField<vtkIntArray>(fd,
      PieceExtentsName,
      info.PieceExtents.data(),
      static_cast<vtkIdType>(info.PieceExtents.size()));
    AddField<vtkIntArray>(fd, LevelOfDetailName, &info.LevelOfDetail, 1);
    if (info.LevelBound.size() == info.ArrayNames.size() && !info.LevelBound.empty())
    {
      AddField<vtkDoubleArray>(fd, LevelOfDetailBoundName, info.LevelBound.data(), arrays);
    }
    if (info.MeasuredLevels() > 0)
    {
      AddField<vtkDoubleArray>(fd,
        LevelMaxAbsErrorName,
        info.LevelMaxAbsError.data(),
        static_cast<vtkIdType>(info.LevelMaxAbsError.size()));
    }
    const vtkTypeInt64 stored = static_cast<vtkTypeInt64>(info.StoredBytes);
    AddField<vtkTypeInt64Array>(fd, StoredBytesName, &stored, 1);
  }
  else
  {
    const vtkTypeInt64 count = static_cast<vtkTypeInt64>(info.Grid.size());
    AddField<vtkTypeInt64Array>(fd, NumberOfCoefficientsName, &count, 1);
  }
  AddField<vtkDoubleArray>(fd, CompressionRatioName, &info.CompressionRatio, 1);
  vtkCoreExecution::WriteBackend(fd, "SparseGrid", info.Backend, info.BackendNote);
  AddField<vtkDoubleArray>(fd, TimeSecondsName, &info.TimeSeconds, 1);
  if (info.MaxAbsError.size() == info.ArrayNames.size() && !info.ArrayNames.empty() &&
    info.RMSE.size() == info.ArrayNames.size() && info.PSNR.size() == info.ArrayNames.size())
  {
    AddField<vtkDoubleArray>(fd, MaxAbsErrorName, info.MaxAbsError.data(), arrays);
    AddField<vtkDoubleArray>(fd, RMSEName, info.RMSE.data(), arrays);
    // ParaView moves data between processes in VTK's legacy ASCII format, whose reader cannot
    // read "inf" back (it then misreads every array after it): a lossless array's PSNR (+inf)
    // travels as 1e308 (exact in that format, unlike the largest double) and is read back as
    // +inf.
    std::vector<double> psnr(info.PSNR);
    for (double& p : psnr)
    {
      p = p == std::numeric_limits<double>::infinity() ? LosslessPSNR : p;
    }
    AddField<vtkDoubleArray>(fd, PSNRName, psnr.data(), arrays);
  }
}

//------------------------------------------------------------------------------------------------
namespace
{
using Description = vtkSparseGridRepresentation::Description;

/// The format version, the encoding, the dimensions and axis map and, for the fixed-level
/// encoding, the grid's spec.
bool ReadLayout(vtkFieldData* fd,
  Description& info,
  sparsegrid::GridSpec& spec,
  bool& coded,
  std::string* error)
{
  std::vector<int> ints;
  if (!ReadIntegers(fd, FormatVersionName, 1, 0, 1e9, ints, error))
  {
    return false;
  }
  if (ints[0] != vtkSparseGridRepresentation::FormatVersion &&
    ints[0] != vtkSparseGridRepresentation::GridPointsFormatVersion &&
    ints[0] != vtkSparseGridRepresentation::ErrorBoundedFormatVersion)
  {
    return Fail(error,
      "unsupported SparseGrid.FormatVersion " + std::to_string(ints[0]) +
        " (this build reads 1, 2 and 3; a newer plugin wrote it)");
  }
  coded = ints[0] == vtkSparseGridRepresentation::ErrorBoundedFormatVersion;
  info.Kind = coded ? vtkSparseGridRepresentation::Encoding::ErrorBounded
                    : vtkSparseGridRepresentation::Encoding::SparseGrid;
  if (!ReadIntegers(fd, DimensionsName, 1, 1, 3, ints, error))
  {
    return false;
  }
  const int dims = ints[0];
  spec.dimensions = dims;
  if (!coded)
  {
    if (!ReadIntegers(fd, LevelName, 1, 1, MaxLevel, ints, error))
    {
      return false;
    }
    spec.level = ints[0];
    if (!ReadIntegers(fd, LevelCapsName, dims, 0, sparsegrid::MaxAxisLevel, spec.caps, error))
    {
      return false;
    }
    if (!ReadIntegers(fd, BoundaryName, 1, 0, 1, ints, error))
    {
      return false;
    }
    spec.boundary = ints[0] == 1;
  }
  return ReadIntegers(fd, AxisMapName, dims, 0, 2, info.AxisMap, error);
}

/// The bounds, the image's geometry, the precision and the array names.
bool ReadImage(vtkFieldData* fd, Description& info, std::string* error)
{
  std::vector<double> values;
  std::vector<int> ints;
  bool present = false;
  if (!ReadFinite(fd, BoundsName, 6, true, values, present, error))
  {
    return false;
  }
  std::copy(values.begin(), values.end(), info.Bounds);

  if (!ReadIntegers(fd, ImageDimensionsName, 3, 1, 1 << 30, ints, error))
  {
    return false;
  }
  std::copy(ints.begin(), ints.end(), info.ImageDimensions);
  if (!ReadFinite(fd, ImageOriginName, 3, true, values, present, error))
  {
    return false;
  }
  std::copy(values.begin(), values.end(), info.ImageOrigin);
  if (!ReadFinite(fd, ImageSpacingName, 3, true, values, present, error))
  {
    return false;
  }
  std::copy(values.begin(), values.end(), info.ImageSpacing);

  std::string text;
  if (!ReadString(fd, PrecisionName, true, text, error))
  {
    return false;
  }
  if (text == "Float")
  {
    info.Precision = sparsegrid::Precision::Float;
  }
  else if (text == "Double")
  {
    info.Precision = sparsegrid::Precision::Double;
  }
  else
  {
    return Fail(error, "SparseGrid.Precision must be Float or Double, not '" + text + "'");
  }

  vtkStringArray* names = vtkStringArray::SafeDownCast(fd->GetAbstractArray(ArrayNamesName));
  if (!names || names->GetNumberOfValues() < 1 || names->GetNumberOfValues() > MaxArrays)
  {
    return Fail(error, "SparseGrid.ArrayNames must be a string array of 1 to 4096 names");
  }
  for (vtkIdType i = 0; i < names->GetNumberOfValues(); ++i)
  {
    info.ArrayNames.push_back(names->GetValue(i));
  }
  return true;
}

/// The error-bounded encoding's fields: components, bounds, pieces, levels of detail and the
/// stored size.
bool ReadCodedFields(vtkFieldData* fd, Description& info, std::string* error)
{
  const std::size_t arrays = info.ArrayNames.size();
  std::vector<double> values;
  std::vector<int> ints;
  bool present = false;
  std::string text;
  if (!ReadIntegers(fd,
        ArrayComponentsName,
        static_cast<vtkIdType>(arrays),
        1,
        sparsegrid::MaxComponents,
        info.Components,
        error))
  {
    return false;
  }
  if (!ReadString(fd, ErrorBoundModeName, true, text, error))
  {
    return false;
  }
  if (text == "Absolute" || text == "Relative")
  {
    info.BoundMode = text == "Absolute" ? vtkSparseGridRepresentation::BOUND_ABSOLUTE
                                        : vtkSparseGridRepresentation::BOUND_RELATIVE;
  }
  else
  {
    return Fail(
      error, "SparseGrid.ErrorBoundMode must be Absolute or Relative, not '" + text + "'");
  }
  if (!ReadFinite(fd, ErrorBoundName, 1, true, values, present, error))
  {
    return false;
  }
  info.RequestedBound = values[0];
  if (!ReadFinite(fd,
        AbsoluteErrorBoundName,
        static_cast<vtkIdType>(arrays),
        true,
        info.AbsoluteBound,
        present,
        error))
  {
    return false;
  }
  vtkAbstractArray* extents = fd->GetAbstractArray(PieceExtentsName);
  const vtkIdType extentValues = extents ? extents->GetNumberOfValues() : 0;
  if (extentValues < 6 || extentValues % 6 != 0 || extentValues / 6 > MaxPieces)
  {
    return Fail(error, "SparseGrid.PieceExtents must hold 6 values for each of 1 to 65536 pieces");
  }
  if (!ReadIntegers(fd, PieceExtentsName, extentValues, 0, 1 << 30, info.PieceExtents, error))
  {
    return false;
  }
  if (!ReadIntegers(fd, LevelOfDetailName, 1, 0, sparsegrid::MaxLevelOfDetail, ints, error))
  {
    return false;
  }
  info.LevelOfDetail = ints[0];
  if (!ReadFinite(fd,
        LevelOfDetailBoundName,
        static_cast<vtkIdType>(arrays),
        false,
        info.LevelBound,
        present,
        error))
  {
    return false;
  }
  vtkAbstractArray* measured = fd->GetAbstractArray(LevelMaxAbsErrorName);
  const vtkIdType measuredValues = measured ? measured->GetNumberOfValues() : 0;
  if (measured &&
    (measuredValues < 1 || measuredValues % static_cast<vtkIdType>(arrays) != 0 ||
      measuredValues / static_cast<vtkIdType>(arrays) > sparsegrid::MaxLevelOfDetail))
  {
    return Fail(error,
      "SparseGrid.LevelMaxAbsError must hold the same number of levels (1 to 1024) for each "
      "array");
  }
  if (measured &&
    !ReadFinite(
      fd, LevelMaxAbsErrorName, measuredValues, false, info.LevelMaxAbsError, present, error))
  {
    return false;
  }
  if (!ReadNumbers(fd, StoredBytesName, 1, false, values, present, error))
  {
    return false;
  }
  if (present)
  {
    if (!(values[0] >= 0 && values[0] < 9.2e18))
    {
      return Fail(error, "SparseGrid.StoredBytes holds an invalid value");
    }
    info.StoredBytes = static_cast<std::uint64_t>(values[0]);
  }
  return true;
}

/// The fixed-level encoding's grid, created from its spec, and its coefficient count.
bool ReadGrid(vtkFieldData* fd,
  const sparsegrid::GridSpec& spec,
  std::uint64_t memoryLimitBytes,
  Description& info,
  std::string* error)
{
  // Count first: a hostile level must fail here, not inside an allocation.
  std::uint64_t points = 0, blocks = 0;
  sparsegrid::Status status = sparsegrid::Grid::count(spec, points, blocks);
  if (status.ok())
  {
    status = sparsegrid::Grid::create(spec, info.Grid, memoryLimitBytes);
  }
  if (!status.ok())
  {
    return Fail(error,
      std::string("invalid sparse grid (") + sparsegrid::toString(status.code()) +
        "): " + status.message());
  }
  std::vector<double> values;
  bool present = false;
  if (!ReadNumbers(fd, NumberOfCoefficientsName, 1, true, values, present, error))
  {
    return false;
  }
  if (!(values[0] == static_cast<double>(info.Grid.size())))
  {
    std::ostringstream os;
    os << "SparseGrid.NumberOfCoefficients is " << values[0] << " but the grid has "
       << info.Grid.size() << " points";
    return Fail(error, os.str());
  }
  return true;
}

/// Informational fields: optional, but checked when present.
bool ReadInformational(vtkFieldData* fd, Description& info, std::string* error)
{
  const std::size_t arrays = info.ArrayNames.size();
  std::vector<double> values;
  bool present = false;
  if (!ReadFinite(fd, CompressionRatioName, 1, false, values, present, error))
  {
    return false;
  }
  info.CompressionRatio = present ? values[0] : 0.0;
  if (!ReadFinite(fd, TimeSecondsName, 1, false, values, present, error))
  {
    return false;
  }
  info.TimeSeconds = present ? values[0] : 0.0;
  if (!ReadString(fd, BackendName, false, info.Backend, error) ||
    !ReadString(fd, BackendNoteName, false, info.BackendNote, error) ||
    !ReadString(fd, SummaryName, false, info.Summary, error))
  {
    return false;
  }
  if (!ReadMetric(fd, MaxAbsErrorName, arrays, info.MaxAbsError, error) ||
    !ReadMetric(fd, RMSEName, arrays, info.RMSE, error) ||
    !ReadMetric(fd, PSNRName, arrays, info.PSNR, error))
  {
    return false;
  }
  for (double& p : info.PSNR)
  {
    p = p == LosslessPSNR ? std::numeric_limits<double>::infinity() : p;
  }
  return true;
}
} // namespace

bool vtkSparseGridRepresentation::ReadFieldData(vtkFieldData* fd,
  Description& info,
  std::string* error,
  std::uint64_t memoryLimitBytes)
{
  info = Description();
  if (!fd)
  {
    return Fail(error, "no field data");
  }
  sparsegrid::GridSpec spec;
  bool coded = false;
  if (!ReadLayout(fd, info, spec, coded, error) || !ReadImage(fd, info, error))
  {
    return false;
  }
  if (coded ? !ReadCodedFields(fd, info, error)
            : !ReadGrid(fd, spec, memoryLimitBytes, info, error))
  {
    return false;
  }
  if (!ReadInformational(fd, info, error))
  {
    return false;
  }
  // The rules the values must keep are the model's, the same for the .sgrid file.
  const sparsegrid::Status status = sparsegrid::validate(info);
  if (!status)
  {
    return Fail(error, "invalid SparseGrid field data: " + status.message());
  }
  return true;
}

//------------------------------------------------------------------------------------------------
namespace
{
/// Chunk of the distributed form at which the streams of each owner start (owners in
/// increasing order over the pieces, each owner's bytes padded to whole chunks); the last entry
/// is the number of chunks.
std::vector<std::uint64_t> OwnerChunks(const vtkSparseGridRepresentation::Contents& contents,
  int owners)
{
  std::vector<std::uint64_t> bytes(static_cast<std::size_t>(owners), 0);
  for (std::size_t p = 0; p < contents.PieceOwners.size(); ++p)
  {
    bytes[static_cast<std::size_t>(contents.PieceOwners[p])] +=
      contents.PieceBytes(static_cast<int>(p));
  }
  std::vector<std::uint64_t> start(1, 0);
  const std::uint64_t chunk = vtkSparseGridRepresentation::ChunkBytes;
  for (std::uint64_t b : bytes)
  {
    start.push_back(start.back() + (b + chunk - 1) / chunk);
  }
  return start;
}

/// The global index of a distributed representation (owners, levels): optional arrays, each
/// checked against the pieces and streams.
bool ReadIndex(vtkFieldData* fd,
  vtkSparseGridRepresentation::Contents& contents,
  std::string* error)
{
  const auto& info = contents.Info;
  const std::size_t pieces = static_cast<std::size_t>(info.NumberOfPieces());
  const std::size_t count = pieces * static_cast<std::size_t>(info.TotalComponents());
  contents.PieceOwners.clear();
  contents.StreamLevels.clear();
  contents.StreamLevelBounds.clear();
  if (fd->GetAbstractArray(PieceOwnersName) &&
    !ReadIntegers(
      fd, PieceOwnersName, static_cast<int>(pieces), 0, 1 << 30, contents.PieceOwners, error))
  {
    return false;
  }
  for (std::size_t p = 1; p < contents.PieceOwners.size(); ++p)
  {
    if (contents.PieceOwners[p] < contents.PieceOwners[p - 1])
    {
      return Fail(error, std::string(PieceOwnersName) + " must not decrease over the pieces");
    }
  }
  if (!fd->GetAbstractArray(StreamLevelsName))
  {
    return true;
  }
  if (!ReadIntegers(
        fd, StreamLevelsName, static_cast<int>(count), 1, 1024, contents.StreamLevels, error))
  {
    return false;
  }
  std::size_t total = 0;
  for (int l : contents.StreamLevels)
  {
    total += static_cast<std::size_t>(l);
  }
  auto* bounds = vtkDoubleArray::SafeDownCast(fd->GetAbstractArray(StreamLevelBoundsName));
  if (!bounds || bounds->GetNumberOfValues() != static_cast<vtkIdType>(total))
  {
    return Fail(error,
      std::string(StreamLevelBoundsName) + " must hold one double per level of every stream");
  }
  contents.StreamLevelBounds.assign(bounds->GetPointer(0), bounds->GetPointer(0) + total);
  return true;
}

/// Error-bounded contents: the global stream table, the bytes this process holds (all streams
/// in SparseGrid.Streams, or its own pieces' in SparseGrid.StreamChunks), each held stream's
/// header checked against its piece (the codec validates the rest when decoding).
bool ReadStreams(vtkPolyData* input,
  vtkSparseGridRepresentation::Contents& contents,
  std::string* error)
{
  vtkFieldData* fd = input->GetFieldData();
  const auto& info = contents.Info;
  auto* streams = vtkUnsignedCharArray::SafeDownCast(fd->GetAbstractArray(StreamsName));
  auto* chunks =
    vtkUnsignedCharArray::SafeDownCast(input->GetPointData()->GetAbstractArray(StreamChunksName));
  if (fd->GetAbstractArray(StreamsName) && (!streams || streams->GetNumberOfComponents() != 1))
  {
    return Fail(error, std::string(StreamsName) + " is not a byte array");
  }
  const std::size_t pieces = static_cast<std::size_t>(info.NumberOfPieces());
  const std::size_t count = pieces * static_cast<std::size_t>(info.TotalComponents());
  auto* offsets = vtkTypeInt64Array::SafeDownCast(fd->GetAbstractArray(StreamOffsetsName));
  if (!offsets || offsets->GetNumberOfValues() != static_cast<vtkIdType>(count + 1))
  {
    return Fail(error,
      std::string(StreamOffsetsName) + " must be a 64-bit integer array of " +
        std::to_string(count + 1) + " values (pieces x components + 1)");
  }
  contents.StreamOffsets.resize(count + 1);
  for (std::size_t k = 0; k <= count; ++k)
  {
    const vtkTypeInt64 v = offsets->GetValue(static_cast<vtkIdType>(k));
    if (v < 0 || (k > 0 && static_cast<std::uint64_t>(v) < contents.StreamOffsets[k - 1]) ||
      (k == 0 && v != 0) ||
      (k == count && streams &&
        static_cast<std::uint64_t>(v) != static_cast<std::uint64_t>(streams->GetNumberOfValues())))
    {
      return Fail(
        error, std::string(StreamOffsetsName) + " is not an increasing split of the coded streams");
    }
    contents.StreamOffsets[k] = static_cast<std::uint64_t>(v);
  }
  if (!ReadIndex(fd, contents, error))
  {
    return false;
  }
  contents.PieceData.assign(pieces, nullptr);
  if (streams)
  {
    contents.Streams = streams;
    for (std::size_t p = 0; p < pieces; ++p)
    {
      contents.PieceData[p] = streams->GetPointer(0) +
        contents.StreamOffsets[p * (count / std::max<std::size_t>(1, pieces))];
    }
  }
  else if (chunks && chunks->GetNumberOfTuples() > 0)
  {
    // The distributed form: the chunks [first, first + points) of the owners' padded sequence.
    auto* firstArray = vtkDataArray::SafeDownCast(fd->GetAbstractArray(StreamChunksFirstName));
    if (contents.PieceOwners.size() != pieces || !firstArray ||
      firstArray->GetNumberOfValues() != 1 ||
      chunks->GetNumberOfComponents() != vtkSparseGridRepresentation::ChunkBytes)
    {
      return Fail(error,
        std::string(StreamChunksName) + " needs " + PieceOwnersName + " and " +
          StreamChunksFirstName + ", and " +
          std::to_string(vtkSparseGridRepresentation::ChunkBytes) + " bytes per point");
    }
    const std::vector<std::uint64_t> start = OwnerChunks(contents, contents.PieceOwners.back() + 1);
    const double firstValue = firstArray->GetTuple1(0);
    const std::uint64_t held = static_cast<std::uint64_t>(chunks->GetNumberOfTuples());
    if (!(firstValue >= 0) || firstValue + static_cast<double>(held) > start.back())
    {
      return Fail(error, std::string(StreamChunksName) + " lies outside the streams' chunks");
    }
    const std::uint64_t first = static_cast<std::uint64_t>(firstValue);
    const std::uint64_t chunk = vtkSparseGridRepresentation::ChunkBytes;
    const std::size_t perPiece = count / std::max<std::size_t>(1, pieces);
    std::size_t ownerFirstStream = 0;
    for (std::size_t p = 0; p < pieces; ++p)
    {
      const int owner = contents.PieceOwners[p];
      if (p == 0 || owner != contents.PieceOwners[p - 1])
      {
        ownerFirstStream = p * perPiece;
      }
      const std::uint64_t from = start[static_cast<std::size_t>(owner)] * chunk +
        (contents.StreamOffsets[p * perPiece] - contents.StreamOffsets[ownerFirstStream]);
      const std::uint64_t to = from + contents.PieceBytes(static_cast<int>(p));
      if (from >= first * chunk && to <= (first + held) * chunk)
      {
        contents.PieceData[p] = chunks->GetPointer(0) + (from - first * chunk);
      }
    }
    contents.Streams = chunks;
  }
  for (int p = 0; p < info.NumberOfPieces(); ++p)
  {
    if (!contents.Holds(p))
    {
      continue;
    }
    const int* extent = info.PieceExtents.data() + 6 * p;
    for (std::size_t i = 0; i < info.ArrayNames.size(); ++i)
    {
      for (int c = 0; c < info.Components[i]; ++c)
      {
        const std::size_t k = contents.StreamIndex(p, i, c);
        sparsegrid::codec::StreamInfo header;
        const sparsegrid::Status status =
          sparsegrid::codec::inspect(contents.StreamData(k), contents.StreamSize(k), header);
        if (!status.ok())
        {
          return Fail(error,
            "the coded stream of '" + info.ArrayNames[i] + "' (piece " + std::to_string(p) +
              ", component " + std::to_string(c) + ") is damaged: " + status.message());
        }
        for (int a = 0; a < 3; ++a)
        {
          if (header.dims[a] != static_cast<std::uint64_t>(extent[2 * a + 1] - extent[2 * a] + 1))
          {
            return Fail(error,
              "the coded stream of '" + info.ArrayNames[i] + "' (piece " + std::to_string(p) +
                ") does not match the size of its piece");
          }
        }
        if (!(header.absoluteBound <= info.AbsoluteBound[i] * (1 + 1e-12)))
        {
          return Fail(error,
            "the coded stream of '" + info.ArrayNames[i] +
              "' was coded with a looser bound than SparseGrid.AbsoluteErrorBound says");
        }
      }
    }
  }
  return true;
}
} // namespace

//------------------------------------------------------------------------------------------------
bool vtkSparseGridRepresentation::FromPolyData(vtkPolyData* input,
  Contents& contents,
  std::string* error,
  std::uint64_t memoryLimitBytes)
{
  contents = Contents();
  if (!input)
  {
    return Fail(error, "no input polydata");
  }
  if (!HasRepresentation(input->GetFieldData()))
  {
    return Fail(error,
      "the input is not a sparse-grid representation (no SparseGrid.FormatVersion field data); "
      "connect the output of Sparse Grid Hierarchize or of the .sgrid reader");
  }
  if (!ReadFieldData(input->GetFieldData(), contents.Info, error, memoryLimitBytes))
  {
    return false;
  }
  const Description& info = contents.Info;
  if (info.Kind == Encoding::ErrorBounded)
  {
    return ReadStreams(input, contents, error);
  }
  const vtkIdType size = static_cast<vtkIdType>(info.Grid.size());
  // The first form kept the surpluses as point data under the arrays' own names.
  vtkDataArray* version =
    vtkDataArray::SafeDownCast(input->GetFieldData()->GetAbstractArray(FormatVersionName));
  const bool legacy = version && version->GetTuple1(0) == GridPointsFormatVersion;
  for (const auto& name : info.ArrayNames)
  {
    const std::string stored = legacy ? name : SurplusesName(name);
    vtkDataArray* array = legacy
      ? input->GetPointData()->GetArray(stored.c_str())
      : vtkDataArray::SafeDownCast(input->GetFieldData()->GetAbstractArray(stored.c_str()));
    if (!array)
    {
      return Fail(error,
        "coefficient array '" + stored + "' is missing from the " +
          (legacy ? "point data" : "field data"));
    }
    // Contiguous (AOS) arrays only: the core reads their memory directly.
    if (array->GetDataType() != ExpectedDataType(info.Precision) ||
      !(vtkArrayDownCast<vtkAOSDataArrayTemplate<float>>(array) ||
        vtkArrayDownCast<vtkAOSDataArrayTemplate<double>>(array)))
    {
      return Fail(error,
        "coefficient array '" + name + "' must be a contiguous " +
          (info.Precision == sparsegrid::Precision::Float ? "float" : "double") +
          " array, as SparseGrid.Precision says");
    }
    const int nc = array->GetNumberOfComponents();
    if (array->GetNumberOfTuples() != size || nc < 1 || nc > sparsegrid::MaxComponents)
    {
      std::ostringstream os;
      os << "coefficient array '" << name << "' has " << array->GetNumberOfTuples() << " tuples of "
         << nc << " components; the grid has " << size << " points";
      return Fail(error, os.str());
    }
    const sparsegrid::Status status = vtkSparseGridArrays::CheckFinite(array, name);
    if (!status.ok())
    {
      return Fail(error, "coefficient array '" + name + "': " + status.message());
    }
    contents.Coefficients.emplace_back(array);
  }
  return true;
}

//------------------------------------------------------------------------------------------------
bool vtkSparseGridRepresentation::ToPolyData(const Description& info,
  const std::vector<vtkDataArray*>& coefficients,
  vtkPolyData* output,
  std::string* error,
  bool gridPoints)
{
  if (!output)
  {
    return Fail(error, "no output polydata");
  }
  output->Initialize();
  const sparsegrid::Grid& grid = info.Grid;
  const int dims = grid.dimensions();
  if (!grid.valid() || dims < 1 || dims > 3 || static_cast<int>(info.AxisMap.size()) != dims)
  {
    return Fail(error, "invalid description: the grid is not valid or AxisMap does not match it");
  }
  if (info.ArrayNames.empty() || coefficients.size() != info.ArrayNames.size())
  {
    return Fail(error, "invalid description: one coefficient array is needed per array name");
  }
  const vtkIdType size = static_cast<vtkIdType>(grid.size());
  for (std::size_t i = 0; i < coefficients.size(); ++i)
  {
    vtkDataArray* array = coefficients[i];
    if (!array || array->GetNumberOfTuples() != size ||
      array->GetDataType() != ExpectedDataType(info.Precision) ||
      !(vtkArrayDownCast<vtkAOSDataArrayTemplate<float>>(array) ||
        vtkArrayDownCast<vtkAOSDataArrayTemplate<double>>(array)))
    {
      return Fail(error,
        "coefficient array '" + info.ArrayNames[i] + "' does not match the grid or the precision");
    }
  }

  WriteFieldData(info, output->GetFieldData());
  std::vector<vtkSmartPointer<vtkDataArray>> surpluses;
  for (std::size_t i = 0; i < coefficients.size(); ++i)
  {
    // A shallow copy: renaming must not touch the caller's array.
    surpluses.push_back(vtkSmartPointer<vtkDataArray>::Take(coefficients[i]->NewInstance()));
    surpluses.back()->ShallowCopy(coefficients[i]);
    surpluses.back()->SetName(SurplusesName(info.ArrayNames[i]).c_str());
    output->GetFieldData()->AddArray(surpluses.back());
  }
  if (gridPoints)
  {
    vtkNew<vtkPoints> points;
    points->SetDataTypeToFloat();
    points->SetNumberOfPoints(size);
    vtkSMPTools::For(0,
      size,
      [&](vtkIdType begin, vtkIdType end)
      {
        double unit[sparsegrid::MaxDimensions];
        double x[3];
        for (vtkIdType p = begin; p < end; ++p)
        {
          grid.coordinates(static_cast<std::uint64_t>(p), unit);
          info.UnitToPhysical(unit, x);
          points->SetPoint(p, x);
        }
      });
    output->SetPoints(points);

    vtkNew<vtkIdTypeArray> offsets;
    vtkNew<vtkIdTypeArray> connectivity;
    offsets->SetNumberOfValues(size + 1);
    connectivity->SetNumberOfValues(size);
    for (vtkIdType p = 0; p < size; ++p)
    {
      offsets->SetValue(p, p);
      connectivity->SetValue(p, p);
    }
    offsets->SetValue(size, size);
    vtkNew<vtkCellArray> verts;
    verts->SetData(offsets, connectivity);
    output->SetVerts(verts);
    for (const auto& array : surpluses)
    {
      output->GetPointData()->AddArray(array); // the same memory as the field array
    }
    output->GetPointData()->SetActiveScalars(surpluses[0]->GetName());
  }
  AddMemoryBytes(output);
  return true;
}

//------------------------------------------------------------------------------------------------
bool vtkSparseGridRepresentation::ToCodedPolyData(const Description& info,
  vtkUnsignedCharArray* streams,
  const std::vector<std::uint64_t>& offsets,
  vtkPolyData* output,
  std::string* error)
{
  if (!output)
  {
    return Fail(error, "no output polydata");
  }
  output->Initialize();
  const std::size_t count = static_cast<std::size_t>(info.NumberOfPieces()) *
    static_cast<std::size_t>(info.TotalComponents());
  if (info.Kind != Encoding::ErrorBounded || !streams || count == 0 ||
    offsets.size() != count + 1 || info.Components.size() != info.ArrayNames.size() ||
    offsets.back() != static_cast<std::uint64_t>(streams->GetNumberOfValues()))
  {
    return Fail(error, "invalid description: the streams do not match the pieces and arrays");
  }
  WriteFieldData(info, output->GetFieldData());
  // Shallow: the streams are the payload, and in situ their memory is what we exist to save.
  vtkNew<vtkUnsignedCharArray> shared;
  shared->ShallowCopy(streams);
  shared->SetName(StreamsName);
  output->GetFieldData()->AddArray(shared);
  vtkNew<vtkTypeInt64Array> table;
  table->SetName(StreamOffsetsName);
  table->SetNumberOfValues(static_cast<vtkIdType>(offsets.size()));
  for (std::size_t k = 0; k < offsets.size(); ++k)
  {
    table->SetValue(static_cast<vtkIdType>(k), static_cast<vtkTypeInt64>(offsets[k]));
  }
  output->GetFieldData()->AddArray(table);
  AddMemoryBytes(output);
  return true;
}

//------------------------------------------------------------------------------------------------
bool vtkSparseGridRepresentation::ToDistributedPolyData(const Contents& index,
  const std::vector<std::uint8_t>& mine,
  int owner,
  vtkPolyData* output,
  std::string* error)
{
  if (!output)
  {
    return Fail(error, "no output polydata");
  }
  output->Initialize();
  const Description& info = index.Info;
  const std::size_t pieces = static_cast<std::size_t>(info.NumberOfPieces());
  const std::size_t count = pieces * static_cast<std::size_t>(info.TotalComponents());
  if (info.Kind != Encoding::ErrorBounded || count == 0 ||
    index.StreamOffsets.size() != count + 1 || index.PieceOwners.size() != pieces || owner < 0)
  {
    return Fail(error, "invalid description: the stream index does not match the pieces");
  }
  // An owner beyond the last one with pieces (an empty piece) holds no chunk.
  const std::vector<std::uint64_t> start =
    OwnerChunks(index, std::max(owner, index.PieceOwners.back()) + 1);
  const std::uint64_t chunks =
    start[static_cast<std::size_t>(owner) + 1] - start[static_cast<std::size_t>(owner)];
  if (mine.size() > chunks * ChunkBytes)
  {
    return Fail(error, "invalid description: more streams than this process's pieces hold");
  }
  WriteFieldData(info, output->GetFieldData());
  vtkNew<vtkTypeInt64Array> table;
  table->SetName(StreamOffsetsName);
  table->SetNumberOfValues(static_cast<vtkIdType>(count + 1));
  for (std::size_t k = 0; k <= count; ++k)
  {
    table->SetValue(static_cast<vtkIdType>(k), static_cast<vtkTypeInt64>(index.StreamOffsets[k]));
  }
  output->GetFieldData()->AddArray(table);
  AddField<vtkIntArray>(output->GetFieldData(),
    PieceOwnersName,
    index.PieceOwners.data(),
    static_cast<vtkIdType>(pieces));
  if (index.StreamLevels.size() == count)
  {
    AddField<vtkIntArray>(output->GetFieldData(),
      StreamLevelsName,
      index.StreamLevels.data(),
      static_cast<vtkIdType>(count));
    AddField<vtkDoubleArray>(output->GetFieldData(),
      StreamLevelBoundsName,
      index.StreamLevelBounds.data(),
      static_cast<vtkIdType>(index.StreamLevelBounds.size()));
  }
  const vtkTypeInt64 first = static_cast<vtkTypeInt64>(start[static_cast<std::size_t>(owner)]);
  AddField<vtkTypeInt64Array>(output->GetFieldData(), StreamChunksFirstName, &first, 1);
  vtkNew<vtkUnsignedCharArray> bytes;
  bytes->SetName(StreamChunksName);
  bytes->SetNumberOfComponents(ChunkBytes);
  bytes->SetNumberOfTuples(static_cast<vtkIdType>(chunks));
  std::copy(mine.begin(), mine.end(), bytes->GetPointer(0));
  std::fill(bytes->GetPointer(0) + mine.size(), bytes->GetPointer(0) + chunks * ChunkBytes, 0);
  vtkNew<vtkPoints> points;
  points->SetDataTypeToFloat();
  points->SetNumberOfPoints(static_cast<vtkIdType>(chunks));
  for (vtkIdType p = 0; p < static_cast<vtkIdType>(chunks); ++p)
  {
    points->SetPoint(p, info.ImageOrigin);
  }
  output->SetPoints(points);
  output->GetPointData()->AddArray(bytes);
  AddMemoryBytes(output);
  return true;
}

//------------------------------------------------------------------------------------------------
bool vtkSparseGridRepresentation::IsDistributed(vtkPolyData* data)
{
  return data && data->GetFieldData()->GetAbstractArray(PieceOwnersName) != nullptr;
}

//------------------------------------------------------------------------------------------------
bool vtkSparseGridRepresentation::HoldsPayload(vtkPolyData* data)
{
  if (!data)
  {
    return false;
  }
  vtkFieldData* fd = data->GetFieldData();
  auto* names = vtkStringArray::SafeDownCast(fd->GetAbstractArray(ArrayNamesName));
  return data->GetNumberOfPoints() > 0 || fd->GetAbstractArray(StreamsName) ||
    (names && names->GetNumberOfValues() > 0 &&
      fd->GetAbstractArray(SurplusesName(names->GetValue(0)).c_str()));
}

//------------------------------------------------------------------------------------------------
std::string vtkSparseGridRepresentation::SurplusesName(const std::string& arrayName)
{
  return arrayName + " Surpluses";
}

//------------------------------------------------------------------------------------------------
std::uint64_t vtkSparseGridRepresentation::MemoryBytes(vtkPolyData* data)
{
  if (!data)
  {
    return 0;
  }
  std::uint64_t bytes = 0;
  auto add = [&bytes](vtkAbstractArray* array)
  {
    if (auto* strings = vtkStringArray::SafeDownCast(array))
    {
      for (vtkIdType v = 0; v < strings->GetNumberOfValues(); ++v)
      {
        bytes += strings->GetValue(v).size();
      }
    }
    else if (array)
    {
      bytes += static_cast<std::uint64_t>(array->GetNumberOfValues()) *
        static_cast<std::uint64_t>(array->GetDataTypeSize());
    }
  };
  vtkFieldData* fd = data->GetFieldData();
  for (int i = 0; i < fd->GetNumberOfArrays(); ++i)
  {
    add(fd->GetAbstractArray(i));
  }
  vtkPointData* pd = data->GetPointData();
  for (int i = 0; i < pd->GetNumberOfArrays(); ++i)
  {
    vtkAbstractArray* array = pd->GetAbstractArray(i);
    // Grid points share their arrays with the field data: count that memory once.
    if (!(array && array->GetName() && fd->GetAbstractArray(array->GetName()) == array))
    {
      add(array);
    }
  }
  if (data->GetPoints())
  {
    add(data->GetPoints()->GetData());
  }
  for (vtkCellArray* cells :
    { data->GetVerts(), data->GetLines(), data->GetPolys(), data->GetStrips() })
  {
    if (cells)
    {
      add(cells->GetOffsetsArray());
      add(cells->GetConnectivityArray());
    }
  }
  return bytes;
}

//------------------------------------------------------------------------------------------------
bool vtkSparseGridRepresentation::LevelOfDetailBounds(const Contents& contents,
  int levelOfDetail,
  std::vector<double>& bounds,
  int& levels,
  std::string* error)
{
  const Description& info = contents.Info;
  bounds.assign(info.ArrayNames.size(), 0.0);
  levels = 0;
  if (info.Kind != Encoding::ErrorBounded ||
    contents.StreamOffsets.size() !=
      static_cast<std::size_t>(info.NumberOfPieces()) *
          static_cast<std::size_t>(info.TotalComponents()) +
        1)
  {
    return Fail(error, "levels of detail exist for the error-bounded encoding only");
  }
  // From the index where the representation carries it (a distributed one, whose streams are
  // spread over the processes), else from the streams' headers.
  const bool indexed = !contents.StreamLevels.empty();
  std::size_t levelAt = 0;
  levels = std::numeric_limits<int>::max();
  for (int p = 0; p < info.NumberOfPieces(); ++p)
  {
    for (std::size_t i = 0; i < info.ArrayNames.size(); ++i)
    {
      for (int c = 0; c < info.Components[i]; ++c)
      {
        const std::size_t k = contents.StreamIndex(p, i, c);
        sparsegrid::codec::StreamInfo header;
        if (indexed)
        {
          header.levels = contents.StreamLevels[k];
          header.levelBound.assign(
            contents.StreamLevelBounds.begin() + static_cast<std::ptrdiff_t>(levelAt),
            contents.StreamLevelBounds.begin() +
              static_cast<std::ptrdiff_t>(levelAt + static_cast<std::size_t>(header.levels)));
          levelAt += static_cast<std::size_t>(header.levels);
        }
        else
        {
          const std::uint8_t* stream = contents.StreamData(k);
          const sparsegrid::Status status = stream
            ? sparsegrid::codec::inspect(stream, contents.StreamSize(k), header)
            : sparsegrid::Status(sparsegrid::ErrorCode::InvalidArgument, "not held here");
          if (!status.ok() || header.levelBound.empty())
          {
            return Fail(error, "a coded stream is damaged: " + status.message());
          }
        }
        levels = std::min(levels, header.levels);
        const int index = levelOfDetail <= 0 || levelOfDetail > header.levels ? header.levels - 1
                                                                              : levelOfDetail - 1;
        bounds[i] =
          std::max(bounds[i], header.levelBound[static_cast<std::size_t>(std::max(0, index))]);
      }
    }
  }
  // At a coarser level the codec's guarantee is loose (it assumes every finer residual at its
  // extreme); the error measured on every voxel when the data were compressed holds exactly for
  // this decode and is what is reported. At full detail the requested bound stays the bound.
  if (IsPartialLevel(info, levelOfDetail) && info.MeasuredLevels() > 0)
  {
    const std::vector<double> measured = MeasuredErrors(info, levelOfDetail);
    for (std::size_t i = 0; i < bounds.size(); ++i)
    {
      bounds[i] = std::min(bounds[i], measured[i]);
    }
  }
  return true;
}

//------------------------------------------------------------------------------------------------
vtkInformationKeyRestrictedMacro(vtkSparseGridRepresentation, IMAGE_GEOMETRY, DoubleVector, 9);
