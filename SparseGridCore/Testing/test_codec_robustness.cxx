// Fuzz-style robustness of the codec's decoder: random byte corruptions, truncations and garbage
// must give an error status (or, where a corruption only changes coded values, a successful
// decode), never a crash, a hang or an out-of-bounds access (run it under ASan to see the latter).
// Header corruptions are always detected (the header carries a checksum). Streams with NaN/Inf
// voxels (a mask section in the header) are among the sources. The compact code-length table of
// version 4: damaged tables (with the header's hash recomputed) are refused; damaged chunk entries
// of version 5 are refused; streams stored by earlier versions (2 to 4) still decode to what they
// decoded to.
#include "../src/codec/CodecInternal.h"
#include "codec_stored_streams.h"

#include <sparsegrid/codec.h>

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace
{
namespace codec = sparsegrid::codec;
namespace cf = sparsegrid::codec::format;
using sparsegrid::ErrorCode;

template<typename T>
std::vector<std::uint8_t> validStream(const codec::Layout& layout,
  double bound,
  bool noisy,
  bool special = false)
{
  std::mt19937 rng(5);
  std::normal_distribution<double> noise(0.0, 1.0);
  const std::size_t n = layout.dims[0] * layout.dims[1] * layout.dims[2];
  std::vector<T> v(n);
  for (std::size_t i = 0; i < n; ++i)
  {
    v[i] = static_cast<T>(
      std::sin(0.05 * double(i)) * 10 + (noisy ? noise(rng) : 0.0) + (i % 97 == 0 ? 1e12 : 0.0));
    if (special && (i % 53 == 0 || i < layout.dims[0]))
    {
      v[i] = i % 2 ? std::numeric_limits<T>::quiet_NaN() : -std::numeric_limits<T>::infinity();
    }
  }
  std::vector<std::uint8_t> stream;
  EXPECT_TRUE(codec::encode(v.data(), layout, bound, stream).ok());
  return stream;
}

template<typename T>
void expectNoCrash(const std::vector<std::uint8_t>& bytes,
  const codec::Layout& layout,
  int lod,
  int& errors)
{
  const std::size_t n = layout.dims[0] * layout.dims[1] * layout.dims[2];
  std::vector<T> out(n);
  codec::StreamInfo info;
  const auto si = codec::inspect(bytes.data(), bytes.size(), info);
  const auto st = codec::decode(bytes.data(), bytes.size(), out.data(), layout, lod);
  if (!st.ok())
  {
    ++errors;
    EXPECT_EQ(st.code(), ErrorCode::InvalidArgument) << st.message();
    EXPECT_FALSE(st.message().empty());
  }
  (void)si;
}

struct Source
{
  codec::Layout layout;
  double bound;
  bool noisy;
  bool isDouble;
  bool special = false;
};

std::vector<Source> sources()
{
  std::vector<Source> s;
  codec::Layout a;
  a.dims = { 40, 30, 9 };
  s.push_back({ a, 1e-2, true, false });
  s.push_back({ a, 1e-4, true, true });
  codec::Layout b;
  b.dims = { 300, 1, 1 };
  s.push_back({ b, 1e-9, true, false }); // raw
  codec::Layout c;
  c.dims = { 17, 17, 17 };
  s.push_back({ c, 1e-1, false, false });
  s.push_back({ a, 1e-2, true, false, true });
  s.push_back({ c, 1e-1, false, true, true });
  return s;
}

TEST(CodecRobustness, RandomCorruptionsNeverCrash)
{
  std::mt19937 rng(11);
  int trials = 0, errors = 0;
  for (const Source& src : sources())
  {
    const auto stream = src.isDouble
      ? validStream<double>(src.layout, src.bound, src.noisy, src.special)
      : validStream<float>(src.layout, src.bound, src.noisy, src.special);
    codec::StreamInfo info;
    ASSERT_TRUE(codec::inspect(stream.data(), stream.size(), info).ok());
    EXPECT_EQ(info.maskBytes > 0, src.special); // the coded streams with NaN carry a mask
    for (int t = 0; t < 400; ++t)
    {
      auto bad = stream;
      const int flips = 1 + static_cast<int>(rng() % 8);
      for (int f = 0; f < flips; ++f)
      {
        bad[rng() % bad.size()] ^= static_cast<std::uint8_t>(1u << (rng() % 8));
      }
      if (src.isDouble)
      {
        expectNoCrash<double>(bad, src.layout, -1, errors);
      }
      else
      {
        expectNoCrash<float>(bad, src.layout, -1, errors);
      }
      ++trials;
    }
  }
  // Most corruptions are caught (checksummed header, strict chunk structure).
  EXPECT_GT(errors, trials / 4) << errors << " errors in " << trials << " trials";
}

TEST(CodecRobustness, HeaderCorruptionsAreAlwaysDetected)
{
  codec::Layout layout;
  layout.dims = { 33, 17, 5 };
  for (bool special : { false, true })
  {
    const auto stream = validStream<float>(layout, special ? 0.5 : 1e-3, true, special);
    codec::StreamInfo info;
    ASSERT_TRUE(codec::inspect(stream.data(), stream.size(), info).ok());
    EXPECT_EQ(info.maskBytes > 0, special);
    for (std::size_t byte = 0; byte < info.headerBytes; ++byte)
    {
      for (int bit = 0; bit < 8; ++bit)
      {
        auto bad = stream;
        bad[byte] ^= static_cast<std::uint8_t>(1u << bit);
        codec::StreamInfo i2;
        const auto st = codec::inspect(bad.data(), bad.size(), i2);
        ASSERT_FALSE(st.ok()) << "byte " << byte << " bit " << bit;
        EXPECT_EQ(st.code(), ErrorCode::InvalidArgument);
      }
    }
  }
}

TEST(CodecRobustness, EveryTruncationIsRefused)
{
  for (const Source& src : sources())
  {
    const auto stream = src.isDouble
      ? validStream<double>(src.layout, src.bound, src.noisy, src.special)
      : validStream<float>(src.layout, src.bound, src.noisy, src.special);
    const std::size_t n = src.layout.dims[0] * src.layout.dims[1] * src.layout.dims[2];
    std::vector<double> out(n);
    for (std::size_t len = 0; len < stream.size(); len += 1 + len / 50)
    {
      std::vector<std::uint8_t> cut(
        stream.begin(), stream.begin() + static_cast<std::ptrdiff_t>(len));
      const auto st = codec::decode(cut.data(), cut.size(), out.data(), src.layout);
      ASSERT_FALSE(st.ok()) << "length " << len << " of " << stream.size();
      EXPECT_EQ(st.code(), ErrorCode::InvalidArgument);
    }
  }
}

TEST(CodecRobustness, GarbageIsRefused)
{
  std::mt19937 rng(3);
  codec::Layout layout;
  layout.dims = { 8, 8, 8 };
  std::vector<float> out(512);
  for (int t = 0; t < 2000; ++t)
  {
    std::vector<std::uint8_t> junk(rng() % 600);
    for (auto& b : junk)
    {
      b = static_cast<std::uint8_t>(rng());
    }
    if (junk.size() >= 4 && t % 2 == 0)
    {
      junk[0] = 'S';
      junk[1] = 'G';
      junk[2] = 'C';
      junk[3] = 'Z';
    }
    EXPECT_FALSE(codec::decode(junk.data(), junk.size(), out.data(), layout).ok());
  }
  EXPECT_FALSE(codec::decode(nullptr, 100, out.data(), layout).ok());
}

/// Bits for a hand-made code-length table: each byte filled from its least significant bit,
/// fields most significant bit first (as docs/compression.md describes version 4's table).
struct Bits
{
  std::vector<std::uint8_t> bytes;
  std::size_t at = 0;
  Bits& put(std::uint32_t value, int count)
  {
    for (int b = count - 1; b >= 0; --b, ++at)
    {
      if (at / 8 >= bytes.size())
      {
        bytes.push_back(0);
      }
      bytes[at / 8] = static_cast<std::uint8_t>(bytes[at / 8] | (((value >> b) & 1u) << (at % 8)));
    }
    return *this;
  }
};

TEST(CodecRobustness, CompactTableRoundTrips)
{
  std::mt19937 rng(17);
  for (int t = 0; t < 300; ++t)
  {
    // Tables like the encoders' (slowly growing lengths, sparse tails), random ones, and rows of
    // one length up to 300 long (the reader takes a row of repeats from one window of bits).
    const std::size_t count = 1 + rng() % (t % 3 == 0 ? 70000 : 300);
    std::vector<std::uint8_t> lengths(std::min<std::size_t>(count, cf::Tokens));
    int l = 1 + static_cast<int>(rng() % 24);
    for (std::size_t i = 0; i < lengths.size(); ++i)
    {
      if (t % 5 == 1)
      {
        const std::size_t row = std::min<std::size_t>(1 + rng() % 300, lengths.size() - i);
        const int v = static_cast<int>(rng() % 25);
        std::fill_n(lengths.begin() + static_cast<std::ptrdiff_t>(i), row, std::uint8_t(v));
        i += row - 1;
      }
      else if (t % 2 == 0)
      {
        l = std::max(1, std::min(24, l + static_cast<int>(rng() % 3) - 1));
        lengths[i] = rng() % 4 == 0 ? 0 : static_cast<std::uint8_t>(l);
        if (i > 200 && rng() % 8 != 0)
        {
          lengths[i] = 0;
        }
      }
      else
      {
        lengths[i] = static_cast<std::uint8_t>(rng() % 25);
      }
    }
    lengths.back() = static_cast<std::uint8_t>(1 + rng() % 24);
    const std::uint64_t bits =
      cf::lengthTableSegmentBits(lengths.data(), 0, lengths.size(), 0, lengths.size());
    const std::size_t bytes = codec::detail::lengthTableBytes(lengths.data(), lengths.size());
    ASSERT_EQ(bytes, (bits + 7) / 8);
    std::vector<std::uint8_t> out(bytes + 8, 0xA5);
    ASSERT_EQ(codec::detail::writeLengthTable(lengths.data(), lengths.size(), out.data()), bytes);
    EXPECT_EQ(out[bytes], 0xA5) << "wrote past its size";
    // Split into segments as the GPU encoder splits the table (each given the last non-zero
    // length before it and the first non-zero entry after it, found by brute force here): the
    // sizes sum to the table's, and each segment's operations, written from the bit where the
    // segments before it end and ORed into cleared bytes (as the device writes a brick's
    // table), give the one-call writer's bytes.
    for (std::size_t segments : { 2, 7, 64, 256 })
    {
      const std::size_t n = lengths.size(), size = (n + segments - 1) / segments;
      std::uint64_t sum = 0;
      std::vector<std::uint8_t> pieced(bytes + 8, 0);
      for (std::size_t a = 0; a < n; a += size)
      {
        const std::size_t b = std::min(n, a + size);
        int prev = 0;
        for (std::size_t j = a; j-- > 0 && prev == 0;)
        {
          prev = lengths[j];
        }
        std::size_t next = b;
        while (next < n && lengths[next] == 0)
        {
          ++next;
        }
        struct OrSink
        {
          std::uint8_t* out;
          std::uint64_t byte;
          std::uint64_t pending = 0;
          std::uint32_t held = 0;
          void putReversed(std::uint32_t reversed, std::uint32_t count)
          {
            pending |= static_cast<std::uint64_t>(reversed) << held;
            for (held += count; held >= 8; held -= 8, pending >>= 8, ++byte)
            {
              out[byte] |= static_cast<std::uint8_t>(pending);
            }
          }
        } sink{ pieced.data(), sum / 8, 0, static_cast<std::uint32_t>(sum % 8) };
        cf::lengthTableSegmentOps(lengths.data(), a, b, prev, next, sink);
        if (sink.held > 0)
        {
          pieced[sink.byte] |= static_cast<std::uint8_t>(sink.pending);
        }
        sum += cf::lengthTableSegmentBits(lengths.data(), a, b, prev, next);
      }
      ASSERT_EQ(sum, bits) << segments << " segments of " << n << " lengths";
      ASSERT_TRUE(std::equal(out.begin(), out.begin() + bytes, pieced.begin()))
        << segments << " segments of " << n << " lengths: the pieced table differs";
    }
    codec::detail::LengthTableRead back;
    ASSERT_TRUE(codec::detail::readLengthTable(out.data(), bytes, lengths.size(), back))
      << back.why;
    EXPECT_EQ(back.bytes, bytes);
    ASSERT_EQ(back.lengths, lengths);
    if (bytes > 0)
    {
      EXPECT_FALSE(codec::detail::readLengthTable(out.data(), bytes - 1, lengths.size(), back));
      EXPECT_TRUE(back.truncated) << back.why;
    }
  }
}

TEST(CodecRobustness, DamagedCompactTablesAreRefused)
{
  codec::Layout layout;
  layout.dims = { 40, 30, 9 };
  const auto stream = validStream<float>(layout, 1e-2, true);
  codec::StreamInfo info;
  ASSERT_TRUE(codec::inspect(stream.data(), stream.size(), info).ok());
  ASSERT_EQ(info.version, codec::codecVersion);
  ASSERT_FALSE(info.raw);
  const std::size_t tablePos = cf::FixedHeaderBytes + cf::LevelEntryBytes * info.levels;
  const std::uint32_t count = cf::load<std::uint32_t>(stream.data() + tablePos);
  ASSERT_GT(count, 70u);
  const std::size_t tableEnd = info.headerBytes - 4; // the table, its padding (no mask section)
  std::vector<float> out(layout.dims[0] * layout.dims[1] * layout.dims[2]);
  auto expectRefused = [&](std::vector<std::uint8_t> bad, const std::string& what)
  {
    cf::store<std::uint32_t>(
      bad.data() + info.headerBytes - 4, cf::fnv1a(bad.data(), info.headerBytes - 4));
    codec::StreamInfo i2;
    const auto si = codec::inspect(bad.data(), bad.size(), i2);
    EXPECT_FALSE(si.ok()) << what;
    EXPECT_EQ(si.code(), ErrorCode::InvalidArgument) << what;
    const auto sd = codec::decode(bad.data(), bad.size(), out.data(), layout);
    EXPECT_FALSE(sd.ok()) << what;
    EXPECT_EQ(sd.code(), ErrorCode::InvalidArgument) << what;
  };
  auto withTable = [&](const Bits& b)
  {
    auto bad = stream;
    std::memcpy(bad.data() + tablePos + 4, b.bytes.data(), b.bytes.size());
    return bad;
  };
  expectRefused(withTable(Bits().put(0, 1).put(0, 8)), "a repeat before the first length");
  expectRefused(withTable(Bits().put(7, 3).put(25, 5)), "a literal length of 25");
  expectRefused(withTable(Bits().put(7, 3).put(0, 5)), "a literal length of 0");
  expectRefused(withTable(Bits().put(5, 3)), "a step below 1");
  expectRefused(withTable(Bits().put(7, 3).put(24, 5).put(4, 3)), "a step above 24");
  expectRefused(withTable(Bits().put(7, 3).put(1, 5)), "a literal that a step codes");
  // A zero run longer than the table: Exp-Golomb (order 2) of count, after the first length.
  {
    Bits b;
    b.put(7, 3).put(5, 5).put(6, 3);
    const std::uint64_t m = std::uint64_t(count) + 4;
    int width = 0;
    while ((m >> width) != 0)
    {
      ++width;
    }
    b.put(0, width - 3).put(static_cast<std::uint32_t>(m), width);
    expectRefused(withTable(b), "a zero run past the end");
  }
  expectRefused(withTable(Bits().put(6, 3).put(0, 24).put(0, 8)), "an overlong zero run");
  expectRefused(withTable(Bits().put(6, 3).put(4, 3).put(6, 3).put(4, 3)), "two zero runs");
  {
    auto bad = stream;
    cf::store<std::uint32_t>(bad.data() + tablePos, cf::Tokens);
    expectRefused(bad, "more lengths than the table holds");
  }
  {
    // The unused bits of the table's last byte must be zero.
    std::vector<std::uint8_t> lengths;
    std::size_t n = 0;
    codec::StreamInfo parsed;
    ASSERT_TRUE(
      codec::detail::parseHeader(stream.data(), stream.size(), parsed, &lengths, &n).ok());
    const std::uint64_t bits = cf::lengthTableSegmentBits(lengths.data(), 0, n, 0, n);
    ASSERT_NE(bits % 8, 0u) << "the table ends on a byte boundary: no padding bit to set";
    auto bad = stream;
    bad[tablePos + 4 + bits / 8] =
      static_cast<std::uint8_t>(bad[tablePos + 4 + bits / 8] | (1u << (bits % 8)));
    expectRefused(bad, "a padding bit set");
  }
  // Random flips inside the table with the hash recomputed: refused or decoded, never a crash.
  std::mt19937 rng(23);
  int errors = 0;
  for (int t = 0; t < 300; ++t)
  {
    auto bad = stream;
    const int flips = 1 + static_cast<int>(rng() % 3);
    for (int f = 0; f < flips; ++f)
    {
      bad[tablePos + 4 + rng() % (tableEnd - tablePos - 4)] ^=
        static_cast<std::uint8_t>(1u << (rng() % 8));
    }
    cf::store<std::uint32_t>(
      bad.data() + info.headerBytes - 4, cf::fnv1a(bad.data(), info.headerBytes - 4));
    expectNoCrash<float>(bad, layout, -1, errors);
  }
  EXPECT_GT(errors, 150);
}

// Version 5 keeps each chunk's bytes, escapes and mask flag in its size-table entry, outside the
// header's hash: entries that contradict their chunk or section are refused, and random entries
// are refused or decoded, never a crash.
TEST(CodecRobustness, DamagedChunkEntriesAreRefused)
{
  codec::Layout layout;
  layout.dims = { 40, 30, 9 };
  const auto stream = validStream<float>(layout, 1e-2, true);
  codec::StreamInfo info;
  ASSERT_TRUE(codec::inspect(stream.data(), stream.size(), info).ok());
  ASSERT_EQ(info.version, 5u);
  ASSERT_FALSE(info.raw);
  codec::detail::CodingPlan cp;
  codec::detail::makeDecodePlan(info, cp);
  std::vector<std::size_t> entryAt;
  std::size_t escapes = 0, masked = 0;
  for (int k = 0; k < cp.plan.levels; ++k)
  {
    const std::size_t table = k == 0 ? info.headerBytes : info.levelEnd[k - 1];
    for (std::uint64_t c = 0; c < cp.plan.levelChunks[k]; ++c)
    {
      const std::uint32_t e = cf::load<std::uint32_t>(stream.data() + table + 4 * c);
      if (e != 0)
      {
        entryAt.push_back(table + 4 * c);
        escapes += (e >> cf::EntryEscapeShift) & cf::EntryEscapeMask;
        masked += (e & cf::EntryMaskFlag) ? 1 : 0;
      }
    }
  }
  ASSERT_FALSE(entryAt.empty());
  EXPECT_GT(escapes, 0u) << "the field's spikes escape";
  std::vector<float> out(layout.dims[0] * layout.dims[1] * layout.dims[2]);
  ASSERT_TRUE(codec::decode(stream.data(), stream.size(), out.data(), layout).ok());
  const std::size_t at = entryAt.back();
  const std::uint32_t entry = cf::load<std::uint32_t>(stream.data() + at);
  auto expectRefused = [&](std::uint32_t bad, const std::string& what)
  {
    auto s = stream;
    cf::store<std::uint32_t>(s.data() + at, bad);
    const auto st = codec::decode(s.data(), s.size(), out.data(), layout);
    EXPECT_FALSE(st.ok()) << what;
    EXPECT_EQ(st.code(), ErrorCode::InvalidArgument) << what;
  };
  expectRefused(entry | (1u << 29), "a reserved bit set");
  expectRefused(entry & ~cf::EntryWordsMask, "escapes or a mask flag without bytes");
  expectRefused((entry & ~(cf::EntryEscapeMask << cf::EntryEscapeShift)) |
      (cf::EntryEscapeMask << cf::EntryEscapeShift),
    "more escapes than codes");
  expectRefused(entry + 1, "a chunk one word longer than its section holds");
  expectRefused(1u | cf::EntryMaskFlag, "a mask flag on a chunk of one word");
  std::mt19937 rng(29);
  int errors = 0;
  for (int t = 0; t < 300; ++t)
  {
    auto bad = stream;
    const std::size_t where = entryAt[rng() % entryAt.size()];
    const std::uint32_t old = cf::load<std::uint32_t>(bad.data() + where);
    const std::uint32_t flip = t % 2 ? cf::EntryMaskFlag : (1u << (rng() % 32));
    cf::store<std::uint32_t>(bad.data() + where, old ^ flip);
    expectNoCrash<float>(bad, layout, -1, errors);
  }
  EXPECT_GT(errors, 150);
}

// A reader that has only the stream's first bytes (a device stream, a file) reads the header in
// at most three steps: the fixed part, then the level table and the table's count, then as many
// bytes as "needs at least N bytes" says.
TEST(CodecRobustness, HeaderReadsInThreeSteps)
{
  codec::Layout layout;
  layout.dims = { 40, 30, 9 };
  for (bool special : { false, true })
  {
    const auto stream = validStream<float>(layout, 1e-3, true, special);
    std::size_t need = cf::FixedHeaderBytes;
    codec::StreamInfo info;
    bool ok = false;
    for (int attempt = 0; attempt < 3 && !ok; ++attempt)
    {
      const auto st = codec::inspect(stream.data(), std::min(need, stream.size()), info);
      ok = st.ok();
      const std::size_t at = st.message().rfind("at least ");
      if (!ok)
      {
        ASSERT_NE(at, std::string::npos) << st.message();
        const std::size_t next = std::stoull(st.message().substr(at + 9));
        ASSERT_GT(next, need) << st.message();
        need = next;
      }
    }
    EXPECT_TRUE(ok);
    EXPECT_EQ(info.maskBytes > 0, special);
    EXPECT_LE(info.headerBytes, need);
  }
}

TEST(CodecRobustness, HeadersOfOtherDimsParseAsInAFreshThread)
{
  // A thread keeps the plan of the dims and scheme it parsed last: streams of other dims and axis
  // orders (one with a mask section), parsed in turn into the same objects (as the GPU's brick
  // decoder may), read as each one does alone into new ones in a thread of its own.
  std::vector<std::vector<std::uint8_t>> streams;
  for (const auto& dims : { std::array<std::uint64_t, 3>{ { 40, 30, 9 } },
         std::array<std::uint64_t, 3>{ { 9, 30, 40 } },
         std::array<std::uint64_t, 3>{ { 33, 17, 65 } } })
  {
    codec::Layout layout;
    layout.dims = dims;
    streams.push_back(validStream<float>(layout, 1e-3, false, streams.size() == 2));
  }
  std::vector<codec::detail::ParsedStream> alone(streams.size());
  for (std::size_t k = 0; k < streams.size(); ++k)
  {
    std::thread(
      [&]
      {
        codec::detail::ParsedStream& a = alone[k];
        EXPECT_TRUE(codec::detail::parseHeader(
          streams[k].data(), streams[k].size(), a.info, &a.lengths, &a.tableCount)
                      .ok());
      })
      .join();
  }
  EXPECT_NE(alone[0].info.axisOrder, alone[1].info.axisOrder);
  EXPECT_GT(alone[2].info.specialVoxels, 0u);
  codec::detail::ParsedStream in;
  for (const std::size_t k : { 0, 1, 0, 2, 1, 2, 2, 0 })
  {
    ASSERT_TRUE(codec::detail::parseHeader(
      streams[k].data(), streams[k].size(), in.info, &in.lengths, &in.tableCount)
                  .ok())
      << k;
    const codec::StreamInfo& a = alone[k].info;
    EXPECT_EQ(in.info.dims, a.dims);
    EXPECT_EQ(in.info.axisOrder, a.axisOrder);
    EXPECT_EQ(in.info.levels, a.levels);
    EXPECT_EQ(in.info.chunks, a.chunks) << k;
    EXPECT_EQ(in.info.levelEnd, a.levelEnd) << k;
    EXPECT_EQ(in.info.headerBytes, a.headerBytes) << k;
    EXPECT_EQ(in.info.specialVoxels, a.specialVoxels) << k;
    EXPECT_EQ(in.tableCount, alone[k].tableCount) << k;
    EXPECT_EQ(in.lengths, alone[k].lengths) << k;
  }
}

template<typename F>
void forStoredField(F&& visit)
{
  for (std::uint64_t z = 0; z < 9; ++z)
  {
    for (std::uint64_t y = 0; y < 13; ++y)
    {
      for (std::uint64_t x = 0; x < 17; ++x)
      {
        const double v = std::sin(0.4 * double(x)) + std::cos(0.3 * double(y)) * 0.5 +
          0.2 * double(z) + 0.05 * double(x) * double(y);
        visit(x + 17 * (y + 13 * z), static_cast<float>(v), x, y, z);
      }
    }
  }
}

TEST(CodecStoredStreams, EarlierVersionsStillDecode)
{
  codec::Layout layout;
  layout.dims = { 17, 13, 9 };
  const double bound = 0.05;
  std::vector<float> field(17 * 13 * 9);
  forStoredField(
    [&](std::uint64_t i, float v, std::uint64_t, std::uint64_t, std::uint64_t) { field[i] = v; });
  struct Stored
  {
    const std::uint8_t* data;
    std::size_t size;
    std::uint32_t version, hash;
  };
  for (const Stored& s : { Stored{ storedstreams::StoredV2,
                             sizeof(storedstreams::StoredV2),
                             2,
                             storedstreams::StoredV2DecodedHash },
         Stored{ storedstreams::StoredV3,
           sizeof(storedstreams::StoredV3),
           3,
           storedstreams::StoredV3DecodedHash },
         Stored{ storedstreams::StoredV4,
           sizeof(storedstreams::StoredV4),
           4,
           storedstreams::StoredV4DecodedHash } })
  {
    codec::StreamInfo info;
    ASSERT_TRUE(codec::inspect(s.data, s.size, info).ok());
    EXPECT_EQ(info.version, s.version);
    EXPECT_FALSE(info.raw);
    EXPECT_EQ(info.maskBytes > 0, s.version == 3);
    std::vector<float> out(field.size());
    const auto st = codec::decode(s.data, s.size, out.data(), layout);
    ASSERT_TRUE(st.ok()) << st.message();
    EXPECT_EQ(cf::fnv1a(reinterpret_cast<const std::uint8_t*>(out.data()), out.size() * 4), s.hash)
      << "version " << s.version << " decodes to other values than when it was written";
    forStoredField(
      [&](std::uint64_t i, float v, std::uint64_t x, std::uint64_t y, std::uint64_t z)
      {
        const bool nan =
          s.version == 3 && ((x == 4 && y == 3 && z == 2) || (y == 0 && z == 0 && x < 3));
        const bool inf = s.version == 3 && x == 11 && y == 8 && z == 4;
        if (nan)
        {
          EXPECT_TRUE(std::isnan(out[i])) << i;
        }
        else if (inf)
        {
          EXPECT_EQ(out[i], std::numeric_limits<float>::infinity()) << i;
        }
        else
        {
          EXPECT_LE(std::fabs(double(out[i]) - double(v)), bound * (1 + 1e-9) + 1e-6) << i;
        }
      });
  }
  // Today's encoder writes the current version of the same field: smaller than the stored
  // versions (version 5: chunk heads in the size table), and (same scheme, same quantisation)
  // the same values as the stored version 2.
  std::vector<std::uint8_t> now;
  ASSERT_TRUE(codec::encode(field.data(), layout, bound, now).ok());
  codec::StreamInfo info;
  ASSERT_TRUE(codec::inspect(now.data(), now.size(), info).ok());
  EXPECT_EQ(info.version, codec::codecVersion);
  EXPECT_LT(now.size(), sizeof(storedstreams::StoredV4));
  EXPECT_LT(sizeof(storedstreams::StoredV4), sizeof(storedstreams::StoredV2));
  std::vector<float> out(field.size());
  ASSERT_TRUE(codec::decode(now.data(), now.size(), out.data(), layout).ok());
  EXPECT_EQ(cf::fnv1a(reinterpret_cast<const std::uint8_t*>(out.data()), out.size() * 4),
    storedstreams::StoredV2DecodedHash);
}

} // namespace
