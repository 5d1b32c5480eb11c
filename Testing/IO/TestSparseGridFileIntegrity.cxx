// What the .sgrid checksums cover (docs/file-format.md, "Checksums"): every byte the reader
// uses at every level of detail, exchanged streams, the metadata that decides how bytes become
// voxels, stored metrics that contradict themselves, pieces that do not tile the image, and
// files written before the metadata and level checksums existed.
#include "SparseGridFile.h"
#include "SparseGridFileTestUtilities.h"

#include <gtest/gtest.h>

#include <hdf5.h>

#include <algorithm>
#include <string>
#include <vector>

namespace sgf = sparsegrid::file;
using namespace sgtest;

namespace
{

/// Levels of every stream of the coded sample (WriteCodedSample).
constexpr int SampleLevels = 5;

std::string ReadAt(const std::string& path, int lod, std::vector<sgf::StepData>& steps)
{
  sgf::Header header;
  sgf::ReadOptions options;
  options.levelOfDetail = lod;
  return sgf::readFile(path, header, steps, options);
}

/// Reads every level of detail 0..levels+1; returns the first error (empty when all read).
std::string ReadEveryLevel(const std::string& path, int levels)
{
  for (int lod = 0; lod <= levels + 1; ++lod)
  {
    std::vector<sgf::StepData> steps;
    const std::string error = ReadAt(path, lod, steps);
    if (!error.empty())
    {
      return "level of detail " + std::to_string(lod) + ": " + error;
    }
  }
  return std::string();
}

/// Expects `path` to be refused at every level of detail with `words` in each message.
void ExpectRefusedAtEveryLevel(const std::string& path, const std::string& words)
{
  for (int lod = 0; lod <= SampleLevels + 1; ++lod)
  {
    SCOPED_TRACE("level of detail " + std::to_string(lod));
    std::vector<sgf::StepData> steps;
    const std::string error = ReadAt(path, lod, steps);
    EXPECT_NE(error.find(words), std::string::npos) << error;
    EXPECT_TRUE(steps.empty());
  }
}

/// Reads the bytes of a 1-D byte dataset.
std::vector<unsigned char> DatasetBytes(hid_t file, const char* path)
{
  std::vector<unsigned char> bytes;
  const hid_t ds = H5Dopen2(file, path, H5P_DEFAULT);
  const hid_t space = ds >= 0 ? H5Dget_space(ds) : -1;
  const hssize_t n = space >= 0 ? H5Sget_simple_extent_npoints(space) : 0;
  bytes.resize(static_cast<std::size_t>(std::max<hssize_t>(n, 0)));
  if (ds >= 0 && !bytes.empty())
  {
    H5Dread(ds, H5T_NATIVE_UCHAR, H5S_ALL, H5S_ALL, H5P_DEFAULT, bytes.data());
  }
  H5Sclose(space);
  H5Dclose(ds);
  return bytes;
}

bool WriteDatasetBytes(hid_t file, const char* path, const std::vector<unsigned char>& bytes)
{
  const hid_t ds = H5Dopen2(file, path, H5P_DEFAULT);
  const bool ok =
    ds >= 0 && H5Dwrite(ds, H5T_NATIVE_UCHAR, H5S_ALL, H5S_ALL, H5P_DEFAULT, bytes.data()) >= 0;
  H5Dclose(ds);
  return ok;
}

std::string CorpusFile(const char* name)
{
  return std::string(SPARSEGRID_FUZZ_CORPUS) + "/" + name;
}

} // namespace

//------------------------------------------------------------------------------------------------
// Every byte the reader uses is checked at every level of detail.
//------------------------------------------------------------------------------------------------

TEST(SparseGridFileIntegrity, EveryByteReadIsCheckedAtEveryLevelOfDetail)
{
  const std::string folder = ScratchFolder("everybyte");
  const std::string good = folder + "/good.sgrid";
  ASSERT_EQ(WriteCodedSample(good), "");
  std::vector<std::vector<sgf::StepData>> reference(SampleLevels + 2);
  for (int lod = 0; lod <= SampleLevels + 1; ++lod)
  {
    ASSERT_EQ(ReadAt(good, lod, reference[static_cast<std::size_t>(lod)]), "") << lod;
  }
  ASSERT_EQ(reference[0][0].arrays[1].bytes.size(), reference[0][0].arrays[1].streamOffsets.back());
  EXPECT_LT(reference[1][0].arrays[1].bytes.size(), reference[0][0].arrays[1].bytes.size())
    << "level of detail 1 reads a prefix of each stream";
  const std::uint64_t offset = DatasetOffset(good, "/steps/000000/array_0001");
  const std::size_t length = reference[0][0].arrays[1].bytes.size();
  ASSERT_GT(offset, 0u);
  const std::vector<char> original = ReadBytes(good);
  const std::string bad = folder + "/bad.sgrid";
  std::vector<int> refused(SampleLevels + 2, 0);
  int positions = 0;
  for (std::size_t at = 0; at < length; at += 29, ++positions)
  {
    std::vector<char> bytes = original;
    bytes[offset + at] = static_cast<char>(bytes[offset + at] ^ 0x10);
    WriteBytes(bad, bytes.data(), bytes.size());
    for (int lod = 0; lod <= SampleLevels + 1; ++lod)
    {
      SCOPED_TRACE("byte " + std::to_string(at) + ", level of detail " + std::to_string(lod));
      std::vector<sgf::StepData> steps;
      const std::string error = ReadAt(bad, lod, steps);
      if (error.empty())
      {
        // Accepted only when the damaged byte is not among those read: what was read is what
        // an undamaged file gives.
        EXPECT_EQ(
          steps[0].arrays[1].bytes, reference[static_cast<std::size_t>(lod)][0].arrays[1].bytes);
      }
      else
      {
        // The prefix checksum, or before it the stream's own header check (a damaged header
        // says where the levels end, so it is parsed before the prefix can be checked).
        EXPECT_TRUE(error.find("checksum mismatch") != std::string::npos ||
          error.find("is damaged") != std::string::npos)
          << error;
        ++refused[static_cast<std::size_t>(lod)];
      }
    }
  }
  // Whole reads, and reads of at least as many levels as the streams have, use every byte.
  EXPECT_EQ(refused[0], positions);
  EXPECT_EQ(refused[SampleLevels], positions);
  EXPECT_EQ(refused[SampleLevels + 1], positions);
  EXPECT_GT(refused[1], 0);
  EXPECT_LT(refused[1], positions) << "the bytes of finer levels are not read at level 1";
}

TEST(SparseGridFileIntegrity, ExchangedStreamsAreRefusedAtEveryLevelOfDetail)
{
  const std::string folder = ScratchFolder("exchanged");
  const std::string good = folder + "/good.sgrid";
  ASSERT_EQ(WriteCodedSample(good), "");
  std::vector<sgf::StepData> steps;
  ASSERT_EQ(ReadAt(good, 0, steps), "");
  const std::vector<std::uint64_t>& uv = steps[0].arrays[1].streamOffsets;

  // Two streams of equal size in different arrays or steps, exchanged byte for byte.
  {
    SCOPED_TRACE("streams of different arrays or steps exchanged");
    const std::string path = folder + "/arrays.sgrid";
    ASSERT_EQ(WriteCodedSample(path), "");
    struct Stream
    {
      std::uint64_t At, Size;
      std::string Where;
    };
    std::vector<Stream> streams;
    std::vector<sgf::StepData> all;
    ASSERT_EQ(ReadAt(path, 0, all), "");
    for (std::size_t s = 0; s < all.size(); ++s)
    {
      for (std::size_t k = 0; k < all[s].arrays.size(); ++k)
      {
        char name[64];
        std::snprintf(name, sizeof(name), "/steps/%06zu/array_%04zu", s, k);
        const std::uint64_t base = DatasetOffset(path, name);
        const std::vector<std::uint64_t>& table = all[s].arrays[k].streamOffsets;
        for (std::size_t i = 0; i + 1 < table.size(); ++i)
        {
          streams.push_back({ base + table[i], table[i + 1] - table[i], name });
        }
      }
    }
    std::vector<char> bytes = ReadBytes(path);
    bool exchanged = false;
    for (std::size_t i = 0; i < streams.size() && !exchanged; ++i)
    {
      for (std::size_t j = i + 1; j < streams.size() && !exchanged; ++j)
      {
        const auto a = bytes.begin() + static_cast<std::ptrdiff_t>(streams[i].At);
        const auto b = bytes.begin() + static_cast<std::ptrdiff_t>(streams[j].At);
        if (streams[i].Size == streams[j].Size && streams[i].Where != streams[j].Where &&
          !std::equal(a, a + static_cast<std::ptrdiff_t>(streams[i].Size), b))
        {
          std::swap_ranges(a, a + static_cast<std::ptrdiff_t>(streams[i].Size), b);
          exchanged = true;
        }
      }
    }
    ASSERT_TRUE(exchanged) << "the sample should have two different streams of equal size";
    WriteBytes(path, bytes.data(), bytes.size());
    ExpectRefusedAtEveryLevel(path, "checksum mismatch");
  }
  // The two component streams of the first piece exchanged, with the stream table and the
  // dataset's checksum rewritten to match (a consistent edit).
  {
    SCOPED_TRACE("component streams exchanged consistently");
    const std::string path = folder + "/components.sgrid";
    ASSERT_EQ(WriteCodedSample(path), "");
    ASSERT_TRUE(Tamper(path,
      [&](hid_t file)
      {
        const char* name = "/steps/000000/array_0001";
        std::vector<unsigned char> bytes = DatasetBytes(file, name);
        std::vector<unsigned char> swapped(bytes.begin() + static_cast<std::ptrdiff_t>(uv[1]),
          bytes.begin() + static_cast<std::ptrdiff_t>(uv[2]));
        swapped.insert(
          swapped.end(), bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(uv[1]));
        std::copy(swapped.begin(), swapped.end(), bytes.begin());
        std::vector<long long> table(uv.begin(), uv.end());
        table[1] = static_cast<long long>(uv[2] - uv[1]);
        return WriteDatasetBytes(file, name, bytes) &&
          SetIntAttribute(file, name, "stream_offsets", table) &&
          SetIntAttribute(file, name, "crc32", { sgf::crc32(bytes.data(), bytes.size()) });
      }));
    ExpectRefusedAtEveryLevel(path, "checksum mismatch");
  }
  // Whole array datasets exchanged (names and all) in the first step: the array list the
  // header checksum covers changes.
  {
    SCOPED_TRACE("datasets exchanged");
    const std::string path = folder + "/datasets.sgrid";
    ASSERT_EQ(WriteCodedSample(path), "");
    ASSERT_TRUE(Tamper(path,
      [](hid_t file)
      {
        return H5Lmove(file,
                 "/steps/000000/array_0000",
                 file,
                 "/steps/000000/x",
                 H5P_DEFAULT,
                 H5P_DEFAULT) >= 0 &&
          H5Lmove(file,
            "/steps/000000/array_0001",
            file,
            "/steps/000000/array_0000",
            H5P_DEFAULT,
            H5P_DEFAULT) >= 0 &&
          H5Lmove(
            file, "/steps/000000/x", file, "/steps/000000/array_0001", H5P_DEFAULT, H5P_DEFAULT) >=
          0;
      }));
    ExpectRefusedAtEveryLevel(path, "metadata checksum mismatch");
  }
}

//------------------------------------------------------------------------------------------------
// Files written before the metadata and level checksums existed
//------------------------------------------------------------------------------------------------

//------------------------------------------------------------------------------------------------
// A read of some pieces reads only their streams, each checked on its own.
//------------------------------------------------------------------------------------------------

namespace
{
/// Reads step `step` of `path` with only the pieces flagged in `pieces`.
std::string ReadPieces(const std::string& path,
  const std::vector<char>& pieces,
  std::size_t step,
  sgf::StepData& out)
{
  sgf::ReadOptions options;
  options.pieces = pieces;
  sgf::Reader reader;
  std::string error = reader.open(path, options);
  return error.empty() ? reader.readStep(step, out) : error;
}

/// Stream k of an array as read (empty when it was left out).
std::vector<std::uint8_t> StreamOf(const sgf::ArrayValues& a, std::size_t k)
{
  return std::vector<std::uint8_t>(
    a.bytes.begin() + static_cast<std::ptrdiff_t>(a.streamOffsets[k]),
    a.bytes.begin() + static_cast<std::ptrdiff_t>(a.streamOffsets[k + 1]));
}
} // namespace

TEST(SparseGridFileIntegrity, ReadingSomePiecesReadsOnlyTheirStreams)
{
  const std::string folder = ScratchFolder("somepieces");
  const std::string path = folder + "/pieces.sgrid";
  // Four pieces along x; arrays of 1 and 2 components.
  ASSERT_EQ(WriteCodedFile<float>(path,
              { { 33, 17, 1 } },
              { 0, 7, 0, 16, 0, 0, 8, 15, 0, 16, 0, 0, 16, 23, 0, 16, 0, 0, 24, 32, 0, 16, 0, 0 },
              { { "f", 1 }, { "uv", 2 } },
              2,
              5e-2),
    "");
  sgf::StepData whole;
  ASSERT_EQ(ReadPieces(path, {}, 1, whole), "");
  for (const std::vector<char>& pieces : std::vector<std::vector<char>>{
         { 1, 0, 0, 0 }, { 0, 1, 1, 0 }, { 0, 0, 0, 1 }, { 0, 0, 0, 0 } })
  {
    std::string flags;
    for (char f : pieces)
    {
      flags += f ? '1' : '0';
    }
    SCOPED_TRACE("pieces " + flags);
    sgf::StepData some;
    ASSERT_EQ(ReadPieces(path, pieces, 1, some), "");
    ASSERT_EQ(some.arrays.size(), whole.arrays.size());
    for (std::size_t k = 0; k < whole.arrays.size(); ++k)
    {
      const sgf::ArrayValues& a = some.arrays[k];
      const sgf::ArrayValues& w = whole.arrays[k];
      const std::size_t components = static_cast<std::size_t>(w.description.components);
      const std::size_t streams = w.streamOffsets.size() - 1;
      ASSERT_EQ(a.streamsRead.size(), streams);
      ASSERT_EQ(a.streamOffsets.size(), streams + 1);
      EXPECT_EQ(a.storedOffsets, w.streamOffsets);
      EXPECT_EQ(a.streamLevels, w.streamLevels);
      EXPECT_EQ(a.crc32, w.crc32);
      std::uint64_t expected = 0;
      for (std::size_t s = 0; s < streams; ++s)
      {
        const bool wanted = pieces[s / components] != 0;
        EXPECT_EQ(a.streamsRead[s] != 0, wanted);
        EXPECT_EQ(StreamOf(a, s), wanted ? StreamOf(w, s) : std::vector<std::uint8_t>());
        expected += wanted ? w.streamOffsets[s + 1] - w.streamOffsets[s] : 0;
      }
      EXPECT_EQ(a.bytesRead, expected);
      EXPECT_EQ(a.bytes.size(), expected);
    }
  }
  EXPECT_EQ(whole.arrays[0].bytesRead, whole.arrays[0].streamOffsets.back());

  // A damaged byte in the last piece's stream of "f": a read that leaves that piece out does
  // not read it; a read of that piece refuses it.
  sgf::StepData some;
  const std::uint64_t offset = DatasetOffset(path, "/steps/000001/array_0000");
  ASSERT_GT(offset, 0u);
  ASSERT_TRUE(FlipByte(path, offset + whole.arrays[0].streamOffsets[4] - 3));
  EXPECT_EQ(ReadPieces(path, { 1, 1, 1, 0 }, 1, some), "");
  const std::string error = ReadPieces(path, { 0, 0, 0, 1 }, 1, some);
  EXPECT_NE(error.find("checksum mismatch in array 'f' of step 1, stream 3"), std::string::npos)
    << error;
  EXPECT_TRUE(some.arrays.empty());
  // One flag per piece, or a clear error.
  EXPECT_NE(ReadPieces(path, { 1, 0 }, 0, some).find("one flag per piece (4)"), std::string::npos);

  // Files written before level checksums have one checksum per dataset: read whole, then cut.
  const std::string legacy = CorpusFile("valid-legacy-coded-2d-float-2pieces.sgrid");
  sgf::StepData all, first;
  ASSERT_EQ(ReadPieces(legacy, {}, 0, all), "");
  ASSERT_EQ(ReadPieces(legacy, { 1, 0 }, 0, first), "");
  for (std::size_t k = 0; k < all.arrays.size(); ++k)
  {
    const sgf::ArrayValues& a = first.arrays[k];
    const std::size_t components = static_cast<std::size_t>(a.description.components);
    EXPECT_EQ(a.bytesRead, all.arrays[k].streamOffsets.back());
    for (std::size_t s = 0; s + 1 < a.streamOffsets.size(); ++s)
    {
      EXPECT_EQ(
        StreamOf(a, s), s < components ? StreamOf(all.arrays[k], s) : std::vector<std::uint8_t>());
    }
  }
}

TEST(SparseGridFileIntegrity, FilesWithoutMetadataChecksumsStillReadAndAreChecked)
{
  // fuzz/corpus/valid-legacy-*: files as the writer wrote them before the metadata and level
  // checksums (and before zlib computed the CRC-32); their stored CRC-32s are known.
  struct Legacy
  {
    const char* Name;
    std::size_t Step, Array;
    std::uint32_t Crc;
  };
  for (const Legacy& legacy :
    { Legacy{ "valid-legacy-coded-2d-float-2pieces.sgrid", 0, 0, 614840124u },
      Legacy{ "valid-legacy-2d-double-2steps.sgrid", 1, 1, 3836760719u } })
  {
    SCOPED_TRACE(legacy.Name);
    const std::string path = CorpusFile(legacy.Name);
    sgf::Header header;
    std::vector<sgf::StepData> steps;
    ASSERT_EQ(sgf::readFile(path, header, steps), "");
    EXPECT_FALSE(header.metadataChecksums);
    EXPECT_EQ(steps[legacy.Step].arrays[legacy.Array].crc32, legacy.Crc);
    EXPECT_EQ(ReadEveryLevel(path, SampleLevels), "");
  }
  // A damaged byte in the last stream of the coded file is found at every level of detail:
  // without level checksums the whole dataset is read and checked, then cut.
  const std::string folder = ScratchFolder("legacy");
  const std::string path = folder + "/damaged.sgrid";
  std::vector<char> bytes = ReadBytes(CorpusFile("valid-legacy-coded-2d-float-2pieces.sgrid"));
  WriteBytes(path, bytes.data(), bytes.size());
  std::vector<sgf::StepData> steps;
  ASSERT_EQ(ReadAt(path, 0, steps), "");
  const std::uint64_t offset = DatasetOffset(path, "/steps/000001/array_0001");
  const std::uint64_t length = steps[1].arrays[1].bytes.size();
  ASSERT_GT(offset, 0u);
  bytes[offset + length - 3] = static_cast<char>(bytes[offset + length - 3] ^ 0x01);
  WriteBytes(path, bytes.data(), bytes.size());
  ExpectRefusedAtEveryLevel(path, "checksum mismatch");
}

//------------------------------------------------------------------------------------------------
// Metadata
//------------------------------------------------------------------------------------------------

TEST(SparseGridFileIntegrity, ConsistentMetadataEditsAreRefused)
{
  const std::string folder = ScratchFolder("metadata");
  struct Edit
  {
    const char* Name;
    bool Coded;
    std::function<bool(hid_t)> Apply;
  };
  const std::vector<Edit> edits = {
    { "spacing and bounds scaled together",
      true,
      [](hid_t f)
      {
        return SetDoubleArrayAttribute(f, "/grid", "image_spacing", { 0.5, 0.5, 0.25 }) &&
          SetDoubleArrayAttribute(f, "/grid", "bounds", { 0, 16, 0, 8, 0, 0 });
      } },
    { "origin and bounds shifted together",
      true,
      [](hid_t f)
      {
        return SetDoubleArrayAttribute(f, "/grid", "image_origin", { 1, 0, 0 }) &&
          SetDoubleArrayAttribute(f, "/grid", "bounds", { 1, 9, 0, 4, 0, 0 });
      } },
    { "pieces exchanged",
      true,
      [](hid_t f)
      {
        return SetIntAttribute(
          f, "/grid", "piece_extents", { 16, 32, 0, 16, 0, 0, 0, 15, 0, 16, 0, 0 });
      } },
    { "one array fewer",
      true,
      [](hid_t f) { return SetIntAttribute(f, "/steps", "number_of_arrays", { 1 }); } },
    { "requested bound",
      true,
      [](hid_t f) { return SetDoubleAttribute(f, "/grid", "error_bound", 0.5); } },
    { "array bound",
      true,
      [](hid_t f)
      { return SetDoubleAttribute(f, "/steps/000001/array_0000", "absolute_bound", 0.025); } },
    { "per-level errors lowered",
      true,
      [](hid_t f)
      {
        return SetDoubleArrayAttribute(
          f, "/steps/000001/array_0001", "level_max_abs_error", { 0.1, 0.05, 0.025 });
      } },
    { "max error lowered",
      true,
      [](hid_t f)
      { return SetDoubleAttribute(f, "/steps/000000/array_0001", "max_abs_error", 0.0); } },
    { "level table",
      true,
      [](hid_t f)
      {
        return SetIntAttribute(
          f, "/steps/000000/array_0000", "level_crc32", std::vector<long long>(10, 7));
      } },
    { "level caps with the same point count",
      false,
      [](hid_t f) {
        return SetIntAttribute(f, "/grid", "level_caps", { 3, 4, 2 });
      } },
    { "a later time",
      false,
      [](hid_t f) { return SetDoubleAttribute(f, "/steps/000002", "time", 7.5); } },
    { "compression ratio",
      false,
      [](hid_t f) { return SetDoubleAttribute(f, "/steps/000001", "compression_ratio", 99.0); } },
  };
  for (const Edit& edit : edits)
  {
    SCOPED_TRACE(edit.Name);
    const std::string path = folder + "/edited.sgrid";
    ASSERT_EQ(edit.Coded ? WriteCodedSample(path) : WriteSample(path, 3), "");
    ASSERT_TRUE(Tamper(path, edit.Apply));
    for (int lod = 0; lod <= (edit.Coded ? SampleLevels + 1 : 0); ++lod)
    {
      std::vector<sgf::StepData> steps;
      const std::string error = ReadAt(path, lod, steps);
      // The level table is also checked stream by stream, which may come first.
      const std::string expected = edit.Name == std::string("level table")
        ? "checksum mismatch"
        : "metadata checksum mismatch";
      EXPECT_NE(error.find(expected), std::string::npos) << lod << ": " << error;
    }
  }
  // Without the checksum the first edit reads as plausible wrong data: the checksum is what
  // refuses it.
  const std::string path = folder + "/stripped.sgrid";
  ASSERT_EQ(WriteCodedSample(path), "");
  ASSERT_TRUE(
    Tamper(path, [&](hid_t f) { return StripMetadataChecksums(f) && edits[0].Apply(f); }));
  EXPECT_EQ(ReadEveryLevel(path, SampleLevels), "");
}

TEST(SparseGridFileIntegrity, ContradictoryMetricsAreRefused)
{
  const std::string folder = ScratchFolder("metrics");
  const std::string coded = folder + "/coded.sgrid";
  // Stripped of the metadata checksum, so that the rule itself, not the checksum, refuses.
  ASSERT_EQ(WriteCodedSample(coded), "");
  ASSERT_TRUE(Tamper(coded,
    [](hid_t f)
    {
      return StripMetadataChecksums(f) &&
        SetDoubleAttribute(f, "/steps/000001/array_0000", "max_abs_error", 1e6);
    }));
  sgf::Reader reader;
  ASSERT_EQ(reader.open(coded), "");
  sgf::StepData step;
  EXPECT_EQ(reader.readStep(0, step), "");
  const std::string error = reader.readStep(1, step);
  EXPECT_NE(error.find("contradict themselves"), std::string::npos) << error;
  EXPECT_NE(error.find("above the bound"), std::string::npos) << error;
  EXPECT_TRUE(step.arrays.empty());

  // The per-level errors: the full decode's above the bound.
  reader.close();
  ASSERT_TRUE(Tamper(coded,
    [](hid_t f)
    {
      return SetDoubleAttribute(f, "/steps/000001/array_0000", "max_abs_error", 0.02) &&
        SetDoubleArrayAttribute(
          f, "/steps/000001/array_0000", "level_max_abs_error", { 0.4, 0.2, 0.5 });
    }));
  {
    sgf::Reader levels;
    ASSERT_EQ(levels.open(coded), "");
    const std::string why = levels.readStep(1, step);
    EXPECT_NE(why.find("per-level errors"), std::string::npos) << why;
  }

  const std::string fixed = folder + "/fixed.sgrid";
  ASSERT_EQ(WriteSample(fixed, 1), "");
  ASSERT_TRUE(Tamper(fixed,
    [](hid_t f)
    {
      return StripMetadataChecksums(f) &&
        SetDoubleAttribute(f, "/steps/000000/array_0000", "max_abs_error", 0.5) &&
        SetDoubleAttribute(f, "/steps/000000/array_0000", "rmse", 2.0);
    }));
  std::vector<sgf::StepData> steps;
  EXPECT_NE(ReadAt(fixed, 0, steps).find("RMSE"), std::string::npos);

  // The writer refuses them too: it never writes a file the reader refuses.
  const sgf::GridDescription g = SmallGrid(sparsegrid::Precision::Double);
  std::vector<double> values(static_cast<std::size_t>(g.numberOfPoints), 1.0);
  sgf::StepInput input;
  input.arrays = { { "a", 1, values.data(), { 1.0, 2.0, 3.0 } } };
  const std::string path = folder + "/refused.sgrid";
  EXPECT_NE(
    sgf::writeFile(path, g, { { "a", 1 } }, { input }).find("contradict"), std::string::npos);
  EXPECT_FALSE(Exists(path));
}

TEST(SparseGridFileIntegrity, PerLevelErrorsRoundTripIntoTheModel)
{
  // The writer stores each array's measured error per level of detail; the reader gives it
  // back, and the model (sparsegrid::Description) gets it array-major.
  const std::string path = ScratchFolder("levelerrors") + "/coded.sgrid";
  ASSERT_EQ(WriteCodedSample(path), "");
  sgf::Header header;
  std::vector<sgf::StepData> steps;
  ASSERT_EQ(sgf::readFile(path, header, steps), "");
  const std::vector<double> expected = { 8 * 5e-2, 4 * 5e-2, 0.5 * 5e-2 };
  EXPECT_EQ(steps[1].arrays[1].metrics.levelMaxAbsError, expected);
  sparsegrid::Description d;
  ASSERT_EQ(sgf::describeStep(header, steps[1], d), "");
  EXPECT_EQ(d.MeasuredLevels(), 3);
  ASSERT_EQ(d.LevelMaxAbsError.size(), 6u);
  EXPECT_EQ(d.LevelMaxAbsError[4], 4 * 5e-2);
  EXPECT_EQ(sgf::arrayMetricsOf(d, 1).levelMaxAbsError, expected);
}

//------------------------------------------------------------------------------------------------
// Pieces
//------------------------------------------------------------------------------------------------

TEST(SparseGridFileIntegrity, PiecesMustTileTheImage)
{
  const std::array<int, 3> square{ { 17, 17, 1 } };
  // Every sample in one piece, or VTK's pieces sharing boundary layers: accepted.
  EXPECT_EQ(sgf::validatePieceTiling(square, { 0, 16, 0, 16, 0, 0 }), "");
  EXPECT_EQ(sgf::validatePieceTiling(square,
              { 0, 7, 0, 7, 0, 0, 8, 16, 0, 7, 0, 0, 0, 7, 8, 16, 0, 0, 8, 16, 8, 16, 0, 0 }),
    "");
  EXPECT_EQ(sgf::validatePieceTiling(square,
              { 0, 8, 0, 8, 0, 0, 8, 16, 0, 8, 0, 0, 0, 8, 8, 16, 0, 0, 8, 16, 8, 16, 0, 0 }),
    "");
  std::vector<int> cube;
  for (int p = 0; p < 8; ++p)
  {
    for (int a = 0; a < 3; ++a)
    {
      const bool high = (p >> a) & 1;
      cube.push_back(high ? 4 : 0);
      cube.push_back(high ? 8 : 4);
    }
  }
  EXPECT_EQ(sgf::validatePieceTiling({ { 9, 9, 9 } }, cube), "");
  // A gap, an overlap, a duplicate, a piece outside: refused, naming what is wrong.
  EXPECT_NE(sgf::validatePieceTiling(square, { 0, 7, 0, 16, 0, 0, 9, 16, 0, 16, 0, 0 })
              .find("no piece holds the point (8, 0, 0)"),
    std::string::npos);
  EXPECT_NE(sgf::validatePieceTiling(square, { 0, 9, 0, 16, 0, 0, 8, 16, 0, 16, 0, 0 })
              .find("overlap in x 8..9, y 0..16, z 0..0"),
    std::string::npos);
  EXPECT_NE(
    sgf::validatePieceTiling(square, { 0, 16, 0, 16, 0, 0, 0, 16, 0, 16, 0, 0 }).find("overlap"),
    std::string::npos);
  EXPECT_NE(sgf::validatePieceTiling(square, { 0, 17, 0, 16, 0, 0 }).find("outside the image"),
    std::string::npos);

  // In files (without the metadata checksum, so that the tiling rule itself refuses): a
  // duplicated, shifted, overlapping or dropped piece.
  const std::string folder = ScratchFolder("pieces");
  struct Case
  {
    const char* Name;
    std::vector<long long> Extents;
    const char* Expect;
  };
  for (const Case& c :
    { Case{ "duplicated", { 0, 15, 0, 16, 0, 0, 0, 15, 0, 16, 0, 0 }, "overlap" },
      Case{ "shifted", { 0, 15, 0, 16, 0, 0, 17, 32, 0, 16, 0, 0 }, "no piece holds the point" },
      Case{ "overlapping", { 0, 15, 0, 16, 0, 0, 14, 32, 0, 16, 0, 0 }, "overlap" },
      Case{ "dropped", { 0, 15, 0, 16, 0, 0 }, "no piece holds the point" } })
  {
    SCOPED_TRACE(c.Name);
    const std::string path = folder + "/" + c.Name + ".sgrid";
    ASSERT_EQ(WriteCodedSample(path), "");
    ASSERT_TRUE(Tamper(path,
      [&](hid_t f)
      {
        return StripMetadataChecksums(f) &&
          SetIntAttribute(
            f, "/grid", "number_of_pieces", { static_cast<long long>(c.Extents.size() / 6) }) &&
          SetIntAttribute(f, "/grid", "piece_extents", c.Extents);
      }));
    sgf::Reader reader;
    const std::string error = reader.open(path);
    EXPECT_NE(error.find("do not tile the image"), std::string::npos) << error;
    EXPECT_NE(error.find(c.Expect), std::string::npos) << error;
  }
  // The writer refuses such pieces.
  const std::string path = folder + "/gap.sgrid";
  const std::string error = WriteCodedFile<float>(
    path, { { 33, 17, 1 } }, { 0, 15, 0, 16, 0, 0, 17, 32, 0, 16, 0, 0 }, { { "f", 1 } }, 1, 5e-2);
  EXPECT_NE(error.find("do not tile the image"), std::string::npos) << error;
  EXPECT_FALSE(Exists(path));
}
