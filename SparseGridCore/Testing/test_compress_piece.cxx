// sparsegrid::compressPiece on simulated ranks: threads of one process that talk through a
// Communicator made of shared slots and a barrier. A 3-rank split of an image whose pieces
// share their boundary planes gives the same bricks and streams, byte for byte, as one rank
// coding the whole image with bricks that fall on the same planes; every brick decodes within
// the bound against the original; the index and the summary are the same on every rank; the
// relative bound follows the value range of all ranks; a failure or an abort on one rank
// reaches every rank, and a rank without a piece still takes part.
#include <sparsegrid/codec.h>
#include <sparsegrid/compress.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <limits>
#include <mutex>
#include <thread>
#include <vector>

namespace
{
using sparsegrid::CompressedPiece;
using sparsegrid::PieceInput;
using sparsegrid::PieceSettings;
using sparsegrid::Status;
using Extent = std::array<int, 6>;

/// The shared state of the simulated ranks: one slot per rank and a reusable barrier.
class Ranks
{
public:
  explicit Ranks(int n)
    : Count(n)
    , Slots(static_cast<std::size_t>(n))
  {
  }
  void Barrier()
  {
    std::unique_lock<std::mutex> lock(this->Mutex);
    const long generation = this->Generation;
    if (++this->Arrived == this->Count)
    {
      this->Arrived = 0;
      ++this->Generation;
      this->Changed.notify_all();
    }
    else
    {
      this->Changed.wait(lock, [&] { return this->Generation != generation; });
    }
  }
  const int Count;
  std::vector<std::vector<std::uint8_t>> Slots;
  std::atomic<int> Calls{ 0 };

private:
  std::mutex Mutex;
  std::condition_variable Changed;
  int Arrived = 0;
  long Generation = 0;
};

/// One simulated rank: each collective puts this rank's bytes in its slot, waits for all, reads
/// every slot, and waits again before a slot can be reused.
class ThreadRank final : public sparsegrid::Communicator
{
public:
  ThreadRank(Ranks& ranks, int rank)
    : Shared(ranks)
    , Rank(rank)
  {
  }
  int rank() const override { return this->Rank; }
  int size() const override { return this->Shared.Count; }
  bool allReduce(const double* in, double* out, std::size_t n, Operation op) override
  {
    return this->Reduce(in, out, n, op);
  }
  bool allReduce(const std::int64_t* in, std::int64_t* out, std::size_t n, Operation op) override
  {
    return this->Reduce(in, out, n, op);
  }
  bool allGather(const std::vector<std::uint8_t>& mine,
    std::vector<std::uint8_t>& all,
    std::vector<std::uint64_t>& counts) override
  {
    this->Shared.Slots[static_cast<std::size_t>(this->Rank)] = mine;
    this->Shared.Barrier();
    all.clear();
    counts.clear();
    for (const auto& slot : this->Shared.Slots)
    {
      all.insert(all.end(), slot.begin(), slot.end());
      counts.push_back(slot.size());
    }
    this->Shared.Barrier();
    if (this->Rank == 0)
    {
      ++this->Shared.Calls;
    }
    return true;
  }

private:
  template<typename V>
  bool Reduce(const V* in, V* out, std::size_t n, Operation op)
  {
    std::vector<std::uint8_t> mine(n * sizeof(V));
    std::memcpy(mine.data(), in, mine.size());
    this->Shared.Slots[static_cast<std::size_t>(this->Rank)] = mine;
    this->Shared.Barrier();
    for (std::size_t i = 0; i < n; ++i)
    {
      V combined{};
      for (std::size_t r = 0; r < this->Shared.Slots.size(); ++r)
      {
        V v;
        std::memcpy(&v, this->Shared.Slots[r].data() + i * sizeof(V), sizeof(V));
        combined = r == 0
          ? v
          : (op == Operation::Sum
                ? combined + v
                : (op == Operation::Max ? std::max(combined, v) : std::min(combined, v)));
      }
      out[i] = combined;
    }
    this->Shared.Barrier();
    return true;
  }
  Ranks& Shared;
  const int Rank;
};

constexpr int NX = 23, NY = 17, NZ = 30;

float Field(int i, int j, int k)
{
  const double x = i / double(NX - 1), y = j / double(NY - 1), z = k / double(NZ - 1);
  // Smooth, plus a bump near the top that sets the range (only the last piece holds it).
  return static_cast<float>(std::sin(3 * x) * std::cos(2 * y) + 0.5 * z +
    (k > 24 ? 4.0 * std::exp(-20 * ((x - 0.5) * (x - 0.5) + (y - 0.5) * (y - 0.5))) : 0.0));
}

/// The samples of `box`, x fastest, `components` interleaved (component c adds c).
std::vector<float> Samples(const Extent& box, int components = 1)
{
  std::vector<float> values;
  for (int k = box[4]; k <= box[5]; ++k)
  {
    for (int j = box[2]; j <= box[3]; ++j)
    {
      for (int i = box[0]; i <= box[1]; ++i)
      {
        for (int c = 0; c < components; ++c)
        {
          values.push_back(Field(i, j, k) + static_cast<float>(c));
        }
      }
    }
  }
  return values;
}

const Extent Whole = { 0, NX - 1, 0, NY - 1, 0, NZ - 1 };

/// Runs compressPiece on `inputs.size()` simulated ranks at once.
std::vector<Status> RunRanks(const std::vector<PieceInput<float>>& inputs,
  const std::vector<PieceSettings>& settings,
  std::vector<CompressedPiece>& results)
{
  const int n = static_cast<int>(inputs.size());
  Ranks ranks(n);
  std::vector<Status> statuses(inputs.size());
  results.assign(inputs.size(), CompressedPiece());
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
  {
    threads.emplace_back(
      [&, r]()
      {
        ThreadRank communicator(ranks, r);
        const auto u = static_cast<std::size_t>(r);
        statuses[u] = sparsegrid::compressPiece(inputs[u], settings[u], communicator, results[u]);
      });
  }
  for (auto& thread : threads)
  {
    thread.join();
  }
  return statuses;
}

PieceSettings Settings()
{
  PieceSettings settings;
  settings.brickSize = 10;
  settings.bound = 1e-3;
  settings.execution.threads = 1;
  return settings;
}

/// The pieces of VTK's extent translator split along z: neighbours share one plane.
std::vector<Extent> PiecesAlongZ()
{
  return { { 0, NX - 1, 0, NY - 1, 0, 10 },
    { 0, NX - 1, 0, NY - 1, 10, 20 },
    { 0, NX - 1, 0, NY - 1, 20, NZ - 1 } };
}

/// Every brick of `result` (all ranks' bytes back to back) decoded and compared with Field.
void ExpectBricksWithinBound(const CompressedPiece& result, const std::vector<std::uint8_t>& bytes)
{
  ASSERT_EQ(result.streamsPerBrick, 1);
  const double bound = result.absoluteBound[0];
  std::vector<int> covered(static_cast<std::size_t>(NX) * NY * NZ, 0);
  double largest = 0;
  for (std::size_t b = 0; b < result.brickOwners.size(); ++b)
  {
    const int* e = &result.brickExtents[6 * b];
    sparsegrid::codec::Layout layout;
    layout.dims = { { std::uint64_t(e[1] - e[0] + 1),
      std::uint64_t(e[3] - e[2] + 1),
      std::uint64_t(e[5] - e[4] + 1) } };
    std::vector<float> decoded(layout.dims[0] * layout.dims[1] * layout.dims[2]);
    const std::uint64_t from = result.streamOffsets[b], to = result.streamOffsets[b + 1];
    ASSERT_LE(to, bytes.size());
    ASSERT_TRUE(
      sparsegrid::codec::decode(bytes.data() + from, to - from, decoded.data(), layout).ok());
    std::size_t v = 0;
    for (int k = e[4]; k <= e[5]; ++k)
    {
      for (int j = e[2]; j <= e[3]; ++j)
      {
        for (int i = e[0]; i <= e[1]; ++i, ++v)
        {
          ++covered[static_cast<std::size_t>(i + NX * (j + NY * k))];
          const double error = std::fabs(double(decoded[v]) - double(Field(i, j, k)));
          ASSERT_LE(error, bound) << "voxel " << i << " " << j << " " << k;
          largest = std::max(largest, error);
        }
      }
    }
  }
  // Every voxel in exactly one brick; the reported maximum is the one measured here.
  EXPECT_EQ(std::count(covered.begin(), covered.end(), 1), static_cast<long>(covered.size()));
  EXPECT_GE(result.maxAbsError[0], largest);
  EXPECT_LE(result.maxAbsError[0], std::nextafter(largest, 1.0));
}

void ExpectSameIndex(const CompressedPiece& a, const CompressedPiece& b)
{
  EXPECT_EQ(a.streamsPerBrick, b.streamsPerBrick);
  EXPECT_EQ(a.brickExtents, b.brickExtents);
  EXPECT_EQ(a.streamOffsets, b.streamOffsets);
  EXPECT_EQ(a.streamLevels, b.streamLevels);
  EXPECT_EQ(a.streamLevelBounds, b.streamLevelBounds);
  EXPECT_EQ(a.absoluteBound, b.absoluteBound);
  EXPECT_EQ(a.maxAbsError, b.maxAbsError);
  EXPECT_EQ(a.levelMaxAbsError, b.levelMaxAbsError);
  EXPECT_EQ(a.storedBytes, b.storedBytes);
  EXPECT_EQ(a.specialVoxels, b.specialVoxels);
}

/// 3 ranks; `wholeInMemory`: each rank holds the whole image and codes its piece of it.
void CheckThreeRanks(bool wholeInMemory)
{
  const std::vector<float> all = Samples(Whole);
  std::vector<std::vector<float>> own;
  std::vector<PieceInput<float>> inputs;
  for (const Extent& piece : PiecesAlongZ())
  {
    own.push_back(Samples(piece));
  }
  for (std::size_t r = 0; r < 3; ++r)
  {
    PieceInput<float> input;
    input.wholeExtent = Whole;
    input.extent = PiecesAlongZ()[r];
    input.memoryExtent = wholeInMemory ? Whole : input.extent;
    input.sharedFaces = true;
    input.arrays.push_back({ "f", wholeInMemory ? all.data() : own[r].data(), 1 });
    inputs.push_back(input);
  }
  std::vector<CompressedPiece> ranks;
  const auto statuses = RunRanks(inputs, std::vector<PieceSettings>(3, Settings()), ranks);
  for (const Status& status : statuses)
  {
    ASSERT_TRUE(status.ok()) << status.message();
  }

  // One rank, the whole image: its bricks fall on the same planes (z 0-9, 10-19, 20-29).
  PieceInput<float> input;
  input.wholeExtent = input.extent = Whole;
  input.arrays.push_back({ "f", all.data(), 1 });
  CompressedPiece one;
  sparsegrid::SingleRank single;
  ASSERT_TRUE(sparsegrid::compressPiece(input, Settings(), single, one).ok());
  EXPECT_EQ(one.brickOwners, std::vector<int>(one.brickOwners.size(), 0));
  EXPECT_EQ(one.bricks, one.brickOwners.size());

  std::vector<std::uint8_t> bytes;
  for (std::size_t r = 0; r < 3; ++r)
  {
    ExpectSameIndex(ranks[r], ranks[0]);
    EXPECT_EQ(ranks[r].firstBrick,
      static_cast<std::size_t>(
        std::find(ranks[0].brickOwners.begin(), ranks[0].brickOwners.end(), static_cast<int>(r)) -
        ranks[0].brickOwners.begin()));
    EXPECT_GT(ranks[r].bricks, 0u);
    EXPECT_EQ(ranks[r].bytes.size(),
      ranks[0].streamOffsets[ranks[r].firstBrick + ranks[r].bricks] -
        ranks[0].streamOffsets[ranks[r].firstBrick]);
    bytes.insert(bytes.end(), ranks[r].bytes.begin(), ranks[r].bytes.end());
  }
  // The same bricks, the same streams, the same index: only the owners differ.
  EXPECT_EQ(bytes, one.bytes);
  EXPECT_EQ(ranks[0].brickExtents, one.brickExtents);
  EXPECT_EQ(ranks[0].streamOffsets, one.streamOffsets);
  EXPECT_EQ(ranks[0].absoluteBound, one.absoluteBound);
  EXPECT_EQ(ranks[0].maxAbsError, one.maxAbsError);
  EXPECT_NEAR(ranks[0].rmse[0], one.rmse[0], 1e-9 * one.rmse[0]);
  EXPECT_EQ(ranks[0].brickOwners.front(), 0);
  EXPECT_EQ(ranks[0].brickOwners.back(), 2);

  // The relative bound is 1e-3 of the range of all ranks (the bump lives on the last piece).
  const auto range = std::minmax_element(all.begin(), all.end());
  EXPECT_DOUBLE_EQ(ranks[0].absoluteBound[0], 1e-3 * (double(*range.second) - *range.first));
  ExpectBricksWithinBound(ranks[0], bytes);
  EXPECT_NEAR(ranks[0].inputBytes, 4.0 * NX * NY * NZ, 0.5);
  EXPECT_DOUBLE_EQ(ranks[0].compressionRatio, ranks[0].inputBytes / bytes.size());
}

TEST(CompressPiece, ThreeRanksGiveTheStreamsOfOne)
{
  CheckThreeRanks(false);
}

TEST(CompressPiece, RanksHoldingMoreThanTheirPiece)
{
  CheckThreeRanks(true);
}

TEST(CompressPiece, FailureOnOneRankReachesAll)
{
  std::vector<std::vector<float>> own;
  std::vector<PieceInput<float>> inputs;
  for (std::size_t r = 0; r < 3; ++r)
  {
    PieceInput<float> input;
    input.wholeExtent = Whole;
    input.extent = PiecesAlongZ()[r];
    own.push_back(Samples(input.extent));
    input.arrays.push_back({ "f", own.back().data(), 1 });
    inputs.push_back(input);
  }
  inputs[1].extent[5] = NZ + 3; // beyond the image
  inputs[1].memoryExtent = inputs[1].extent;
  std::vector<CompressedPiece> ranks;
  const auto statuses = RunRanks(inputs, std::vector<PieceSettings>(3, Settings()), ranks);
  for (std::size_t r = 0; r < 3; ++r)
  {
    EXPECT_EQ(statuses[r].code(), sparsegrid::ErrorCode::InvalidArgument);
    EXPECT_NE(statuses[r].message().find("whole extent"), std::string::npos);
    EXPECT_EQ(statuses[r].message().rfind("process 1: ", 0) == 0, r != 1) << statuses[r].message();
    EXPECT_TRUE(ranks[r].bytes.empty() && ranks[r].streamOffsets.empty());
  }
}

TEST(CompressPiece, AbortOnOneRankStopsAll)
{
  std::vector<std::vector<float>> own;
  std::vector<PieceInput<float>> inputs;
  std::vector<PieceSettings> settings(3, Settings());
  for (std::size_t r = 0; r < 3; ++r)
  {
    PieceInput<float> input;
    input.wholeExtent = Whole;
    input.extent = PiecesAlongZ()[r];
    input.sharedFaces = true;
    own.push_back(Samples(input.extent));
    input.arrays.push_back({ "f", own.back().data(), 1 });
    inputs.push_back(input);
  }
  settings[2].execution.abort = []() { return true; };
  std::vector<CompressedPiece> ranks;
  const auto statuses = RunRanks(inputs, settings, ranks);
  for (const Status& status : statuses)
  {
    EXPECT_EQ(status.code(), sparsegrid::ErrorCode::Aborted) << status.message();
  }
}

TEST(CompressPiece, RankWithoutPieceTakesPart)
{
  // Rank 1 holds nothing; rank 0 the whole image, with two components, a NaN and fill values.
  std::vector<float> values = Samples(Whole, 2);
  values[2 * 5] = std::numeric_limits<float>::quiet_NaN();
  values[2 * 7 + 1] = -999.0f;
  values[2 * 8 + 1] = -999.0f;
  std::vector<PieceInput<float>> inputs(2);
  for (auto& input : inputs)
  {
    input.wholeExtent = Whole;
    input.arrays.push_back({ "v", nullptr, 2, 8 });
  }
  inputs[0].extent = Whole;
  inputs[0].arrays[0].values = values.data();
  std::vector<PieceSettings> settings(2, Settings());
  for (auto& s : settings)
  {
    s.boundMode = sparsegrid::BoundAbsolute;
    s.bound = 0.01;
    s.specials.useFillValue = true;
    s.specials.fillValue = -999.0;
  }
  std::vector<CompressedPiece> ranks;
  const auto statuses = RunRanks(inputs, settings, ranks);
  ASSERT_TRUE(statuses[0].ok() && statuses[1].ok()) << statuses[0].message();
  ExpectSameIndex(ranks[0], ranks[1]);
  EXPECT_EQ(ranks[1].bricks, 0u);
  EXPECT_TRUE(ranks[1].bytes.empty());
  EXPECT_EQ(ranks[0].streamsPerBrick, 2);
  EXPECT_EQ(ranks[0].specialVoxels, 3u);
  EXPECT_EQ(ranks[0].absoluteBound, std::vector<double>(1, 0.01));
  EXPECT_LE(ranks[0].maxAbsError[0], 0.01);
  // Input bytes count the caller's value size (8 here), not the coded float.
  EXPECT_NEAR(ranks[0].inputBytes, 8.0 * 2 * NX * NY * NZ, 0.5);
  // The first brick's first component keeps its NaN.
  const int* e = &ranks[0].brickExtents[0];
  sparsegrid::codec::Layout layout;
  layout.dims = { { std::uint64_t(e[1] - e[0] + 1),
    std::uint64_t(e[3] - e[2] + 1),
    std::uint64_t(e[5] - e[4] + 1) } };
  std::vector<float> decoded(layout.dims[0] * layout.dims[1] * layout.dims[2]);
  ASSERT_TRUE(sparsegrid::codec::decode(
    ranks[0].bytes.data(), ranks[0].streamOffsets[1], decoded.data(), layout)
                .ok());
  EXPECT_TRUE(std::isnan(decoded[5]));
}

TEST(CompressPiece, EveryRankReportsTheSameBackendAndNote)
{
  // The backend and its note go into the step record every rank writes to a parallel file, so
  // they must agree even where the ranks' bricks ran differently. Here rank 1 codes nothing and
  // CUDA is asked for without strictBackend: where no GPU runs the codec, rank 0's bricks fall
  // back to the CPU with a note that rank 1 never sees on its own.
  std::vector<float> values = Samples(Whole);
  std::vector<PieceInput<float>> inputs(2);
  for (auto& input : inputs)
  {
    input.wholeExtent = Whole;
    input.arrays.push_back({ "v", nullptr, 1, 4 });
  }
  inputs[0].extent = Whole;
  inputs[0].arrays[0].values = values.data();
  std::vector<PieceSettings> settings(2, Settings());
  for (auto& s : settings)
  {
    s.execution.backend = sparsegrid::Backend::CUDA;
    s.execution.strictBackend = false;
  }
  std::vector<CompressedPiece> ranks;
  const auto statuses = RunRanks(inputs, settings, ranks);
  ASSERT_TRUE(statuses[0].ok() && statuses[1].ok()) << statuses[0].message();
  EXPECT_EQ(ranks[0].backendUsed, ranks[1].backendUsed);
  EXPECT_EQ(ranks[0].note, ranks[1].note);
  if (ranks[0].backendUsed == sparsegrid::Backend::CPU)
  {
    EXPECT_FALSE(ranks[1].note.empty()) << "the CPU ran although CUDA was asked for: say why";
  }
}

TEST(CompressPiece, DifferentArrayCountsFailOnEveryRank)
{
  // Rank 1 passes a second array: the per-array collectives would no longer match, so every
  // rank must fail at once, with the same message, instead of waiting for the others.
  std::vector<float> values = Samples(Whole);
  std::vector<PieceInput<float>> inputs(2);
  for (auto& input : inputs)
  {
    input.wholeExtent = Whole;
    input.arrays.push_back({ "v", nullptr, 1, 4 });
  }
  inputs[0].extent = Whole;
  inputs[0].arrays[0].values = values.data();
  inputs[1].arrays.push_back({ "w", nullptr, 1, 4 });
  std::vector<CompressedPiece> ranks;
  const auto statuses = RunRanks(inputs, std::vector<PieceSettings>(2, Settings()), ranks);
  for (const Status& st : statuses)
  {
    EXPECT_EQ(st.code(), sparsegrid::ErrorCode::InvalidArgument);
    EXPECT_NE(st.message().find("different numbers of arrays (1 to 2)"), std::string::npos)
      << st.message();
  }
}

TEST(CompressPiece, InvalidSettingsAreRefused)
{
  const std::vector<float> all = Samples(Whole);
  PieceInput<float> input;
  input.wholeExtent = input.extent = Whole;
  input.arrays.push_back({ "f", all.data(), 1 });
  sparsegrid::SingleRank single;
  CompressedPiece result;
  PieceSettings settings = Settings();
  settings.bound = std::numeric_limits<double>::infinity();
  EXPECT_EQ(sparsegrid::compressPiece(input, settings, single, result).code(),
    sparsegrid::ErrorCode::InvalidArgument);
  settings = Settings();
  settings.brickSize = 1;
  const Status status = sparsegrid::compressPiece(input, settings, single, result);
  EXPECT_EQ(status.code(), sparsegrid::ErrorCode::InvalidArgument);
  EXPECT_NE(status.message().find("brick size"), std::string::npos);
  settings = Settings();
  settings.boundMode = sparsegrid::BoundAbsolute;
  settings.bound = 1e-320; // the quantiser's value / bound overflows
  EXPECT_NE(
    sparsegrid::compressPiece(input, settings, single, result).message().find("larger bound"),
    std::string::npos);
}

TEST(CompressPiece, BricksSplitEvenly)
{
  EXPECT_EQ(
    sparsegrid::splitIntoBricks({ 0, 9, 0, 0, 0, 0 }, 128), std::vector<int>({ 0, 9, 0, 0, 0, 0 }));
  // 21 samples in bricks of at most 10: 3 parts of 7.
  EXPECT_EQ(sparsegrid::splitIntoBricks({ 5, 25, 0, 0, 0, 0 }, 10),
    std::vector<int>({ 5, 11, 0, 0, 0, 0, 12, 18, 0, 0, 0, 0, 19, 25, 0, 0, 0, 0 }));
  EXPECT_TRUE(sparsegrid::splitIntoBricks({ 0, -1, 0, 0, 0, 0 }, 10).empty());
}
} // namespace
