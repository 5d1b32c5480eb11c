// The stream's bytes outside the chunks: the header (writing, and parsing with every check a
// damaged or truncated stream needs), the raw stream, and the Huffman table the header carries.
// Shared by the CPU and the CUDA encoders and decoders.
#include "CodecMask.h"

#include <algorithm>
#include <cstring>

namespace sparsegrid
{
namespace codec
{
namespace detail
{

using format::Plan;

std::size_t headerBytes(int levels, std::size_t tableBytes, int version, std::size_t maskBytes)
{
  if (version != 1)
  {
    return static_cast<std::size_t>(format::codedHeaderBytes(levels, tableBytes)) + maskBytes;
  }
  std::size_t n = format::FixedHeaderBytesV1 +
    format::LevelEntryBytesV1 * static_cast<std::size_t>(levels) + 4 + tableBytes;
  n = (n + 3) / 4 * 4;
  return n + 4;
}

std::size_t lengthTableBytes(const std::uint8_t* lengths, std::size_t count)
{
  const std::uint64_t bits = format::lengthTableSegmentBits(lengths, 0, count, 0, count);
  return static_cast<std::size_t>((bits + 7) / 8);
}

namespace
{

/// Bits packed from each byte's least significant bit; fields most significant bit first. The
/// bits gather in a 64-bit register and go out a byte at a time (finish() writes the last,
/// partial byte), so the bytes need not be cleared.
struct BitWriter
{
  std::uint8_t* out;
  std::uint64_t at = 0; ///< bits written
  std::uint64_t pending = 0;
  std::uint32_t held = 0; ///< bits in `pending`, below 8 between calls
  /// `bits` (at most 24) bits already in stream order: the field's first bit in bit 0.
  void putReversed(std::uint32_t reversed, std::uint32_t bits)
  {
    pending |= static_cast<std::uint64_t>(reversed) << held;
    held += bits;
    at += bits;
    for (; held >= 8; held -= 8, pending >>= 8)
    {
      out[(at - held) >> 3] = static_cast<std::uint8_t>(pending);
    }
  }
  void finish()
  {
    if (held > 0)
    {
      out[at >> 3] = static_cast<std::uint8_t>(pending);
    }
  }
};

struct BitReader
{
  const std::uint8_t* in;
  std::uint64_t bits;
  std::uint64_t at = 0;
  /// The bits from `at` on, the next one in bit 0: at least 57 of them, zeros past the end.
  std::uint64_t window() const
  {
    const std::uint64_t byte = at >> 3, bytes = bits >> 3;
    std::uint64_t w = 0;
    if (byte + 8 <= bytes)
    {
      w = format::load<std::uint64_t>(in + byte);
    }
    else
    {
      for (std::uint64_t j = byte; j < bytes; ++j)
      {
        w |= std::uint64_t(in[j]) << (8 * (j - byte));
      }
    }
    return w >> (at & 7);
  }
  /// The field of `count` bits at bit `from` of a window, its most significant bit first.
  static std::uint32_t field(std::uint64_t w, std::uint32_t from, std::uint32_t count)
  {
    std::uint32_t value = 0;
    for (std::uint32_t b = 0; b < count; ++b)
    {
      value = (value << 1) | static_cast<std::uint32_t>((w >> (from + b)) & 1u);
    }
    return value;
  }
};

} // namespace

namespace
{
/// The compact table into cleared bytes at `out`; returns the bytes it takes.
std::size_t packLengthTable(const std::uint8_t* lengths, std::size_t count, std::uint8_t* out)
{
  BitWriter w{ out };
  format::lengthTableSegmentOps(lengths, 0, count, 0, count, w);
  w.finish();
  return static_cast<std::size_t>((w.at + 7) / 8);
}
} // namespace

namespace
{
/// The operation of the compact table that the next OpBits bits begin, for each value of those
/// bits (the first one in bit 0): its bits (0: longer, or invalid), the tokens it advances over,
/// and the length it gives after the length p, (p & keep) + add ('0' p, '10s' p + 1 or p - 1,
/// '111' and 5 bits that length; a zero run keeps p and stores 0 for the tokens it covers).
constexpr int OpBits = 10;
struct LengthOp
{
  std::uint8_t bits = 0;
  std::uint8_t advance = 0;
  std::int8_t keep = 0;
  std::int8_t add = 0;
  std::uint8_t store = 0; ///< 0xff: the token takes the length, 0: it keeps 0 (zero run)
  bool zeroRun = false;
  std::uint16_t padding = 0; ///< to eight bytes an entry (its address: a shift of the index)
};
struct LengthOps
{
  LengthOp op[1 << OpBits];
  constexpr LengthOps()
    : op()
  {
    for (int x = 0; x < (1 << OpBits); ++x)
    {
      LengthOp& o = op[x];
      auto msbFirst = [x](int from, int count)
      {
        int v = 0;
        for (int b = 0; b < count; ++b)
        {
          v = v << 1 | ((x >> (from + b)) & 1);
        }
        return v;
      };
      if ((x & 1) == 0)
      {
        o = { 1, 1, -1, 0, 0xff, false, 0 };
      }
      else if ((x & 2) == 0)
      {
        o = { 3, 1, -1, static_cast<std::int8_t>((x & 4) ? -1 : 1), 0xff, false, 0 };
      }
      else if ((x & 4) != 0)
      {
        o = { 8, 1, 0, static_cast<std::int8_t>(msbFirst(3, 5)), 0xff, false, 0 };
      }
      else
      {
        // Exp-Golomb of order 2 of the run's length - 1: zeros, a one, zeros + 2 bits.
        int zeros = 0;
        while (3 + zeros < OpBits && ((x >> (3 + zeros)) & 1) == 0)
        {
          ++zeros;
        }
        const int bits = 3 + 2 * zeros + 3;
        if (bits <= OpBits)
        {
          const int run = ((1 << (zeros + 2)) | msbFirst(3 + zeros + 1, zeros + 2)) - 3;
          o = {
            static_cast<std::uint8_t>(bits), static_cast<std::uint8_t>(run), -1, 0, 0, true, 0
          };
        }
      }
    }
  }
};
constexpr LengthOps lengthOps;
} // namespace

std::size_t writeLengthTable(const std::uint8_t* lengths, std::size_t count, std::uint8_t* out)
{
  std::memset(out, 0, lengthTableBytes(lengths, count));
  return packLengthTable(lengths, count, out);
}

namespace
{
/// readLengthTable(), calling alongside() once per operation decoded from the next OpBits bits:
/// work that does not wait on the table there proceeds while each operation waits on the
/// previous one (parseHeader hashes the header's first bytes there, a byte waiting on the one
/// before).
template<typename Alongside>
bool readLengthTableAlongside(const std::uint8_t* in,
  std::size_t available,
  std::size_t count,
  LengthTableRead& read,
  Alongside&& alongside)
{
  std::vector<std::uint8_t>& lengths = read.lengths;
  std::size_t& used = read.bytes;
  std::string& why = read.why;
  lengths.assign(count, 0);
  read.truncated = false;
  BitReader r{ in, std::uint64_t(available) * 8 };
  int p = 0;
  std::size_t i = 0;
  bool zeroRun = false; // the previous operation was a zero run
  auto cut = [&]()
  {
    why = "the code-length table is truncated";
    read.truncated = true;
    return false;
  };
  // The operations are decoded in turn from the next OpBits bits of a window of `have` bits,
  // without a branch on the operation, where they are valid and short (all but long zero runs);
  // the others (long zero runs, rows of 8 or more '0' operations, the last bits, invalid
  // operations) are decoded from a window of the next bits (at least 57, the longest operation
  // takes 46), a row of '0' operations there in one step.
  std::uint64_t fast = 0;
  std::uint64_t have = 0;
  std::uint8_t* const out = lengths.data(); // stores through it cannot move the vector
  while (i < count)
  {
    if (have < OpBits)
    {
      fast = r.window();
      have = std::min<std::uint64_t>(r.bits - r.at, 57);
    }
    if (have >= OpBits && (fast & 255u) != 0)
    {
      alongside();
      const LengthOp& o = lengthOps.op[fast & ((1u << OpBits) - 1)];
      const int next = (p & o.keep) + o.add;
      const bool lengthOk =
        next >= 1 && next <= format::MaxCodeLength && (o.keep != 0 || next > p + 1 || next < p - 1);
      if (o.bits != 0 && (lengthOk || o.zeroRun) && o.advance <= count - i &&
        !(o.zeroRun && zeroRun))
      {
        out[i] = static_cast<std::uint8_t>(next & o.store);
        i += o.advance;
        p = next;
        zeroRun = o.zeroRun;
        fast >>= o.bits;
        have -= o.bits;
        r.at += o.bits;
        continue;
      }
    }
    have = 0; // the operation below moves on from r.at
    const std::uint64_t left = r.bits - r.at;
    if (left == 0)
    {
      return cut();
    }
    const std::uint64_t w = r.window();
    if ((w & 1u) == 0)
    {
      if (p == 0)
      {
        why = "the code-length table repeats a length before the first";
        return false;
      }
      // As many '0' operations as zero bits in a row (the window holds at least 57 bits).
      std::uint64_t m = w == 0 ? 57 : std::min<std::uint64_t>(__builtin_ctzll(w), 57);
      m = std::min<std::uint64_t>({ m, left, count - i });
      std::memset(lengths.data() + i, p, static_cast<std::size_t>(m));
      i += static_cast<std::size_t>(m);
      r.at += m;
      zeroRun = false;
      continue;
    }
    if (left < 3)
    {
      return cut();
    }
    r.at += 3;
    if (((w >> 1) & 1u) == 0)
    {
      const int next = ((w >> 2) & 1u) ? p - 1 : p + 1;
      if (next < 1 || next > format::MaxCodeLength)
      {
        why = "the code-length table steps outside 1.." + std::to_string(format::MaxCodeLength);
        return false;
      }
      lengths[i++] = static_cast<std::uint8_t>(p = next);
      zeroRun = false;
      continue;
    }
    if (((w >> 2) & 1u) == 0)
    {
      // A zero run: Exp-Golomb of order 2 of its length - 1: `zeros` zero bits, a one, then
      // zeros + 2 bits. At most 20 zeros; bits past the end are truncation, not zeros.
      const std::uint64_t after = w >> 3, avail = left - 3;
      const std::uint32_t firstOne = after == 0 ? 64u : std::uint32_t(__builtin_ctzll(after));
      if (avail <= std::min<std::uint32_t>(firstOne, 20))
      {
        return cut();
      }
      if (firstOne > 20)
      {
        why = "the code-length table has an overlong zero run";
        return false;
      }
      const std::uint32_t zeros = firstOne;
      if (avail - zeros - 1 < zeros + 2)
      {
        return cut();
      }
      const std::uint32_t low = BitReader::field(w, 3 + zeros + 1, zeros + 2);
      r.at += 2 * zeros + 3;
      const std::uint64_t run = ((std::uint64_t(1) << (zeros + 2)) | low) - 4 + 1;
      if (zeroRun || run > count - i)
      {
        why = "the code-length table has an invalid zero run";
        return false;
      }
      i += static_cast<std::size_t>(run); // lengths are already 0
      zeroRun = true;
      continue;
    }
    if (left - 3 < 5)
    {
      return cut();
    }
    const std::uint32_t v = BitReader::field(w, 3, 5);
    r.at += 5;
    const int d = static_cast<int>(v) - p;
    if (v < 1 || v > static_cast<std::uint32_t>(format::MaxCodeLength) || (d >= -1 && d <= 1))
    {
      why = "the code-length table has an invalid length " + std::to_string(v);
      return false;
    }
    lengths[i++] = static_cast<std::uint8_t>(p = static_cast<int>(v));
    zeroRun = false;
  }
  used = static_cast<std::size_t>((r.at + 7) / 8);
  // The rest of the last byte is zero, and the table is in the form the encoders write.
  for (std::uint64_t b = r.at; b < std::uint64_t(used) * 8; ++b)
  {
    if ((in[b >> 3] >> (b & 7)) & 1u)
    {
      why = "the code-length table's padding bits are not zero";
      return false;
    }
  }
  // Every operation was checked to be the one the encoders write (a repeat only after a length,
  // a step of one as '10s', a 5-bit length only for a larger step, a zero run only after a length
  // and as long as the run), so the table is in its canonical form.
  return true;
}

} // namespace

bool readLengthTable(const std::uint8_t* in,
  std::size_t available,
  std::size_t count,
  LengthTableRead& read)
{
  return readLengthTableAlongside(in, available, count, read, [] {});
}

void writeHeader(const HeaderFields& h, std::uint8_t* out, std::size_t tableBytes)
{
  const bool masked = !h.mask.empty();
  if (tableBytes == UnknownTableBytes)
  {
    tableBytes = lengthTableBytes(h.lengths.data(), h.lengths.size());
  }
  const std::size_t total = headerBytes(h.levels, tableBytes, 4, h.mask.size());
  std::memset(out, 0, total);
  std::uint8_t* p = out + writeHeaderFields(h, out);
  packLengthTable(h.lengths.data(), h.lengths.size(), p); // the header is cleared
  if (masked)
  {
    std::memcpy(out + total - 4 - h.mask.size(), h.mask.data(), h.mask.size());
  }
  format::store<std::uint32_t>(out + total - 4, format::fnv1a(out, total - 4));
}

std::size_t writeHeaderFields(const HeaderFields& h, std::uint8_t* out)
{
  const bool masked = !h.mask.empty();
  // Coded streams: the current version (compact code-length table, optional mask section); raw
  // streams keep the layout of versions 2 and 3 (no table), version 3 where values may be special.
  const std::uint16_t version = static_cast<std::uint16_t>(!h.raw ? codecVersion
      : h.specialValues                                           ? maskedCodecVersion
                                                                  : 2);
  std::memcpy(out, format::Magic, 4);
  format::store<std::uint16_t>(out + 4, version);
  out[6] = static_cast<std::uint8_t>(h.type);
  out[7] =
    static_cast<std::uint8_t>((h.raw ? format::FlagRaw : 0) | (masked ? format::FlagMask : 0));
  for (int a = 0; a < 3; ++a)
  {
    format::store<std::uint64_t>(out + 8 + 8 * a, h.dims[a]);
  }
  format::store<double>(out + 32, h.bound);
  format::store<std::uint32_t>(out + 40, static_cast<std::uint32_t>(format::MaxQuant));
  format::store<std::uint32_t>(out + 44, format::ChunkCodes);
  format::store<std::uint32_t>(out + 48, format::BlockCodes);
  format::store<std::uint32_t>(out + 52, static_cast<std::uint32_t>(h.levels));
  for (int a = 0; a < 3; ++a)
  {
    out[56 + a] = static_cast<std::uint8_t>(h.scheme.order[a]);
  }
  out[59] = h.scheme.cubic ? 1 : 0;
  // Bytes 60..63: the mask section's size (versions 3-4), else zero.
  format::store<std::uint32_t>(out + 60, static_cast<std::uint32_t>(h.mask.size()));
  std::uint8_t* p = out + format::FixedHeaderBytes;
  for (int k = 0; k < h.levels; ++k)
  {
    format::store<std::uint64_t>(p, h.levelEnd[k]);
    format::store<double>(p + 8, h.levelBound[k]);
    format::store<double>(p + 16,
      static_cast<std::size_t>(k) < h.levelQuantBound.size()
        ? h.levelQuantBound[static_cast<std::size_t>(k)]
        : format::levelQuantBound(h.bound, h.levels, k, h.scheme.coarseRatio, h.scheme.coarseMax));
    p += format::LevelEntryBytes;
  }
  format::store<std::uint32_t>(p, static_cast<std::uint32_t>(h.lengths.size()));
  return static_cast<std::size_t>(p + 4 - out);
}

HeaderFields codedHeader(ValueType type,
  const format::Plan& plan,
  double bound,
  const HuffmanTable& table)
{
  HeaderFields h;
  h.type = type;
  for (int a = 0; a < 3; ++a)
  {
    h.dims[a] = plan.dims[a];
  }
  h.bound = bound;
  h.levels = plan.levels;
  h.scheme = plan.scheme;
  h.lengths.assign(
    table.lengths.begin(), table.lengths.begin() + static_cast<std::ptrdiff_t>(table.count));
  return h;
}

HuffmanTable huffmanTable(const std::vector<std::uint64_t>& histogram)
{
  HuffmanTable t;
  huffman::buildLengths(histogram, t.lengths);
  huffman::canonicalCodes(t.lengths, t.codes);
  t.count = t.lengths.size();
  while (t.count > 0 && t.lengths[t.count - 1] == 0)
  {
    --t.count;
  }
  for (std::size_t s = 0; s < t.count; ++s)
  {
    t.symbols += t.lengths[s] ? 1 : 0;
  }
  return t;
}

template<typename T>
void writeRaw(const T* contiguous,
  const std::uint64_t dims[3],
  double bound,
  std::vector<std::uint8_t>& stream,
  bool specialValues)
{
  HeaderFields h;
  h.specialValues = specialValues;
  h.type = valueTypeOf<T>();
  for (int a = 0; a < 3; ++a)
  {
    h.dims[a] = dims[a];
  }
  h.bound = bound;
  h.raw = true;
  h.levels = 1;
  const std::size_t header = headerBytes(1, 0);
  const std::uint64_t voxels = dims[0] * dims[1] * dims[2];
  h.levelEnd = { header + voxels * sizeof(T) };
  h.levelBound = { bound };
  stream.assign(static_cast<std::size_t>(h.levelEnd[0]), 0);
  writeHeader(h, stream.data());
  std::memcpy(stream.data() + header, contiguous, static_cast<std::size_t>(voxels * sizeof(T)));
}
template void writeRaw<float>(const float*,
  const std::uint64_t*,
  double,
  std::vector<std::uint8_t>&,
  bool);
template void writeRaw<double>(const double*,
  const std::uint64_t*,
  double,
  std::vector<std::uint8_t>&,
  bool);

namespace
{
/// The plan of streams of these dims and scheme. Built once per thread for a run of streams that
/// share them (the bricks of one layout): a plan is large and parsing a small stream's header
/// would otherwise spend much of its time building one.
const Plan& headerPlan(const std::uint64_t dims[3], const format::Scheme& scheme)
{
  struct Kept
  {
    bool built = false;
    Plan plan;
  };
  thread_local Kept kept;
  const bool same = kept.built && dims[0] == kept.plan.dims[0] && dims[1] == kept.plan.dims[1] &&
    dims[2] == kept.plan.dims[2] && scheme == kept.plan.scheme;
  if (!same)
  {
    kept.plan.build(dims, scheme);
    kept.built = true;
  }
  return kept.plan;
}
/// The level table of a header (its entries at `entries`, `entryBytes` each) into info, whose
/// other fields are read (headerBytes: the header's end, the first level's begin); false where an
/// entry is invalid.
bool readLevels(const std::uint8_t* entries,
  std::size_t entryBytes,
  int version,
  const Plan& plan,
  StreamInfo& info)
{
  const std::size_t levels = static_cast<std::size_t>(info.levels);
  info.levelEnd.resize(levels);
  info.levelBound.resize(levels);
  info.levelQuantBound.resize(levels);
  std::uint64_t previous = info.headerBytes;
  for (std::size_t k = 0; k < levels; ++k)
  {
    const std::uint8_t* e = entries + entryBytes * k;
    info.levelEnd[k] = format::load<std::uint64_t>(e);
    info.levelBound[k] = format::load<double>(e + 8);
    info.levelQuantBound[k] = version == 1 ? info.absoluteBound : format::load<double>(e + 16);
    const std::uint64_t minimum = info.raw ? 0 : 4 * plan.levelChunks[k];
    // A level's quantiser bound above the stream's bound would break the promise.
    const bool quantOk = info.levelQuantBound[k] > 0 &&
      info.levelQuantBound[k] <= info.absoluteBound && std::isfinite(info.levelQuantBound[k]);
    if (info.levelEnd[k] < previous || info.levelEnd[k] - previous < minimum ||
      info.levelEnd[k] - previous > (std::uint64_t(1) << 50) || !(info.levelBound[k] >= 0) ||
      !quantOk)
    {
      return false;
    }
    previous = info.levelEnd[k];
  }
  return true;
}
} // namespace

Status parseHeader(const std::uint8_t* s,
  std::size_t bytes,
  StreamInfo& info,
  std::vector<std::uint8_t>* lengths,
  std::size_t* tableCount)
{
  auto need = [](std::size_t n, const char* what)
  {
    return Status(ErrorCode::InvalidArgument,
      std::string("inspect: the stream is too short: ") + what + " needs at least " +
        std::to_string(n) + " bytes");
  };
  if (s == nullptr)
  {
    return Status(ErrorCode::InvalidArgument, "inspect: the stream pointer is null");
  }
  if (bytes < format::FixedHeaderBytesV1)
  {
    return need(format::FixedHeaderBytesV1, "the header");
  }
  if (std::memcmp(s, format::Magic, 4) != 0)
  {
    return Status(
      ErrorCode::InvalidArgument, "inspect: not a sparse-grid codec stream (magic 'SGCZ' missing)");
  }
  info.version = format::load<std::uint16_t>(s + 4);
  if (info.version < 1 || info.version > codecVersion)
  {
    return Status(ErrorCode::InvalidArgument,
      "inspect: unsupported codec stream version " + std::to_string(info.version) +
        " (this library reads versions 1 to " + std::to_string(codecVersion) + ")");
  }
  const int version = static_cast<int>(info.version);
  const std::size_t fixedBytes =
    version == 1 ? format::FixedHeaderBytesV1 : format::FixedHeaderBytes;
  const std::size_t entryBytes = version == 1 ? format::LevelEntryBytesV1 : format::LevelEntryBytes;
  if (bytes < fixedBytes)
  {
    return need(fixedBytes, "the header");
  }
  format::Scheme scheme = format::Scheme::linearV1();
  if (version >= 2)
  {
    for (int a = 0; a < 3; ++a)
    {
      scheme.order[a] = s[56 + a];
    }
    scheme.cubic = s[59] == 1;
    if (!scheme.valid() || s[59] > 1 || (version < 3 && format::load<std::uint32_t>(s + 60) != 0))
    {
      return Status(
        ErrorCode::InvalidArgument, "inspect: damaged header: invalid axis order or predictor");
    }
  }
  for (int a = 0; a < 3; ++a)
  {
    info.axisOrder[a] = scheme.order[a];
  }
  info.cubic = scheme.cubic;
  if (s[6] != 1 && s[6] != 2)
  {
    return Status(ErrorCode::InvalidArgument,
      "inspect: damaged header: unknown value type " + std::to_string(s[6]));
  }
  info.type = static_cast<ValueType>(s[6]);
  // Version 3: raw values (which may be special), or a coded stream with a mask section. Version
  // 4: a coded stream, with a mask section where flag bit 1 says so.
  const std::uint32_t maskBytes = version >= 3 ? format::load<std::uint32_t>(s + 60) : 0;
  const bool maskOk =
    s[7] == format::FlagMask && maskBytes >= format::MaskFixedBytes && maskBytes % 4 == 0;
  const bool flagsOk = version < 3 ? s[7] <= format::FlagRaw
    : version == 3                 ? (s[7] == format::FlagRaw && maskBytes == 0) || maskOk
                                   : (s[7] == 0 && maskBytes == 0) || maskOk;
  if (!flagsOk)
  {
    return Status(ErrorCode::InvalidArgument,
      "inspect: damaged header: unknown flags or an invalid mask section size");
  }
  info.raw = (s[7] & format::FlagRaw) != 0;
  info.maskBytes = maskBytes;
  info.specialVoxels = 0; // the mask section's count, where there is one (info may be reused)
  std::uint64_t voxels = 1;
  for (int a = 0; a < 3; ++a)
  {
    info.dims[a] = format::load<std::uint64_t>(s + 8 + 8 * a);
    if (info.dims[a] < 1 || info.dims[a] > format::MaxVoxels ||
      (voxels *= info.dims[a]) > format::MaxVoxels)
    {
      return Status(ErrorCode::InvalidArgument, "inspect: damaged header: invalid dimensions");
    }
  }
  info.absoluteBound = format::load<double>(s + 32);
  if (!(info.absoluteBound > 0) || !std::isfinite(info.absoluteBound))
  {
    return Status(ErrorCode::InvalidArgument, "inspect: damaged header: invalid error bound");
  }
  if (format::load<std::uint32_t>(s + 40) != static_cast<std::uint32_t>(format::MaxQuant) ||
    format::load<std::uint32_t>(s + 44) != format::ChunkCodes ||
    format::load<std::uint32_t>(s + 48) != format::BlockCodes)
  {
    return Status(ErrorCode::InvalidArgument,
      "inspect: damaged header: unsupported quantiser or chunk parameters");
  }
  const std::uint32_t levels = format::load<std::uint32_t>(s + 52);
  const Plan& plan = headerPlan(info.dims.data(), scheme);
  if ((info.raw && levels != 1) || (!info.raw && levels != static_cast<std::uint32_t>(plan.levels)))
  {
    return Status(ErrorCode::InvalidArgument,
      "inspect: damaged header: " + std::to_string(levels) + " levels do not match the dimensions");
  }
  info.levels = static_cast<int>(levels);
  const std::size_t tablePos = fixedBytes + entryBytes * levels;
  if (bytes < tablePos + 4)
  {
    return need(tablePos + 4, "the level table");
  }
  const std::uint32_t count = format::load<std::uint32_t>(s + tablePos);
  if (count > format::Tokens || (info.raw && count != 0))
  {
    return Status(
      ErrorCode::InvalidArgument, "inspect: damaged header: invalid Huffman table size");
  }
  std::size_t tableBytes = count;
  // The checksum of the bytes before the table, two bytes per operation while the table is read
  // (the hash's steps, like the table's, each wait for the previous one), then of the rest.
  std::uint32_t hash = format::fnv1a(s, 0);
  std::size_t hashed = 0;
  if (version >= 4)
  {
    // Read into the caller's vector (its capacity is reused), handed back whatever the outcome.
    LengthTableRead read;
    if (lengths)
    {
      read.lengths.swap(*lengths);
    }
    const bool tableOk = readLengthTableAlongside(s + tablePos + 4,
      bytes - tablePos - 4,
      count,
      read,
      [&]
      {
        if (hashed + 2 <= tablePos + 4)
        {
          hash = format::fnv1a(s + hashed, 2, hash);
          hashed += 2;
        }
      });
    if (lengths)
    {
      read.lengths.swap(*lengths);
    }
    if (!tableOk)
    {
      // Truncated: the table takes at most a byte per length, so that many bytes suffice.
      return read.truncated
        ? need(headerBytes(static_cast<int>(levels), count, version, maskBytes),
            "the header with its compact code-length table")
        : Status(ErrorCode::InvalidArgument, "inspect: damaged header: " + read.why);
    }
    tableBytes = read.bytes;
  }
  const std::size_t total = headerBytes(static_cast<int>(levels), tableBytes, version, maskBytes);
  if (bytes < total)
  {
    return need(total,
      maskBytes ? "the header with its Huffman table and mask section"
                : "the header with its Huffman table");
  }
  if (format::load<std::uint32_t>(s + total - 4) !=
    format::fnv1a(s + hashed, total - 4 - hashed, hash))
  {
    return Status(ErrorCode::InvalidArgument, "inspect: damaged header: checksum mismatch");
  }
  if (maskBytes)
  {
    Status ms = checkMask(s + total - 4 - maskBytes, maskBytes, info, info.specialVoxels);
    if (!ms)
    {
      return ms;
    }
  }
  info.headerBytes = total;
  if (!readLevels(s + fixedBytes, entryBytes, version, plan, info))
  {
    return Status(ErrorCode::InvalidArgument, "inspect: damaged header: invalid level table");
  }
  if (info.raw && info.levelEnd[0] != total + voxels * valueSize(info.type))
  {
    return Status(ErrorCode::InvalidArgument, "inspect: damaged header: raw size mismatch");
  }
  info.chunks = info.raw ? 0 : plan.chunkBegin[plan.levels];
  if (lengths && version < 4)
  {
    lengths->assign(s + tablePos + 4, s + tablePos + 4 + count);
  }
  if (tableCount)
  {
    *tableCount = count;
  }
  return Status::Ok();
}

} // namespace detail
} // namespace codec
} // namespace sparsegrid
