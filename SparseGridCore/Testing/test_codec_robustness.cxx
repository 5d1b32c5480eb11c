// Fuzz-style robustness of the codec's decoder: random byte corruptions, truncations and garbage
// must give an error status (or, where a corruption only changes coded values, a successful
// decode), never a crash, a hang or an out-of-bounds access (run it under ASan to see the latter).
// Header corruptions are always detected (the header carries a checksum). Streams with NaN/Inf
// voxels (a mask section in the header) are among the sources.
#include <sparsegrid/codec.h>

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace
{
namespace codec = sparsegrid::codec;
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
  const auto st = codec::decode(bytes.data(), bytes.size(), lod, out.data(), layout);
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
      const auto st = codec::decode(cut.data(), cut.size(), -1, out.data(), src.layout);
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
    EXPECT_FALSE(codec::decode(junk.data(), junk.size(), -1, out.data(), layout).ok());
  }
  EXPECT_FALSE(codec::decode(nullptr, 100, -1, out.data(), layout).ok());
}

} // namespace
