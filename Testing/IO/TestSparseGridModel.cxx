// One model of a compressed dataset: sparsegrid::Description is what the SparseGrid.*
// field data (vtkSparseGridRepresentation::WriteFieldData/ReadFieldData) and the .sgrid file
// (sparsegrid::file::recordOf/describeStep through the HDF5 writer and reader) store. A
// description of each encoding goes field data -> file -> field data and must come back equal,
// field by field, after every step (the Summary line is the field data's own and is not stored
// in the file).
#include "vtkSparseGridRepresentation.h"

#include "SparseGridFile.h"
#include "SparseGridFileTestUtilities.h"

#include "vtkFieldData.h"
#include "vtkNew.h"

#include <sparsegrid/codec.h>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace
{
namespace sgf = sparsegrid::file;
using sparsegrid::Description;

/// A 2-D image of 17 x 9 samples on image axes 0 and 2, two arrays, provenance and metrics.
Description Common()
{
  Description d;
  d.AxisMap = { 0, 2 };
  const int dims[3] = { 17, 1, 9 };
  const double origin[3] = { -1, 5, 2 };
  const double spacing[3] = { 0.5, 1, 0.25 };
  for (int a = 0; a < 3; ++a)
  {
    d.ImageDimensions[a] = dims[a];
    d.ImageOrigin[a] = origin[a];
    d.ImageSpacing[a] = spacing[a];
    d.Bounds[2 * a] = origin[a];
    d.Bounds[2 * a + 1] = origin[a] + (dims[a] - 1) * spacing[a];
  }
  d.ArrayNames = { "pressure", "velocity" };
  d.CompressionRatio = 12.5;
  d.Backend = "CUDA";
  d.BackendNote = "a note about the run";
  d.TimeSeconds = 0.25;
  d.MaxAbsError = { 0.0078125, 0.005 }; // within the coded variant's bound (0.01)
  d.RMSE = { 0.00390625, 0.0025 };
  d.PSNR = { 48.5, std::numeric_limits<double>::infinity() }; // lossless: +inf
  return d;
}

Description FixedLevel()
{
  Description d = Common();
  d.Precision = sparsegrid::Precision::Double;
  sparsegrid::GridSpec spec;
  spec.dimensions = 2;
  spec.level = 4;
  spec.caps = { 4, 3 };
  spec.boundary = true;
  EXPECT_TRUE(sparsegrid::Grid::create(spec, d.Grid).ok());
  return d;
}

/// Error-bounded, with real streams (the file reader checks them): `streams[k]` holds array
/// k's streams piece by piece, component by component, `offsets[k]` where each starts.
Description ErrorBounded(std::vector<std::vector<std::uint8_t>>& streams,
  std::vector<std::vector<std::uint64_t>>& offsets)
{
  Description d = Common();
  d.Kind = sparsegrid::Encoding::ErrorBounded;
  d.Precision = sparsegrid::Precision::Float;
  d.BoundMode = sparsegrid::BoundAbsolute;
  d.RequestedBound = 0.01;
  d.Components = { 1, 2 };
  d.AbsoluteBound = { 0.01, 0.01 };
  d.PieceExtents = { 0, 8, 0, 0, 0, 8, 8, 16, 0, 0, 0, 8 }; // two pieces sharing column 8
  streams.assign(2, {});
  offsets.assign(2, { 0 });
  for (int p = 0; p < 2; ++p)
  {
    sparsegrid::codec::Layout layout;
    layout.dims = { 9, 9, 1 };
    std::vector<float> values(81);
    for (std::size_t i = 0; i < values.size(); ++i)
    {
      values[i] = static_cast<float>(std::sin(0.1 * static_cast<double>(i + 81 * p)));
    }
    for (std::size_t k = 0; k < 2; ++k)
    {
      for (int c = 0; c < d.Components[k]; ++c)
      {
        std::vector<std::uint8_t> stream;
        EXPECT_TRUE(
          sparsegrid::codec::encode(values.data(), layout, d.AbsoluteBound[k], stream).ok());
        streams[k].insert(streams[k].end(), stream.begin(), stream.end());
        offsets[k].push_back(streams[k].size());
        d.StoredBytes += stream.size();
      }
    }
  }
  return d;
}

void ExpectSame(const Description& a, const Description& b, const std::string& where)
{
  SCOPED_TRACE(where);
  EXPECT_TRUE(a.Kind == b.Kind);
  EXPECT_EQ(a.Grid.valid(), b.Grid.valid());
  if (a.Grid.valid() && b.Grid.valid())
  {
    EXPECT_EQ(a.Grid.dimensions(), b.Grid.dimensions());
    EXPECT_EQ(a.Grid.level(), b.Grid.level());
    EXPECT_EQ(a.Grid.caps(), b.Grid.caps());
    EXPECT_EQ(a.Grid.boundary(), b.Grid.boundary());
  }
  EXPECT_EQ(a.AxisMap, b.AxisMap);
  for (int i = 0; i < 6; ++i)
  {
    EXPECT_EQ(a.Bounds[i], b.Bounds[i]) << "Bounds[" << i << "]";
  }
  for (int i = 0; i < 3; ++i)
  {
    EXPECT_EQ(a.ImageDimensions[i], b.ImageDimensions[i]);
    EXPECT_EQ(a.ImageOrigin[i], b.ImageOrigin[i]);
    EXPECT_EQ(a.ImageSpacing[i], b.ImageSpacing[i]);
  }
  EXPECT_TRUE(a.Precision == b.Precision);
  EXPECT_EQ(a.ArrayNames, b.ArrayNames);
  EXPECT_EQ(a.CompressionRatio, b.CompressionRatio);
  EXPECT_EQ(a.Backend, b.Backend);
  EXPECT_EQ(a.BackendNote, b.BackendNote);
  EXPECT_EQ(a.TimeSeconds, b.TimeSeconds);
  EXPECT_EQ(a.MaxAbsError, b.MaxAbsError);
  EXPECT_EQ(a.RMSE, b.RMSE);
  EXPECT_EQ(a.PSNR, b.PSNR);
  EXPECT_EQ(a.BoundMode, b.BoundMode);
  EXPECT_EQ(a.RequestedBound, b.RequestedBound);
  EXPECT_EQ(a.Components, b.Components);
  EXPECT_EQ(a.AbsoluteBound, b.AbsoluteBound);
  EXPECT_EQ(a.PieceExtents, b.PieceExtents);
  EXPECT_EQ(a.LevelOfDetail, b.LevelOfDetail);
  EXPECT_EQ(a.LevelBound, b.LevelBound);
  EXPECT_EQ(a.StoredBytes, b.StoredBytes);
}

Description ThroughFieldData(const Description& d)
{
  vtkNew<vtkFieldData> fd;
  vtkSparseGridRepresentation::WriteFieldData(d, fd);
  Description back;
  std::string error;
  EXPECT_TRUE(vtkSparseGridRepresentation::ReadFieldData(fd, back, &error)) << error;
  return back;
}

/// Writes `d` as a one-step file (fixed level: zero coefficients; error-bounded: the streams)
/// and reads the step back as a description.
Description ThroughFile(const Description& d,
  const std::string& path,
  const std::vector<std::vector<std::uint8_t>>& streams,
  const std::vector<std::vector<std::uint64_t>>& offsets)
{
  const bool coded = d.Kind == sparsegrid::Encoding::ErrorBounded;
  sgf::StepInput step;
  step.metrics = sgf::stepMetricsOf(d);
  std::vector<sgf::ArrayDescription> arrays;
  std::vector<std::vector<double>> zeros(d.ArrayNames.size());
  for (std::size_t k = 0; k < d.ArrayNames.size(); ++k)
  {
    sgf::ArrayInput in;
    in.name = d.ArrayNames[k];
    in.metrics = sgf::arrayMetricsOf(d, k);
    if (coded)
    {
      in.components = d.Components[k];
      in.absoluteBound = d.AbsoluteBound[k];
      in.bytes = streams[k].data();
      in.streamOffsets = offsets[k];
    }
    else
    {
      in.components = static_cast<int>(k) + 1;
      zeros[k].assign(d.Grid.size() * static_cast<std::size_t>(in.components), 0.0);
      in.data = zeros[k].data();
    }
    arrays.push_back({ in.name, in.components });
    step.arrays.push_back(in);
  }
  const std::string written = sgf::writeFile(path, sgf::recordOf(d), arrays, { step });
  EXPECT_EQ(written, "");
  sgf::Header header;
  std::vector<sgf::StepData> steps;
  const std::string read = sgf::readFile(path, header, steps);
  EXPECT_EQ(read, "");
  Description back;
  if (written.empty() && read.empty() && steps.size() == 1)
  {
    EXPECT_EQ(sgf::describeStep(header, steps[0], back), "");
  }
  return back;
}

TEST(SparseGridModel, FixedLevelRoundTripsThroughFieldDataAndFile)
{
  const Description d = FixedLevel();
  ASSERT_TRUE(sparsegrid::validate(d).ok()) << sparsegrid::validate(d).message();
  const std::string path = sgtest::ScratchFolder("model") + "/fixed.sgrid";
  const Description viaFieldData = ThroughFieldData(d);
  ExpectSame(d, viaFieldData, "field data");
  const Description viaFile = ThroughFile(viaFieldData, path, {}, {});
  ExpectSame(d, viaFile, "field data, then file");
  ExpectSame(d, ThroughFieldData(viaFile), "field data, file, field data");
}

TEST(SparseGridModel, ErrorBoundedRoundTripsThroughFieldDataAndFile)
{
  std::vector<std::vector<std::uint8_t>> streams;
  std::vector<std::vector<std::uint64_t>> offsets;
  const Description d = ErrorBounded(streams, offsets);
  ASSERT_TRUE(sparsegrid::validate(d).ok()) << sparsegrid::validate(d).message();
  const std::string path = sgtest::ScratchFolder("model") + "/coded.sgrid";
  const Description viaFieldData = ThroughFieldData(d);
  ExpectSame(d, viaFieldData, "field data");
  const Description viaFile = ThroughFile(viaFieldData, path, streams, offsets);
  ExpectSame(d, viaFile, "field data, then file");
  ExpectSame(d, ThroughFieldData(viaFile), "field data, file, field data");
}

// The same rule refuses the same description in both serialisations: a zero spacing on a grid
// axis written into either is refused on reading with the model's message.
TEST(SparseGridModel, BothSerialisationsRefuseWhatTheModelRefuses)
{
  Description d = FixedLevel();
  d.ImageSpacing[2] = 0;
  const sparsegrid::Status model = sparsegrid::validate(d);
  ASSERT_FALSE(model.ok());
  vtkNew<vtkFieldData> fd;
  vtkSparseGridRepresentation::WriteFieldData(d, fd);
  Description back;
  std::string error;
  EXPECT_FALSE(vtkSparseGridRepresentation::ReadFieldData(fd, back, &error));
  EXPECT_NE(error.find(model.message()), std::string::npos) << error;
  std::uint64_t points = 0;
  const std::string fileError = sgf::validateGrid(sgf::recordOf(d), points);
  EXPECT_NE(fileError.find(model.message()), std::string::npos) << fileError;
}
}
