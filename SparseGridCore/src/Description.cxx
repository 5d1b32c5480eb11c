#include "sparsegrid/description.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
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
    const bool finite =
      std::isfinite(v) || (infinityAllowed && v == std::numeric_limits<double>::infinity());
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

int Description::MeasuredLevels() const
{
  return this->ArrayNames.empty()
    ? 0
    : static_cast<int>(this->LevelMaxAbsError.size() / this->ArrayNames.size());
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
    return invalid("the axis map (AxisMap) names " + std::to_string(dims) +
      " grid axes; an image with 1 to 3 axes of more than one sample is needed");
  }
  bool isGridAxis[3] = { false, false, false };
  for (int t = 0; t < dims; ++t)
  {
    const int a = d.AxisMap[static_cast<std::size_t>(t)];
    if (a < 0 || a > 2 || (t > 0 && a <= d.AxisMap[static_cast<std::size_t>(t - 1)]))
    {
      return invalid(
        "the axis map (AxisMap) must list distinct image axes 0, 1, 2 in increasing order");
    }
    isGridAxis[a] = true;
  }
  for (int a = 0; a < 3; ++a)
  {
    const int n = d.ImageDimensions[a];
    if (n < 1 || n > MaxImageDimension)
    {
      return invalid("the image dimensions (ImageDimensions) must be 1 to 2^30 (axis " +
        axisName(a) + " has " + std::to_string(n) + " samples)");
    }
    // Grid axes are exactly the image axes with more than one sample.
    if (isGridAxis[a] != (n > 1))
    {
      return invalid("image axis " + axisName(a) + " has " + std::to_string(n) +
        " samples but is " + (isGridAxis[a] ? "" : "not ") +
        "a grid axis (ImageDimensions against AxisMap)");
    }
    const double lo = d.Bounds[2 * a], hi = d.Bounds[2 * a + 1];
    if (!std::isfinite(lo) || !std::isfinite(hi) || !std::isfinite(d.ImageOrigin[a]) ||
      !std::isfinite(d.ImageSpacing[a]))
    {
      return invalid("the bounds, image origin and image spacing (Bounds, ImageOrigin, "
                     "ImageSpacing) must be finite (axis " +
        axisName(a) + ")");
    }
    if (isGridAxis[a] ? !(hi > lo) : !(hi >= lo))
    {
      return invalid("the bounds (Bounds) are empty or inverted on axis " + axisName(a));
    }
    if (isGridAxis[a] && !(d.ImageSpacing[a] > 0))
    {
      return invalid(
        "image axis " + axisName(a) + " is a grid axis with a non-positive spacing (ImageSpacing)");
    }
    // The image spans the box: the box is where the voxels are.
    const double last = d.ImageOrigin[a] + (n - 1) * d.ImageSpacing[a];
    const double scale = std::max({ 1.0, std::abs(d.ImageOrigin[a]), std::abs(last) });
    if (!(std::abs(lo - d.ImageOrigin[a]) <= 1e-9 * scale) ||
      !(std::abs(hi - last) <= 1e-9 * scale))
    {
      char text[400];
      std::snprintf(text,
        sizeof(text),
        "the image (%d x %d x %d samples, axis %d from %.9g to %.9g) does not span the bounds "
        "(Bounds) on that axis (%.9g to %.9g): the description is inconsistent (damaged or "
        "edited?)",
        d.ImageDimensions[0],
        d.ImageDimensions[1],
        d.ImageDimensions[2],
        a,
        d.ImageOrigin[a],
        last,
        lo,
        hi);
      return invalid(text);
    }
  }
  if (d.Precision != Precision::Float && d.Precision != Precision::Double)
  {
    return invalid("the precision (Precision) must be Float or Double");
  }
  if (d.Kind != Encoding::ErrorBounded)
  {
    return Status::Ok();
  }
  if (d.BoundMode != BoundAbsolute && d.BoundMode != BoundRelative)
  {
    return invalid("the bound mode (ErrorBoundMode) must be Absolute or Relative");
  }
  if (!(d.RequestedBound > 0) || !std::isfinite(d.RequestedBound))
  {
    return invalid("the error bound (ErrorBound) must be a positive number");
  }
  const std::size_t pieces = d.PieceExtents.size() / 6;
  if (pieces < 1 || pieces > MaxPieces || d.PieceExtents.size() % 6 != 0)
  {
    return invalid(
      "the piece extents (PieceExtents) must hold 6 values for each of 1 to 65536 pieces");
  }
  for (std::size_t p = 0; p < d.PieceExtents.size(); p += 6)
  {
    for (int a = 0; a < 3; ++a)
    {
      const int lo = d.PieceExtents[p + 2 * static_cast<std::size_t>(a)];
      const int hi = d.PieceExtents[p + 2 * static_cast<std::size_t>(a) + 1];
      if (lo < 0 || lo > hi || hi >= d.ImageDimensions[a])
      {
        return invalid("coded piece " + std::to_string(p / 6) +
          " is empty or lies outside the image on axis " + axisName(a) + " (PieceExtents)");
      }
    }
  }
  if (d.LevelOfDetail < 0 || d.LevelOfDetail > MaxLevelOfDetail)
  {
    return invalid("the level of detail (LevelOfDetail) must be 0 (all) to 1024");
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
    return invalid("the sparse grid must have one axis per grid axis of the image (AxisMap "
                   "names " +
      std::to_string(d.Dimensions()) + ")");
  }
  const std::size_t arrays = d.ArrayNames.size();
  if (arrays < 1 || arrays > MaxArrays)
  {
    return invalid(
      "a dataset holds 1 to 4096 arrays (ArrayNames holds " + std::to_string(arrays) + ")");
  }
  std::set<std::string> unique;
  for (const std::string& name : d.ArrayNames)
  {
    if (name.empty() || !unique.insert(name).second)
    {
      return invalid("array names must be non-empty and distinct (ArrayNames)");
    }
  }
  if (coded)
  {
    if (d.Components.size() != arrays || d.AbsoluteBound.size() != arrays)
    {
      return invalid("the components and bounds of the arrays (ArrayComponents, "
                     "AbsoluteErrorBound) need one value per array");
    }
    for (std::size_t i = 0; i < arrays; ++i)
    {
      if (d.Components[i] < 1 || d.Components[i] > MaxComponents)
      {
        return invalid("an array has 1 to 4096 components (ArrayComponents)");
      }
      if (!(d.AbsoluteBound[i] > 0) || !std::isfinite(d.AbsoluteBound[i]))
      {
        return invalid("the bound of every array (AbsoluteErrorBound) must be positive and finite");
      }
    }
    if (!(status = checkPerArray(d.LevelBound, arrays, "LevelOfDetailBound", false)))
    {
      return status;
    }
    const std::size_t measured = d.LevelMaxAbsError.size();
    if (measured % arrays != 0 || measured / arrays > static_cast<std::size_t>(MaxLevelOfDetail))
    {
      return invalid("LevelMaxAbsError needs the same number of levels (at most 1024) per array");
    }
    for (double v : d.LevelMaxAbsError)
    {
      if (!std::isfinite(v) || !(v >= 0))
      {
        return invalid("LevelMaxAbsError holds a negative or non-finite value");
      }
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
