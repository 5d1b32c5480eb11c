// vtkSparseGridProbe::SelectBricks: which bricks a probe decodes for a box of voxels. Every voxel
// comes from the first brick holding it, the bricks this process holds first, then the others,
// each by index; bricks that give no voxel are left out. Checked on bricks that overlap (pieces
// that share a plane), cover each other in part, or cover a brick whole.
#include <gtest/gtest.h>

#include "vtkSparseGridProbe.h"
#include "vtkSparseGridRepresentation.h"

#include <cstdint>
#include <initializer_list>
#include <vector>

namespace
{
using Extent = std::vector<int>;

/// A representation index with the given bricks; `held` flags the bricks this process holds.
vtkSparseGridRepresentation::Contents MakeContents(std::initializer_list<Extent> bricks,
  std::initializer_list<int> held)
{
  static const std::uint8_t someBytes[1] = { 0 };
  vtkSparseGridRepresentation::Contents contents;
  for (const Extent& e : bricks)
  {
    contents.Info.PieceExtents.insert(contents.Info.PieceExtents.end(), e.begin(), e.end());
  }
  contents.PieceData.assign(bricks.size(), nullptr);
  for (int p : held)
  {
    contents.PieceData[static_cast<std::size_t>(p)] = someBytes;
  }
  return contents;
}

std::vector<char> Select(vtkSparseGridRepresentation::Contents contents, const Extent& box)
{
  return vtkSparseGridProbe::SelectBricks(contents, box.data());
}
}

TEST(SparseGridFilters, BrickSelectionSharedPlaneComesFromTheLocalBrick)
{
  // Two pieces that share the plane z = 5.
  const Extent a = { 0, 9, 0, 9, 0, 5 }, b = { 0, 9, 0, 9, 5, 9 };
  const Extent lower = { 0, 9, 0, 9, 0, 5 }, plane = { 0, 9, 0, 9, 5, 5 };
  // The lower piece's output on the rank holding A: A alone, B's plane is not needed.
  EXPECT_EQ(Select(MakeContents({ a, b }, { 0 }), lower), (std::vector<char>{ 1, 0 }));
  // ... on a rank holding B: B gives the plane, A the rest.
  EXPECT_EQ(Select(MakeContents({ a, b }, { 1 }), lower), (std::vector<char>{ 1, 1 }));
  // The plane alone: the held brick; held by both or by neither: the first by index.
  EXPECT_EQ(Select(MakeContents({ a, b }, { 1 }), plane), (std::vector<char>{ 0, 1 }));
  EXPECT_EQ(Select(MakeContents({ a, b }, { 0, 1 }), plane), (std::vector<char>{ 1, 0 }));
  EXPECT_EQ(Select(MakeContents({ a, b }, {}), plane), (std::vector<char>{ 1, 0 }));
}

TEST(SparseGridFilters, BrickSelectionPartialAndWholeCovers)
{
  // B holds only half of A's top plane: held B still needs A for the other half.
  const Extent a = { 0, 9, 0, 9, 0, 5 }, b = { 0, 4, 0, 9, 5, 9 };
  const Extent plane = { 0, 9, 0, 9, 5, 5 };
  EXPECT_EQ(Select(MakeContents({ a, b }, { 1 }), plane), (std::vector<char>{ 1, 1 }));
  EXPECT_EQ(Select(MakeContents({ a, b }, { 0 }), plane), (std::vector<char>{ 1, 0 }));
  // C is covered whole by A and B together (neither alone): left out when they come first.
  const Extent left = { 0, 4, 0, 9, 0, 9 }, right = { 5, 9, 0, 9, 0, 9 };
  const Extent whole = { 0, 9, 0, 9, 0, 9 }, middle = { 2, 7, 3, 6, 1, 8 };
  EXPECT_EQ(
    Select(MakeContents({ whole, left, right }, { 1, 2 }), middle), (std::vector<char>{ 0, 1, 1 }));
  EXPECT_EQ(
    Select(MakeContents({ left, right, whole }, {}), whole), (std::vector<char>{ 1, 1, 0 }));
  // ... and when it comes first, it gives every voxel.
  EXPECT_EQ(
    Select(MakeContents({ left, right, whole }, { 2 }), middle), (std::vector<char>{ 0, 0, 1 }));
  // A brick covered in its middle only (a hole in the cover) is still needed.
  const Extent ring = { 0, 9, 0, 9, 0, 9 }, core = { 3, 6, 3, 6, 3, 6 };
  EXPECT_EQ(Select(MakeContents({ ring, core }, { 1 }), whole), (std::vector<char>{ 1, 1 }));
  EXPECT_EQ(Select(MakeContents({ ring, core }, { 0 }), whole), (std::vector<char>{ 1, 0 }));
}

TEST(SparseGridFilters, BrickSelectionEmptyBoxAndRemembersLocalBricks)
{
  const Extent a = { 0, 9, 0, 9, 0, 5 }, b = { 0, 9, 0, 9, 5, 9 };
  EXPECT_EQ(Select(MakeContents({ a, b }, { 0 }), (Extent{ 0, 9, 0, 9, 7, 6 })),
    (std::vector<char>{ 0, 0 }));
  EXPECT_EQ(Select(MakeContents({ a, b }, { 0 }), (Extent{ 20, 29, 0, 9, 0, 9 })),
    (std::vector<char>{ 0, 0 }));
  // The bricks held when selecting are remembered for the decode after the others arrive.
  auto contents = MakeContents({ a, b }, { 1 });
  const Extent lower = { 0, 9, 0, 9, 0, 5 };
  EXPECT_EQ(vtkSparseGridProbe::SelectBricks(contents, lower.data()), (std::vector<char>{ 1, 1 }));
  EXPECT_EQ(contents.LocalPieces, (std::vector<char>{ 0, 1 }));
}
