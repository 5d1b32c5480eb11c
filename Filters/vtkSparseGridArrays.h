/**
 * @file vtkSparseGridArrays.h
 * @brief Private helpers: any VTK numeric array as a contiguous float/double buffer; the
 * finiteness check of such buffers.
 */
#ifndef vtkSparseGridArrays_h
#define vtkSparseGridArrays_h

#include "vtkAOSDataArrayTemplate.h"
#include "vtkArrayDispatch.h"
#include "vtkDataArray.h"
#include "vtkDataArrayRange.h"
#include "vtkDoubleArray.h"
#include "vtkFloatArray.h"

#include <sparsegrid/sparsegrid.h>

#include <algorithm>
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

} // namespace vtkSparseGridArrays

#endif
// VTK-HeaderTest-Exclude: vtkSparseGridArrays.h
