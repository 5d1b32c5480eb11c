/**
 * @file vtkSparseGridArrays.h
 * @brief Private helpers: any VTK numeric array as a contiguous float/double buffer; the
 * finiteness check of such buffers; errors measured against an array in its own type.
 */
#ifndef vtkSparseGridArrays_h
#define vtkSparseGridArrays_h

#include "vtkAOSDataArrayTemplate.h"
#include "vtkArrayDispatch.h"
#include "vtkDataArray.h"
#include "vtkDataArrayRange.h"
#include "vtkDoubleArray.h"
#include "vtkFloatArray.h"

#include <sparsegrid/codec.h>
#include <sparsegrid/sparsegrid.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

namespace vtkSparseGridArrays
{

/// vtkFloatArray for float, vtkDoubleArray for double: the concrete classes Python and the
/// XML writers know, rather than the bare template.
template<typename T>
using ArrayOf =
  typename std::conditional<std::is_same<T, float>::value, vtkFloatArray, vtkDoubleArray>::type;

template<typename T>
struct CopyWorker
{
  template<typename ArrayT>
  void operator()(ArrayT* array, T* out) const
  {
    for (const auto value : vtk::DataArrayValueRange(array))
    {
      *out++ = static_cast<T>(value);
    }
  }
};

/**
 * All values of `array` (components interleaved, as VTK stores them) as a contiguous T buffer.
 * An array that already is a contiguous T array is used in place; anything else is converted
 * into `storage`, through vtkArrayDispatch so that the common types need no virtual calls.
 */
template<typename T>
const T* ContiguousValues(vtkDataArray* array, std::vector<T>& storage)
{
  if (auto* same = vtkArrayDownCast<vtkAOSDataArrayTemplate<T>>(array))
  {
    return same->GetPointer(0);
  }
  storage.resize(static_cast<std::size_t>(array->GetNumberOfValues()));
  CopyWorker<T> worker;
  if (!vtkArrayDispatch::Dispatch::Execute(array, worker, storage.data()))
  {
    worker(array, storage.data());
  }
  return storage.data();
}

/**
 * sparsegrid::checkFinite over every value of a contiguous float or double array (`name` in
 * the message); other arrays pass unchecked (nothing the filters compute with).
 */
inline sparsegrid::Status CheckFinite(vtkDataArray* array, const std::string& name)
{
  const std::size_t n = array ? static_cast<std::size_t>(array->GetNumberOfValues()) : 0;
  if (auto* f = vtkArrayDownCast<vtkAOSDataArrayTemplate<float>>(array))
  {
    return sparsegrid::checkFinite(f->GetPointer(0), n, name.c_str());
  }
  if (auto* d = vtkArrayDownCast<vtkAOSDataArrayTemplate<double>>(array))
  {
    return sparsegrid::checkFinite(d->GetPointer(0), n, name.c_str());
  }
  return sparsegrid::Status::Ok();
}

template<typename T>
struct ErrorWorker
{
  template<typename ArrayT>
  void operator()(ArrayT* array,
    int component,
    const T* decoded,
    std::size_t n,
    sparsegrid::ErrorSums* sums,
    long double* largest,
    const sparsegrid::codec::SpecialValues* specials) const
  {
    const auto values = vtk::DataArrayValueRange(array);
    const std::size_t nc = static_cast<std::size_t>(array->GetNumberOfComponents());
    long double worst = *largest;
    for (std::size_t v = 0; v < n; ++v)
    {
      const auto original = values[v * nc + static_cast<std::size_t>(component)];
      if (specials && specials->contains(static_cast<T>(original)))
      {
        continue; // kept bit for bit by the codec, outside the metrics
      }
      const long double e =
        std::fabs(static_cast<long double>(original) - static_cast<long double>(decoded[v]));
      worst = e > worst ? e : worst;
      if (sums)
      {
        sums->add(static_cast<double>(original), static_cast<double>(decoded[v]));
      }
    }
    *largest = worst;
  }
};

/**
 * The error of `decoded` (n voxels of one component, contiguous) against component `component`
 * of `original`, read in the original's own type: the difference is taken in long double, which
 * holds every value of every VTK numeric type (64-bit integers included), so no conversion to
 * the codec's type hides part of the error. `largest` is raised to the largest difference;
 * `sums` (optional) receives the pairs for RMSE and PSNR. Voxels whose original is one of
 * `specials` (optional) are left out: the codec keeps them bit for bit.
 */
template<typename T>
void MeasureError(vtkDataArray* original,
  int component,
  const T* decoded,
  std::size_t n,
  sparsegrid::ErrorSums* sums,
  long double& largest,
  const sparsegrid::codec::SpecialValues* specials = nullptr)
{
  ErrorWorker<T> worker;
  if (!vtkArrayDispatch::Dispatch::Execute(
        original, worker, component, decoded, n, sums, &largest, specials))
  {
    worker(original, component, decoded, n, sums, &largest, specials);
  }
}

/**
 * The max error of a decode of levels 1..k of `stream` against `values` (the component the
 * stream codes, `stride` apart: a copy the codec's type holds exactly), for each k short of the
 * stream's levels (the full decode is measured by the caller against the original): what a
 * consumer's Level Of Detail then shows, measured once so that it can report it.
 */
template<typename T>
sparsegrid::Status MeasureLevels(const T* values,
  std::size_t stride,
  const std::vector<std::uint8_t>& stream,
  std::vector<T>& decoded,
  const sparsegrid::codec::Layout& layout,
  const sparsegrid::ExecutionOptions& options,
  std::vector<long double>& errors)
{
  sparsegrid::codec::StreamInfo header;
  sparsegrid::Status status = sparsegrid::codec::inspect(stream.data(), stream.size(), header);
  for (int level = 0; status.ok() && level + 1 < header.levels; ++level)
  {
    status = sparsegrid::codec::decode(
      stream.data(), stream.size(), level, decoded.data(), layout, options);
    double largest = 0;
    for (std::size_t v = 0; status.ok() && v < decoded.size(); ++v)
    {
      const double e =
        std::fabs(static_cast<double>(values[v * stride]) - static_cast<double>(decoded[v]));
      largest = e > largest ? e : largest;
    }
    errors.push_back(largest);
  }
  return status;
}

/// `value` rounded up to a double (a reported maximum error never understates the measured one).
inline double RoundUp(long double value)
{
  double rounded = static_cast<double>(value);
  if (static_cast<long double>(rounded) < value)
  {
    rounded = std::nextafter(rounded, HUGE_VAL);
  }
  return rounded;
}

/// Largest magnitude that every integer below it converts to double exactly: 2^53.
constexpr std::uint64_t ExactDoubleIntegers = std::uint64_t(1) << 53;

/**
 * 64-bit integer arrays whose values are beyond 2^53 in magnitude cannot be decoded to a double
 * without rounding: false with the largest magnitude in `largest` for such an array, true for
 * every other array.
 */
inline bool ExactInDouble(vtkDataArray* array, std::uint64_t& largest)
{
  largest = 0;
  if (!array || array->GetDataTypeSize() != 8 || array->GetDataType() == VTK_DOUBLE ||
    array->GetDataType() == VTK_FLOAT)
  {
    return true;
  }
  const vtkIdType n = array->GetNumberOfValues();
  if (auto* s = vtkArrayDownCast<vtkAOSDataArrayTemplate<long long>>(array))
  {
    for (vtkIdType i = 0; i < n; ++i)
    {
      const long long v = s->GetValue(i);
      const std::uint64_t m =
        v < 0 ? std::uint64_t(0) - static_cast<std::uint64_t>(v) : static_cast<std::uint64_t>(v);
      largest = std::max(largest, m);
    }
  }
  else if (auto* sl = vtkArrayDownCast<vtkAOSDataArrayTemplate<long>>(array))
  {
    for (vtkIdType i = 0; i < n; ++i)
    {
      const long v = sl->GetValue(i);
      const std::uint64_t m =
        v < 0 ? std::uint64_t(0) - static_cast<std::uint64_t>(v) : static_cast<std::uint64_t>(v);
      largest = std::max(largest, m);
    }
  }
  else if (auto* u = vtkArrayDownCast<vtkAOSDataArrayTemplate<unsigned long long>>(array))
  {
    for (vtkIdType i = 0; i < n; ++i)
    {
      largest = std::max(largest, static_cast<std::uint64_t>(u->GetValue(i)));
    }
  }
  else if (auto* ul = vtkArrayDownCast<vtkAOSDataArrayTemplate<unsigned long>>(array))
  {
    for (vtkIdType i = 0; i < n; ++i)
    {
      largest = std::max(largest, static_cast<std::uint64_t>(ul->GetValue(i)));
    }
  }
  else
  {
    // Another 64-bit integer layout: read through double, whose magnitude still tells.
    const double range = std::max(std::fabs(array->GetRange(-1)[0]), array->GetRange(-1)[1]);
    largest = range >= 1.8e19 ? ~std::uint64_t(0) : static_cast<std::uint64_t>(range);
  }
  return largest <= ExactDoubleIntegers;
}

/// True when coding `array` needs double precision: float keeps only float and small integers.
inline bool NeedsDouble(int dataType)
{
  switch (dataType)
  {
    case VTK_FLOAT:
    case VTK_CHAR:
    case VTK_SIGNED_CHAR:
    case VTK_UNSIGNED_CHAR:
    case VTK_SHORT:
    case VTK_UNSIGNED_SHORT:
      return false;
    default:
      return true;
  }
}

} // namespace vtkSparseGridArrays

#endif
// VTK-HeaderTest-Exclude: vtkSparseGridArrays.h
