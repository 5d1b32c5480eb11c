// The codec's stream format and the arithmetic both encoders (CPU and CUDA) and the decoders share.
// Everything here is compiled by the C++ compiler with -ffp-contract=off and by nvcc with
// --fmad=false, so that predictions and reconstructions are bit-identical on both sides.
#ifndef SPARSEGRID_CODEC_FORMAT_H
#define SPARSEGRID_CODEC_FORMAT_H

#include <cmath>
#include <cstdint>
#include <cstring>

#ifdef __CUDACC__
#define SGC_HD __host__ __device__ __forceinline__
#else
#define SGC_HD inline
#endif

namespace sparsegrid
{
namespace codec
{
namespace format
{

constexpr char Magic[4] = { 'S', 'G', 'C', 'Z' };
constexpr std::uint32_t ChunkCodes = 4096; ///< codes per independently coded chunk
constexpr std::uint32_t BlockCodes = 64;   ///< codes per zero-mask bit
constexpr std::uint32_t BlocksPerChunk = ChunkCodes / BlockCodes;
constexpr int MaxQuant = 32767;          ///< largest |q| that is coded; larger ones escape
constexpr std::uint32_t Symbols = 65536; ///< 0: q = 0, 1: escape, zigzag(q) + 1 otherwise
/// Huffman tokens: 0 one zero, 1 escape, 2..64 a run of that many zeros (inside one block),
/// symbol + 63 for the symbols s >= 2 (non-zero q).
constexpr std::uint32_t MaxRun = BlockCodes;
constexpr std::uint32_t TokenShift = MaxRun - 1;
constexpr std::uint32_t Tokens = Symbols + TokenShift;
constexpr int MaxCodeLength = 24;
constexpr int LutBits = 12;
constexpr std::uint16_t EscapeSymbol = 1;
/// Version 1: linear prediction, axes in index order, one quantiser. Version 2 adds the scheme
/// bytes (axis order, predictor) after the version-1 fixed header and a quantiser bound per level.
constexpr std::size_t FixedHeaderBytesV1 = 56;
constexpr std::size_t FixedHeaderBytes = 64;
constexpr std::size_t LevelEntryBytesV1 = 16;
constexpr std::size_t LevelEntryBytes = 24;
/// Version 4: every coded chunk starts with u64 block mask, u32 escapes, u32 words.
constexpr std::size_t ChunkHeaderBytesV4 = 16;
/// Version 5: a coded chunk's size-table entry packs its bytes / 4 (bits 0-15), its escapes (bits
/// 16-28) and whether it starts with its u64 block mask (bit 31; without it every block is coded).
constexpr std::uint32_t EntryWordsMask = 0xffffu;
constexpr std::uint32_t EntryEscapeShift = 16;
constexpr std::uint32_t EntryEscapeMask = 0x1fffu;
constexpr std::uint32_t EntryMaskFlag = 1u << 31;
constexpr std::uint32_t EntryReserved = 3u << 29;
/// Header flags (byte 7): raw values; a mask section before the header's checksum (version 3).
constexpr std::uint8_t FlagRaw = 1;
constexpr std::uint8_t FlagMask = 2;
/// The mask section's fixed part: u64 special voxels, u32 palette entries, u32 program bytes.
constexpr std::size_t MaskFixedBytes = 16;
constexpr std::uint64_t MaxVoxels = std::uint64_t(1) << 40;

/// How a stream predicts: the order in which each level refines the axes, and the interpolant.
/// The encoder picks the order from the data (roughest axis first: the last axis of a level
/// predicts half of its voxels, so it should be the smoothest one).
struct Scheme
{
  int order[3] = { 0, 1, 2 };
  bool cubic = true; ///< cubic (-1, 9, 9, -1) / 16 where four neighbours exist; else linear
  /// Chunk heads in the size table (version 5, what the encoders write; see readChunkHead).
  bool compactChunks = true;
  /// Level-wise quantisation (see levelQuantBound): each level above the finest divides the
  /// bound by `coarseRatio` more, up to `coarseMax`; the stream stores the resulting bounds.
  double coarseRatio = 1.25;
  double coarseMax = 2.0;

  static Scheme linearV1()
  {
    Scheme s;
    s.cubic = false;
    return s;
  }
  /// Every field equal (a plan built for one scheme serves the other).
  bool operator==(const Scheme& o) const
  {
    return order[0] == o.order[0] && order[1] == o.order[1] && order[2] == o.order[2] &&
      cubic == o.cubic && compactChunks == o.compactChunks && coarseRatio == o.coarseRatio &&
      coarseMax == o.coarseMax;
  }
  bool valid() const
  {
    return order[0] >= 0 && order[0] < 3 && order[1] >= 0 && order[1] < 3 && order[2] >= 0 &&
      order[2] < 3 && order[0] != order[1] && order[0] != order[2] && order[1] != order[2];
  }
};

/// One axis-pass of one level: the voxels (start + j * step per axis, j < count) whose codes are
/// consecutive in the stream (axis 0 fastest), each predicted along `axis` from the voxels `gap`
/// before and after it (or copied from the one before at the image's far border). Axis -1: the
/// anchors of level 0, predicted by 0.
struct Pass
{
  int level = 0;
  int axis = -1;
  std::uint64_t gap = 0;
  std::uint64_t start[3] = { 0, 0, 0 };
  std::uint64_t step[3] = { 1, 1, 1 };
  std::uint64_t count[3] = { 0, 0, 0 };
  std::uint64_t codeBegin = 0; ///< first code of the pass, counted from the level's first code
  std::uint64_t size() const { return count[0] * count[1] * count[2]; }
};

/// Level 0 holds the anchors (voxels whose indices are multiples of 2^L); level k >= 1 adds, one
/// axis after the other, the voxels at odd multiples of 2^(L-k) along that axis.
struct Plan
{
  std::uint64_t dims[3] = { 1, 1, 1 };
  int levels = 0;
  std::uint64_t voxels = 0;
  Pass passes[1 + 3 * 64];
  int passCount = 0;
  int levelPassBegin[66] = { 0 };
  std::uint64_t levelCodes[65] = { 0 };
  std::uint64_t levelChunks[65] = { 0 };
  std::uint64_t chunkBegin[66] = { 0 }; ///< first global chunk index of each level
  Scheme scheme;

  void build(const std::uint64_t d[3], const Scheme& scheme = Scheme())
  {
    this->scheme = scheme;
    std::uint64_t maxGap = 0;
    voxels = 1;
    for (int a = 0; a < 3; ++a)
    {
      dims[a] = d[a];
      voxels *= d[a];
      maxGap = d[a] - 1 > maxGap ? d[a] - 1 : maxGap;
    }
    int top = 0;
    while ((std::uint64_t(1) << top) < maxGap)
    {
      ++top;
    }
    if (maxGap >= 1 && top == 0)
    {
      top = 1; // two samples: anchor the first, interpolate (copy) the second
    }
    levels = top + 1;
    passCount = 0;
    Pass anchor;
    anchor.level = 0;
    anchor.axis = -1;
    for (int a = 0; a < 3; ++a)
    {
      anchor.step[a] = std::uint64_t(1) << top;
      anchor.count[a] = (dims[a] - 1) / anchor.step[a] + 1;
    }
    levelPassBegin[0] = 0;
    passes[passCount++] = anchor;
    levelCodes[0] = anchor.size();
    for (int k = 1; k <= top; ++k)
    {
      levelPassBegin[k] = passCount;
      const std::uint64_t s = std::uint64_t(1) << (top - k);
      std::uint64_t code = 0;
      bool refined[3] = { false, false, false };
      for (int t = 0; t < 3; ++t)
      {
        const int axis = scheme.order[t];
        Pass p;
        p.level = k;
        p.axis = axis;
        p.gap = s;
        for (int b = 0; b < 3; ++b)
        {
          if (b == axis)
          {
            p.start[b] = s;
            p.step[b] = 2 * s;
            p.count[b] = dims[b] > s ? (dims[b] - 1 - s) / (2 * s) + 1 : 0;
          }
          else
          {
            p.start[b] = 0;
            p.step[b] = refined[b] ? s : 2 * s;
            p.count[b] = (dims[b] - 1) / p.step[b] + 1;
          }
        }
        refined[axis] = true;
        if (p.size() == 0)
        {
          continue;
        }
        p.codeBegin = code;
        code += p.size();
        passes[passCount++] = p;
      }
      levelCodes[k] = code;
    }
    levelPassBegin[levels] = passCount;
    chunkBegin[0] = 0;
    for (int k = 0; k < levels; ++k)
    {
      levelChunks[k] = (levelCodes[k] + ChunkCodes - 1) / ChunkCodes;
      chunkBegin[k + 1] = chunkBegin[k] + levelChunks[k];
    }
  }

  std::uint64_t voxelIndex(const Pass& p, std::uint64_t local) const
  {
    const std::uint64_t j0 = local % p.count[0];
    const std::uint64_t r = local / p.count[0];
    const std::uint64_t j1 = r % p.count[1];
    const std::uint64_t j2 = r / p.count[1];
    return (p.start[0] + j0 * p.step[0]) +
      dims[0] * ((p.start[1] + j1 * p.step[1]) + dims[1] * (p.start[2] + j2 * p.step[2]));
  }

  /// Voxel of the code at `code` (counted from the first code of level k).
  std::uint64_t voxelOfCode(int k, std::uint64_t code) const
  {
    int pi = levelPassBegin[k];
    while (pi + 1 < levelPassBegin[k + 1] && passes[pi + 1].codeBegin <= code)
    {
      ++pi;
    }
    return voxelIndex(passes[pi], code - passes[pi].codeBegin);
  }
};

/// Quantiser parameters of one stream.
struct Quantiser
{
  double step = 0;    ///< 2 * bound
  double invStep = 0; ///< 1 / step
  double check = 0;   ///< bound shrunk by the rounding of the check itself
};

inline Quantiser makeQuantiser(double bound)
{
  Quantiser q;
  q.step = 2 * bound;
  q.invStep = 1.0 / q.step;
  // |fl(r - x)| <= check implies |r - x| <= bound: one rounding of relative size 2^-53.
  q.check = bound * (1.0 - std::ldexp(1.0, -50));
  return q;
}

/// The prediction of a voxel from its two neighbours along the pass axis (weights 1/2, 1/2) or
/// from the one before it at the far border. Both weights are non-negative and sum to one, and
/// fl(fl(a + b) * 0.5) lies between a and b.
/// The blocks that exist in a chunk of `codes` codes (its level's last chunk may hold fewer than
/// 4096), as a mask.
SGC_HD std::uint64_t blocksMask(std::uint64_t codes)
{
  const std::uint64_t blocks = (codes + BlockCodes - 1) / BlockCodes;
  return blocks >= 64 ? ~std::uint64_t(0) : (std::uint64_t(1) << blocks) - 1;
}

/// Bytes of a coded chunk (version 5) of `codes` codes whose non-zero blocks are `mask`: the mask
/// where some block of the chunk is all zero, the escaped values, the bit stream's 32-bit words.
SGC_HD std::uint64_t codedChunkBytes(std::uint64_t mask,
  std::uint64_t codes,
  std::uint32_t escapes,
  std::uint32_t valueBytes,
  std::uint64_t bits)
{
  return (mask == blocksMask(codes) ? 0 : 8) + std::uint64_t(escapes) * valueBytes +
    4 * ((bits + 31) / 32);
}

/// The size-table entry of a coded chunk (version 5) of `bytes` (codedChunkBytes) bytes.
SGC_HD std::uint32_t chunkEntry(std::uint64_t bytes, std::uint32_t escapes, bool withMask)
{
  return static_cast<std::uint32_t>(bytes / 4) | (escapes << EntryEscapeShift) |
    (withMask ? EntryMaskFlag : 0u);
}

/// Bytes of the chunk a size-table entry describes (0: all its codes are zero).
SGC_HD std::uint64_t chunkBytes(std::uint32_t entry, bool compact)
{
  return compact ? 4 * std::uint64_t(entry & EntryWordsMask) : entry;
}

SGC_HD std::uint32_t load32(const std::uint8_t* p)
{
  return std::uint32_t(p[0]) | (std::uint32_t(p[1]) << 8) | (std::uint32_t(p[2]) << 16) |
    (std::uint32_t(p[3]) << 24);
}

/// A coded chunk as its entry and its first bytes describe it.
struct ChunkHead
{
  std::uint64_t mask = 0;      ///< its non-zero blocks
  std::uint32_t escapes = 0;   ///< escaped values, after the head
  std::uint32_t words = 0;     ///< 32-bit words of bits, after the escaped values
  std::uint32_t headBytes = 0; ///< bytes before the escaped values
};

/// The head of the coded chunk (entry != 0; `compact`: version 5) of `codes` codes at `in`
/// (chunkBytes(entry) bytes, known to lie in the stream). False where the entry and the head
/// disagree (a damaged stream); the block mask is the caller's to check.
SGC_HD bool readChunkHead(const std::uint8_t* in,
  std::uint32_t entry,
  bool compact,
  std::uint64_t codes,
  std::uint32_t valueBytes,
  ChunkHead& h)
{
  const std::uint64_t bytes = chunkBytes(entry, compact);
  if (compact)
  {
    if ((entry & EntryReserved) != 0 || bytes == 0)
    {
      return false;
    }
    h.escapes = (entry >> EntryEscapeShift) & EntryEscapeMask;
    h.headBytes = (entry & EntryMaskFlag) != 0 ? 8 : 0;
  }
  else
  {
    if (bytes < ChunkHeaderBytesV4 || bytes % 4 != 0)
    {
      return false;
    }
    h.escapes = load32(in + 8);
    h.headBytes = ChunkHeaderBytesV4;
  }
  // Checked before the mask is read: the head lies inside the chunk.
  const std::uint64_t fixed = h.headBytes + std::uint64_t(h.escapes) * valueBytes;
  if (h.escapes > codes || fixed > bytes || (bytes - fixed) % 4 != 0)
  {
    return false;
  }
  h.mask = h.headBytes != 0 ? std::uint64_t(load32(in)) | (std::uint64_t(load32(in + 4)) << 32)
                            : blocksMask(codes);
  h.words = static_cast<std::uint32_t>((bytes - fixed) / 4);
  return compact || load32(in + 12) == h.words;
}

template<typename T>
SGC_HD T predictPair(T left, T right)
{
  return (left + right) * T(0.5);
}

/// Cubic interpolation at the midpoint of b and c from a, b, c, d (spacing 2 gap), weights
/// (-1, 9, 9, -1) / 16; exact for cubic polynomials. The weights' absolute values sum to 1.25,
/// which the level bounds account for; the rounding error is below 3.7 u max(|a|, |b|, |c|, |d|).
template<typename T>
SGC_HD T predictCubic(T a, T b, T c, T d)
{
  return (T(9) * (b + c) - (a + d)) * T(0.0625);
}

/// Quadratic interpolation at the midpoint of b and c from b, c and d (spacing 2 gap), weights
/// (3, 6, -1) / 8: the cubic's stand-in next to the near border, where a does not exist (and,
/// mirrored, next to the far border). Absolute weights sum to 1.25; rounding below 3.5 u max |.|.
template<typename T>
SGC_HD T predictQuadratic(T b, T c, T d)
{
  return (T(3) * b + T(6) * c - d) * T(0.125);
}

/// The prediction of the voxel at `idx`, at coordinate i along the pass axis (axis length n,
/// gap g, off = g * the axis's stride in voxels). Linear streams: the mean of the neighbours at
/// -g and +g, or a copy of the one at -g where +g lies beyond the far border. Cubic streams: the
/// cubic where the voxels at -3g and +3g exist too, else the quadratic through the three that do
/// (-g, +g and +3g, or -3g, -g and +g), else as linear streams. Every neighbour is an even
/// multiple of g along the axis, so it was reconstructed at a coarser level or earlier in this
/// one.
template<typename T>
SGC_HD T predictAlong(const T* rec,
  std::uint64_t idx,
  std::uint64_t off,
  std::uint64_t i,
  std::uint64_t g,
  std::uint64_t n,
  bool cubic)
{
  if (i + g >= n)
  {
    return rec[idx - off];
  }
  if (cubic)
  {
    const bool before = i >= 3 * g, after = i + 3 * g < n;
    if (before && after)
    {
      return predictCubic(rec[idx - 3 * off], rec[idx - off], rec[idx + off], rec[idx + 3 * off]);
    }
    if (after)
    {
      return predictQuadratic(rec[idx - off], rec[idx + off], rec[idx + 3 * off]);
    }
    if (before)
    {
      return predictQuadratic(rec[idx + off], rec[idx - off], rec[idx - 3 * off]);
    }
  }
  return predictPair(rec[idx - off], rec[idx + off]);
}

/// The quantiser bound of level k of a stream with `levels` levels and bound `bound`: coarse
/// levels are quantised finer (their values predict everything after them): bound / ratio^j for
/// the level j steps above the finest, at most a factor `cap` (1.25 and 2: SZ3's default
/// level-wise schedule; the encoder tunes both, see Scheme). The finest level, which holds most
/// voxels, keeps the full bound.
inline double levelQuantBound(double bound,
  int levels,
  int k,
  double ratio = 1.25,
  double cap = 2.0)
{
  double divisor = 1.0;
  for (int j = k; j < levels - 1 && divisor < cap; ++j)
  {
    divisor *= ratio;
  }
  return bound / (divisor < cap ? divisor : cap);
}

/// Symbol of a quantised residual: 0 for q = 0, zigzag(q) + 1 otherwise (q > 0 -> 2q, q < 0 ->
/// -2q + 1). Branch-free: on noisy data the sign of q is unpredictable.
SGC_HD std::uint16_t symbolOf(int q)
{
  const std::uint32_t magnitude = static_cast<std::uint32_t>(q < 0 ? -q : q);
  const std::uint32_t zz = 2 * magnitude - (q > 0 ? 1u : 0u);
  return static_cast<std::uint16_t>(zz + (q != 0 ? 1u : 0u));
}

/// Quantises x against its prediction; returns the symbol (0: q = 0, 1: escape, else
/// zigzag(q) + 1) and the value the decoder will reconstruct.
template<typename T>
SGC_HD std::uint16_t quantise(T x, T pred, const Quantiser& qz, T& recon)
{
  const double d = static_cast<double>(x) - static_cast<double>(pred);
  // q = floor(t) with |q| <= MaxQuant, written without floor() (a library call without SSE4.1);
  // NaN and overflow fail the range test and escape.
  const double t = d * qz.invStep + 0.5;
  if (!(t >= -static_cast<double>(MaxQuant) && t < static_cast<double>(MaxQuant) + 1.0))
  {
    recon = x;
    return EscapeSymbol;
  }
  int q = static_cast<int>(t);
  q -= static_cast<double>(q) > t ? 1 : 0;
  const T r = static_cast<T>(static_cast<double>(pred) + static_cast<double>(q) * qz.step);
  if (!(fabs(static_cast<double>(r) - static_cast<double>(x)) <= qz.check))
  {
    recon = x;
    return EscapeSymbol;
  }
  recon = r;
  return symbolOf(q);
}

/// The decoder's side of quantise (symbol != escape).
template<typename T>
SGC_HD T dequantise(std::uint16_t symbol, T pred, const Quantiser& qz)
{
  if (symbol <= EscapeSymbol)
  {
    return pred; // q = 0 (escapes are overwritten afterwards)
  }
  const std::uint32_t zz = static_cast<std::uint32_t>(symbol) - 1;
  const int q = (zz & 1u) ? static_cast<int>((zz + 1) / 2) : -static_cast<int>(zz / 2);
  return static_cast<T>(static_cast<double>(pred) + static_cast<double>(q) * qz.step);
}

/// Splits the codes of one block into tokens, calling emit(token, first code index).
template<typename F>
SGC_HD void tokenize(const std::uint16_t* codes, std::uint32_t n, F&& emit)
{
  std::uint32_t i = 0;
  while (i < n)
  {
    if (codes[i] != 0)
    {
      emit(codes[i] < 2 ? std::uint32_t(codes[i]) : std::uint32_t(codes[i]) + TokenShift, i);
      ++i;
      continue;
    }
    std::uint32_t run = 1;
    while (i + run < n && codes[i + run] == 0)
    {
      ++run;
    }
    emit(run == 1 ? 0u : run, i);
    i += run;
  }
}

/// Bytes of a coded header (versions 2 to 4) with `levels` levels whose code-length table takes
/// `tableBytes` bytes after its count (versions 2-3: one byte per token; version 4: the compact
/// table, lengthTableSegmentBits() / 8 rounded up): the fixed part, the level entries, the count
/// and the table, padded to 4, and the header's checksum (a mask section comes on top). The GPU
/// encoder places its chunks from this on the device.
SGC_HD std::uint64_t codedHeaderBytes(int levels, std::uint64_t tableBytes)
{
  const std::uint64_t n =
    FixedHeaderBytes + LevelEntryBytes * static_cast<std::uint64_t>(levels) + 4 + tableBytes;
  return (n + 3) / 4 * 4 + 4;
}

/// The compact code-length table (version 4): the lengths L[0..n) as a bit sequence of
/// operations, each relative to p, the last non-zero length before (0 at the start):
///   0          L = p (p > 0)
///   10s        L = p + 1 (s = 0) or p - 1 (s = 1)
///   110 G      a run of r >= 1 zero lengths, G = Exp-Golomb code of order 2 of r - 1
///   111 vvvvv  L = v (5 bits, most significant first), |v - p| > 1
/// A zero run always takes the whole run. Bits fill each byte from its least significant bit.
/// Bits of the Exp-Golomb code of order 2 of v: (b - 3) zeros, then the b bits of v + 4.
SGC_HD std::uint32_t expGolomb2Bits(std::uint64_t v)
{
  std::uint64_t m = v + 4;
  std::uint32_t b = 0;
  while (m != 0)
  {
    ++b;
    m >>= 1;
  }
  return 2 * b - 3;
}

/// The low `bits` bits of v in the other order (a field's first bit in bit 0).
SGC_HD std::uint32_t reverseBits(std::uint32_t v, std::uint32_t bits)
{
#ifdef __CUDA_ARCH__
  return bits == 0 ? 0u : __brev(v) >> (32 - bits);
#else
  std::uint32_t r = 0;
  for (std::uint32_t b = 0; b < bits; ++b)
  {
    r |= ((v >> b) & 1u) << (bits - 1 - b);
  }
  return r;
#endif
}

/// The five bits of a length, most significant first, in stream order.
SGC_HD std::uint32_t reversedLength(std::uint32_t v)
{
  return ((v & 1u) << 4) | ((v & 2u) << 2) | (v & 4u) | ((v & 8u) >> 2) | ((v & 16u) >> 4);
}

/// Writes the operations of the compact table for the entries [a, b) of L (the split of
/// lengthTableSegmentBits: `prev` the last non-zero length before a, `next` the first non-zero
/// entry at or after b), each as sink.putReversed(bits in stream order, count), count <= 24.
/// The host writes [0, n) in one call (a one-stream GPU encode's header too); the GPU's brick
/// encoder writes one segment per thread (brickHeadersKernel).
template<typename Sink>
SGC_HD void lengthTableSegmentOps(const std::uint8_t* L,
  std::uint64_t a,
  std::uint64_t b,
  int prev,
  std::uint64_t next,
  Sink& sink)
{
  int p = prev;
  for (std::uint64_t i = a; i < b; ++i)
  {
    const int v = L[i];
    if (v != 0)
    {
      // '0' (the same length), '100' (one more), '101' (one less), '111' and the length in 5
      // bits: selects, not branches (the lengths' steps are irregular).
      const std::uint32_t d = static_cast<std::uint32_t>(v - p + 1);
      const std::uint32_t other = 7u | (reversedLength(static_cast<std::uint32_t>(v)) << 3);
      sink.putReversed(
        d == 1 ? 0u : (d == 2 ? 1u : (d == 0 ? 5u : other)), d == 1 ? 1u : (d <= 2 ? 3u : 8u));
      p = v;
      continue;
    }
    if (i > 0 && L[i - 1] == 0)
    {
      continue; // inside a run that started in an earlier segment
    }
    std::uint64_t end = i + 1;
    while (end < b && L[end] == 0)
    {
      ++end;
    }
    if (end == b)
    {
      end = next;
    }
    // '110', then the Exp-Golomb code of order 2 of the run's length - 1: (w - 3) zeros and the
    // w bits of length + 3.
    const std::uint32_t w = (expGolomb2Bits(end - i - 1) + 3) / 2;
    sink.putReversed(3u, 3u);
    sink.putReversed(0u, w - 3);
    sink.putReversed(reverseBits(static_cast<std::uint32_t>(end - i + 3), w), w);
    i = end - 1;
  }
}

/// The bits the compact table spends on the entries [a, b) of L[0..n): each non-zero entry's
/// operation, and each zero run that starts in [a, b), whole (its length may reach past b).
/// `prev` is the last non-zero length before a (0 if none), `next` the index of the first
/// non-zero entry at or after b (n if none). The host sums [0, n) in one call (prev 0, next n);
/// the GPU encoder splits [0, n) into one segment per thread, so no thread walks more than its
/// segment, whatever the runs. The operations are lengthTableSegmentOps', counted.
SGC_HD std::uint64_t lengthTableSegmentBits(const std::uint8_t* L,
  std::uint64_t a,
  std::uint64_t b,
  int prev,
  std::uint64_t next)
{
  struct Count
  {
    std::uint64_t bits = 0;
    SGC_HD void putReversed(std::uint32_t, std::uint32_t n) { bits += n; }
  } count;
  lengthTableSegmentOps(L, a, b, prev, next, count);
  return count.bits;
}

/// FNV-1a of n bytes; from `h`, the hash of the bytes before them.
SGC_HD std::uint32_t fnv1a(const std::uint8_t* data, std::size_t n, std::uint32_t h = 2166136261u)
{
  for (std::size_t i = 0; i < n; ++i)
  {
    h ^= data[i];
    h *= 16777619u;
  }
  return h;
}

template<typename V>
inline V load(const std::uint8_t* p)
{
  V v;
  std::memcpy(&v, p, sizeof(V));
  return v;
}
template<typename V>
inline void store(std::uint8_t* p, V v)
{
  std::memcpy(p, &v, sizeof(V));
}

} // namespace format
} // namespace codec
} // namespace sparsegrid

#endif
