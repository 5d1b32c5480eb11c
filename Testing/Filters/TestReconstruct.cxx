// Sparse Grid Reconstruct and Sparse Grid Resample To Image on analytic data.
#include "SparseGridTestUtilities.h"

#include <gtest/gtest.h>

#include "vtkSparseGridHierarchize.h"
#include "vtkSparseGridReconstruct.h"
#include "vtkSparseGridResampleToImage.h"

#include "vtkCharArray.h"
#include "vtkDoubleArray.h"
#include "vtkInformation.h"
#include "vtkPoints.h"
#include "vtkPolyData.h"
#include "vtkRectilinearGrid.h"
#include "vtkStreamingDemandDrivenPipeline.h"
#include "vtkStructuredGrid.h"
#include "vtkUnstructuredGrid.h"

namespace
{
const int Dims[3] = { 21, 17, 11 };
const double Origin[3] = { -2.0, 1.0, 0.5 };
const double Spacing[3] = { 0.2, 0.25, 0.1 };
const double Upper[3] = { -2.0 + 20 * 0.2, 1.0 + 16 * 0.25, 0.5 + 10 * 0.1 };

vtkSmartPointer<vtkSparseGridHierarchize> Compress(vtkImageData* image, int precision)
{
  auto hierarchize = vtkSmartPointer<vtkSparseGridHierarchize>::New();
  hierarchize->SetErrorBoundMode(vtkSparseGridHierarchize::BOUND_OFF); // the fixed-level grid
  hierarchize->SetInputData(image);
  hierarchize->SetPrecision(precision);
  hierarchize->Update();
  return hierarchize;
}

/// Checks arrays against the function where the mask is 1, and zeros where it is 0; returns
/// the number of masked points.
vtkIdType CheckProbe(vtkDataSet* out,
  const char* what,
  double tolerance,
  const std::function<bool(const double x[3])>& inside)
{
  vtkDataArray* f = out->GetPointData()->GetArray("f");
  vtkCharArray* mask =
    vtkCharArray::SafeDownCast(out->GetPointData()->GetArray("vtkValidPointMask"));
  SG_CHECK(f && mask, "%s: arrays present", what);
  if (!f || !mask)
  {
    return -1;
  }
  SG_CHECK(f->GetNumberOfTuples() == out->GetNumberOfPoints(), "%s: tuples", what);
  vtkIdType masked = 0;
  double x[3];
  for (vtkIdType p = 0; p < out->GetNumberOfPoints(); ++p)
  {
    out->GetPoint(p, x);
    const bool in = inside(x);
    SG_CHECK(mask->GetValue(p) == (in ? 1 : 0), "%s: mask at (%g %g %g)", what, x[0], x[1], x[2]);
    if (in)
    {
      const double e = std::abs(f->GetTuple1(p) - sgtest::Multilinear(x));
      SG_CHECK(e < tolerance, "%s: error %g at (%g %g %g)", what, e, x[0], x[1], x[2]);
    }
    else
    {
      SG_CHECK(f->GetTuple1(p) == 0, "%s: value outside", what);
      ++masked;
    }
    if (::testing::Test::HasFailure()) // one failed point says enough
    {
      break;
    }
  }
  return masked;
}

bool InsideBox(const double x[3])
{
  const double eps = 1e-9;
  for (int a = 0; a < 3; ++a)
  {
    if (x[a] < Origin[a] - eps || x[a] > Upper[a] + eps)
    {
      return false;
    }
  }
  return true;
}
} // namespace

//------------------------------------------------------------------------------------------------
// Every kind of dataset is probed; the image takes the exact fast path, the others evaluate
// point by point, and all agree with the function (multilinear: exact with boundary).
TEST(SparseGridFilters, ReconstructDatasetTypes)
{
  auto image = sgtest::MakeImage(Dims, Origin, Spacing, "f", 1, sgtest::Multilinear);
  auto hierarchize = Compress(image, vtkSparseGridHierarchize::DOUBLE);
  vtkNew<vtkSparseGridReconstruct> reconstruct;
  reconstruct->SetSourceConnection(hierarchize->GetOutputPort());

  // Image: the fast path.
  reconstruct->SetInputData(image);
  reconstruct->Update();
  SG_CHECK(reconstruct->GetUsedImagePath(), "image uses reconstructImage");
  SG_CHECK(vtkImageData::SafeDownCast(reconstruct->GetOutput()) != nullptr, "image out");
  SG_CHECK(CheckProbe(reconstruct->GetOutput(), "image", 1e-11, InsideBox) == 0, "none masked");

  // The same image with an extent that does not start at 0.
  vtkNew<vtkImageData> shifted;
  shifted->SetExtent(3, 3 + Dims[0] - 1, -2, -2 + Dims[1] - 1, 5, 5 + Dims[2] - 1);
  shifted->SetSpacing(Spacing[0], Spacing[1], Spacing[2]);
  shifted->SetOrigin(
    Origin[0] - 3 * Spacing[0], Origin[1] + 2 * Spacing[1], Origin[2] - 5 * Spacing[2]);
  reconstruct->SetInputData(shifted);
  reconstruct->Update();
  SG_CHECK(reconstruct->GetUsedImagePath(), "shifted image uses reconstructImage");
  CheckProbe(reconstruct->GetOutput(), "shifted image", 1e-11, InsideBox);

  // Random points inside and outside, as polydata without cells.
  vtkNew<vtkPolyData> cloud;
  vtkNew<vtkPoints> points;
  points->SetDataTypeToDouble();
  unsigned state = 12345;
  auto random = [&state]()
  {
    state = state * 1103515245u + 12345u;
    return ((state >> 8) & 0xffff) / 65535.0;
  };
  for (int i = 0; i < 3000; ++i)
  {
    double x[3];
    for (int a = 0; a < 3; ++a)
    {
      x[a] = Origin[a] - 0.2 + (Upper[a] - Origin[a] + 0.4) * random();
    }
    points->InsertNextPoint(x);
  }
  cloud->SetPoints(points);
  reconstruct->SetInputData(cloud);
  reconstruct->Update();
  SG_CHECK(!reconstruct->GetUsedImagePath(), "points evaluate");
  SG_CHECK(vtkPolyData::SafeDownCast(reconstruct->GetOutput()) != nullptr, "polydata out");
  const vtkIdType masked = CheckProbe(reconstruct->GetOutput(), "cloud", 1e-11, InsideBox);
  SG_CHECK(masked > 100 && masked < 2900, "some points outside: %lld", (long long)masked);

  // Unstructured grid with vertex cells.
  vtkNew<vtkUnstructuredGrid> unstructured;
  unstructured->SetPoints(points);
  for (vtkIdType i = 0; i < points->GetNumberOfPoints(); ++i)
  {
    unstructured->InsertNextCell(VTK_VERTEX, 1, &i);
  }
  reconstruct->SetInputData(unstructured);
  reconstruct->Update();
  SG_CHECK(vtkUnstructuredGrid::SafeDownCast(reconstruct->GetOutput()) != nullptr, "ug out");
  CheckProbe(reconstruct->GetOutput(), "unstructured", 1e-11, InsideBox);

  // Rectilinear grid with uneven coordinates reaching outside.
  vtkNew<vtkRectilinearGrid> rectilinear;
  rectilinear->SetDimensions(7, 5, 4);
  vtkNew<vtkDoubleArray> xs, ys, zs;
  for (double v : { -2.5, -2.0, -1.3, 0.0, 0.7, 1.9, 2.0 })
    xs->InsertNextValue(v);
  for (double v : { 1.0, 1.1, 3.0, 5.0, 5.5 })
    ys->InsertNextValue(v);
  for (double v : { 0.5, 0.6, 1.5, 1.6 })
    zs->InsertNextValue(v);
  rectilinear->SetXCoordinates(xs);
  rectilinear->SetYCoordinates(ys);
  rectilinear->SetZCoordinates(zs);
  reconstruct->SetInputData(rectilinear);
  reconstruct->Update();
  CheckProbe(reconstruct->GetOutput(), "rectilinear", 1e-11, InsideBox);

  // Structured grid: a sheared copy of the image's points.
  vtkNew<vtkStructuredGrid> structured;
  structured->SetDimensions(5, 4, 3);
  vtkNew<vtkPoints> sheared;
  for (int k = 0; k < 3; ++k)
    for (int j = 0; j < 4; ++j)
      for (int i = 0; i < 5; ++i)
        sheared->InsertNextPoint(
          -2.0 + i * 0.9 + j * 0.1, 1.0 + j * 1.3, 0.5 + k * 0.45 + i * 0.01);
  structured->SetPoints(sheared);
  reconstruct->SetInputData(structured);
  reconstruct->Update();
  CheckProbe(reconstruct->GetOutput(), "structured", 1e-11, InsideBox);

  // Float coefficients: float outputs, float accuracy.
  auto floats = Compress(image, vtkSparseGridHierarchize::FLOAT);
  reconstruct->SetSourceConnection(floats->GetOutputPort());
  reconstruct->SetInputData(cloud);
  reconstruct->Update();
  SG_CHECK(reconstruct->GetOutput()->GetPointData()->GetArray("f")->GetDataType() == VTK_FLOAT,
    "float output");
  CheckProbe(reconstruct->GetOutput(), "float cloud", 1e-4, InsideBox);
}

//------------------------------------------------------------------------------------------------
// An image partly outside the compressed box: evaluated point by point, masked outside.
TEST(SparseGridFilters, ReconstructMask)
{
  auto image = sgtest::MakeImage(Dims, Origin, Spacing, "f", 1, sgtest::Multilinear);
  auto hierarchize = Compress(image, vtkSparseGridHierarchize::DOUBLE);
  vtkNew<vtkImageData> larger;
  larger->SetDimensions(15, 12, 9);
  larger->SetOrigin(Origin[0] - 1, Origin[1] - 0.5, Origin[2] - 0.2);
  larger->SetSpacing(0.45, 0.5, 0.2);
  vtkNew<vtkSparseGridReconstruct> reconstruct;
  reconstruct->SetSourceConnection(hierarchize->GetOutputPort());
  reconstruct->SetInputData(larger);
  reconstruct->Update();
  SG_CHECK(!reconstruct->GetUsedImagePath(), "partly outside: point path");
  const vtkIdType masked = CheckProbe(reconstruct->GetOutput(), "larger image", 1e-11, InsideBox);
  SG_CHECK(masked > 0, "masked points");

  // A 2-D representation: points off its plane are outside.
  const int flatDims[3] = { 21, 1, 11 };
  auto flat = sgtest::MakeImage(flatDims, Origin, Spacing, "f", 1, sgtest::Multilinear);
  auto flatCompressed = Compress(flat, vtkSparseGridHierarchize::DOUBLE);
  vtkNew<vtkPolyData> probe;
  vtkNew<vtkPoints> points;
  points->InsertNextPoint(0.0, Origin[1], 1.0);       // on the plane, inside
  points->InsertNextPoint(0.0, Origin[1] + 0.5, 1.0); // off the plane
  points->InsertNextPoint(5.0, Origin[1], 1.0);       // on the plane, outside
  probe->SetPoints(points);
  reconstruct->SetSourceConnection(flatCompressed->GetOutputPort());
  reconstruct->SetInputData(probe);
  reconstruct->Update();
  vtkDataArray* mask = reconstruct->GetOutput()->GetPointData()->GetArray("vtkValidPointMask");
  SG_CHECK(mask && mask->GetTuple1(0) == 1 && mask->GetTuple1(1) == 0 && mask->GetTuple1(2) == 0,
    "2-D mask");
  double x[3] = { 0.0, Origin[1], 1.0 };
  SG_CHECK(std::abs(reconstruct->GetOutput()->GetPointData()->GetArray("f")->GetTuple1(0) -
             sgtest::Multilinear(x)) < 1e-11,
    "2-D value");
}

//------------------------------------------------------------------------------------------------
TEST(SparseGridFilters, ResampleToImage)
{
  auto image = sgtest::MakeImage(Dims, Origin, Spacing, "f", 1, sgtest::Multilinear);
  auto hierarchize = Compress(image, vtkSparseGridHierarchize::DOUBLE);
  vtkNew<vtkSparseGridResampleToImage> resample;
  resample->SetInputConnection(hierarchize->GetOutputPort());

  // Defaults: 100^3 over the compressed bounds.
  resample->Update();
  vtkImageData* out = resample->GetOutput();
  int d[3];
  out->GetDimensions(d);
  SG_CHECK(d[0] == 100 && d[1] == 100 && d[2] == 100, "default dims %d %d %d", d[0], d[1], d[2]);
  double b[6];
  out->GetBounds(b);
  for (int a = 0; a < 3; ++a)
  {
    SG_CHECK(std::abs(b[2 * a] - Origin[a]) < 1e-9 && std::abs(b[2 * a + 1] - Upper[a]) < 1e-9,
      "bounds axis %d",
      a);
  }

  resample->SetSamplingDimensions(13, 9, 7);
  resample->Update();
  out = resample->GetOutput();
  out->GetDimensions(d);
  SG_CHECK(d[0] == 13 && d[1] == 9 && d[2] == 7, "dims");
  SG_CHECK(CheckProbe(out, "resample", 1e-11, InsideBox) == 0, "nothing masked");

  // A box reaching outside the data: masked outside.
  resample->UseInputBoundsOff();
  resample->SetSamplingBounds(-3, 2, 0, 6, 0, 2);
  resample->Update();
  out = resample->GetOutput();
  out->GetBounds(b);
  SG_CHECK(
    b[0] == -3 && b[1] == 2 && b[2] == 0 && b[3] == 6 && b[4] == 0 && b[5] == 2, "sampling bounds");
  SG_CHECK(CheckProbe(out, "outside box", 1e-11, InsideBox) > 0, "masked");

  // The original geometry.
  resample->UseOriginalGeometryOn();
  resample->Update();
  out = resample->GetOutput();
  out->GetDimensions(d);
  double o[3], s[3];
  out->GetOrigin(o);
  out->GetSpacing(s);
  for (int a = 0; a < 3; ++a)
  {
    SG_CHECK(
      d[a] == Dims[a] && std::abs(o[a] - Origin[a]) < 1e-12 && std::abs(s[a] - Spacing[a]) < 1e-12,
      "original geometry axis %d",
      a);
  }
  SG_CHECK(CheckProbe(out, "original", 1e-11, InsideBox) == 0, "nothing masked");
  int whole[6];
  resample->GetOutputInformation(0)->Get(vtkStreamingDemandDrivenPipeline::WHOLE_EXTENT(), whole);
  SG_CHECK(whole[1] == Dims[0] - 1 && whole[3] == Dims[1] - 1 && whole[5] == Dims[2] - 1,
    "whole extent matches the data");

  // A 2-D representation with a flat sampling axis of dimension 1.
  const int flatDims[3] = { 21, 17, 1 };
  auto flat = sgtest::MakeImage(flatDims, Origin, Spacing, "f", 1, sgtest::Multilinear);
  auto flatCompressed = Compress(flat, vtkSparseGridHierarchize::DOUBLE);
  vtkNew<vtkSparseGridResampleToImage> resample2;
  resample2->SetInputConnection(flatCompressed->GetOutputPort());
  resample2->SetSamplingDimensions(30, 40, 1);
  resample2->Update();
  SG_CHECK(CheckProbe(resample2->GetOutput(),
             "flat",
             1e-11,
             [](const double x[3]) { return std::abs(x[2] - Origin[2]) < 1e-9; }) == 0,
    "flat resample");
}

//------------------------------------------------------------------------------------------------
// Parallel runs ask for pieces: each piece gets its own part of the image, the parts cover it.
TEST(SparseGridFilters, ReconstructPieces)
{
  auto image = sgtest::MakeImage(Dims, Origin, Spacing, "f", 1, sgtest::Multilinear);
  auto hierarchize = Compress(image, vtkSparseGridHierarchize::DOUBLE);
  vtkNew<vtkSparseGridReconstruct> reconstruct;
  reconstruct->SetSourceConnection(hierarchize->GetOutputPort());
  // The whole image arrives for every piece (a trivial producer cannot split it), as when the
  // image also feeds the Hierarchize.
  reconstruct->SetInputData(image);
  vtkNew<vtkSparseGridResampleToImage> resample;
  resample->SetInputConnection(hierarchize->GetOutputPort());
  resample->UseOriginalGeometryOn();
  for (vtkAlgorithm* algorithm :
    { static_cast<vtkAlgorithm*>(reconstruct.Get()), static_cast<vtkAlgorithm*>(resample.Get()) })
  {
    const char* what = algorithm->GetClassName();
    vtkIdType total = 0;
    for (int piece = 0; piece < 3; ++piece)
    {
      algorithm->UpdatePiece(piece, 3, 0);
      vtkImageData* out = vtkImageData::SafeDownCast(algorithm->GetOutputDataObject(0));
      SG_CHECK(out && out->GetNumberOfPoints() < image->GetNumberOfPoints(),
        "%s piece %d smaller",
        what,
        piece);
      if (out)
      {
        CheckProbe(out, what, 1e-11, InsideBox);
        total += out->GetNumberOfCells();
      }
    }
    // Pieces share boundary points but not cells.
    SG_CHECK(total == image->GetNumberOfCells(),
      "%s: pieces cover %lld of %lld cells",
      what,
      static_cast<long long>(total),
      static_cast<long long>(image->GetNumberOfCells()));
  }
}
