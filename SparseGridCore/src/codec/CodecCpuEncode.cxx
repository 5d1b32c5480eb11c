// The error-bounded codec's encoder on the CPU: prediction level by level from the
// reconstruction, quantisation with escapes, then canonical Huffman coding in independent chunks
// of 64-code blocks (a block mask per chunk skips the all-zero blocks). The stream is the one the
// CUDA encoder writes, byte for byte.
#include "CodecCpu.h"

#include <atomic>
#include <cmath>
#include <cstring>
#include <mutex>
#include <type_traits>

namespace sparsegrid
{
namespace codec
{
namespace detail
{

namespace
{

/// Atomic maximum of non-negative doubles (their bit patterns order like the values).
void atomicMax(std::atomic<std::uint64_t>& target, double value)
{
  std::uint64_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  std::uint64_t seen = target.load(std::memory_order_relaxed);
  while (seen < bits && !target.compare_exchange_weak(seen, bits, std::memory_order_relaxed))
  {
  }
}

double bitsToDouble(std::uint64_t bits)
{
  double v;
  std::memcpy(&v, &bits, sizeof(v));
  return v;
}

/// 64-bit MSB-first writer into 32-bit little-endian words.
class BitWriter
{
public:
  explicit BitWriter(std::uint8_t* out)
    : Out(out)
  {
  }
  void put(std::uint32_t code, int length)
  {
    this->Acc |= static_cast<std::uint64_t>(code) << (64 - this->Used - length);
    this->Used += length;
    if (this->Used >= 32)
    {
      format::store<std::uint32_t>(this->Out, static_cast<std::uint32_t>(this->Acc >> 32));
      this->Out += 4;
      this->Acc <<= 32;
      this->Used -= 32;
    }
  }
  void flush()
  {
    if (this->Used > 0)
    {
      format::store<std::uint32_t>(this->Out, static_cast<std::uint32_t>(this->Acc >> 32));
      this->Out += 4;
      this->Acc = 0;
      this->Used = 0;
    }
  }

private:
  std::uint8_t* Out;
  std::uint64_t Acc = 0;
  int Used = 0;
};

struct ChunkPlan
{
  std::uint64_t mask = 0;
  std::uint32_t escapes = 0;
  std::uint64_t bits = 0;
  std::uint64_t bytes = 0;
  std::uint64_t offset = 0;
  bool withMask = false; ///< some block of the chunk is all zero: the chunk starts with its mask
};

/// Calls emit(token, code) for the tokens of the blocks of the chunk's codes [begin, end) that
/// `mask` marks as coded (bit k: block k holds a non-zero code), in stream order; `code` is the
/// index in `symbols` of the token's first code. Sizing and writing a chunk walk it alike.
template<typename F>
void forEachCodedToken(const std::uint16_t* symbols,
  std::uint64_t begin,
  std::uint64_t end,
  std::uint64_t mask,
  F&& emit)
{
  for (std::uint64_t b = begin, bit = 0; b < end; b += format::BlockCodes, ++bit)
  {
    if (!((mask >> bit) & 1))
    {
      continue;
    }
    const std::uint64_t blockEnd = std::min<std::uint64_t>(b + format::BlockCodes, end);
    format::tokenize(symbols + b,
      static_cast<std::uint32_t>(blockEnd - b),
      [&](std::uint32_t token, std::uint32_t at) { emit(token, b + at); });
  }
}

/// Codes [begin, end) of chunk c in the level-ordered symbols, and its level.
void chunkRange(const Plan& plan,
  const std::vector<std::uint64_t>& levelCodeBegin,
  std::uint64_t c,
  std::uint64_t& begin,
  std::uint64_t& end,
  int& level)
{
  int k = 0;
  while (plan.chunkBegin[k + 1] <= c)
  {
    ++k;
  }
  level = k;
  begin = levelCodeBegin[k] + (c - plan.chunkBegin[k]) * format::ChunkCodes;
  end = std::min(begin + format::ChunkCodes, levelCodeBegin[k + 1]);
}

/// The input, contiguous, into rec; NonFinite where it holds NaN or Inf.
template<typename T>
Status copyInput(const T* values,
  std::uint64_t stride,
  std::uint64_t voxels,
  T* rec,
  const ExecutionOptions& options)
{
  const std::uint64_t nonFinite = sparsegrid::detail::parallelCount(options,
    voxels,
    1 << 16,
    [&](std::size_t i)
    {
      const T v = values[i * stride];
      rec[i] = v;
      return !std::isfinite(v);
    });
  if (nonFinite > 0)
  {
    std::size_t first = 0;
    while (first < voxels && std::isfinite(rec[first]))
    {
      ++first;
    }
    return Status(ErrorCode::NonFinite,
      "encode: the values hold " + std::to_string(nonFinite) +
        " NaN/Inf value(s), the first at voxel " + std::to_string(first));
  }
  return Status::Ok();
}

/// Every pass in stream order: predicts from the reconstruction in rec, quantises, writes the
/// symbols and the reconstruction; each pass's largest surplus and the largest |value|.
template<typename T>
Status quantisePasses(const Plan& plan,
  const std::vector<Quantiser>& quantisers,
  const format::Scheme& scheme,
  const std::vector<std::uint64_t>& levelCodeBegin,
  T* rec,
  std::uint16_t* symbols,
  std::vector<double>& passSurplus,
  double& maxAbs,
  const ExecutionOptions& options)
{
  std::atomic<std::uint64_t> maxAbsBits{ 0 };
  for (int pi = 0; pi < plan.passCount; ++pi)
  {
    const Pass& p = plan.passes[pi];
    const Quantiser qz = quantisers[static_cast<std::size_t>(p.level)];
    std::uint16_t* sym = symbols + levelCodeBegin[p.level] + p.codeBegin;
    std::atomic<std::uint64_t> surplusBits{ 0 };
    // Per-row maxima are folded into the atomics once per row, not per voxel.
    const std::uint64_t n0 = plan.dims[0];
    const std::uint64_t axisStride[3] = { 1, n0, n0 * plan.dims[1] };
    T* r = rec;
    forEachRow(options,
      plan,
      p,
      [&](std::uint64_t row, std::uint64_t i1, std::uint64_t i2, std::uint64_t base)
      {
        double rowSurplus = 0, rowAbs = 0;
        std::uint16_t* out = sym + row * p.count[0];
        auto code = [&](std::uint64_t idx, T pred, std::uint64_t j0)
        {
          T value;
          out[j0] = format::quantise(r[idx], pred, qz, value);
          r[idx] = value;
          const double s = std::fabs(static_cast<double>(value) - static_cast<double>(pred));
          rowSurplus = s > rowSurplus ? s : rowSurplus;
          const double a = std::fabs(static_cast<double>(value));
          rowAbs = a > rowAbs ? a : rowAbs;
        };
        if (p.axis < 0)
        {
          for (std::uint64_t j0 = 0; j0 < p.count[0]; ++j0)
          {
            code(base + p.start[0] + j0 * p.step[0], T(0), j0);
          }
        }
        else if (p.axis == 0)
        {
          const std::uint64_t off = p.gap;
          for (std::uint64_t j0 = 0; j0 < p.count[0]; ++j0)
          {
            const std::uint64_t i0 = p.start[0] + j0 * p.step[0];
            const std::uint64_t idx = base + i0;
            code(idx, format::predictAlong<T>(r, idx, off, i0, p.gap, n0, scheme.cubic), j0);
          }
        }
        else
        {
          const std::uint64_t off = p.gap * axisStride[p.axis];
          const std::uint64_t ia = p.axis == 1 ? i1 : i2;
          const std::uint64_t na = plan.dims[p.axis];
          for (std::uint64_t j0 = 0; j0 < p.count[0]; ++j0)
          {
            const std::uint64_t idx = base + p.start[0] + j0 * p.step[0];
            code(idx, format::predictAlong<T>(r, idx, off, ia, p.gap, na, scheme.cubic), j0);
          }
        }
        atomicMax(surplusBits, rowSurplus);
        atomicMax(maxAbsBits, rowAbs);
      });
    passSurplus[pi] = bitsToDouble(surplusBits.load());
    if (sparsegrid::detail::aborted(options))
    {
      return sparsegrid::detail::abortedStatus();
    }
    sparsegrid::detail::progress(options, 0.6 * (pi + 1) / plan.passCount);
  }
  maxAbs = bitsToDouble(maxAbsBits.load());
  return Status::Ok();
}

/// Each chunk's block mask (bit k: block k holds a non-zero code) and the histogram of the tokens
/// of its non-zero blocks.
void analyseChunks(const Plan& plan,
  const std::vector<std::uint64_t>& levelCodeBegin,
  const std::uint16_t* symbols,
  std::vector<ChunkPlan>& chunkPlan,
  std::vector<std::uint64_t>& histogram,
  const ExecutionOptions& options)
{
  const std::uint64_t chunks = plan.chunkBegin[plan.levels];
  std::mutex histogramMutex;
  const int threads = std::max(1, sparsegrid::detail::threadCount(options));
  const std::size_t parts =
    static_cast<std::size_t>(std::min<std::uint64_t>(threads, std::max<std::uint64_t>(chunks, 1)));
  sparsegrid::detail::parallelFor(options,
    parts,
    1,
    [&](std::size_t firstPart, std::size_t lastPart)
    {
      for (std::size_t part = firstPart; part < lastPart; ++part)
      {
        thread_local std::vector<std::uint32_t> local;
        local.assign(format::Tokens, 0);
        const std::uint64_t c0 = chunks * part / parts, c1 = chunks * (part + 1) / parts;
        for (std::uint64_t c = c0; c < c1; ++c)
        {
          std::uint64_t begin, end;
          int level;
          chunkRange(plan, levelCodeBegin, c, begin, end, level);
          std::uint64_t mask = 0;
          for (std::uint64_t b = begin, bit = 0; b < end; b += format::BlockCodes, ++bit)
          {
            const std::uint64_t e = std::min<std::uint64_t>(b + format::BlockCodes, end);
            std::uint16_t any = 0;
            for (std::uint64_t i = b; i < e; ++i)
            {
              any |= symbols[i];
            }
            if (any)
            {
              mask |= std::uint64_t(1) << bit;
              format::tokenize(symbols + b,
                static_cast<std::uint32_t>(e - b),
                [&](std::uint32_t token, std::uint32_t) { ++local[token]; });
            }
          }
          chunkPlan[c].mask = mask;
        }
        std::lock_guard<std::mutex> lock(histogramMutex);
        for (std::size_t s = 0; s < local.size(); ++s)
        {
          histogram[s] += local[s];
        }
      }
    });
}

/// Each coded chunk's bits, escapes and bytes with these code lengths; the escapes in all.
template<typename T>
std::uint64_t sizeChunks(const Plan& plan,
  const std::vector<std::uint64_t>& levelCodeBegin,
  const std::uint16_t* symbols,
  const std::vector<std::uint8_t>& lengths,
  std::vector<ChunkPlan>& chunkPlan,
  const ExecutionOptions& options)
{
  std::atomic<std::uint64_t> escapes{ 0 };
  sparsegrid::detail::parallelFor(options,
    static_cast<std::size_t>(plan.chunkBegin[plan.levels]),
    16,
    [&](std::size_t first, std::size_t last)
    {
      std::uint64_t esc = 0;
      for (std::size_t c = first; c < last; ++c)
      {
        ChunkPlan& cp = chunkPlan[c];
        if (cp.mask == 0)
        {
          cp.bytes = 0;
          continue;
        }
        std::uint64_t begin, end;
        int level;
        chunkRange(plan, levelCodeBegin, c, begin, end, level);
        std::uint64_t bits = 0;
        std::uint32_t e = 0;
        forEachCodedToken(symbols,
          begin,
          end,
          cp.mask,
          [&](std::uint32_t token, std::uint64_t)
          {
            bits += lengths[token];
            e += token == format::EscapeSymbol ? 1 : 0;
          });
        cp.bits = bits;
        cp.escapes = e;
        cp.withMask = cp.mask != format::blocksMask(end - begin);
        cp.bytes = format::codedChunkBytes(cp.mask, end - begin, e, sizeof(T), bits);
        esc += e;
      }
      escapes += esc;
    });
  return escapes.load();
}

/// Every coded chunk at its offset in `base`: its header, escaped values and bit stream.
template<typename T>
void writeChunks(const Plan& plan,
  const std::vector<std::uint64_t>& levelCodeBegin,
  const std::uint16_t* symbols,
  const T* rec,
  const detail::HuffmanTable& table,
  const std::vector<ChunkPlan>& chunkPlan,
  std::uint8_t* base,
  const ExecutionOptions& options)
{
  const std::vector<std::uint8_t>& lengths = table.lengths;
  const std::vector<std::uint32_t>& codes = table.codes;
  sparsegrid::detail::parallelFor(options,
    static_cast<std::size_t>(plan.chunkBegin[plan.levels]),
    16,
    [&](std::size_t first, std::size_t last)
    {
      for (std::size_t c = first; c < last; ++c)
      {
        const ChunkPlan& cp = chunkPlan[c];
        if (cp.bytes == 0)
        {
          continue;
        }
        std::uint64_t begin, end;
        int level;
        chunkRange(plan, levelCodeBegin, c, begin, end, level);
        std::uint8_t* out = base + cp.offset;
        if (cp.withMask)
        {
          format::store<std::uint64_t>(out, cp.mask);
        }
        std::uint8_t* escOut = out + (cp.withMask ? 8 : 0);
        BitWriter writer(escOut + std::size_t(cp.escapes) * sizeof(T));
        forEachCodedToken(symbols,
          begin,
          end,
          cp.mask,
          [&](std::uint32_t token, std::uint64_t code)
          {
            writer.put(codes[token], lengths[token]);
            if (token == format::EscapeSymbol)
            {
              // Escaped voxels were reconstructed as their exact value.
              format::store<T>(escOut, rec[plan.voxelOfCode(level, code - levelCodeBegin[level])]);
              escOut += sizeof(T);
            }
          });
        writer.flush();
      }
    });
}

} // namespace

template<typename T>
Status encodeCPU(const EncodeRequest<T>& request, const ExecutionOptions& options)
{
  const T* values = request.hostValues;
  const Layout& layout = request.layout;
  const format::Scheme& scheme = request.scheme;
  const double bound = request.bound;
  std::vector<std::uint8_t>& stream = *request.stream;
  EncodeStatistics& stats = *request.statistics;
  CodingPlan setup;
  Status st = makeEncodePlan(layout, scheme, bound, setup);
  if (!st)
  {
    return st;
  }
  const std::uint64_t voxels = setup.voxels;
  const Plan& plan = setup.plan;
  st = sparsegrid::checkAllocation(voxels * (sizeof(T) + 2), "the codec's work buffers");
  if (!st)
  {
    return st;
  }
  CpuWorkspace& workspace = cpuWorkspace();
  T* rec = scratch<T>(workspace.values, workspace.valueBytes, voxels);
  const std::uint64_t stride = layout.stride;
  if (!(st = copyInput(values, stride, voxels, rec, options)))
  {
    return st;
  }
  if (sparsegrid::detail::aborted(options))
  {
    return sparsegrid::detail::abortedStatus();
  }

  std::vector<std::uint64_t> levelCodeBegin(static_cast<std::size_t>(plan.levels) + 1, 0);
  for (int k = 0; k < plan.levels; ++k)
  {
    levelCodeBegin[k + 1] = levelCodeBegin[k] + plan.levelCodes[k];
  }
  std::uint16_t* symbols = scratch<std::uint16_t>(workspace.symbols, workspace.symbolBytes, voxels);
  std::vector<double> passSurplus(static_cast<std::size_t>(plan.passCount), 0.0);
  double maxAbs = 0;
  if (!(st = quantisePasses(plan,
          setup.quantisers,
          scheme,
          levelCodeBegin,
          rec,
          symbols,
          passSurplus,
          maxAbs,
          options)))
  {
    return st;
  }

  // Histogram of the symbols in non-zero blocks, and each chunk's block mask.
  const std::uint64_t chunks = plan.chunkBegin[plan.levels];
  // Reused between calls (see CpuWorkspace): fresh large vectors page-fault on every call.
  // (Named through local references: lambdas running on pool threads must see these objects,
  // not their own thread's instances.)
  thread_local std::vector<ChunkPlan> chunkPlanStore;
  thread_local std::vector<std::uint64_t> histogramStore;
  std::vector<ChunkPlan>& chunkPlan = chunkPlanStore;
  std::vector<std::uint64_t>& histogram = histogramStore;
  chunkPlan.assign(static_cast<std::size_t>(chunks), ChunkPlan());
  histogram.assign(format::Tokens, 0);
  analyseChunks(plan, levelCodeBegin, symbols, chunkPlan, histogram, options);
  const HuffmanTable table = huffmanTable(histogram);
  const std::size_t tableCount = table.count;
  stats.huffmanSymbols = table.symbols;

  // Chunk sizes, then offsets, then the payloads written in place.
  stats.escapes = sizeChunks<T>(plan, levelCodeBegin, symbols, table.lengths, chunkPlan, options);
  stats.chunks = chunks;
  stats.zeroChunks = 0;

  HeaderFields h = codedHeader(valueTypeOf<T>(), plan, bound, table);
  const std::size_t header =
    headerBytes(plan.levels, lengthTableBytes(table.lengths.data(), tableCount));
  std::uint64_t total = header;
  h.levelEnd.resize(static_cast<std::size_t>(plan.levels));
  for (int k = 0; k < plan.levels; ++k)
  {
    total += 4 * plan.levelChunks[k];
    for (std::uint64_t c = plan.chunkBegin[k]; c < plan.chunkBegin[k + 1]; ++c)
    {
      chunkPlan[c].offset = total;
      total += chunkPlan[c].bytes;
      stats.zeroChunks += chunkPlan[c].bytes == 0 ? 1 : 0;
    }
    h.levelEnd[k] = total;
  }
  const std::uint64_t rawTotal = headerBytes(1, 0) + voxels * sizeof(T);
  if (total >= rawTotal)
  {
    // Coding does not pay (noise, or a bound near the type's resolution): store the input.
    // rec now holds the reconstruction, so refill it from the input first.
    for (std::uint64_t i = 0; i < voxels; ++i)
    {
      rec[i] = values[i * stride];
    }
    writeRaw(rec, plan.dims, bound, stream);
    stats.raw = true;
    return Status::Ok();
  }
  stats.raw = false;
  h.levelBound = levelBounds(plan,
    passSurplus,
    bound,
    maxAbs,
    std::is_same<T, float>::value ? std::ldexp(1.0, -24) : std::ldexp(1.0, -53));
  // Every byte is written below; resize() on a reused vector costs nothing.
  stream.resize(static_cast<std::size_t>(total));
  writeHeader(h, stream.data());
  std::uint8_t* base = stream.data();
  for (int k = 0; k < plan.levels; ++k)
  {
    std::uint8_t* sizes = base + (k == 0 ? header : h.levelEnd[k - 1]);
    for (std::uint64_t c = plan.chunkBegin[k]; c < plan.chunkBegin[k + 1]; ++c)
    {
      const ChunkPlan& cp = chunkPlan[c];
      format::store<std::uint32_t>(sizes + 4 * (c - plan.chunkBegin[k]),
        cp.bytes == 0 ? 0u : format::chunkEntry(cp.bytes, cp.escapes, cp.withMask));
    }
  }
  writeChunks(plan, levelCodeBegin, symbols, rec, table, chunkPlan, base, options);
  sparsegrid::detail::progress(options, 1.0);
  return Status::Ok();
}

template Status encodeCPU<float>(const EncodeRequest<float>&, const ExecutionOptions&);
template Status encodeCPU<double>(const EncodeRequest<double>&, const ExecutionOptions&);

} // namespace detail
} // namespace codec
} // namespace sparsegrid
