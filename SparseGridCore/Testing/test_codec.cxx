// The error-bounded codec: the bound is checked on every voxel against the input in long double
// (independent of the codec's own check), for random, analytic, discontinuous and constant fields,
// odd sizes, 1-D/2-D/3-D, float and double, bounds 1e-1..1e-7 of the range; progressive decoding
// against the advertised level bounds; raw fall-back; strided layouts; bad input.
#include <sparsegrid/codec.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace
{
namespace codec = sparsegrid::codec;
using sparsegrid::ErrorCode;
using Dims = std::array<std::uint64_t, 3>;

enum class Field
{
  Uniform,
  Smooth,
  Steps,
  Constant,
  Gaussian
};

const char* name(Field f)
{
  switch (f)
  {
    case Field::Uniform:
      return "uniform";
    case Field::Smooth:
      return "smooth";
    case Field::Steps:
      return "steps";
    case Field::Constant:
      return "constant";
    case Field::Gaussian:
      return "gaussian";
  }
  return "?";
}

template<typename T>
std::vector<T> makeField(Field f, const Dims& d, unsigned seed = 7)
{
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> uni(-3.0, 5.0);
  std::normal_distribution<double> gauss(100.0, 20.0);
  std::vector<T> v(d[0] * d[1] * d[2]);
  for (std::uint64_t k = 0; k < d[2]; ++k)
  {
    for (std::uint64_t j = 0; j < d[1]; ++j)
    {
      for (std::uint64_t i = 0; i < d[0]; ++i)
      {
        const double x = double(i) / 9.0, y = double(j) / 7.0, z = double(k) / 5.0;
        double value = 0;
        switch (f)
        {
          case Field::Uniform:
            value = uni(rng);
            break;
          case Field::Smooth:
            value = 40.0 * std::sin(x) * std::cos(0.7 * y) + 3.0 * std::exp(-0.1 * z) + 0.5 * x * y;
            break;
          case Field::Steps:
            value = ((i / 5 + j / 3 + k / 4) % 3) * 17.0 - 8.0;
            break;
          case Field::Constant:
            value = 3.25;
            break;
          case Field::Gaussian:
            value = gauss(rng);
            break;
        }
        v[i + d[0] * (j + d[1] * k)] = static_cast<T>(value);
      }
    }
  }
  return v;
}

template<typename T>
double range(const std::vector<T>& v)
{
  const auto mm = std::minmax_element(v.begin(), v.end());
  return static_cast<double>(*mm.second) - static_cast<double>(*mm.first);
}

/// Max |a - b| in long double, and the index where it is largest.
template<typename A, typename B>
long double maxError(const A* a, const B* b, std::size_t n, std::size_t strideA = 1)
{
  long double worst = 0;
  for (std::size_t i = 0; i < n; ++i)
  {
    const long double e =
      std::fabs(static_cast<long double>(a[i * strideA]) - static_cast<long double>(b[i]));
    worst = e > worst ? e : worst;
  }
  return worst;
}

template<typename T>
void roundTrip(const std::vector<T>& input,
  const Dims& dims,
  double bound,
  std::size_t* bytes = nullptr)
{
  codec::Layout layout;
  layout.dims = dims;
  std::vector<std::uint8_t> stream;
  sparsegrid::ExecutionOptions cpu;
  cpu.backend = sparsegrid::Backend::CPU;
  ASSERT_TRUE(codec::encode(input.data(), layout, bound, stream, cpu).ok());
  codec::StreamInfo info;
  ASSERT_TRUE(codec::inspect(stream.data(), stream.size(), info).ok());
  EXPECT_EQ(info.dims, dims);
  EXPECT_EQ(info.absoluteBound, bound);
  EXPECT_EQ(info.levelBound.back(), bound);
  EXPECT_EQ(info.levelEnd.back(), stream.size());
  std::vector<T> out(input.size());
  ASSERT_TRUE(codec::decode(stream.data(), stream.size(), out.data(), layout, -1, cpu).ok());
  EXPECT_LE(maxError(input.data(), out.data(), input.size()), static_cast<long double>(bound))
    << "bound " << bound << " raw " << info.raw;
  if (bytes)
  {
    *bytes = stream.size();
  }
}

struct Case
{
  Dims dims;
  Field field;
};

class CodecBound : public ::testing::TestWithParam<Case>
{
};

TEST_P(CodecBound, EveryVoxelWithinBoundFloatAndDouble)
{
  const Case c = GetParam();
  for (double rel : { 1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7 })
  {
    SCOPED_TRACE(std::string(name(c.field)) + " rel " + std::to_string(rel));
    const auto f = makeField<float>(c.field, c.dims);
    const double r = range(f) > 0 ? range(f) : 1.0;
    roundTrip(f, c.dims, rel * r);
    const auto d = makeField<double>(c.field, c.dims);
    roundTrip(d, c.dims, rel * r);
  }
}

INSTANTIATE_TEST_SUITE_P(Sizes,
  CodecBound,
  ::testing::Values(Case{ { 1, 1, 1 }, Field::Uniform },
    Case{ { 2, 1, 1 }, Field::Uniform },
    Case{ { 3, 1, 1 }, Field::Smooth },
    Case{ { 17, 1, 1 }, Field::Uniform },
    Case{ { 100, 1, 1 }, Field::Smooth },
    Case{ { 1, 1, 100 }, Field::Steps },
    Case{ { 1, 37, 1 }, Field::Gaussian },
    Case{ { 17, 3, 1 }, Field::Smooth },
    Case{ { 100, 17, 1 }, Field::Steps },
    Case{ { 2, 2, 2 }, Field::Uniform },
    Case{ { 3, 3, 3 }, Field::Gaussian },
    Case{ { 17, 17, 17 }, Field::Uniform },
    Case{ { 17, 17, 17 }, Field::Smooth },
    Case{ { 125, 125, 25 }, Field::Smooth },
    Case{ { 33, 20, 9 }, Field::Steps },
    Case{ { 40, 30, 20 }, Field::Constant },
    Case{ { 65, 33, 17 }, Field::Gaussian }),
  [](const ::testing::TestParamInfo<Case>& info)
  {
    const Case& c = info.param;
    return std::string(name(c.field)) + "_" + std::to_string(c.dims[0]) + "x" +
      std::to_string(c.dims[1]) + "x" + std::to_string(c.dims[2]);
  });

TEST(Codec, SmoothFieldCompressesWellAndNoiseFallsBackToRaw)
{
  const Dims dims{ 64, 64, 64 };
  const auto smooth = makeField<float>(Field::Smooth, dims);
  std::size_t bytes = 0;
  roundTrip(smooth, dims, 1e-3 * range(smooth), &bytes);
  // A smooth field at 1e-3 of its range: far above ZFP's ~5:1 at that accuracy.
  EXPECT_GT(double(smooth.size() * sizeof(float)) / double(bytes), 20.0);

  const auto noise = makeField<float>(Field::Uniform, dims);
  codec::Layout layout;
  layout.dims = dims;
  std::vector<std::uint8_t> stream;
  codec::EncodeStatistics stats;
  ASSERT_TRUE(
    codec::encode(noise.data(), layout, 1e-7 * range(noise), stream, {}, nullptr, &stats).ok());
  codec::StreamInfo info;
  ASSERT_TRUE(codec::inspect(stream.data(), stream.size(), info).ok());
  EXPECT_TRUE(info.raw);
  EXPECT_TRUE(stats.raw);
  // Raw costs only the header on top of the values.
  EXPECT_LE(stream.size(), noise.size() * sizeof(float) + 256);
  std::vector<float> out(noise.size());
  ASSERT_TRUE(codec::decode(stream.data(), stream.size(), out.data(), layout).ok());
  EXPECT_EQ(out, noise);
}

TEST(Codec, BricksShareTheMiddleBricksSchemeAndDecodeAlone)
{
  // Five bricks of 19x14x6 with a gap of 3 values between them: smooth, steps, smooth (the middle
  // brick), uniform noise at a bound that leaves it raw, and a smooth brick with NaN and +Inf.
  const Dims d{ 19, 14, 6 };
  const std::uint64_t n = d[0] * d[1] * d[2], stride = n + 3;
  const Field kinds[5] = {
    Field::Smooth, Field::Steps, Field::Smooth, Field::Uniform, Field::Smooth
  };
  std::vector<double> all(5 * stride, -1.0);
  for (std::uint64_t b = 0; b < 5; ++b)
  {
    const auto f = makeField<double>(kinds[b], d, static_cast<unsigned>(b + 11));
    std::copy(f.begin(), f.end(), all.begin() + b * stride);
  }
  all[4 * stride + 7] = std::numeric_limits<double>::quiet_NaN();
  all[4 * stride + 9] = std::numeric_limits<double>::infinity();
  const double bound = 1e-6;
  codec::Bricks bricks{ codec::Layout{ d, 1 }, 5, stride };
  std::vector<std::uint8_t> streams;
  std::vector<codec::StreamSpan> spans;
  ASSERT_TRUE(codec::encodeBricks(all.data(), bricks, bound, streams, spans).ok());
  ASSERT_EQ(spans.size(), 5u);
  std::uint64_t at = 0;
  for (std::uint64_t b = 0; b < 5; ++b)
  {
    EXPECT_EQ(spans[b].offset, at) << "streams back to back, in brick order";
    at += spans[b].bytes;
    std::vector<double> back(n);
    ASSERT_TRUE(
      codec::decode(streams.data() + spans[b].offset, spans[b].bytes, back.data(), bricks.layout)
        .ok());
    for (std::uint64_t i = 0; i < n; ++i)
    {
      const double x = all[b * stride + i];
      if (std::isfinite(x))
      {
        ASSERT_LE(std::fabs(x - back[i]), bound) << "brick " << b << " voxel " << i;
      }
      else
      {
        ASSERT_EQ(std::memcmp(&x, &back[i], sizeof(double)), 0);
      }
    }
  }
  EXPECT_EQ(at, streams.size());
  // The middle brick's stream is encode()'s (its scheme is the batch's); so is the stream of the
  // brick with special voxels (coded alone); every coded brick carries the middle brick's scheme.
  auto alone = [&](std::uint64_t b)
  {
    std::vector<std::uint8_t> one;
    EXPECT_TRUE(codec::encode(all.data() + b * stride, bricks.layout, bound, one).ok());
    return one;
  };
  const auto middle = alone(2);
  EXPECT_TRUE(std::equal(middle.begin(), middle.end(), streams.begin() + spans[2].offset));
  EXPECT_EQ(middle.size(), spans[2].bytes);
  const auto special = alone(4);
  EXPECT_EQ(special.size(), spans[4].bytes);
  EXPECT_TRUE(std::equal(special.begin(), special.end(), streams.begin() + spans[4].offset));
  codec::StreamInfo info[5];
  for (std::uint64_t b = 0; b < 5; ++b)
  {
    ASSERT_TRUE(codec::inspect(streams.data() + spans[b].offset, spans[b].bytes, info[b]).ok());
  }
  EXPECT_TRUE(info[3].raw) << "noise at this bound is stored raw";
  for (std::uint64_t b : { 0, 1 })
  {
    EXPECT_FALSE(info[b].raw);
    EXPECT_EQ(info[b].axisOrder, info[2].axisOrder) << "brick " << b;
    EXPECT_EQ(info[b].cubic, info[2].cubic) << "brick " << b;
    EXPECT_EQ(info[b].levelQuantBound, info[2].levelQuantBound) << "brick " << b;
  }
  // Overlapping bricks are refused, and nothing is written.
  bricks.brickStride = n - 1;
  const auto st = codec::encodeBricks(all.data(), bricks, bound, streams, spans);
  EXPECT_EQ(st.code(), ErrorCode::InvalidArgument);
  EXPECT_NE(st.message().find("brickStride"), std::string::npos) << st.message();
  EXPECT_TRUE(streams.empty());
}

TEST(Codec, BrickCallsCheckTheirArguments)
{
  // Refused before any value is read, on any build (the device calls never reach a device here).
  const Dims d{ 4, 4, 4 };
  std::vector<float> values(3 * 64, 1.0f);
  std::vector<std::uint8_t> streams;
  std::vector<codec::StreamSpan> spans(2);
  codec::Bricks bricks{ codec::Layout{ d, 1 }, 3, 64 };
  EXPECT_EQ(codec::encodeBricks<float>(nullptr, bricks, 1e-3, streams, spans).code(),
    ErrorCode::InvalidArgument);
  EXPECT_TRUE(spans.size() == 3 && spans[0].bytes == 0) << "spans reset, one per brick";
  EXPECT_EQ(codec::encodeBricks(values.data(), bricks, -1.0, streams, spans).code(),
    ErrorCode::InvalidArgument);
  codec::Bricks strided{ codec::Layout{ d, 2 }, 3, 100 }; // a brick spans 127 elements
  const auto overlap = codec::encodeBricks(values.data(), strided, 1e-3, streams, spans);
  EXPECT_EQ(overlap.code(), ErrorCode::InvalidArgument);
  EXPECT_NE(overlap.message().find("127"), std::string::npos) << overlap.message();
  codec::DeviceStream none;
  EXPECT_EQ(codec::encodeBricksDevice(values.data(), bricks, 1e-3, none, spans).code(),
    ErrorCode::InvalidArgument);
  float out[1];
  std::uint8_t byte = 0;
  const auto mismatch =
    codec::decodeBricksDevice(&byte, std::vector<codec::StreamSpan>(2), out, bricks);
  EXPECT_EQ(mismatch.code(), ErrorCode::InvalidArgument);
  EXPECT_NE(mismatch.message().find("2 spans for 3 bricks"), std::string::npos)
    << mismatch.message();
  EXPECT_EQ(codec::maxBrickStreamBytes(bricks, codec::ValueType::Float32),
    3 * codec::maxStreamBytes(bricks.layout, codec::ValueType::Float32));
  // No bricks: nothing to do.
  codec::Bricks empty{ codec::Layout{ d, 1 }, 0, 64 };
  ASSERT_TRUE(codec::encodeBricks(values.data(), empty, 1e-3, streams, spans).ok());
  EXPECT_TRUE(streams.empty() && spans.empty());
}

TEST(Codec, ConstantImageCostsAlmostNothing)
{
  const Dims dims{ 100, 100, 100 };
  const std::vector<float> c(dims[0] * dims[1] * dims[2], -7.5f);
  std::size_t bytes = 0;
  roundTrip(c, dims, 1e-6, &bytes);
  EXPECT_GT(double(c.size() * 4) / double(bytes), 500.0);
}

TEST(Codec, ProgressivePrefixesKeepTheirLevelBounds)
{
  for (Field f : { Field::Smooth, Field::Steps, Field::Gaussian })
  {
    SCOPED_TRACE(name(f));
    const Dims dims{ 45, 33, 19 };
    const auto input = makeField<float>(f, dims);
    const double bound = 1e-3 * range(input);
    codec::Layout layout;
    layout.dims = dims;
    std::vector<std::uint8_t> stream;
    ASSERT_TRUE(codec::encode(input.data(), layout, bound, stream).ok());
    codec::StreamInfo info;
    ASSERT_TRUE(codec::inspect(stream.data(), stream.size(), info).ok());
    ASSERT_GE(info.levels, 5);
    for (int k = 0; k < info.levels; ++k)
    {
      SCOPED_TRACE("level " + std::to_string(k));
      if (k > 0)
      {
        EXPECT_GE(info.levelEnd[k], info.levelEnd[k - 1]);
        EXPECT_LE(info.levelBound[k], info.levelBound[k - 1]);
      }
      // Only the prefix the level needs is handed over.
      std::vector<float> out(input.size());
      ASSERT_TRUE(codec::decode(stream.data(), info.levelEnd[k], out.data(), layout, k).ok());
      const long double err = maxError(input.data(), out.data(), input.size());
      EXPECT_LE(err, static_cast<long double>(info.levelBound[k]));
      if (k + 1 < info.levels)
      {
        // One byte less than the prefix is refused.
        EXPECT_FALSE(
          codec::decode(stream.data(), info.levelEnd[k] - 1, out.data(), layout, k).ok());
      }
    }
    // Coarse levels carry real information: level 0 alone is far worse than all levels.
    EXPECT_GT(info.levelBound[0], 10 * bound);
  }
}

TEST(Codec, StridedComponentsAndCrossPrecisionDecode)
{
  const Dims dims{ 31, 22, 13 };
  const std::size_t n = dims[0] * dims[1] * dims[2];
  const auto a = makeField<double>(Field::Smooth, dims);
  const auto b = makeField<double>(Field::Gaussian, dims);
  std::vector<double> aos(3 * n);
  for (std::size_t i = 0; i < n; ++i)
  {
    aos[3 * i] = a[i];
    aos[3 * i + 1] = b[i];
    aos[3 * i + 2] = -a[i];
  }
  codec::Layout strided;
  strided.dims = dims;
  strided.stride = 3;
  std::vector<std::uint8_t> s1;
  const double bound = 1e-3 * range(b);
  ASSERT_TRUE(codec::encode(aos.data() + 1, strided, bound, s1).ok());
  codec::Layout plain;
  plain.dims = dims;
  std::vector<std::uint8_t> s2;
  ASSERT_TRUE(codec::encode(b.data(), plain, bound, s2).ok());
  EXPECT_EQ(s1, s2) << "the stride must not change the stream";

  std::vector<double> outAos(3 * n, 123.0);
  ASSERT_TRUE(codec::decode(s1.data(), s1.size(), outAos.data() + 1, strided).ok());
  EXPECT_LE(maxError(outAos.data() + 1, b.data(), n, 3), static_cast<long double>(bound));
  for (std::size_t i = 0; i < n; ++i)
  {
    ASSERT_EQ(outAos[3 * i], 123.0) << "other components must stay untouched";
    ASSERT_EQ(outAos[3 * i + 2], 123.0);
  }
  // A double stream decoded into float equals the double decode rounded to float.
  std::vector<float> asFloat(n);
  ASSERT_TRUE(codec::decode(s2.data(), s2.size(), asFloat.data(), plain).ok());
  std::vector<double> asDouble(n);
  ASSERT_TRUE(codec::decode(s2.data(), s2.size(), asDouble.data(), plain).ok());
  for (std::size_t i = 0; i < n; ++i)
  {
    ASSERT_EQ(asFloat[i], static_cast<float>(asDouble[i]));
  }
}

TEST(Codec, ThreadCountDoesNotChangeTheStream)
{
  const Dims dims{ 70, 50, 40 };
  const auto input = makeField<float>(Field::Gaussian, dims);
  codec::Layout layout;
  layout.dims = dims;
  std::vector<std::uint8_t> one, two, many;
  sparsegrid::ExecutionOptions o;
  o.backend = sparsegrid::Backend::CPU;
  o.threads = 1;
  ASSERT_TRUE(codec::encode(input.data(), layout, 0.5, one, o).ok());
  o.threads = 2;
  ASSERT_TRUE(codec::encode(input.data(), layout, 0.5, two, o).ok());
  o.threads = 7;
  ASSERT_TRUE(codec::encode(input.data(), layout, 0.5, many, o).ok());
  // Freed work buffers are allocated again and give the same stream.
  codec::releaseWorkBuffers();
  std::vector<std::uint8_t> again;
  ASSERT_TRUE(codec::encode(input.data(), layout, 0.5, again, o).ok());
  EXPECT_EQ(one, again);
  EXPECT_EQ(one, two);
  EXPECT_EQ(one, many);
}

TEST(Codec, ValueRange)
{
  const Dims dims{ 10, 9, 8 };
  auto v = makeField<float>(Field::Gaussian, dims);
  codec::Layout layout;
  layout.dims = dims;
  const double lo = static_cast<double>(*std::min_element(v.begin(), v.end()));
  const double hi = static_cast<double>(*std::max_element(v.begin(), v.end()));
  codec::ValueRange r;
  ASSERT_TRUE(codec::valueRange(v.data(), layout, r).ok());
  EXPECT_EQ(r.min, lo);
  EXPECT_EQ(r.max, hi);
  EXPECT_EQ(r.specialVoxels, 0u);
  // NaN and Inf are counted and left out of the range.
  v[77] = std::nanf("");
  v[500] = INFINITY;
  ASSERT_TRUE(codec::valueRange(v.data(), layout, r).ok());
  EXPECT_EQ(r.specialVoxels, 2u);
  EXPECT_GE(r.min, lo);
  EXPECT_LE(r.max, hi);
  EXPECT_TRUE(std::isfinite(r.min) && std::isfinite(r.max));
  EXPECT_EQ(codec::valueRange<float>(nullptr, layout, r).code(), ErrorCode::InvalidArgument);
}

TEST(Codec, BadInputGivesClearErrors)
{
  const Dims dims{ 8, 8, 8 };
  auto v = makeField<float>(Field::Smooth, dims);
  codec::Layout layout;
  layout.dims = dims;
  std::vector<std::uint8_t> stream;
  EXPECT_EQ(codec::encode(v.data(), layout, 0.0, stream).code(), ErrorCode::InvalidArgument);
  EXPECT_EQ(codec::encode(v.data(), layout, -1.0, stream).code(), ErrorCode::InvalidArgument);
  EXPECT_EQ(codec::encode(v.data(), layout, NAN, stream).code(), ErrorCode::InvalidArgument);
  EXPECT_EQ(codec::encode<float>(nullptr, layout, 1.0, stream).code(), ErrorCode::InvalidArgument);
  codec::Layout zero = layout;
  zero.dims[1] = 0;
  EXPECT_EQ(codec::encode(v.data(), zero, 1.0, stream).code(), ErrorCode::InvalidArgument);
  // NaN is no error: it is kept bit for bit (test_codec_specials.cxx).
  v[100] = std::nanf("");
  ASSERT_TRUE(codec::encode(v.data(), layout, 1.0, stream).ok());
  v[100] = 1.0f;
  ASSERT_TRUE(codec::encode(v.data(), layout, 1e-2, stream).ok());
  std::vector<float> out(v.size());
  codec::Layout other = layout;
  other.dims = { 8, 8, 9 };
  EXPECT_EQ(codec::decode(stream.data(), stream.size(), out.data(), other).code(),
    ErrorCode::InvalidArgument);
  codec::StreamInfo info;
  ASSERT_TRUE(codec::inspect(stream.data(), stream.size(), info).ok());
  EXPECT_EQ(codec::decode(stream.data(), stream.size(), out.data(), layout, info.levels).code(),
    ErrorCode::InvalidArgument);
  // decode and decodeDevice (a stream in host memory) check a stream alike: the same message
  // after the entry point's name, given before the output is touched (here a host array).
  const std::size_t truncated = static_cast<std::size_t>(info.levelEnd[info.levels - 1]) - 1;
  const struct
  {
    codec::Layout layout;
    int lod;
    std::size_t bytes;
    const char* words;
  } refused[] = { { other, -1, stream.size(), "8x8x9" },
    { layout, info.levels, stream.size(), "outside -1.." },
    { layout, -1, truncated, "truncated" } };
  for (const auto& r : refused)
  {
    const auto host = codec::decode(stream.data(), r.bytes, out.data(), r.layout, r.lod);
    const auto device =
      codec::decodeDevice(stream.data(), r.bytes, out.data(), r.layout, r.lod, false);
    EXPECT_EQ(host.code(), ErrorCode::InvalidArgument) << host.message();
    EXPECT_EQ(device.code(), ErrorCode::InvalidArgument) << device.message();
    EXPECT_NE(host.message().find(r.words), std::string::npos) << host.message();
    ASSERT_EQ(host.message().rfind("decode: ", 0), 0u) << host.message();
    EXPECT_EQ(device.message(), "decodeDevice: " + host.message().substr(8));
  }
  // inspect on a short buffer names the bytes it needs.
  const auto shortSt = codec::inspect(stream.data(), 20, info);
  EXPECT_EQ(shortSt.code(), ErrorCode::InvalidArgument);
  EXPECT_NE(shortSt.message().find("56"), std::string::npos) << shortSt.message();
}

TEST(Codec, LargeValuesFarFromTheBoundEscapeExactly)
{
  // Values of 1e30 with a bound of 1e-3: every quantised residual would overflow, so the coarse
  // values escape; the bound must hold and the stream must decode.
  const Dims dims{ 20, 20, 5 };
  auto v = makeField<double>(Field::Gaussian, dims);
  for (std::size_t i = 0; i < v.size(); i += 7)
  {
    v[i] *= 1e30;
  }
  roundTrip(v, dims, 1e-3);
  std::vector<float> f(v.size());
  for (std::size_t i = 0; i < v.size(); ++i)
  {
    f[i] = static_cast<float>(i % 13 == 0 ? 3e38 : -3e38 * ((i % 5) == 0));
  }
  roundTrip(f, dims, 1e-3);
}

} // namespace

namespace
{
/// Encodes and inspects; the scheme the encoder chose is in the returned info.
template<typename T>
codec::StreamInfo encodeAndInspect(const std::vector<T>& input,
  const Dims& dims,
  double bound,
  std::vector<std::uint8_t>& stream)
{
  codec::Layout layout;
  layout.dims = dims;
  codec::StreamInfo info;
  EXPECT_TRUE(codec::encode(input.data(), layout, bound, stream).ok());
  EXPECT_TRUE(codec::inspect(stream.data(), stream.size(), info).ok());
  return info;
}
} // namespace

// With the finest level left out, a voxel is the predictor's value from four decoded neighbours.
// For a cubic polynomial the cubic interpolant is exact, so those voxels must be within 1.25 x the
// coarser levels' bound (the weights' absolute sum) plus rounding; linear interpolation would
// miss by |f''| h^2 / 8 (about 9x the allowance here).
TEST(CodecScheme, CubicPredictionIsExactForCubicPolynomialsBetweenLevels)
{
  // A cubic in x, constant along y and z (a 1-D line alone is too short to beat raw storage).
  const Dims dims{ 257, 5, 5 };
  const std::uint64_t n = dims[0];
  auto exact = [&](double x) { return 1000.0 * std::pow(x / n, 3) - 300.0 * (x / n) + 7.0; };
  std::vector<double> f(dims[0] * dims[1] * dims[2]);
  for (std::size_t v = 0; v < f.size(); ++v)
  {
    f[v] = exact(static_cast<double>(v % n));
  }
  const double bound = 1e-3;
  std::vector<std::uint8_t> stream;
  const codec::StreamInfo info = encodeAndInspect(f, dims, bound, stream);
  ASSERT_EQ(info.version, codec::codecVersion);
  ASSERT_FALSE(info.raw);
  EXPECT_TRUE(info.cubic);
  codec::Layout layout;
  layout.dims = dims;
  std::vector<double> out(f.size());
  const int lod = info.levels - 2;
  ASSERT_TRUE(codec::decode(stream.data(), info.levelEnd[lod], out.data(), layout, lod).ok());
  double worst = 0;
  for (std::uint64_t z = 0; z < dims[2]; z += 2)
  {
    for (std::uint64_t y = 0; y < dims[1]; y += 2)
    {
      for (std::uint64_t i = 3; i + 3 < n; i += 2)
      {
        const std::uint64_t v = i + n * (y + dims[1] * z);
        worst = std::max(worst, std::fabs(out[v] - exact(static_cast<double>(i))));
      }
    }
  }
  EXPECT_LE(worst, 1.25 * bound + 1e-9);
  // ... and the full decode keeps the bound everywhere.
  ASSERT_TRUE(codec::decode(stream.data(), stream.size(), out.data(), layout).ok());
  EXPECT_LE(maxError(f.data(), out.data(), f.size()), static_cast<long double>(bound));
}

// The last axis refined in a level predicts the most voxels, so the encoder refines the roughest
// axis first and the smoothest last; the order is stored in the stream.
TEST(CodecScheme, AxesAreRefinedRoughestFirst)
{
  const Dims dims{ 40, 36, 30 };
  for (int rough = 0; rough < 3; ++rough)
  {
    SCOPED_TRACE("rough axis " + std::to_string(rough));
    std::vector<float> v(dims[0] * dims[1] * dims[2]);
    for (std::uint64_t k = 0; k < dims[2]; ++k)
    {
      for (std::uint64_t j = 0; j < dims[1]; ++j)
      {
        for (std::uint64_t i = 0; i < dims[0]; ++i)
        {
          const double c[3] = { double(i), double(j), double(k) };
          double value = 0;
          for (int a = 0; a < 3; ++a)
          {
            // Period 2.5 voxels along the rough axis, 60 and 90 along the others.
            value +=
              a == rough ? std::sin(2.5 * c[a]) : std::sin(c[a] / (a == (rough + 1) % 3 ? 10 : 15));
          }
          v[i + dims[0] * (j + dims[1] * k)] = static_cast<float>(value);
        }
      }
    }
    std::vector<std::uint8_t> stream;
    const codec::StreamInfo info = encodeAndInspect(v, dims, 1e-3, stream);
    EXPECT_EQ(info.axisOrder[0], rough);
    // The two smooth axes: the one with the shorter period is the rougher.
    EXPECT_EQ(info.axisOrder[1], (rough + 1) % 3);
    EXPECT_EQ(info.axisOrder[2], (rough + 2) % 3);
    codec::Layout layout;
    layout.dims = dims;
    std::vector<float> out(v.size());
    ASSERT_TRUE(codec::decode(stream.data(), stream.size(), out.data(), layout).ok());
    EXPECT_LE(maxError(v.data(), out.data(), v.size()), 1e-3L);
  }
}

// On white noise the mean of two neighbours predicts better than the cubic (residual variance
// 1.5 vs 1.64 sigma^2), and on smooth data the cubic does: the encoder measures and chooses.
TEST(CodecScheme, PredictorIsChosenFromTheData)
{
  const Dims dims{ 33, 33, 33 };
  std::vector<std::uint8_t> stream;
  const auto noise = makeField<float>(Field::Uniform, dims);
  const codec::StreamInfo noisy = encodeAndInspect(noise, dims, 1e-3 * range(noise), stream);
  EXPECT_FALSE(noisy.cubic);
  const auto smooth = makeField<float>(Field::Smooth, dims);
  const codec::StreamInfo smoothInfo = encodeAndInspect(smooth, dims, 1e-4 * range(smooth), stream);
  EXPECT_TRUE(smoothInfo.cubic);
  // Every level is quantised within the stream's bound (coarse levels finer).
  for (double q : smoothInfo.levelQuantBound)
  {
    EXPECT_GT(q, 0.0);
    EXPECT_LE(q, smoothInfo.absoluteBound);
  }
  EXPECT_EQ(smoothInfo.levelQuantBound.back(), smoothInfo.absoluteBound);
}

// A damaged scheme byte is refused by inspect (the header checksum is recomputed so that only the
// scheme check can catch it).
TEST(CodecScheme, DamagedSchemeIsRefused)
{
  const Dims dims{ 17, 9, 5 };
  const auto v = makeField<float>(Field::Smooth, dims);
  std::vector<std::uint8_t> stream;
  const codec::StreamInfo info = encodeAndInspect(v, dims, 1e-3 * range(v), stream);
  ASSERT_FALSE(info.raw);
  auto fnv = [](const std::uint8_t* p, std::size_t n)
  {
    std::uint32_t h = 2166136261u;
    for (std::size_t i = 0; i < n; ++i)
    {
      h = (h ^ p[i]) * 16777619u;
    }
    return h;
  };
  for (int at : { 56, 57, 58, 59, 60 })
  {
    for (std::uint8_t value : { std::uint8_t(3), std::uint8_t(255) })
    {
      std::vector<std::uint8_t> bad = stream;
      bad[at] = value;
      if (at < 59)
      {
        bad[at == 56 ? 57 : 56] = bad[at]; // also a duplicate axis
      }
      const std::size_t h = info.headerBytes;
      const std::uint32_t sum = fnv(bad.data(), h - 4);
      std::memcpy(bad.data() + h - 4, &sum, 4);
      codec::StreamInfo badInfo;
      const auto st = codec::inspect(bad.data(), bad.size(), badInfo);
      EXPECT_FALSE(st.ok()) << "byte " << at << " = " << int(value);
    }
  }
}

// Streams of version 1 (linear prediction, axes in index order, one quantiser) still decode. The
// bytes below were written by the version-1 encoder (commit ef01979) for the field computed here,
// 17x13x9 float, bound 0.02; the check is against the field, not the bytes.
TEST(CodecScheme, Version1StreamsStillDecode)
{
  // clang-format off
  static const std::uint8_t v1[] = {
    0x53, 0x47, 0x43, 0x5a, 0x01, 0x00, 0x01, 0x00, 0x11, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x0d, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x09, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x7b, 0x14, 0xae, 0x47, 0xe1, 0x7a, 0x94, 0x3f, 0xff, 0x7f, 0x00, 0x00, 0x00, 0x10, 0x00, 0x00,
    0x40, 0x00, 0x00, 0x00, 0x05, 0x00, 0x00, 0x00, 0x50, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0xef, 0x28, 0xf9, 0x3a, 0x40, 0x0a, 0x19, 0x40, 0x70, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x6e, 0x8b, 0x06, 0xf1, 0x68, 0x66, 0x02, 0x40, 0x9c, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0xd0, 0x90, 0xe6, 0x04, 0x61, 0x8f, 0xe2, 0x3f, 0x0c, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x42, 0x6d, 0xe1, 0x2a, 0x8e, 0xeb, 0xc1, 0x3f, 0x18, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x7b, 0x14, 0xae, 0x47, 0xe1, 0x7a, 0x94, 0x3f, 0xa5, 0x00, 0x00, 0x00, 0x04, 0x00, 0x05, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x09, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x09, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x09, 0x00, 0x02, 0x02, 0x03,
    0x03, 0x07, 0x07, 0x07, 0x07, 0x05, 0x05, 0x07, 0x06, 0x00, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x07, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x09, 0x00, 0x00,
    0x00, 0x07, 0x00, 0x09, 0x00, 0x09, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x08, 0x00, 0x00, 0x00, 0x38, 0xf5, 0x85, 0x1e, 0x14, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0xe0, 0xfe,
    0x1c, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x03, 0x00, 0x00, 0x00, 0x7e, 0x7e, 0xfe, 0xff, 0xdf, 0xef, 0xf7, 0x7b, 0x00, 0x00, 0x60, 0xbf,
    0x28, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x06, 0x00, 0x00, 0x00, 0xfa, 0xfb, 0xfa, 0xfb, 0xfa, 0xfb, 0xfa, 0xfb, 0x3f, 0x9f, 0x5f, 0x5c,
    0x2f, 0x2e, 0x3e, 0xdf, 0x9f, 0xef, 0x9f, 0xcf, 0x00, 0x00, 0x40, 0x3f, 0x6c, 0x00, 0x00, 0x00,
    0x07, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x17, 0x00, 0x00, 0x00,
    0xbc, 0x3d, 0x0f, 0x9e, 0xf3, 0x6c, 0xfb, 0x1d, 0x78, 0xde, 0xc1, 0xdb, 0x77, 0xf0, 0xf6, 0x3c,
    0x6f, 0xcf, 0xb3, 0xed, 0xf3, 0xe0, 0x79, 0x07, 0xb6, 0xdf, 0xc1, 0xdb, 0x1d, 0xbc, 0x3d, 0xcf,
    0xde, 0xfa, 0xbd, 0xf7, 0x3a, 0xd7, 0x6f, 0xfd, 0xce, 0x75, 0x5d, 0xe7, 0x9c, 0x73, 0xce, 0xb9,
    0xef, 0xcd, 0x39, 0xe7, 0x5b, 0xbf, 0xb7, 0x7e, 0xd7, 0xb9, 0xce, 0xf5, 0x73, 0xae, 0x73, 0x5d,
    0xce, 0x39, 0xe7, 0x9c, 0xad, 0xdf, 0x7b, 0x73, 0x73, 0xfd, 0xd6, 0xef, 0x5c, 0xd7, 0x75, 0xae,
    0x39, 0xe7, 0x9c, 0xeb, 0xfe, 0x9c, 0x73, 0xce, 0x00, 0x00, 0x00, 0x00, 0x08, 0x01, 0x00, 0x00,
    0xff, 0x1f, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x3e, 0x00, 0x00, 0x00,
    0x0c, 0x40, 0x31, 0x00, 0x80, 0x4b, 0x03, 0x5c, 0xa7, 0x01, 0xb8, 0x18, 0x1a, 0xe0, 0xd2, 0x00,
    0x00, 0x14, 0x03, 0x50, 0xb8, 0x34, 0xc0, 0xc5, 0x1a, 0x80, 0x8b, 0x01, 0x01, 0x2e, 0x0d, 0x70,
    0x40, 0x31, 0x00, 0xa5, 0x4b, 0x03, 0x5c, 0x0c, 0x01, 0xb8, 0x18, 0x80, 0xe0, 0xd2, 0x00, 0xa7,
    0x14, 0x03, 0x50, 0x1a, 0x34, 0xc0, 0xc5, 0x00, 0x80, 0x8b, 0x01, 0xb8, 0x2e, 0x0d, 0x70, 0x1a,
    0x31, 0x00, 0xa5, 0x01, 0x03, 0x5c, 0x0c, 0x40, 0xb8, 0x18, 0x80, 0x4b, 0xd2, 0x00, 0xa7, 0x01,
    0x49, 0x58, 0x1a, 0xe0, 0x49, 0x92, 0x90, 0x24, 0x18, 0x00, 0x00, 0x20, 0xaa, 0xaa, 0x2a, 0x00,
    0x6d, 0xdb, 0xb6, 0xaa, 0xdb, 0xd6, 0xb6, 0xad, 0x6d, 0xdb, 0xb6, 0x6d, 0xa5, 0x4b, 0xb7, 0x6d,
    0x09, 0xb9, 0x74, 0x71, 0x49, 0x12, 0x92, 0x24, 0x03, 0x00, 0x00, 0x24, 0x55, 0x55, 0x05, 0x00,
    0x6d, 0xdb, 0x56, 0x55, 0xdb, 0xda, 0xb6, 0xb5, 0x6d, 0xdb, 0xb6, 0x6d, 0x74, 0xe9, 0xb6, 0xad,
    0x21, 0x97, 0x2e, 0xae, 0x49, 0x42, 0x92, 0x24, 0x00, 0x00, 0x80, 0x24, 0xaa, 0xaa, 0x00, 0x60,
    0x6d, 0xdb, 0xaa, 0xaa, 0x5b, 0xdb, 0xb6, 0xb6, 0x6d, 0xdb, 0xb6, 0x6d, 0x2e, 0xdd, 0xb6, 0xb5,
    0xe4, 0xd2, 0xc5, 0x95, 0x49, 0x48, 0x92, 0x24, 0x00, 0x00, 0x90, 0x24, 0x55, 0x15, 0x00, 0x0c,
    0x6d, 0x5b, 0x55, 0x55, 0x6b, 0xdb, 0xd6, 0xb6, 0x6d, 0xdb, 0xb6, 0x6d, 0xa5, 0xdb, 0xb6, 0xb6,
    0x5c, 0xba, 0xb8, 0xd2, 0x09, 0x49, 0x92, 0x84, 0x00, 0x00, 0x92, 0x24, 0xaa, 0x02, 0x80, 0x01,
    0x6d, 0xab, 0xaa, 0xaa, 0x6d, 0xdb, 0xda, 0xb6, 0x6d, 0xdb, 0xb6, 0x6d, 0x74, 0xdb, 0xd6, 0xb6,
    0x4b, 0x17, 0x57, 0xba, 0x00, 0x00, 0x00, 0xfb,
  };
  // clang-format on
  const Dims dims{ 17, 13, 9 };
  codec::StreamInfo info;
  ASSERT_TRUE(codec::inspect(v1, sizeof(v1), info).ok());
  EXPECT_EQ(info.version, 1u);
  EXPECT_FALSE(info.raw);
  EXPECT_FALSE(info.cubic);
  codec::Layout layout;
  layout.dims = dims;
  std::vector<float> out(dims[0] * dims[1] * dims[2]);
  ASSERT_TRUE(codec::decode(v1, sizeof(v1), out.data(), layout).ok());
  double worst = 0;
  for (std::uint64_t k = 0; k < dims[2]; ++k)
  {
    for (std::uint64_t j = 0; j < dims[1]; ++j)
    {
      for (std::uint64_t i = 0; i < dims[0]; ++i)
      {
        const float f = static_cast<float>(std::sin(0.3 * i) + std::cos(0.4 * j) + 0.1 * k);
        worst =
          std::max(worst, std::fabs(double(out[i + dims[0] * (j + dims[1] * k)]) - double(f)));
      }
    }
  }
  EXPECT_LE(worst, 0.02);
  EXPECT_GT(worst, 0.0); // lossy: it really went through prediction and quantisation
}
