/**
 * @file vtkSparseGridArrays.h
 * @brief Private helpers: any VTK numeric array as a contiguous float/double buffer; the
 * finiteness check of such buffers; what the error-bounded encoding accepts.
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
