// Shared helpers of the filter tests (GoogleTest): analytic images, an error/warning catcher,
// checks with printf-style messages.
#ifndef SparseGridTestUtilities_h
#define SparseGridTestUtilities_h

#include "vtkAlgorithm.h"
#include "vtkCommand.h"
#include "vtkDataArray.h"
#include "vtkDoubleArray.h"
#include "vtkExecutive.h"
#include "vtkFieldData.h"
#include "vtkImageData.h"
#include "vtkNew.h"
#include "vtkPointData.h"
#include "vtkSmartPointer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <functional>
#include <string>

namespace sgtest
{
/// printf-style text for the message of a failed check.
#if defined(__GNUC__)
__attribute__((format(printf, 1, 2)))
#endif
inline std::string
Format(const char* format, ...)
{
  va_list arguments;
  va_start(arguments, format);
  va_list copy;
  va_copy(copy, arguments);
  const int length = std::vsnprintf(nullptr, 0, format, copy);
  va_end(copy);
  std::string text(static_cast<std::size_t>(std::max(0, length)) + 1, '\0');
  std::vsnprintf(&text[0], text.size(), format, arguments);
  va_end(arguments);
  text.resize(static_cast<std::size_t>(std::max(0, length)));
  return text;
}

/// A GoogleTest check that goes on after a failure, with a printf-style explanation of what
/// was expected (the filter tests print the measured values this way).
#define SG_CHECK(condition, ...) EXPECT_TRUE(condition) << sgtest::Format(__VA_ARGS__)

/// Catches ErrorEvent and WarningEvent of a filter and of its executive, so that expected
/// errors are checked instead of printed.
class Catcher : public vtkCommand
{
public:
  static Catcher* New() { return new Catcher; }
  void Execute(vtkObject*, unsigned long event, void* data) override
  {
    const std::string text = data ? static_cast<const char*>(data) : "";
    if (event == vtkCommand::ErrorEvent)
    {
      ++this->Errors;
      this->ErrorText += text + "\n";
    }
    else if (event == vtkCommand::WarningEvent)
    {
      ++this->Warnings;
      this->WarningText += text + "\n";
    }
  }
  void Watch(vtkAlgorithm* algorithm)
  {
    for (vtkObject* object :
      { static_cast<vtkObject*>(algorithm), static_cast<vtkObject*>(algorithm->GetExecutive()) })
    {
      object->AddObserver(vtkCommand::ErrorEvent, this);
      object->AddObserver(vtkCommand::WarningEvent, this);
    }
  }
  void Reset()
  {
    this->Errors = this->Warnings = 0;
    this->ErrorText.clear();
    this->WarningText.clear();
  }
  int Errors = 0;
  int Warnings = 0;
  std::string ErrorText;
  std::string WarningText;
};

/// An image of dims points from origin with spacing, with one array per function.
inline vtkSmartPointer<vtkImageData> MakeImage(const int dims[3],
  const double origin[3],
  const double spacing[3],
  const char* name,
  int components,
  const std::function<double(const double x[3], int component)>& f,
  int dataType = VTK_DOUBLE)
{
  auto image = vtkSmartPointer<vtkImageData>::New();
  image->SetDimensions(dims[0], dims[1], dims[2]);
  image->SetOrigin(origin[0], origin[1], origin[2]);
  image->SetSpacing(spacing[0], spacing[1], spacing[2]);
  vtkSmartPointer<vtkDataArray> array =
    vtkSmartPointer<vtkDataArray>::Take(vtkDataArray::CreateDataArray(dataType));
  array->SetName(name);
  array->SetNumberOfComponents(components);
  array->SetNumberOfTuples(image->GetNumberOfPoints());
  double x[3];
  for (vtkIdType p = 0; p < image->GetNumberOfPoints(); ++p)
  {
    image->GetPoint(p, x);
    for (int c = 0; c < components; ++c)
    {
      array->SetComponent(p, c, f(x, c));
    }
  }
  image->GetPointData()->AddArray(array);
  image->GetPointData()->SetActiveScalars(name);
  return image;
}

/// Adds one more array computed from the points of a dataset.
inline void AddArray(vtkDataSet* data,
  const char* name,
  int components,
  const std::function<double(const double x[3], int component)>& f)
{
  vtkNew<vtkDoubleArray> array;
  array->SetName(name);
  array->SetNumberOfComponents(components);
  array->SetNumberOfTuples(data->GetNumberOfPoints());
  double x[3];
  for (vtkIdType p = 0; p < data->GetNumberOfPoints(); ++p)
  {
    data->GetPoint(p, x);
    for (int c = 0; c < components; ++c)
    {
      array->SetComponent(p, c, f(x, c));
    }
  }
  data->GetPointData()->AddArray(array);
}

/// A multilinear function of physical coordinates: a grid with boundary reproduces it exactly.
inline double Multilinear(const double x[3], int component = 0)
{
  const double k = 1.0 + component;
  return 2.0 + 0.5 * k * x[0] - 0.25 * x[1] + 0.125 * x[2] + 0.03 * k * x[0] * x[1] -
    0.02 * x[1] * x[2] + 0.01 * x[0] * x[2] + 0.004 * k * x[0] * x[1] * x[2];
}

/// A smooth, non-polynomial function.
inline double Smooth(const double x[3], int = 0)
{
  return std::sin(0.9 * x[0]) * std::cos(0.7 * x[1]) * std::exp(-0.3 * x[2]) + 0.2 * x[0];
}

/// Largest |a - f(point)| over the points of data (a: the array `name`, component c).
inline double MaxDeviation(vtkDataSet* data,
  const char* name,
  const std::function<double(const double x[3], int component)>& f,
  int component = 0)
{
  vtkDataArray* array = data->GetPointData()->GetArray(name);
  if (!array)
  {
    return 1e300;
  }
  double worst = 0, x[3];
  for (vtkIdType p = 0; p < data->GetNumberOfPoints(); ++p)
  {
    data->GetPoint(p, x);
    worst = std::max(worst, std::abs(array->GetComponent(p, component) - f(x, component)));
  }
  return worst;
}

/// The hierarchical surpluses of array `name` in a fixed-level representation (field data).
inline vtkDataArray* Surpluses(vtkDataObject* representation, const std::string& name)
{
  return vtkDataArray::SafeDownCast(
    representation->GetFieldData()->GetAbstractArray((name + " Surpluses").c_str()));
}

/// What an aborted or failed filter leaves: no points and no field data at all.
inline bool IsEmptyOutput(vtkDataSet* data)
{
  return data && data->GetNumberOfPoints() == 0 && data->GetFieldData()->GetNumberOfArrays() == 0;
}

inline double FieldValue(vtkDataObject* data, const char* name, int index = 0)
{
  vtkDataArray* array = vtkDataArray::SafeDownCast(data->GetFieldData()->GetAbstractArray(name));
  return array && index < array->GetNumberOfValues()
    ? array->GetComponent(
        index / array->GetNumberOfComponents(), index % array->GetNumberOfComponents())
    : std::nan("");
}
} // namespace sgtest

#endif
