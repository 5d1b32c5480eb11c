#include "vtkSparseGridProbe.h"

#include "vtkSparseGridArrays.h"
#include "vtkSparseGridExecution.h"

#include "vtkAOSDataArrayTemplate.h"
#include "vtkCharArray.h"
#include "vtkDataSet.h"
#include "vtkDataSetAttributes.h"
#include "vtkSmartPointer.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace
{
using Contents = vtkSparseGridRepresentation::Contents;
using Result = vtkSparseGridProbe::Result;

Result Fail(std::string* error, const char* what, const sparsegrid::Status& status)
{
  if (status.code() == sparsegrid::ErrorCode::Aborted)
  {
    return Result::Aborted;
  }
  if (error)
  {
    *error = vtkSparseGridExecution::Describe(what, status);
  }
  return Result::Failed;
}

/// One component of a coefficient array, contiguous, as the core wants it.
template<typename T>
void ExtractComponent(vtkDataArray* coefficients, int c, std::vector<T>& out)
{
  auto* array = vtkArrayDownCast<vtkAOSDataArrayTemplate<T>>(coefficients);
  const int nc = array->GetNumberOfComponents();
  const std::size_t n = static_cast<std::size_t>(array->GetNumberOfTuples());
  const T* in = array->GetPointer(0);
  out.resize(n);
  for (std::size_t p = 0; p < n; ++p)
  {
    out[p] = in[p * nc + c];
  }
}

/// Zero-filled output arrays named after the compressed ones, plus the mask.
template<typename T>
std::vector<vtkSmartPointer<vtkSparseGridArrays::ArrayOf<T>>> MakeOutputs(const Contents& contents,
  vtkIdType n)
{
  std::vector<vtkSmartPointer<vtkSparseGridArrays::ArrayOf<T>>> arrays;
  for (std::size_t i = 0; i < contents.Coefficients.size(); ++i)
  {
    auto array = vtkSmartPointer<vtkSparseGridArrays::ArrayOf<T>>::New();
    array->SetName(contents.Info.ArrayNames[i].c_str());
    array->SetNumberOfComponents(contents.Coefficients[i]->GetNumberOfComponents());
    array->SetNumberOfTuples(n);
    array->FillValue(T(0));
    arrays.push_back(array);
  }
  return arrays;
}

template<typename T>
void Attach(const std::vector<vtkSmartPointer<vtkSparseGridArrays::ArrayOf<T>>>& arrays,
  vtkCharArray* mask,
  vtkDataSetAttributes* out)
{
  // AddArray replaces an input array of the same name: the reconstruction takes its place.
  for (const auto& array : arrays)
  {
    out->AddArray(array);
  }
  out->AddArray(mask);
  if (!arrays.empty())
  {
    out->SetActiveScalars(arrays[0]->GetName());
  }
}

/// Point-by-point evaluation in batches; points outside the compressed box are masked.
template<typename T, typename PointAt>
Result EvaluatePoints(const Contents& contents,
  vtkIdType n,
  PointAt&& pointAt,
  vtkSparseGridExecution& exec,
  vtkDataSetAttributes* out,
  std::string* error)
{
  const auto& info = contents.Info;
  const sparsegrid::Grid& grid = info.Grid;
  const int D = grid.dimensions();
  const double tolerance = info.Tolerance();
  auto arrays = MakeOutputs<T>(contents, n);
  vtkNew<vtkCharArray> mask;
  mask->SetName(vtkSparseGridProbe::MaskName);
  mask->SetNumberOfTuples(n);
  mask->FillValue(0);

  std::vector<std::vector<T>> coefficients; // one per (array, component)
  for (const auto& array : contents.Coefficients)
  {
    for (int c = 0; c < array->GetNumberOfComponents(); ++c)
    {
      coefficients.emplace_back();
      ExtractComponent<T>(array, c, coefficients.back());
    }
  }

  constexpr vtkIdType Batch = 1 << 16;
  std::vector<T> unit(static_cast<std::size_t>(Batch * D));
  std::vector<vtkIdType> ids(static_cast<std::size_t>(Batch));
  std::vector<T> results(static_cast<std::size_t>(Batch));
  double x[3];
  double u[sparsegrid::MaxDimensions];
  for (vtkIdType begin = 0; begin < n; begin += Batch)
  {
    const vtkIdType end = std::min(n, begin + Batch);
    exec.SetProgressRange(static_cast<double>(begin) / n, static_cast<double>(end) / n);
    if (exec.Options().abort && exec.Options().abort())
    {
      return Result::Aborted;
    }
    std::size_t m = 0;
    for (vtkIdType id = begin; id < end; ++id)
    {
      pointAt(id, x);
      if (info.PhysicalToUnit(x, u, tolerance))
      {
        ids[m] = id;
        for (int t = 0; t < D; ++t)
        {
          unit[m * D + t] = static_cast<T>(u[t]);
        }
        mask->SetValue(id, 1);
        ++m;
      }
    }
    if (m == 0)
    {
      continue;
    }
    std::size_t k = 0;
    for (const auto& array : arrays)
    {
      const int nc = array->GetNumberOfComponents();
      T* values = array->GetPointer(0);
      for (int c = 0; c < nc; ++c, ++k)
      {
        sparsegrid::ExecutionReport report;
        const sparsegrid::Status status = sparsegrid::evaluate(
          grid, coefficients[k].data(), unit.data(), m, results.data(), exec.Options(), &report);
        if (!status.ok())
        {
          return Fail(error, "evaluating the sparse grid", status);
        }
        exec.Record(report);
        for (std::size_t j = 0; j < m; ++j)
        {
          values[ids[j] * nc + c] = results[j];
        }
      }
    }
  }
  Attach<T>(arrays, mask, out);
  return Result::Done;
}

/// The exact fast path: the whole image lies inside the compressed box.
template<typename T>
Result ReconstructImage(const Contents& contents,
  const sparsegrid::RegularGrid& target,
  vtkSparseGridExecution& exec,
  vtkDataSetAttributes* out,
  std::string* error)
{
  const vtkIdType n = static_cast<vtkIdType>(target.numberOfPoints());
  auto arrays = MakeOutputs<T>(contents, n);
  vtkNew<vtkCharArray> mask;
  mask->SetName(vtkSparseGridProbe::MaskName);
  mask->SetNumberOfTuples(n);
  mask->FillValue(1);

  int stages = 0;
  for (const auto& array : arrays)
  {
    stages += array->GetNumberOfComponents();
  }
  int stage = 0;
  std::vector<T> coefficients;
  std::vector<T> component;
  for (std::size_t i = 0; i < arrays.size(); ++i)
  {
    const int nc = arrays[i]->GetNumberOfComponents();
    T* values = arrays[i]->GetPointer(0);
    for (int c = 0; c < nc; ++c, ++stage)
    {
      exec.SetProgressRange(
        static_cast<double>(stage) / stages, static_cast<double>(stage + 1) / stages);
      ExtractComponent<T>(contents.Coefficients[i], c, coefficients);
      T* destination = values;
      if (nc > 1)
      {
        component.resize(static_cast<std::size_t>(n));
        destination = component.data();
      }
      sparsegrid::ExecutionReport report;
      const sparsegrid::Status status = sparsegrid::reconstructImage(
        contents.Info.Grid, coefficients.data(), target, destination, exec.Options(), &report);
      if (!status.ok())
      {
        return Fail(error, "reconstructing the image", status);
      }
      exec.Record(report);
      if (nc > 1)
      {
        for (vtkIdType p = 0; p < n; ++p)
        {
          values[p * nc + c] = component[static_cast<std::size_t>(p)];
        }
      }
    }
  }
  Attach<T>(arrays, mask, out);
  return Result::Done;
}
} // namespace

//------------------------------------------------------------------------------------------------
vtkSparseGridProbe::Result vtkSparseGridProbe::ProbeImage(const Contents& contents,
  const ImageGeometry& image,
  vtkSparseGridExecution& exec,
  vtkDataSetAttributes* out,
  std::string* error,
  bool* usedFastPath)
{
  const auto& info = contents.Info;
  const double tolerance = info.Tolerance();
  bool isGridAxis[3] = { false, false, false };
  for (int a : info.AxisMap)
  {
    isGridAxis[a] = true;
  }
  bool fast = true;
  for (int a = 0; a < 3; ++a)
  {
    double lo = image.Origin[a];
    double hi = image.Origin[a] + (image.Dimensions[a] - 1) * image.Spacing[a];
    if (lo > hi)
    {
      std::swap(lo, hi);
    }
    const bool inside =
      lo >= info.Bounds[2 * a] - tolerance && hi <= info.Bounds[2 * a + 1] + tolerance;
    // The fast path spans the grid axes only: elsewhere the image must be a single sample.
    const bool regular =
      isGridAxis[a] ? (image.Dimensions[a] == 1 || image.Spacing[a] > 0) : image.Dimensions[a] == 1;
    fast = fast && inside && regular;
  }
  if (usedFastPath)
  {
    *usedFastPath = fast;
  }
  const bool isDouble = info.Precision == sparsegrid::Precision::Double;
  if (fast)
  {
    sparsegrid::RegularGrid target;
    for (int a : info.AxisMap)
    {
      const double width = info.Bounds[2 * a + 1] - info.Bounds[2 * a];
      target.dims.push_back(static_cast<std::size_t>(image.Dimensions[a]));
      target.origin.push_back((image.Origin[a] - info.Bounds[2 * a]) / width);
      target.spacing.push_back(image.Spacing[a] / width);
    }
    return isDouble ? ReconstructImage<double>(contents, target, exec, out, error)
                    : ReconstructImage<float>(contents, target, exec, out, error);
  }
  const vtkIdType nx = image.Dimensions[0];
  const vtkIdType nxy = nx * image.Dimensions[1];
  const vtkIdType n = nxy * image.Dimensions[2];
  auto pointAt = [&](vtkIdType id, double x[3])
  {
    const vtkIdType ijk[3] = { id % nx, (id / nx) % image.Dimensions[1], id / nxy };
    for (int a = 0; a < 3; ++a)
    {
      x[a] = image.Origin[a] + ijk[a] * image.Spacing[a];
    }
  };
  return isDouble ? EvaluatePoints<double>(contents, n, pointAt, exec, out, error)
                  : EvaluatePoints<float>(contents, n, pointAt, exec, out, error);
}

//------------------------------------------------------------------------------------------------
vtkSparseGridProbe::Result vtkSparseGridProbe::ProbePoints(const Contents& contents,
  vtkDataSet* points,
  vtkSparseGridExecution& exec,
  vtkDataSetAttributes* out,
  std::string* error)
{
  const vtkIdType n = points->GetNumberOfPoints();
  auto pointAt = [points](vtkIdType id, double x[3]) { points->GetPoint(id, x); };
  return contents.Info.Precision == sparsegrid::Precision::Double
    ? EvaluatePoints<double>(contents, n, pointAt, exec, out, error)
    : EvaluatePoints<float>(contents, n, pointAt, exec, out, error);
}
