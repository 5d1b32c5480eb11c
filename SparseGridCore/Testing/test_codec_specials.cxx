// Special voxels (NaN with its payload, +Inf, -Inf, a fill value): bit-exact round trips at every
// level of detail and the bound on every other voxel (checked in long double against the input,
// independently of the codec), for scattered specials, a solid block, a border, all voxels but
// one, all voxels; float and double; 1-D, 2-D, 3-D and odd sizes; strided components; raw
// storage; what the mask costs; damaged mask sections.
#include "../src/codec/CodecFormat.h"

#include <sparsegrid/codec.h>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <iostream>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace
{
namespace codec = sparsegrid::codec;
namespace cf = sparsegrid::codec::format;
using sparsegrid::ErrorCode;
using Dims = std::array<std::uint64_t, 3>;

enum class Layout
{
  Scattered,
  Block,
  Border,
  AllButOne,
  All
};

const char* name(Layout l)
{
  switch (l)
  {
    case Layout::Scattered:
      return "scattered";
    case Layout::Block:
      return "block";
    case Layout::Border:
      return "border";
    case Layout::AllButOne:
      return "all but one";
    case Layout::All:
      return "all";
  }
  return "?";
}

constexpr double Fill = -9999.0;

/// A NaN with a payload (float or double).
template<typename T>
T nanWithPayload(std::uint32_t payload)
{
  if (sizeof(T) == 4)
  {
    const std::uint32_t bits = 0x7fc00000u | (payload & 0x3fffffu);
    float f;
    std::memcpy(&f, &bits, 4);
    return static_cast<T>(f);
  }
  const std::uint64_t bits = 0x7ff8000000000000ull | payload;
  double d;
  std::memcpy(&d, &bits, 8);
  return static_cast<T>(d);
}

template<typename T>
bool sameBits(T a, T b)
{
  return std::memcmp(&a, &b, sizeof(T)) == 0;
}

template<typename T>
std::vector<T> smooth(const Dims& d)
{
  std::vector<T> v(d[0] * d[1] * d[2]);
  for (std::uint64_t k = 0; k < d[2]; ++k)
    for (std::uint64_t j = 0; j < d[1]; ++j)
      for (std::uint64_t i = 0; i < d[0]; ++i)
      {
        const double x = double(i) / 9.0, y = double(j) / 7.0, z = double(k) / 5.0;
        v[i + d[0] * (j + d[1] * k)] =
          static_cast<T>(40.0 * std::sin(x) * std::cos(0.7 * y) + 3.0 * std::exp(-0.1 * z));
      }
  return v;
}

/// The special value of voxel i in a layout: NaNs with two payloads, +Inf, -Inf and the fill
/// value, mixed (scattered) or one kind per layout.
template<typename T>
T specialOf(Layout l, std::uint64_t i)
{
  const T kinds[5] = { nanWithPayload<T>(1),
    nanWithPayload<T>(77),
    std::numeric_limits<T>::infinity(),
    -std::numeric_limits<T>::infinity(),
    static_cast<T>(Fill) };
  if (l == Layout::Scattered || l == Layout::AllButOne)
  {
    return kinds[(i * 7) % 5];
  }
  return l == Layout::Block ? kinds[4] : kinds[0];
}

template<typename T>
void applyLayout(std::vector<T>& v, const Dims& d, Layout l, std::mt19937_64& rng)
{
  const std::uint64_t n = v.size();
  for (std::uint64_t k = 0; k < d[2]; ++k)
    for (std::uint64_t j = 0; j < d[1]; ++j)
      for (std::uint64_t i = 0; i < d[0]; ++i)
      {
        const std::uint64_t at = i + d[0] * (j + d[1] * k);
        bool special = false;
        switch (l)
        {
          case Layout::Scattered:
            special = rng() % 20 == 0;
            break;
          case Layout::Block:
            special =
              i >= d[0] / 4 && i < d[0] / 2 + 1 && j >= d[1] / 3 && j <= d[1] / 2 && k <= d[2] / 2;
            break;
          case Layout::Border:
            special = i == 0 || i + 1 == d[0] || (d[1] > 1 && (j == 0 || j + 1 == d[1])) ||
              (d[2] > 1 && (k == 0 || k + 1 == d[2]));
            break;
          case Layout::AllButOne:
            special = at != n / 3;
            break;
          case Layout::All:
            special = true;
            break;
        }
        if (special)
        {
          v[at] = specialOf<T>(l, at);
        }
      }
}

template<typename T>
bool isSpecial(T v)
{
  return !std::isfinite(v) || v == static_cast<T>(Fill);
}

/// Encodes with the fill value, then decodes every level prefix from exactly its bytes: special
/// voxels bit for bit, the others within the level's bound.
template<typename T>
void roundTrip(const std::vector<T>& input, const Dims& d, double bound, const std::string& what)
{
  codec::Layout layout;
  layout.dims = d;
  codec::SpecialValues specials;
  specials.useFillValue = true;
  specials.fillValue = Fill;
  std::vector<std::uint8_t> stream;
  codec::EncodeStatistics stats;
  const auto st =
    codec::encode(input.data(), layout, { bound, specials }, stream, {}, nullptr, &stats);
  ASSERT_TRUE(st.ok()) << what << ": " << st.message();
  std::uint64_t expected = 0;
  for (T v : input)
  {
    expected += isSpecial(v) ? 1 : 0;
  }
  EXPECT_EQ(stats.specialVoxels, expected) << what;
  codec::StreamInfo info;
  ASSERT_TRUE(codec::inspect(stream.data(), stream.size(), info).ok()) << what;
  // Coded streams are version 4 (a mask section where special voxels exist); raw ones 3 or 2.
  EXPECT_EQ(info.version,
    !info.raw    ? codec::codecVersion
      : expected ? codec::maskedCodecVersion
                 : 2u)
    << what;
  EXPECT_EQ(info.maskBytes > 0, !info.raw && expected > 0) << what;
  EXPECT_EQ(info.specialVoxels, stats.raw ? 0 : expected) << what;
  for (int level = 0; level < info.levels; ++level)
  {
    const std::size_t bytes = info.raw ? stream.size() : info.levelEnd[level];
    std::vector<T> out(input.size(), T(12345));
    const auto ds = codec::decode(stream.data(), bytes, out.data(), layout, level);
    ASSERT_TRUE(ds.ok()) << what << " level " << level << ": " << ds.message();
    const long double levelBound = info.raw ? 0.0L : info.levelBound[level];
    for (std::size_t i = 0; i < input.size(); ++i)
    {
      if (isSpecial(input[i]))
      {
        ASSERT_TRUE(sameBits(out[i], input[i]))
          << what << " level " << level << " voxel " << i << ": " << out[i] << " vs " << input[i];
        continue;
      }
      const long double e = std::fabs(static_cast<long double>(out[i]) - input[i]);
      ASSERT_LE(e, levelBound) << what << " level " << level << " voxel " << i;
    }
  }
}

template<typename T>
void everyLayout(const Dims& d, double bound)
{
  for (Layout l :
    { Layout::Scattered, Layout::Block, Layout::Border, Layout::AllButOne, Layout::All })
  {
    std::mt19937_64 rng(11);
    auto v = smooth<T>(d);
    applyLayout(v, d, l, rng);
    roundTrip(v,
      d,
      bound,
      std::string(sizeof(T) == 4 ? "float " : "double ") + name(l) + " " + std::to_string(d[0]) +
        "x" + std::to_string(d[1]) + "x" + std::to_string(d[2]));
  }
}

TEST(CodecSpecials, BitExactAtEveryLevelAndTheBoundElsewhere)
{
  for (const Dims& d : { Dims{ 37, 1, 1 },
         Dims{ 1, 1, 29 },
         Dims{ 33, 20, 1 },
         Dims{ 17, 9, 5 },
         Dims{ 30, 21, 13 },
         Dims{ 2, 1, 1 },
         Dims{ 1, 1, 1 } })
  {
    everyLayout<float>(d, 1e-2);
    everyLayout<double>(d, 1e-3);
  }
  everyLayout<float>(Dims{ 30, 21, 13 }, 1e-6); // near float resolution: escapes, raw storage
}

TEST(CodecSpecials, StreamsWithoutSpecialsAreUnchanged)
{
  const Dims d{ 30, 21, 13 };
  const auto v = smooth<float>(d);
  codec::Layout layout;
  layout.dims = d;
  codec::SpecialValues specials;
  specials.useFillValue = true;
  specials.fillValue = Fill; // no voxel holds it
  std::vector<std::uint8_t> plain, withFill;
  ASSERT_TRUE(codec::encode(v.data(), layout, 1e-3, plain).ok());
  ASSERT_TRUE(codec::encode(v.data(), layout, { 1e-3, specials }, withFill).ok());
  EXPECT_EQ(plain, withFill);
  EXPECT_EQ(cf::load<std::uint16_t>(plain.data() + 4), codec::codecVersion);
  EXPECT_EQ(plain[7], 0); // no mask section
  // Without the option, a voxel equal to the fill value is an ordinary voxel.
  auto w = v;
  w[100] = static_cast<float>(Fill);
  std::vector<std::uint8_t> ordinary;
  ASSERT_TRUE(codec::encode(w.data(), layout, 1e-3, ordinary).ok());
  EXPECT_EQ(cf::load<std::uint16_t>(ordinary.data() + 4), codec::codecVersion);
  EXPECT_EQ(ordinary[7], 0);
}

// Component 1 of three interleaved ones, with NaNs; the other components are left alone, and a
// double stream decoded into float keeps NaN, the Inf signs and the fill value.
TEST(CodecSpecials, StridedComponentsAndCrossPrecision)
{
  const Dims d{ 19, 11, 7 };
  const std::size_t n = d[0] * d[1] * d[2];
  std::mt19937_64 rng(5);
  auto c1 = smooth<double>(d);
  applyLayout(c1, d, Layout::Scattered, rng);
  std::vector<double> aos(3 * n, 7.0);
  for (std::size_t i = 0; i < n; ++i)
  {
    aos[3 * i + 1] = c1[i];
  }
  codec::Layout layout;
  layout.dims = d;
  layout.stride = 3;
  codec::SpecialValues specials;
  specials.useFillValue = true;
  specials.fillValue = Fill;
  std::vector<std::uint8_t> strided, packed;
  ASSERT_TRUE(codec::encode(aos.data() + 1, layout, { 1e-3, specials }, strided).ok());
  codec::Layout plain = layout;
  plain.stride = 1;
  ASSERT_TRUE(codec::encode(c1.data(), plain, { 1e-3, specials }, packed).ok());
  EXPECT_EQ(strided, packed);
  std::vector<double> out(3 * n, -1.0);
  ASSERT_TRUE(codec::decode(strided.data(), strided.size(), out.data() + 1, layout).ok());
  std::vector<float> asFloat(n);
  ASSERT_TRUE(codec::decode(strided.data(), strided.size(), asFloat.data(), plain).ok());
  for (std::size_t i = 0; i < n; ++i)
  {
    ASSERT_EQ(out[3 * i], -1.0);
    ASSERT_EQ(out[3 * i + 2], -1.0);
    if (isSpecial(c1[i]))
    {
      ASSERT_TRUE(sameBits(out[3 * i + 1], c1[i])) << i;
      ASSERT_EQ(std::isnan(asFloat[i]), std::isnan(c1[i])) << i;
      if (!std::isnan(c1[i]))
      {
        ASSERT_EQ(asFloat[i], static_cast<float>(c1[i])) << i;
      }
    }
    else
    {
      ASSERT_LE(std::fabs(static_cast<long double>(out[3 * i + 1]) - c1[i]), 1e-3L) << i;
    }
  }
}

TEST(CodecSpecials, NoiseAtATightBoundIsStoredRawWithItsSpecials)
{
  const Dims d{ 40, 30, 10 };
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(d[0] * d[1] * d[2]);
  for (float& x : v)
  {
    x = u(rng);
  }
  v[17] = nanWithPayload<float>(5);
  v[999] = -std::numeric_limits<float>::infinity();
  codec::Layout layout;
  layout.dims = d;
  std::vector<std::uint8_t> stream;
  codec::EncodeStatistics stats;
  ASSERT_TRUE(codec::encode(v.data(), layout, 1e-7, stream, {}, nullptr, &stats).ok());
  EXPECT_TRUE(stats.raw);
  EXPECT_EQ(stats.specialVoxels, 2u);
  codec::StreamInfo info;
  ASSERT_TRUE(codec::inspect(stream.data(), stream.size(), info).ok());
  EXPECT_EQ(info.version, codec::maskedCodecVersion);
  EXPECT_TRUE(info.raw);
  std::vector<float> out(v.size());
  ASSERT_TRUE(codec::decode(stream.data(), stream.size(), out.data(), layout).ok());
  for (std::size_t i = 0; i < v.size(); ++i)
  {
    ASSERT_TRUE(sameBits(out[i], v[i])) << i;
  }
}

TEST(CodecSpecials, ValueRangeSkipsSpecialVoxels)
{
  std::vector<float> v{ 3.0f, NAN, -2.0f, INFINITY, static_cast<float>(Fill), 8.5f };
  codec::Layout layout;
  layout.dims = { v.size(), 1, 1 };
  codec::SpecialValues specials;
  specials.useFillValue = true;
  specials.fillValue = Fill;
  codec::ValueRange range;
  ASSERT_TRUE(codec::valueRange(v.data(), layout, range, specials).ok());
  EXPECT_EQ(range.min, -2.0);
  EXPECT_EQ(range.max, 8.5);
  EXPECT_EQ(range.specialVoxels, 3u);
  std::vector<float> all{ NAN, NAN };
  layout.dims = { 2, 1, 1 };
  ASSERT_TRUE(codec::valueRange(all.data(), layout, range, specials).ok());
  EXPECT_EQ(range.specialVoxels, 2u);
  EXPECT_GT(range.min, range.max); // empty range
}

/// Bytes of the mask section and of the stream of a 64^3 float field with these specials.
struct MaskCost
{
  std::uint64_t maskBytes = 0, streamBytes = 0, plainBytes = 0;
};

template<typename F>
MaskCost maskCost(F&& special)
{
  const Dims d{ 64, 64, 64 };
  std::vector<float> v(d[0] * d[1] * d[2]);
  std::mt19937_64 rng(9);
  std::normal_distribution<double> noise(0.0, 0.05);
  for (std::uint64_t k = 0; k < d[2]; ++k)
    for (std::uint64_t j = 0; j < d[1]; ++j)
      for (std::uint64_t i = 0; i < d[0]; ++i)
      {
        v[i + 64 * (j + 64 * k)] = static_cast<float>(
          std::sin(i / 6.0) * std::cos(j / 9.0) + 0.3 * std::sin(k / 4.0) + noise(rng));
      }
  codec::Layout layout;
  layout.dims = d;
  MaskCost cost;
  std::vector<std::uint8_t> stream;
  codec::EncodeStatistics stats;
  EXPECT_TRUE(codec::encode(v.data(), layout, 1e-2, stream, {}, nullptr, &stats).ok());
  cost.plainBytes = stream.size();
  for (std::uint64_t k = 0; k < d[2]; ++k)
    for (std::uint64_t j = 0; j < d[1]; ++j)
      for (std::uint64_t i = 0; i < d[0]; ++i)
      {
        if (special(i, j, k))
        {
          v[i + 64 * (j + 64 * k)] = std::numeric_limits<float>::quiet_NaN();
        }
      }
  EXPECT_TRUE(codec::encode(v.data(), layout, 1e-2, stream, {}, nullptr, &stats).ok());
  EXPECT_FALSE(stats.raw);
  cost.maskBytes = stats.maskBytes;
  cost.streamBytes = stream.size();
  return cost;
}

TEST(CodecSpecials, SimpleMasksCostLittle)
{
  const MaskCost border = maskCost([](std::uint64_t i, std::uint64_t j, std::uint64_t k)
    { return i == 0 || i == 63 || j == 0 || j == 63 || k == 0 || k == 63; });
  const MaskCost block = maskCost([](std::uint64_t i, std::uint64_t j, std::uint64_t k)
    { return i >= 10 && i < 30 && j >= 20 && j < 50 && k >= 5 && k < 40; });
  // A land mask: a disc in every xy plane (the same for every depth).
  const MaskCost land = maskCost(
    [](std::uint64_t i, std::uint64_t j, std::uint64_t)
    {
      const double x = double(i) - 20.0, y = double(j) - 35.0;
      return x * x + y * y < 300.0;
    });
  for (const auto& c : { std::make_pair("border", border),
         std::make_pair("block", block),
         std::make_pair("land", land) })
  {
    std::cout << c.first << ": mask " << c.second.maskBytes << " bytes, stream "
              << c.second.streamBytes << " bytes (" << c.second.plainBytes
              << " without special voxels)\n";
  }
  EXPECT_LT(border.maskBytes * 100, border.streamBytes);
  EXPECT_LT(block.maskBytes * 100, block.streamBytes);
  EXPECT_LT(land.maskBytes * 20, land.streamBytes);
}

/// The stream of a small field with special voxels, and where its mask section lies.
std::vector<std::uint8_t> maskedStream(std::size_t& maskBegin, std::size_t& maskEnd)
{
  const Dims d{ 41, 33, 12 };
  std::mt19937_64 rng(2);
  auto v = smooth<float>(d);
  applyLayout(v, d, Layout::Scattered, rng);
  codec::Layout layout;
  layout.dims = d;
  codec::SpecialValues specials;
  specials.useFillValue = true;
  specials.fillValue = Fill;
  std::vector<std::uint8_t> stream;
  EXPECT_TRUE(codec::encode(v.data(), layout, { 1e-1, specials }, stream).ok());
  codec::StreamInfo info;
  EXPECT_TRUE(codec::inspect(stream.data(), stream.size(), info).ok());
  EXPECT_GT(info.maskBytes, 0u);
  maskEnd = static_cast<std::size_t>(info.headerBytes - 4);
  maskBegin = maskEnd - static_cast<std::size_t>(info.maskBytes);
  return stream;
}

void rehash(std::vector<std::uint8_t>& s, std::size_t headerBytes)
{
  cf::store<std::uint32_t>(s.data() + headerBytes - 4, cf::fnv1a(s.data(), headerBytes - 4));
}

// Damage inside the mask section, with the header's checksum made to match (so that the
// section's own checks are what refuses it): InvalidArgument or a valid decode, never a crash;
// each of the structural damages below is refused.
TEST(CodecSpecials, DamagedMaskSectionsAreRefused)
{
  std::size_t begin = 0, end = 0;
  const auto good = maskedStream(begin, end);
  const Dims d{ 41, 33, 12 };
  codec::Layout layout;
  layout.dims = d;
  std::vector<float> out(d[0] * d[1] * d[2]);
  auto expectRefused = [&](std::vector<std::uint8_t> s, const char* what)
  {
    rehash(s, end + 4);
    const auto st = codec::decode(s.data(), s.size(), out.data(), layout);
    EXPECT_EQ(st.code(), ErrorCode::InvalidArgument) << what << ": " << st.message();
    codec::StreamInfo info;
    EXPECT_EQ(codec::inspect(s.data(), s.size(), info).code(), ErrorCode::InvalidArgument) << what;
  };
  auto s = good;
  cf::store<std::uint64_t>(s.data() + begin, cf::load<std::uint64_t>(s.data() + begin) + 1);
  expectRefused(s, "special count + 1");
  s = good;
  cf::store<std::uint32_t>(s.data() + begin + 8, 0);
  expectRefused(s, "empty palette");
  s = good;
  cf::store<std::uint32_t>(
    s.data() + begin + 12, cf::load<std::uint32_t>(s.data() + begin + 12) + 9);
  expectRefused(s, "program longer than the section");
  s = good;
  const std::size_t program = begin + 16 + 4 * cf::load<std::uint32_t>(s.data() + begin + 8);
  s[program] = 0xff;
  expectRefused(s, "first plane repeat damaged");
  s = good;
  s[program] = 0;
  expectRefused(s, "plane repeat 0");
  // Truncated inside the mask section: a clear error.
  const auto st = codec::decode(good.data(), begin + 5, out.data(), layout);
  EXPECT_EQ(st.code(), ErrorCode::InvalidArgument) << st.message();
  // Random damage of the section's bytes, rehashed: refused or decoded, never a crash.
  std::mt19937_64 rng(17);
  int refused = 0;
  for (int trial = 0; trial < 2000; ++trial)
  {
    s = good;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int f = 0; f < flips; ++f)
    {
      s[begin + rng() % (end - begin)] ^= static_cast<std::uint8_t>(1u << (rng() % 8));
    }
    rehash(s, end + 4);
    const auto ds = codec::decode(s.data(), s.size(), out.data(), layout);
    if (!ds.ok())
    {
      EXPECT_EQ(ds.code(), ErrorCode::InvalidArgument) << ds.message();
      ++refused;
    }
  }
  EXPECT_GT(refused, 1000);
  // Without rehashing, any change of the section fails the header checksum.
  s = good;
  s[begin + 3] ^= 1;
  EXPECT_EQ(
    codec::decode(s.data(), s.size(), out.data(), layout).code(), ErrorCode::InvalidArgument);
}

} // namespace
