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

namespace
{
bool emptyExtent(const int* e)
{
  return e[1] < e[0] || e[3] < e[2] || e[5] < e[4];
}

std::string extentText(const int* e)
{
  return "x " + std::to_string(e[0]) + ".." + std::to_string(e[1]) + ", y " + std::to_string(e[2]) +
    ".." + std::to_string(e[3]) + ", z " + std::to_string(e[4]) + ".." + std::to_string(e[5]);
}

/// The first point of `whole` that no piece covers (false: none). Pieces are cut into the cells
/// between their boundaries, which stay few for any decomposition a simulation uses.
bool findGap(const int whole[6], const std::vector<int>& extents, int point[3], bool& tooMany)
{
  const std::size_t pieces = extents.size() / 6;
  std::vector<int> cuts[3];
  for (int a = 0; a < 3; ++a)
  {
    cuts[a] = { whole[2 * a], whole[2 * a + 1] + 1 };
    for (std::size_t p = 0; p < pieces; ++p)
    {
      const int* e = extents.data() + 6 * p;
      if (!emptyExtent(e))
      {
        cuts[a].push_back(std::max(whole[2 * a], std::min(e[2 * a], whole[2 * a + 1] + 1)));
        cuts[a].push_back(std::max(whole[2 * a], std::min(e[2 * a + 1] + 1, whole[2 * a + 1] + 1)));
      }
    }
    std::sort(cuts[a].begin(), cuts[a].end());
    cuts[a].erase(std::unique(cuts[a].begin(), cuts[a].end()), cuts[a].end());
  }
  const std::size_t n[3] = { cuts[0].size() - 1, cuts[1].size() - 1, cuts[2].size() - 1 };
  tooMany = static_cast<double>(n[0]) * n[1] * n[2] > 64.0 * 1024 * 1024;
  if (tooMany)
  {
    return false;
  }
  std::vector<unsigned char> covered(n[0] * n[1] * n[2], 0);
  for (std::size_t p = 0; p < pieces; ++p)
  {
    const int* e = extents.data() + 6 * p;
    if (emptyExtent(e))
    {
      continue;
    }
    std::size_t lo[3], hi[3];
    for (int a = 0; a < 3; ++a)
    {
      lo[a] = static_cast<std::size_t>(
        std::lower_bound(cuts[a].begin(), cuts[a].end(), e[2 * a]) - cuts[a].begin());
      hi[a] = static_cast<std::size_t>(
        std::lower_bound(cuts[a].begin(), cuts[a].end(), e[2 * a + 1] + 1) - cuts[a].begin());
      hi[a] = std::min(hi[a], n[a]);
    }
    for (std::size_t k = lo[2]; k < hi[2]; ++k)
    {
      for (std::size_t j = lo[1]; j < hi[1]; ++j)
      {
        std::fill(covered.begin() + static_cast<std::ptrdiff_t>((k * n[1] + j) * n[0] + lo[0]),
          covered.begin() + static_cast<std::ptrdiff_t>((k * n[1] + j) * n[0] + hi[0]),
          1);
      }
    }
  }
  for (std::size_t c = 0; c < covered.size(); ++c)
  {
    if (!covered[c])
    {
      point[0] = cuts[0][c % n[0]];
      point[1] = cuts[1][(c / n[0]) % n[1]];
      point[2] = cuts[2][c / (n[0] * n[1])];
      return true;
    }
  }
  return false;
}
} // namespace

std::string pieceTilingProblem(const int whole[6],
  const std::vector<int>& extents,
  std::vector<int>* shared)
{
  const std::size_t pieces = extents.size() / 6;
  std::vector<std::size_t> order;
  for (std::size_t p = 0; p < pieces; ++p)
  {
    const int* e = extents.data() + 6 * p;
    if (emptyExtent(e))
    {
      continue;
    }
    for (int a = 0; a < 3; ++a)
    {
      if (e[2 * a] < whole[2 * a] || e[2 * a + 1] > whole[2 * a + 1])
      {
        return "piece " + std::to_string(p) + " (" + extentText(e) +
          ") lies outside the whole extent (" + extentText(whole) + ")";
      }
    }
    order.push_back(p);
  }
  int axis = 0;
  std::size_t most = 0;
  for (int a = 0; a < 3; ++a)
  {
    std::set<int> lows;
    for (std::size_t p : order)
    {
      lows.insert(extents[6 * p + 2 * static_cast<std::size_t>(a)]);
    }
    if (lows.size() > most)
    {
      most = lows.size();
      axis = a;
    }
  }
  const auto low = [&](std::size_t p)
  { return extents[6 * p + 2 * static_cast<std::size_t>(axis)]; };
  std::stable_sort(
    order.begin(), order.end(), [&](std::size_t i, std::size_t j) { return low(i) < low(j); });
  for (std::size_t n = 0; n < order.size(); ++n)
  {
    for (std::size_t m = n + 1;
         m < order.size() && low(order[m]) <= extents[6 * order[n] + 2 * axis + 1];
         ++m)
    {
      const std::size_t p = std::min(order[n], order[m]), q = std::max(order[n], order[m]);
      const int* e = extents.data() + 6 * p;
      const int* f = extents.data() + 6 * q;
      int box[6];
      bool thin = false;
      for (int a = 0; a < 3; ++a)
      {
        box[2 * a] = std::max(e[2 * a], f[2 * a]);
        box[2 * a + 1] = std::min(e[2 * a + 1], f[2 * a + 1]);
        thin = thin || (box[2 * a] == box[2 * a + 1] && whole[2 * a] < whole[2 * a + 1]);
      }
      if (emptyExtent(box))
      {
        continue;
      }
      if (!thin)
      {
        return "pieces " + std::to_string(p) + " (" + extentText(e) + ") and " + std::to_string(q) +
          " (" + extentText(f) + ") overlap in " + extentText(box) +
          ", more than the one layer of boundary points neighbouring pieces may share";
      }
      if (shared)
      {
        shared->insert(shared->end(), { static_cast<int>(p), static_cast<int>(q) });
        shared->insert(shared->end(), box, box + 6);
      }
    }
  }
  int point[3];
  bool tooMany = false;
  if (findGap(whole, extents, point, tooMany))
  {
    return "no piece holds the point (" + std::to_string(point[0]) + ", " +
      std::to_string(point[1]) + ", " + std::to_string(point[2]) + ") of the whole extent (" +
      extentText(whole) + ")";
  }
  if (tooMany)
  {
    return "the pieces are too irregular to check that they cover the image";
  }
  return std::string();
}

} // namespace sparsegrid
