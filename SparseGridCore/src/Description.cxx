#include "sparsegrid/description.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace sparsegrid
{

namespace
{
Status invalid(const std::string& message)
{
  return Status(ErrorCode::InvalidArgument, message);
}

std::string axisName(int a)
{
  return std::to_string(a);
}

/// Per-array values: empty or one per array, each finite and >= 0 (PSNR may be +inf).
Status checkPerArray(const std::vector<double>& values,
  std::size_t arrays,
  const char* name,
  bool infinityAllowed)
{
  if (values.empty())
  {
    return Status::Ok();
  }
  if (values.size() != arrays)
  {
    return invalid(std::string(name) + " has " + std::to_string(values.size()) + " values for " +
      std::to_string(arrays) + " arrays");
  }
  for (double v : values)
  {
    const bool finite = std::isfinite(v) || (infinityAllowed && v == HUGE_VAL);
    if (!finite || !(v >= 0))
    {
      return invalid(std::string(name) + " holds a negative or non-finite value");
    }
  }
  return Status::Ok();
}
} // namespace

//------------------------------------------------------------------------------------------------
int Description::TotalComponents() const
{
  int total = 0;
  for (int nc : this->Components)
  {
    total += nc;
  }
  return total;
}

//------------------------------------------------------------------------------------------------
bool Description::PhysicalToUnit(const double point[3], double* unit, double tolerance) const
{
  bool inside = true;
  bool isGridAxis[3] = { false, false, false };
  for (int t = 0; t < this->Grid.dimensions(); ++t)
  {
    const int a = this->AxisMap[t];
    isGridAxis[a] = true;
    const double lo = this->Bounds[2 * a];
    const double hi = this->Bounds[2 * a + 1];
    if (point[a] < lo - tolerance || point[a] > hi + tolerance || std::isnan(point[a]))
    {
      inside = false;
    }
    const double u = (point[a] - lo) / (hi - lo);
    unit[t] = std::isnan(u) ? 0.0 : std::min(1.0, std::max(0.0, u));
  }
  for (int a = 0; a < 3; ++a)
  {
    if (!isGridAxis[a] &&
      !(point[a] >= this->Bounds[2 * a] - tolerance &&
        point[a] <= this->Bounds[2 * a + 1] + tolerance))
    {
      inside = false;
    }
  }
  return inside;
}

//------------------------------------------------------------------------------------------------
void Description::UnitToPhysical(const double* unit, double point[3]) const
{
  for (int a = 0; a < 3; ++a)
  {
    point[a] = this->Bounds[2 * a];
  }
  for (int t = 0; t < this->Grid.dimensions(); ++t)
  {
    const int a = this->AxisMap[t];
    point[a] = this->Bounds[2 * a] + unit[t] * (this->Bounds[2 * a + 1] - this->Bounds[2 * a]);
  }
}

//------------------------------------------------------------------------------------------------
double Description::Tolerance() const
{
  double diagonal2 = 0;
  for (int a = 0; a < 3; ++a)
  {
    const double w = this->Bounds[2 * a + 1] - this->Bounds[2 * a];
    diagonal2 += w * w;
  }
  return 1e-6 * std::sqrt(diagonal2);
}

//------------------------------------------------------------------------------------------------
Status validateLayout(const Description& d)
{
  const int dims = d.Dimensions();
  if (dims < 1 || dims > 3)
  {
    return invalid("the dataset has " + std::to_string(dims) +
      " grid axes (AxisMap); an image with 1 to 3 axes of more than one sample is needed");
  }
  bool isGridAxis[3] = { false, false, false };
  for (int t = 0; t < dims; ++t)
  {
    const int a = d.AxisMap[static_cast<std::size_t>(t)];
    if (a < 0 || a > 2 || (t > 0 && a <= d.AxisMap[static_cast<std::size_t>(t - 1)]))
    {
      return invalid("AxisMap must list distinct image axes 0, 1, 2 in increasing order");
    }
    isGridAxis[a] = true;
  }
  for (int a = 0; a < 3; ++a)
  {
    const int n = d.ImageDimensions[a];
    if (n < 1 || n > MaxImageDimension)
    {
      return invalid("ImageDimensions must be 1 to 2^30 on every axis (axis " + axisName(a) +
        " has " + std::to_string(n) + ")");
    }
    // Grid axes are exactly the image axes with more than one sample.
    if (isGridAxis[a] != (n > 1))
    {
      return invalid("ImageDimensions does not match AxisMap: image axis " + axisName(a) + " has " +
        std::to_string(n) + " samples but is " + (isGridAxis[a] ? "" : "not ") + "a grid axis");
    }
    const double lo = d.Bounds[2 * a], hi = d.Bounds[2 * a + 1];
    if (!std::isfinite(lo) || !std::isfinite(hi) || !std::isfinite(d.ImageOrigin[a]) ||
      !std::isfinite(d.ImageSpacing[a]))
    {
      return invalid(
        "Bounds, ImageOrigin and ImageSpacing must be finite (axis " + axisName(a) + ")");
    }
    if (isGridAxis[a] ? !(hi > lo) : !(hi >= lo))
    {
      return invalid("Bounds is empty or inverted on axis " + axisName(a));
    }
    if (isGridAxis[a] && !(d.ImageSpacing[a] > 0))
    {
      return invalid("ImageSpacing must be positive on the grid axes (axis " + axisName(a) + ")");
    }
    // The image spans the box: the box is where the voxels are.
    const double last = d.ImageOrigin[a] + (n - 1) * d.ImageSpacing[a];
    const double scale = std::max({ 1.0, std::abs(d.ImageOrigin[a]), std::abs(last) });
    if (std::abs(lo - d.ImageOrigin[a]) > 1e-9 * scale || std::abs(hi - last) > 1e-9 * scale)
    {
      return invalid("Bounds does not match the image geometry on axis " + axisName(a));
    }
  }
  if (d.Precision != Precision::Float && d.Precision != Precision::Double)
  {
    return invalid("Precision must be Float or Double");
  }
  if (d.Kind != Encoding::ErrorBounded)
  {
    return Status::Ok();
  }
  if (d.BoundMode != BoundAbsolute && d.BoundMode != BoundRelative)
  {
    return invalid("ErrorBoundMode must be Absolute or Relative");
  }
  if (!(d.RequestedBound > 0) || !std::isfinite(d.RequestedBound))
  {
    return invalid("ErrorBound must be a positive number");
  }
  const std::size_t pieces = d.PieceExtents.size() / 6;
  if (pieces < 1 || pieces > MaxPieces || d.PieceExtents.size() % 6 != 0)
  {
    return invalid("PieceExtents must hold 6 values for each of 1 to 65536 pieces");
  }
  for (std::size_t p = 0; p < d.PieceExtents.size(); p += 6)
  {
    for (int a = 0; a < 3; ++a)
    {
      const int lo = d.PieceExtents[p + 2 * static_cast<std::size_t>(a)];
      const int hi = d.PieceExtents[p + 2 * static_cast<std::size_t>(a) + 1];
      if (lo < 0 || lo > hi || hi >= d.ImageDimensions[a])
      {
        return invalid("PieceExtents: piece " + std::to_string(p / 6) +
          " is empty or lies outside the image on axis " + axisName(a));
      }
    }
  }
  if (d.LevelOfDetail < 0 || d.LevelOfDetail > MaxLevelOfDetail)
  {
    return invalid("LevelOfDetail must be 0 (all) to 1024");
  }
  return Status::Ok();
}

//------------------------------------------------------------------------------------------------
Status validate(const Description& d)
{
  Status status = validateLayout(d);
  if (!status)
  {
    return status;
  }
  const bool coded = d.Kind == Encoding::ErrorBounded;
  if (!coded && (!d.Grid.valid() || d.Grid.dimensions() != d.Dimensions()))
  {
    return invalid("the sparse grid must have one axis per entry of AxisMap (" +
      std::to_string(d.Dimensions()) + ")");
  }
  const std::size_t arrays = d.ArrayNames.size();
  if (arrays < 1 || arrays > MaxArrays)
  {
    return invalid(
      "ArrayNames must hold 1 to 4096 names (it holds " + std::to_string(arrays) + ")");
  }
  std::set<std::string> unique;
  for (const std::string& name : d.ArrayNames)
  {
    if (name.empty() || !unique.insert(name).second)
    {
      return invalid("ArrayNames holds an empty or repeated name");
    }
  }
  if (coded)
  {
    if (d.Components.size() != arrays || d.AbsoluteBound.size() != arrays)
    {
      return invalid("ArrayComponents and AbsoluteErrorBound need one value per array");
    }
    for (std::size_t i = 0; i < arrays; ++i)
    {
      if (d.Components[i] < 1 || d.Components[i] > MaxComponents)
      {
        return invalid("ArrayComponents must be 1 to 4096 per array");
      }
      if (!(d.AbsoluteBound[i] > 0) || !std::isfinite(d.AbsoluteBound[i]))
      {
        return invalid("AbsoluteErrorBound must be positive and finite");
      }
    }
    if (!(status = checkPerArray(d.LevelBound, arrays, "LevelOfDetailBound", false)))
    {
      return status;
    }
  }
  if (!(status = checkPerArray(d.MaxAbsError, arrays, "MaxAbsError", false)) ||
    !(status = checkPerArray(d.RMSE, arrays, "RMSE", false)) ||
    !(status = checkPerArray(d.PSNR, arrays, "PSNR", true)))
  {
    return status;
  }
  return Status::Ok();
}

} // namespace sparsegrid
