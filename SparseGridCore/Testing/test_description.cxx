// sparsegrid::validate, the one validator of the plugin's model of a compressed dataset (the
// field data and the .sgrid file are both read into a Description and checked by it): valid
// descriptions of both encodings pass, and each rule, broken alone, is refused with
// InvalidArgument naming the field. PhysicalToUnit/UnitToPhysical are checked against the
// affine map written out by hand.
#include <sparsegrid/description.h>

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

namespace
{
using sparsegrid::Description;

/// A 2-D image of 17 x 9 samples on image axes 0 and 2, origin (-1, 5, 2), spacing (0.5, 1, 0.25).
Description Image2D()
{
  Description d;
  d.AxisMap = { 0, 2 };
  d.ImageDimensions[0] = 17;
  d.ImageDimensions[1] = 1;
  d.ImageDimensions[2] = 9;
  const double origin[3] = { -1, 5, 2 };
  const double spacing[3] = { 0.5, 1, 0.25 };
  for (int a = 0; a < 3; ++a)
  {
    d.ImageOrigin[a] = origin[a];
    d.ImageSpacing[a] = spacing[a];
    d.Bounds[2 * a] = origin[a];
    d.Bounds[2 * a + 1] = origin[a] + (d.ImageDimensions[a] - 1) * spacing[a];
  }
  d.ArrayNames = { "pressure", "velocity" };
  return d;
}

Description FixedLevel()
{
  Description d = Image2D();
  sparsegrid::GridSpec spec;
  spec.dimensions = 2;
  spec.level = 4;
  EXPECT_TRUE(sparsegrid::Grid::create(spec, d.Grid).ok());
  d.MaxAbsError = { 0.1, 0.2 };
  d.RMSE = { 0.01, 0.02 };
  d.PSNR = { 40, std::numeric_limits<double>::infinity() }; // lossless: +inf
  return d;
}

Description ErrorBounded()
{
  Description d = Image2D();
  d.Kind = sparsegrid::Encoding::ErrorBounded;
  d.BoundMode = sparsegrid::BoundRelative;
  d.RequestedBound = 1e-3;
  d.Components = { 1, 3 };
  d.AbsoluteBound = { 0.5, 0.25 };
  d.PieceExtents = { 0, 8, 0, 0, 0, 8, 8, 16, 0, 0, 0, 8 }; // two pieces sharing column 8
  return d;
}

/// Expects `d` to be refused with InvalidArgument and a message containing `field`.
void ExpectRefused(const Description& d, const std::string& field, const std::string& what)
{
  const sparsegrid::Status status = sparsegrid::validate(d);
  EXPECT_EQ(status.code(), sparsegrid::ErrorCode::InvalidArgument) << what;
  EXPECT_NE(status.message().find(field), std::string::npos)
    << what << ": \"" << status.message() << "\" does not name " << field;
}

TEST(Description, ValidDescriptionsOfBothEncodingsPass)
{
  const sparsegrid::Status fixed = sparsegrid::validate(FixedLevel());
  EXPECT_TRUE(fixed.ok()) << fixed.message();
  const sparsegrid::Status coded = sparsegrid::validate(ErrorBounded());
  EXPECT_TRUE(coded.ok()) << coded.message();
  // The layout alone needs neither arrays nor a grid.
  Description layout = ErrorBounded();
  layout.ArrayNames.clear();
  layout.Components.clear();
  layout.AbsoluteBound.clear();
  EXPECT_TRUE(sparsegrid::validateLayout(layout).ok());
  EXPECT_FALSE(sparsegrid::validate(layout).ok());
}

struct Breakage
{
  const char* what;
  const char* field;
  std::function<void(Description&)> apply;
};

TEST(Description, EachRuleBrokenAloneIsRefused)
{
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<Breakage> both = {
    { "no grid axis", "AxisMap", [](Description& d) { d.AxisMap.clear(); } },
    { "decreasing axes",
      "AxisMap",
      [](Description& d) {
        d.AxisMap = { 2, 0 };
      } },
    { "axis 3",
      "AxisMap",
      [](Description& d) {
        d.AxisMap = { 0, 3 };
      } },
    { "flat axis with samples",
      "ImageDimensions",
      [](Description& d) { d.ImageDimensions[1] = 2; } },
    { "zero samples", "ImageDimensions", [](Description& d) { d.ImageDimensions[1] = 0; } },
    { "grid axis with one sample",
      "ImageDimensions",
      [](Description& d) { d.ImageDimensions[2] = 1; } },
    { "NaN bound", "Bounds", [nan](Description& d) { d.Bounds[3] = nan; } },
    { "infinite origin", "ImageOrigin", [inf](Description& d) { d.ImageOrigin[1] = inf; } },
    { "inverted box",
      "Bounds",
      [](Description& d)
      {
        d.Bounds[0] = 7;
        d.Bounds[1] = -1;
      } },
    { "zero spacing", "ImageSpacing", [](Description& d) { d.ImageSpacing[0] = 0; } },
    { "box not the image's", "Bounds", [](Description& d) { d.Bounds[5] += 0.125; } },
    { "precision out of the enum",
      "Precision",
      [](Description& d) { d.Precision = static_cast<sparsegrid::Precision>(7); } },
    { "no array", "ArrayNames", [](Description& d) { d.ArrayNames.clear(); } },
    { "repeated name",
      "ArrayNames",
      [](Description& d) {
        d.ArrayNames = { "pressure", "pressure" };
      } },
    { "empty name", "ArrayNames", [](Description& d) { d.ArrayNames[1].clear(); } },
    { "metric per array",
      "MaxAbsError",
      [](Description& d) {
        d.MaxAbsError = { 1, 2, 3 };
      } },
    { "negative RMSE",
      "RMSE",
      [](Description& d) {
        d.RMSE = { 0.1, -0.1 };
      } },
    { "infinite RMSE",
      "RMSE",
      [inf](Description& d) {
        d.RMSE = { 0.1, inf };
      } },
    { "NaN PSNR",
      "PSNR",
      [nan](Description& d) {
        d.PSNR = { nan, 1 };
      } },
  };
  for (const Breakage& b : both)
  {
    Description fixed = FixedLevel();
    b.apply(fixed);
    ExpectRefused(fixed, b.field, std::string("fixed level, ") + b.what);
    Description coded = ErrorBounded();
    b.apply(coded);
    ExpectRefused(coded, b.field, std::string("error-bounded, ") + b.what);
  }

  const std::vector<Breakage> codedOnly = {
    { "bound mode off", "ErrorBoundMode", [](Description& d) { d.BoundMode = 0; } },
    { "zero bound", "ErrorBound", [](Description& d) { d.RequestedBound = 0; } },
    { "infinite bound", "ErrorBound", [inf](Description& d) { d.RequestedBound = inf; } },
    { "no piece", "PieceExtents", [](Description& d) { d.PieceExtents.clear(); } },
    { "half a piece", "PieceExtents", [](Description& d) { d.PieceExtents.resize(9); } },
    { "piece past the image", "PieceExtents", [](Description& d) { d.PieceExtents[1] = 17; } },
    { "inverted piece", "PieceExtents", [](Description& d) { d.PieceExtents[4] = 9; } },
    { "negative level of detail", "LevelOfDetail", [](Description& d) { d.LevelOfDetail = -1; } },
    { "components per array", "ArrayComponents", [](Description& d) { d.Components = { 1 }; } },
    { "zero components", "ArrayComponents", [](Description& d) { d.Components[0] = 0; } },
    { "negative absolute bound",
      "AbsoluteErrorBound",
      [](Description& d) { d.AbsoluteBound[1] = -1; } },
    { "level bound per array", "LevelOfDetailBound", [](Description& d) { d.LevelBound = { 1 }; } },
  };
  for (const Breakage& b : codedOnly)
  {
    Description coded = ErrorBounded();
    b.apply(coded);
    ExpectRefused(coded, b.field, std::string("error-bounded, ") + b.what);
  }

  // The fixed level needs its grid, with one axis per grid axis of the image.
  Description noGrid = FixedLevel();
  noGrid.Grid = sparsegrid::Grid();
  ExpectRefused(noGrid, "AxisMap", "fixed level without a grid");
  Description wrongGrid = FixedLevel();
  sparsegrid::GridSpec spec;
  spec.dimensions = 3;
  spec.level = 3;
  ASSERT_TRUE(sparsegrid::Grid::create(spec, wrongGrid.Grid).ok());
  ExpectRefused(wrongGrid, "AxisMap", "fixed level with a 3-D grid for a 2-D image");
}

TEST(Description, UnitCoordinatesMapOntoTheBox)
{
  const Description d = FixedLevel(); // box x in [-1, 7], y = 5 (flat), z in [2, 4]
  const double unit[2] = { 0.25, 0.75 };
  double point[3];
  d.UnitToPhysical(unit, point);
  // By hand: x = -1 + 0.25 * 8 = 1, y = 5, z = 2 + 0.75 * 2 = 3.5 (exact binary values).
  EXPECT_EQ(point[0], 1.0);
  EXPECT_EQ(point[1], 5.0);
  EXPECT_EQ(point[2], 3.5);
  double back[2];
  EXPECT_TRUE(d.PhysicalToUnit(point, back, d.Tolerance()));
  EXPECT_EQ(back[0], 0.25);
  EXPECT_EQ(back[1], 0.75);
  // Off the plane y = 5 by more than the tolerance: outside, coordinates still clamped.
  const double off[3] = { 1, 5.5, 9 };
  EXPECT_FALSE(d.PhysicalToUnit(off, back, d.Tolerance()));
  EXPECT_EQ(back[1], 1.0);
}

TEST(Description, PiecesTileTheWholeExtent)
{
  const int whole[6] = { 2, 10, 0, 4, 5, 5 }; // 9 x 5 x 1 points, not starting at 0
  std::vector<int> shared;
  // Two slabs sharing the plane x = 6, and an empty piece (a process without data).
  EXPECT_EQ(sparsegrid::pieceTilingProblem(
              whole, { 2, 6, 0, 4, 5, 5, 0, -1, 0, -1, 0, -1, 6, 10, 0, 4, 5, 5 }, &shared),
    "");
  EXPECT_EQ(shared, (std::vector<int>{ 0, 2, 6, 6, 0, 4, 5, 5 }));
  // Disjoint slabs: nothing shared.
  shared.clear();
  EXPECT_EQ(
    sparsegrid::pieceTilingProblem(whole, { 7, 10, 0, 4, 5, 5, 2, 6, 0, 4, 5, 5 }, &shared), "");
  EXPECT_TRUE(shared.empty());
  // Two planes in common, a gap, a piece outside: refused, naming the pieces or the point.
  EXPECT_NE(sparsegrid::pieceTilingProblem(whole, { 2, 7, 0, 4, 5, 5, 6, 10, 0, 4, 5, 5 })
              .find("pieces 0 (x 2..7, y 0..4, z 5..5) and 1 (x 6..10, y 0..4, z 5..5) overlap in "
                    "x 6..7, y 0..4, z 5..5"),
    std::string::npos);
  EXPECT_NE(sparsegrid::pieceTilingProblem(whole, { 2, 5, 0, 4, 5, 5, 7, 10, 0, 4, 5, 5 })
              .find("no piece holds the point (6, 0, 5)"),
    std::string::npos);
  EXPECT_NE(sparsegrid::pieceTilingProblem(whole, { 2, 10, 0, 4, 5, 5, 1, 3, 0, 4, 5, 5 })
              .find("piece 1 (x 1..3, y 0..4, z 5..5) lies outside"),
    std::string::npos);
}
}
