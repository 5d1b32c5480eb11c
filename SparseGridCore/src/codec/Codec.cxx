// The error-bounded codec on the CPU: prediction level by level, quantisation, canonical Huffman
// coding in independent chunks; header writing and parsing shared with the CUDA encoder.
// Compiled with -ffp-contract=off: the decoder must repeat the encoder's arithmetic exactly, and
// the CUDA encoder (--fmad=false) must produce the same bytes.
#include "CodecInternal.h"

#include "../Internal.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <type_traits>

namespace sparsegrid
{
namespace codec
{

using format::Pass;
using format::Plan;
using format::Quantiser;

namespace
{

template<typename T>
constexpr ValueType valueTypeOf()
{
  return std::is_same<T, float>::value ? ValueType::Float32 : ValueType::Float64;
}

std::size_t valueSize(ValueType t)
{
  return t == ValueType::Float32 ? 4 : 8;
}

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

/// Runs one pass over the rows of its voxels: f(index, left, right-or-left, code position).
/// The grain keeps a task at about 16 k voxels.
template<typename F>
void forEachRow(const ExecutionOptions& options, const Plan& plan, const Pass& p, F&& rowBody)
{
  const std::uint64_t rows = p.count[1] * p.count[2];
  const std::size_t grain = static_cast<std::size_t>(
    std::max<std::uint64_t>(1, 16384 / std::max<std::uint64_t>(1, p.count[0])));
  sparsegrid::detail::parallelFor(options,
    static_cast<std::size_t>(rows),
    grain,
    [&](std::size_t first, std::size_t last)
    {
      for (std::size_t r = first; r < last; ++r)
      {
        const std::uint64_t j1 = r % p.count[1];
        const std::uint64_t j2 = r / p.count[1];
        const std::uint64_t i1 = p.start[1] + j1 * p.step[1];
        const std::uint64_t i2 = p.start[2] + j2 * p.step[2];
        rowBody(r, i1, i2, plan.dims[0] * (i1 + plan.dims[1] * i2));
      }
    });
}

/// Applies `point(index, pred, codeIndexInPass)` to every voxel of a pass, with the prediction
/// computed from the (already reconstructed) values in rec. Returns nothing; the callback writes.
template<typename T, typename Point>
void runPass(const ExecutionOptions& options,
  const Plan& plan,
  const Pass& p,
  bool cubic,
  const T* rec,
  Point&& point)
{
  const std::uint64_t n0 = plan.dims[0];
  const std::uint64_t axisStride[3] = { 1, n0, n0 * plan.dims[1] };
  forEachRow(options,
    plan,
    p,
    [&](std::uint64_t row, std::uint64_t i1, std::uint64_t i2, std::uint64_t base)
    {
      const std::uint64_t codeRow = row * p.count[0];
      if (p.axis < 0)
      {
        for (std::uint64_t j0 = 0; j0 < p.count[0]; ++j0)
        {
          point(base + p.start[0] + j0 * p.step[0], T(0), codeRow + j0);
        }
        return;
      }
      const std::uint64_t off = p.gap * axisStride[p.axis];
      if (p.axis == 0)
      {
        for (std::uint64_t j0 = 0; j0 < p.count[0]; ++j0)
        {
          const std::uint64_t i0 = p.start[0] + j0 * p.step[0];
          const std::uint64_t idx = base + i0;
          point(idx, format::predictAlong(rec, idx, off, i0, p.gap, n0, cubic), codeRow + j0);
        }
        return;
      }
      const std::uint64_t ia = p.axis == 1 ? i1 : i2;
      const std::uint64_t na = plan.dims[p.axis];
      for (std::uint64_t j0 = 0; j0 < p.count[0]; ++j0)
      {
        const std::uint64_t idx = base + p.start[0] + j0 * p.step[0];
        point(idx, format::predictAlong(rec, idx, off, ia, p.gap, na, cubic), codeRow + j0);
      }
    });
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

/// Reader matching BitWriter; never reads past `words` (zeros beyond, and overrun() says so).
class BitReader
{
public:
  BitReader(const std::uint8_t* words, std::uint32_t count)
    : Words(words)
    , Count(count)
  {
    this->refill();
  }
  std::uint32_t peek(int n) const { return static_cast<std::uint32_t>(this->Acc >> (64 - n)); }
  void consume(int n)
  {
    this->Acc <<= n;
    this->Avail -= n;
    this->Consumed += static_cast<std::uint64_t>(n);
    if (this->Avail < 32)
    {
      this->refill();
    }
  }
  std::uint64_t consumed() const { return this->Consumed; }

private:
  void refill()
  {
    const std::uint32_t w = this->Next < this->Count
      ? format::load<std::uint32_t>(this->Words + 4 * std::size_t(this->Next))
      : 0;
    ++this->Next;
    this->Acc |= static_cast<std::uint64_t>(w) << (32 - this->Avail);
    this->Avail += 32;
  }
  const std::uint8_t* Words;
  std::uint32_t Count;
  std::uint32_t Next = 0;
  std::uint64_t Acc = 0;
  int Avail = 0;
  std::uint64_t Consumed = 0;
};

/// Work buffers kept per calling thread between calls: first-touch page faults of freshly
/// allocated buffers cost more than the coding itself on virtual machines. Not zero-filled.
struct Workspace
{
  std::unique_ptr<std::uint8_t[]> values, symbols;
  std::size_t valueBytes = 0, symbolBytes = 0;
};
thread_local Workspace workspace;

template<typename X>
X* scratch(std::unique_ptr<std::uint8_t[]>& buffer, std::size_t& capacity, std::uint64_t count)
{
  const std::size_t bytes = static_cast<std::size_t>(count * sizeof(X));
  if (capacity < bytes || !buffer)
  {
    buffer.reset();
    buffer.reset(new std::uint8_t[std::max<std::size_t>(bytes, 1)]);
    capacity = bytes;
  }
  return reinterpret_cast<X*>(buffer.get());
}

std::string describeChunk(int level, std::uint64_t chunk)
{
  return "level " + std::to_string(level) + ", chunk " + std::to_string(chunk);
}

//------------------------------------------------------------------------------------------------
// Encoder
//------------------------------------------------------------------------------------------------
struct ChunkPlan
{
  std::uint64_t mask = 0;
  std::uint32_t escapes = 0;
  std::uint64_t bits = 0;
  std::uint64_t bytes = 0;
  std::uint64_t offset = 0;
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

template<typename T>
Status encodeCPU(const T* values,
  const Layout& layout,
  const format::Scheme& scheme,
  double bound,
  std::vector<std::uint8_t>& stream,
  EncodeStatistics& stats,
  const ExecutionOptions& options)
{
  detail::CodingPlan setup;
  Status st = detail::makeEncodePlan(layout, scheme, bound, setup);
  if (!st)
  {
    return st;
  }
  const std::uint64_t voxels = setup.voxels;
  const Plan& plan = setup.plan;
  const std::vector<Quantiser>& quantisers = setup.quantisers;
  st = sparsegrid::checkAllocation(voxels * (sizeof(T) + 2), "the codec's work buffers");
  if (!st)
  {
    return st;
  }
  T* rec = scratch<T>(workspace.values, workspace.valueBytes, voxels);
  std::atomic<std::uint64_t> nonFinite{ 0 };
  const std::uint64_t stride = layout.stride;
  sparsegrid::detail::parallelFor(options,
    static_cast<std::size_t>(voxels),
    1 << 16,
    [&](std::size_t first, std::size_t last)
    {
      std::uint64_t bad = 0;
      for (std::size_t i = first; i < last; ++i)
      {
        const T v = values[i * stride];
        rec[i] = v;
        bad += std::isfinite(v) ? 0 : 1;
      }
      if (bad)
      {
        nonFinite += bad;
      }
    });
  if (nonFinite.load() > 0)
  {
    std::size_t first = 0;
    while (first < voxels && std::isfinite(rec[first]))
    {
      ++first;
    }
    return Status(ErrorCode::NonFinite,
      "encode: the values hold " + std::to_string(nonFinite.load()) +
        " NaN/Inf value(s), the first at voxel " + std::to_string(first));
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

  // Histogram of the symbols in non-zero blocks, and each chunk's block mask.
  const std::uint64_t chunks = plan.chunkBegin[plan.levels];
  // Reused between calls (see Workspace): fresh large vectors page-fault on every call.
  // (Named through local references: lambdas running on pool threads must see these objects,
  // not their own thread's instances.)
  thread_local std::vector<ChunkPlan> chunkPlanStore;
  thread_local std::vector<std::uint64_t> histogramStore;
  std::vector<ChunkPlan>& chunkPlan = chunkPlanStore;
  std::vector<std::uint64_t>& histogram = histogramStore;
  chunkPlan.assign(static_cast<std::size_t>(chunks), ChunkPlan());
  histogram.assign(format::Tokens, 0);
  std::mutex histogramMutex;
  const int threads = std::max(1, sparsegrid::detail::threadCount(options));
  auto chunkRange = [&](std::uint64_t c, std::uint64_t& begin, std::uint64_t& end, int& level)
  {
    int k = 0;
    while (plan.chunkBegin[k + 1] <= c)
    {
      ++k;
    }
    level = k;
    begin = levelCodeBegin[k] + (c - plan.chunkBegin[k]) * format::ChunkCodes;
    end = std::min(begin + format::ChunkCodes, levelCodeBegin[k + 1]);
  };
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
          chunkRange(c, begin, end, level);
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
  const detail::HuffmanTable table = detail::huffmanTable(histogram);
  const std::vector<std::uint8_t>& lengths = table.lengths;
  const std::vector<std::uint32_t>& codes = table.codes;
  const std::size_t tableCount = table.count;
  stats.huffmanSymbols = table.symbols;

  // Chunk sizes, then offsets, then the payloads written in place.
  std::atomic<std::uint64_t> escapes{ 0 };
  sparsegrid::detail::parallelFor(options,
    static_cast<std::size_t>(chunks),
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
        chunkRange(c, begin, end, level);
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
        cp.bytes = format::ChunkHeaderBytes + std::uint64_t(e) * sizeof(T) + 4 * ((bits + 31) / 32);
        esc += e;
      }
      escapes += esc;
    });
  stats.escapes = escapes.load();
  stats.chunks = chunks;
  stats.zeroChunks = 0;

  detail::HeaderFields h = detail::codedHeader(valueTypeOf<T>(), plan, bound, table);
  const std::size_t header = detail::headerBytes(plan.levels, tableCount);
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
  const std::uint64_t rawTotal = detail::headerBytes(1, 0) + voxels * sizeof(T);
  if (total >= rawTotal)
  {
    // Coding does not pay (noise, or a bound near the type's resolution): store the input.
    // rec now holds the reconstruction, so refill it from the input first.
    for (std::uint64_t i = 0; i < voxels; ++i)
    {
      rec[i] = values[i * stride];
    }
    detail::writeRaw(rec, plan.dims, bound, stream);
    stats.raw = true;
    return Status::Ok();
  }
  stats.raw = false;
  h.levelBound = detail::levelBounds(plan,
    passSurplus,
    bound,
    bitsToDouble(maxAbsBits.load()),
    std::is_same<T, float>::value ? std::ldexp(1.0, -24) : std::ldexp(1.0, -53));
  // Every byte is written below; resize() on a reused vector costs nothing.
  stream.resize(static_cast<std::size_t>(total));
  detail::writeHeader(h, stream.data());
  std::uint8_t* base = stream.data();
  for (int k = 0; k < plan.levels; ++k)
  {
    std::uint8_t* table = base + (k == 0 ? header : h.levelEnd[k - 1]);
    for (std::uint64_t c = plan.chunkBegin[k]; c < plan.chunkBegin[k + 1]; ++c)
    {
      format::store<std::uint32_t>(
        table + 4 * (c - plan.chunkBegin[k]), static_cast<std::uint32_t>(chunkPlan[c].bytes));
    }
  }
  sparsegrid::detail::parallelFor(options,
    static_cast<std::size_t>(chunks),
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
        chunkRange(c, begin, end, level);
        std::uint8_t* out = base + cp.offset;
        format::store<std::uint64_t>(out, cp.mask);
        format::store<std::uint32_t>(out + 8, cp.escapes);
        format::store<std::uint32_t>(out + 12, static_cast<std::uint32_t>((cp.bits + 31) / 32));
        std::uint8_t* escOut = out + format::ChunkHeaderBytes;
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
  sparsegrid::detail::progress(options, 1.0);
  return Status::Ok();
}

//------------------------------------------------------------------------------------------------
// Decoder
//------------------------------------------------------------------------------------------------
template<typename S>
Status decodeCPU(const std::uint8_t* stream,
  std::size_t bytes,
  int lod,
  const StreamInfo& info,
  const std::uint8_t* lengths,
  std::size_t tableCount,
  S* rec,
  const ExecutionOptions& options)
{
  detail::CodingPlan setup;
  detail::makeDecodePlan(info, setup);
  const Plan& plan = setup.plan;
  const std::vector<Quantiser>& quantisers = setup.quantisers;
  huffman::Decoder dec;
  std::string why;
  if (!dec.build(lengths, tableCount, why))
  {
    return Status(ErrorCode::InvalidArgument, "decode: damaged stream: " + why);
  }
  std::uint64_t largest = 0;
  for (int k = 0; k < plan.levels; ++k)
  {
    largest = std::max(largest, plan.levelCodes[k]);
  }
  std::uint16_t* symbols =
    scratch<std::uint16_t>(workspace.symbols, workspace.symbolBytes, largest);
  std::vector<std::uint64_t> chunkOffset, escBase;
  std::vector<std::uint64_t> escCode;
  std::vector<S> escValue;
  for (int k = 0; k < plan.levels; ++k)
  {
    const bool coded = k <= lod;
    escCode.clear();
    escValue.clear();
    if (coded)
    {
      const std::uint64_t sectionBegin = k == 0 ? info.headerBytes : info.levelEnd[k - 1];
      const std::uint64_t sectionEnd = info.levelEnd[k];
      const std::uint64_t nChunks = plan.levelChunks[k];
      if (sectionEnd > bytes || sectionEnd < sectionBegin ||
        sectionEnd - sectionBegin < 4 * nChunks)
      {
        return Status(ErrorCode::InvalidArgument,
          "decode: damaged stream: level " + std::to_string(k) + " section is too short");
      }
      chunkOffset.assign(static_cast<std::size_t>(nChunks) + 1, 0);
      escBase.assign(static_cast<std::size_t>(nChunks) + 1, 0);
      std::uint64_t at = sectionBegin + 4 * nChunks;
      for (std::uint64_t c = 0; c < nChunks; ++c)
      {
        const std::uint32_t size = format::load<std::uint32_t>(stream + sectionBegin + 4 * c);
        chunkOffset[c] = at;
        std::uint32_t esc = 0;
        if (size != 0)
        {
          if (size < format::ChunkHeaderBytes || size % 4 != 0 || at + size > sectionEnd)
          {
            return Status(ErrorCode::InvalidArgument,
              "decode: damaged stream: bad size " + std::to_string(size) + " of " +
                describeChunk(k, c));
          }
          esc = format::load<std::uint32_t>(stream + at + 8);
          const std::uint32_t words = format::load<std::uint32_t>(stream + at + 12);
          if (esc > format::ChunkCodes ||
            format::ChunkHeaderBytes + std::uint64_t(esc) * sizeof(S) + 4 * std::uint64_t(words) !=
              size)
          {
            return Status(ErrorCode::InvalidArgument,
              "decode: damaged stream: inconsistent header of " + describeChunk(k, c));
          }
        }
        at += size;
        escBase[c + 1] = escBase[c] + esc;
      }
      chunkOffset[nChunks] = at;
      if (at != sectionEnd)
      {
        return Status(ErrorCode::InvalidArgument,
          "decode: damaged stream: the chunks of level " + std::to_string(k) +
            " do not fill its section");
      }
      escCode.resize(static_cast<std::size_t>(escBase[nChunks]));
      escValue.resize(static_cast<std::size_t>(escBase[nChunks]));
      std::atomic<bool> failed{ false };
      std::mutex errorMutex;
      std::string error;
      const std::uint64_t levelCodes = plan.levelCodes[k];
      sparsegrid::detail::parallelFor(options,
        static_cast<std::size_t>(nChunks),
        8,
        [&](std::size_t first, std::size_t last)
        {
          for (std::size_t c = first; c < last && !failed.load(std::memory_order_relaxed); ++c)
          {
            const std::uint64_t begin = c * format::ChunkCodes;
            const std::uint64_t end =
              std::min<std::uint64_t>(begin + format::ChunkCodes, levelCodes);
            std::uint16_t* out = symbols + begin;
            const std::uint64_t size = chunkOffset[c + 1] - chunkOffset[c];
            if (size == 0)
            {
              std::fill(out, out + (end - begin), std::uint16_t(0));
              continue;
            }
            const std::uint8_t* in = stream + chunkOffset[c];
            const std::uint64_t mask = format::load<std::uint64_t>(in);
            const std::uint32_t esc = format::load<std::uint32_t>(in + 8);
            const std::uint32_t words = format::load<std::uint32_t>(in + 12);
            const std::uint64_t blocks =
              (end - begin + format::BlockCodes - 1) / format::BlockCodes;
            auto fail = [&](const std::string& what)
            {
              std::lock_guard<std::mutex> lock(errorMutex);
              if (!failed.exchange(true))
              {
                error = "decode: damaged stream: " + what + " in " + describeChunk(k, c);
              }
            };
            if (mask == 0 || (blocks < 64 && (mask >> blocks) != 0))
            {
              fail("an invalid block mask");
              continue;
            }
            const std::uint8_t* escIn = in + format::ChunkHeaderBytes;
            BitReader reader(escIn + std::size_t(esc) * sizeof(S), words);
            std::uint32_t seenEsc = 0;
            bool bad = false;
            for (std::uint64_t b = 0; b < blocks && !bad; ++b)
            {
              const std::uint64_t bb = begin + b * format::BlockCodes;
              const std::uint64_t be = std::min<std::uint64_t>(bb + format::BlockCodes, end);
              if (!((mask >> b) & 1))
              {
                std::fill(symbols + bb, symbols + be, std::uint16_t(0));
                continue;
              }
              for (std::uint64_t i = bb; i < be;)
              {
                const std::uint32_t e = dec.lut[reader.peek(format::LutBits)];
                std::uint32_t token;
                if (e != 0)
                {
                  token = e >> 8;
                  reader.consume(static_cast<int>(e & 0xff));
                }
                else
                {
                  int l = format::LutBits + 1;
                  for (; l <= dec.maxLength; ++l)
                  {
                    const std::uint32_t code = reader.peek(l);
                    if (code - dec.firstCode[l] < dec.countOf[l])
                    {
                      break;
                    }
                  }
                  if (l > dec.maxLength)
                  {
                    bad = true;
                    break;
                  }
                  token = dec.sorted[dec.firstIndex[l] + (reader.peek(l) - dec.firstCode[l])];
                  reader.consume(l);
                }
                if (token == 0)
                {
                  symbols[i++] = 0;
                }
                else if (token <= format::MaxRun && token != format::EscapeSymbol)
                {
                  if (i + token > be)
                  {
                    bad = true;
                    break;
                  }
                  std::fill(symbols + i, symbols + i + token, std::uint16_t(0));
                  i += token;
                }
                else if (token == format::EscapeSymbol)
                {
                  if (seenEsc >= esc)
                  {
                    bad = true;
                    break;
                  }
                  symbols[i] = format::EscapeSymbol;
                  const std::size_t slot = static_cast<std::size_t>(escBase[c] + seenEsc);
                  escCode[slot] = i;
                  escValue[slot] = format::load<S>(escIn + std::size_t(seenEsc) * sizeof(S));
                  ++seenEsc;
                  ++i;
                }
                else
                {
                  symbols[i++] = static_cast<std::uint16_t>(token - format::TokenShift);
                }
              }
            }
            if (bad)
            {
              fail("an invalid Huffman code or too many escapes");
              continue;
            }
            if (seenEsc != esc || (reader.consumed() + 31) / 32 != words)
            {
              fail("a bit stream whose length does not match its header");
              continue;
            }
          }
        });
      if (failed.load())
      {
        return Status(ErrorCode::InvalidArgument, error);
      }
      for (const S& v : escValue)
      {
        if (!std::isfinite(v))
        {
          return Status(ErrorCode::InvalidArgument,
            "decode: damaged stream: a stored value of level " + std::to_string(k) +
              " is NaN or Inf");
        }
      }
    }
    for (int pi = plan.levelPassBegin[k]; pi < plan.levelPassBegin[k + 1]; ++pi)
    {
      const Pass& p = plan.passes[pi];
      const std::uint16_t* sym = symbols + p.codeBegin;
      const Quantiser qz = quantisers[static_cast<std::size_t>(k)];
      if (coded)
      {
        runPass<S>(options,
          plan,
          p,
          plan.scheme.cubic,
          rec,
          [&](std::uint64_t idx, S pred, std::uint64_t j)
          { rec[idx] = format::dequantise<S>(sym[j], pred, qz); });
      }
      else
      {
        runPass<S>(options,
          plan,
          p,
          plan.scheme.cubic,
          rec,
          [&](std::uint64_t idx, S pred, std::uint64_t) { rec[idx] = pred; });
      }
      // Escapes of this pass: their codes are sorted, so they form one run.
      auto lo = std::lower_bound(escCode.begin(), escCode.end(), p.codeBegin);
      auto hi = std::lower_bound(escCode.begin(), escCode.end(), p.codeBegin + p.size());
      for (auto it = lo; it != hi; ++it)
      {
        rec[plan.voxelIndex(p, *it - p.codeBegin)] =
          escValue[static_cast<std::size_t>(it - escCode.begin())];
      }
    }
    if (sparsegrid::detail::aborted(options))
    {
      return sparsegrid::detail::abortedStatus();
    }
    sparsegrid::detail::progress(options, double(k + 1) / plan.levels);
  }
  return Status::Ok();
}

template<typename T>
Status checkBound(double bound)
{
  if (!(bound > 0) || !std::isfinite(bound))
  {
    return Status(ErrorCode::InvalidArgument,
      "encode: the absolute error bound must be positive and finite (got " + std::to_string(bound) +
        ")");
  }
  return Status::Ok();
}

} // namespace

//------------------------------------------------------------------------------------------------
// Shared host-side helpers
//------------------------------------------------------------------------------------------------
namespace detail
{

std::size_t headerBytes(int levels, std::size_t tableCount, int version)
{
  if (version != 1)
  {
    return static_cast<std::size_t>(format::headerBytesV2(levels, tableCount));
  }
  std::size_t n = format::FixedHeaderBytesV1 +
    format::LevelEntryBytesV1 * static_cast<std::size_t>(levels) + 4 + tableCount;
  n = (n + 3) / 4 * 4;
  return n + 4;
}

void writeHeader(const HeaderFields& h, std::uint8_t* out)
{
  const std::size_t total = headerBytes(h.levels, h.lengths.size());
  std::memset(out, 0, total);
  std::memcpy(out, format::Magic, 4);
  format::store<std::uint16_t>(out + 4, static_cast<std::uint16_t>(codecVersion));
  out[6] = static_cast<std::uint8_t>(h.type);
  out[7] = h.raw ? 1 : 0;
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
  out[59] = h.scheme.cubic ? 1 : 0; // bytes 60..63 stay zero (reserved)
  std::uint8_t* p = out + format::FixedHeaderBytes;
  for (int k = 0; k < h.levels; ++k)
  {
    format::store<std::uint64_t>(p, h.levelEnd[k]);
    format::store<double>(p + 8, h.levelBound[k]);
    format::store<double>(p + 16, format::levelQuantBound(h.bound, h.levels, k));
    p += format::LevelEntryBytes;
  }
  format::store<std::uint32_t>(p, static_cast<std::uint32_t>(h.lengths.size()));
  p += 4;
  if (!h.lengths.empty())
  {
    std::memcpy(p, h.lengths.data(), h.lengths.size());
  }
  format::store<std::uint32_t>(out + total - 4, format::fnv1a(out, total - 4));
}

namespace
{
/// Version 2 stores the anchors (level 0, predicted by 0) exactly: quantised, their large codes
/// would stretch the stream's one Huffman table over thousands of symbols that occur once (most
/// of a small stream's bytes). A NaN step fails quantise()'s range test, i.e. always escapes.
format::Quantiser anchorQuantiser(double bound)
{
  format::Quantiser q = format::makeQuantiser(bound);
  q.invStep = std::numeric_limits<double>::quiet_NaN();
  return q;
}
} // namespace

std::vector<format::Quantiser> levelQuantisers(double bound, int levels)
{
  std::vector<format::Quantiser> q(static_cast<std::size_t>(std::max(levels, 1)));
  for (int k = 0; k < levels; ++k)
  {
    const double b = format::levelQuantBound(bound, levels, k);
    q[static_cast<std::size_t>(k)] = k == 0 ? anchorQuantiser(b) : format::makeQuantiser(b);
  }
  return q;
}

std::vector<format::Quantiser> levelQuantisers(const StreamInfo& info)
{
  std::vector<format::Quantiser> q(static_cast<std::size_t>(std::max(info.levels, 1)));
  for (int k = 0; k < info.levels; ++k)
  {
    const double b = info.levelQuantBound[k];
    q[static_cast<std::size_t>(k)] =
      k == 0 && info.version >= 2 ? anchorQuantiser(b) : format::makeQuantiser(b);
  }
  return q;
}

namespace
{
/// Sample positions along an axis: at most 16, spread evenly over [lo, hi].
std::uint64_t samplePosition(std::uint64_t lo, std::uint64_t hi, std::uint64_t j, std::uint64_t m)
{
  return m <= 1 ? lo : lo + (hi - lo) * j / (m - 1);
}

/// Half-width of the sample windows along an axis of n voxels: 3 (room for the cubic
/// predictor's neighbours), 1 (only a second difference), or 0 (axis not sampled).
std::uint64_t sampleHalfWidth(std::uint64_t n)
{
  return n >= 7 ? 3 : (n >= 3 ? 1 : 0);
}

/// Visits the sample windows of axis a: f(centre index); the windows are the voxels
/// centre + j * axisStride[a], |j| <= sampleHalfWidth(dims[a]).
template<typename F>
std::uint64_t forEachSampleWindow(const std::uint64_t dims[3], int a, F&& f)
{
  const std::uint64_t h = sampleHalfWidth(dims[a]);
  if (h == 0)
  {
    return 0;
  }
  const std::uint64_t axisStride[3] = { 1, dims[0], dims[0] * dims[1] };
  std::uint64_t lo[3], hi[3], m[3];
  for (int b = 0; b < 3; ++b)
  {
    lo[b] = b == a ? h : 0;
    hi[b] = b == a ? dims[b] - 1 - h : dims[b] - 1;
    m[b] = std::min<std::uint64_t>(16, hi[b] - lo[b] + 1);
  }
  for (std::uint64_t j2 = 0; j2 < m[2]; ++j2)
  {
    for (std::uint64_t j1 = 0; j1 < m[1]; ++j1)
    {
      for (std::uint64_t j0 = 0; j0 < m[0]; ++j0)
      {
        f(samplePosition(lo[0], hi[0], j0, m[0]) +
          axisStride[1] * samplePosition(lo[1], hi[1], j1, m[1]) +
          axisStride[2] * samplePosition(lo[2], hi[2], j2, m[2]));
      }
    }
  }
  return m[0] * m[1] * m[2];
}

/// Order-0 entropy (bits per value) of quantised residuals.
double entropyBits(std::vector<std::int64_t>& q)
{
  if (q.empty())
  {
    return 0;
  }
  // The terms are summed in increasing q. Residuals span a few thousand values at most where the
  // scheme matters, so counting replaces the sort there (same terms, same order: the same bits;
  // the sort took most of the 0.5-1 ms of a scheme choice at 512^3).
  const auto range = std::minmax_element(q.begin(), q.end());
  const std::int64_t lo = *range.first;
  if (static_cast<std::uint64_t>(*range.second - lo) < (1u << 16))
  {
    std::vector<std::uint32_t> count(static_cast<std::size_t>(*range.second - lo) + 1, 0);
    for (const std::int64_t v : q)
    {
      ++count[static_cast<std::size_t>(v - lo)];
    }
    double h = 0;
    const double n = static_cast<double>(q.size());
    for (const std::uint32_t c : count)
    {
      if (c > 0)
      {
        const double p = static_cast<double>(c) / n;
        h -= p * std::log2(p);
      }
    }
    return h;
  }
  std::sort(q.begin(), q.end());
  double h = 0;
  const double n = static_cast<double>(q.size());
  for (std::size_t i = 0; i < q.size();)
  {
    std::size_t j = i;
    while (j < q.size() && q[j] == q[i])
    {
      ++j;
    }
    const double p = static_cast<double>(j - i) / n;
    h -= p * std::log2(p);
    i = j;
  }
  return h;
}
} // namespace

void sampleWindows(const std::uint64_t dims[3], std::vector<std::uint64_t>& indices)
{
  indices.clear();
  const std::uint64_t axisStride[3] = { 1, dims[0], dims[0] * dims[1] };
  for (int a = 0; a < 3; ++a)
  {
    const std::uint64_t h = sampleHalfWidth(dims[a]);
    forEachSampleWindow(dims,
      a,
      [&](std::uint64_t centre)
      {
        for (std::uint64_t j = 0; j <= 2 * h; ++j)
        {
          indices.push_back(centre - h * axisStride[a] + j * axisStride[a]);
        }
      });
  }
}

format::Scheme schemeFromSample(const std::uint64_t dims[3],
  const std::vector<double>& sample,
  double bound)
{
  // Per axis: the mean |second difference| orders the axes; over all windows wide enough, the
  // entropy of the finest level's quantised residuals under either predictor picks the
  // predictor (cubic wins on smooth data; linear on noise and on integer data at bounds below
  // one, where cubic weights spread the residuals over sixteenths). NaN/Inf are left to the
  // encoder to report; here they only must not change the choice.
  double roughness[3] = { 0, 0, 0 };
  std::vector<std::int64_t> qLinear, qCubic;
  const double invStep = 1.0 / (2 * bound);
  auto quantised = [&](double d)
  {
    const double t = d * invStep + 0.5;
    return std::isfinite(t) && std::fabs(t) < 1e9 ? static_cast<std::int64_t>(std::floor(t))
                                                  : std::int64_t(1) << 40;
  };
  std::size_t at = 0;
  for (int a = 0; a < 3; ++a)
  {
    const std::uint64_t h = sampleHalfWidth(dims[a]);
    const std::size_t width = static_cast<std::size_t>(2 * h + 1);
    double sum = 0;
    const std::uint64_t windows = forEachSampleWindow(dims,
      a,
      [&](std::uint64_t)
      {
        if (at + width > sample.size())
        {
          return;
        }
        const double* w = sample.data() + at + (width / 2 - 1);
        const double d2 = (w[0] - 2.0 * w[1]) + w[2];
        sum += std::isfinite(d2) ? std::fabs(d2) : 0.0;
        if (h == 3)
        {
          const double* v = sample.data() + at;
          qLinear.push_back(quantised(v[3] - (v[2] + v[4]) * 0.5));
          qCubic.push_back(quantised(v[3] - (9.0 * (v[2] + v[4]) - (v[0] + v[6])) * 0.0625));
        }
        at += width;
      });
    roughness[a] = windows ? sum / static_cast<double>(windows) : 0.0;
  }
  format::Scheme scheme;
  // Roughest first; equal roughness keeps the higher axis first (the slowest in memory).
  std::sort(scheme.order,
    scheme.order + 3,
    [&](int x, int y)
    { return roughness[x] > roughness[y] || (roughness[x] == roughness[y] && x > y); });
  scheme.cubic = !(entropyBits(qLinear) < entropyBits(qCubic));
  return scheme;
}

std::vector<double> levelBounds(const Plan& plan,
  const std::vector<double>& passSurplus,
  double bound,
  double maxAbs,
  double u)
{
  // Decoding levels 0..k replaces every finer voxel by its prediction. Let e bound the distance
  // between such a voxel and its full reconstruction. A prediction's weights sum to one and their
  // absolute values to at most W (1 linear, 1.25 cubic), so a skipped pass has
  // e' <= W e + (its largest |reconstruction - prediction|) + the rounding of two predictions
  // (each below 3.7 u of the largest magnitude involved, counted as 4 u). The reconstruction is
  // within `bound` of the data, hence the level's bound is bound + e.
  const double w = plan.scheme.cubic ? 1.25 : 1.0;
  std::vector<double> out(static_cast<std::size_t>(plan.levels), bound);
  for (int k = plan.levels - 2; k >= 0; --k)
  {
    double e = 0;
    for (int pi = plan.levelPassBegin[k + 1]; pi < plan.passCount; ++pi)
    {
      e = w * e + passSurplus[pi] + 8 * u * (maxAbs + e);
    }
    out[k] = (bound + e) * (1 + std::ldexp(1.0, -40));
  }
  return out;
}

Status checkLayout(const Layout& layout, std::uint64_t& voxels, const char* what)
{
  voxels = 1;
  for (int a = 0; a < 3; ++a)
  {
    if (layout.dims[a] < 1 || layout.dims[a] > format::MaxVoxels)
    {
      return Status(ErrorCode::InvalidArgument,
        std::string(what) + ": dimension " + std::to_string(a) + " must be at least 1 (got " +
          std::to_string(layout.dims[a]) + ")");
    }
    voxels *= layout.dims[a];
    if (voxels > format::MaxVoxels)
    {
      return Status(
        ErrorCode::TooLarge, std::string(what) + ": the image has more than 2^40 voxels");
    }
  }
  if (layout.stride < 1)
  {
    return Status(ErrorCode::InvalidArgument, std::string(what) + ": stride must be at least 1");
  }
  return Status::Ok();
}

Status makeEncodePlan(const Layout& layout,
  const format::Scheme& scheme,
  double bound,
  CodingPlan& out)
{
  Status st = checkLayout(layout, out.voxels, "encode");
  if (st)
  {
    out.plan.build(layout.dims.data(), scheme);
    out.quantisers = levelQuantisers(bound, out.plan.levels);
  }
  return st;
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

void makeDecodePlan(const StreamInfo& info, CodingPlan& out)
{
  format::Scheme scheme;
  scheme.cubic = info.cubic;
  for (int a = 0; a < 3; ++a)
  {
    scheme.order[a] = info.axisOrder[a];
  }
  out.voxels = info.dims[0] * info.dims[1] * info.dims[2];
  out.plan.build(info.dims.data(), scheme);
  out.quantisers = levelQuantisers(info);
}

template<typename T>
void writeRaw(const T* contiguous,
  const std::uint64_t dims[3],
  double bound,
  std::vector<std::uint8_t>& stream)
{
  HeaderFields h;
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
  std::vector<std::uint8_t>&);
template void writeRaw<double>(const double*,
  const std::uint64_t*,
  double,
  std::vector<std::uint8_t>&);

Status parseHeader(const std::uint8_t* s,
  std::size_t bytes,
  StreamInfo& info,
  const std::uint8_t** lengths,
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
  if (info.version != 1 && info.version != codecVersion)
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
    if (!scheme.valid() || s[59] > 1 || format::load<std::uint32_t>(s + 60) != 0)
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
  if (s[7] > 1)
  {
    return Status(ErrorCode::InvalidArgument, "inspect: damaged header: unknown flags");
  }
  info.raw = s[7] == 1;
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
  Plan plan;
  plan.build(info.dims.data(), scheme);
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
  const std::size_t total = headerBytes(static_cast<int>(levels), count, version);
  if (bytes < total)
  {
    return need(total, "the header with its Huffman table");
  }
  if (format::load<std::uint32_t>(s + total - 4) != format::fnv1a(s, total - 4))
  {
    return Status(ErrorCode::InvalidArgument, "inspect: damaged header: checksum mismatch");
  }
  info.headerBytes = total;
  info.levelEnd.resize(levels);
  info.levelBound.resize(levels);
  info.levelQuantBound.resize(levels);
  std::uint64_t previous = total;
  for (std::uint32_t k = 0; k < levels; ++k)
  {
    const std::uint8_t* e = s + fixedBytes + entryBytes * k;
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
      return Status(ErrorCode::InvalidArgument, "inspect: damaged header: invalid level table");
    }
    previous = info.levelEnd[k];
  }
  if (info.raw && info.levelEnd[0] != total + voxels * valueSize(info.type))
  {
    return Status(ErrorCode::InvalidArgument, "inspect: damaged header: raw size mismatch");
  }
  info.chunks = info.raw ? 0 : plan.chunkBegin[plan.levels];
  if (lengths)
  {
    *lengths = s + tablePos + 4;
  }
  if (tableCount)
  {
    *tableCount = count;
  }
  return Status::Ok();
}

} // namespace detail

//------------------------------------------------------------------------------------------------
// Public API
//------------------------------------------------------------------------------------------------
template<typename T>
Status valueRange(const T* values,
  const Layout& layout,
  double& min,
  double& max,
  const ExecutionOptions& options)
{
  std::uint64_t voxels = 0;
  Status st = detail::checkLayout(layout, voxels, "valueRange");
  if (!st)
  {
    return st;
  }
  if (!values)
  {
    return Status(ErrorCode::InvalidArgument, "valueRange: the values pointer is null");
  }
  std::mutex m;
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  std::uint64_t bad = 0, firstBad = voxels;
  sparsegrid::detail::parallelFor(options,
    static_cast<std::size_t>(voxels),
    1 << 16,
    [&](std::size_t first, std::size_t last)
    {
      T l = std::numeric_limits<T>::infinity(), h = -l;
      std::uint64_t b = 0, fb = voxels;
      for (std::size_t i = first; i < last; ++i)
      {
        const T v = values[i * layout.stride];
        if (!std::isfinite(v))
        {
          fb = b == 0 ? i : fb;
          ++b;
          continue;
        }
        l = v < l ? v : l;
        h = v > h ? v : h;
      }
      std::lock_guard<std::mutex> lock(m);
      lo = std::min(lo, static_cast<double>(l));
      hi = std::max(hi, static_cast<double>(h));
      bad += b;
      firstBad = std::min(firstBad, fb);
    });
  if (bad > 0)
  {
    return Status(ErrorCode::NonFinite,
      "valueRange: " + std::to_string(bad) + " NaN/Inf value(s), the first at voxel " +
        std::to_string(firstBad));
  }
  min = lo;
  max = hi;
  return Status::Ok();
}

namespace
{
/// The sample indices of dims, kept for the last dims: a time series encodes the same dims again
/// and again, and the indices take a few tenths of a millisecond to build at 512^3.
std::shared_ptr<const std::vector<std::uint64_t>> sampleIndices(const std::uint64_t dims[3])
{
  static std::mutex mutex;
  static std::uint64_t lastDims[3] = { 0, 0, 0 };
  static std::shared_ptr<const std::vector<std::uint64_t>> last;
  std::lock_guard<std::mutex> lock(mutex);
  if (!last || !std::equal(dims, dims + 3, lastDims))
  {
    auto built = std::make_shared<std::vector<std::uint64_t>>();
    detail::sampleWindows(dims, *built);
    std::copy(dims, dims + 3, lastDims);
    last = built;
  }
  return last;
}

/// The scheme for values in host memory (see detail::schemeFromSample).
template<typename T>
format::Scheme hostScheme(const T* values, const Layout& layout, double bound)
{
  const auto kept = sampleIndices(layout.dims.data());
  const std::vector<std::uint64_t>& indices = *kept;
  std::vector<double> sample(indices.size());
  for (std::size_t i = 0; i < indices.size(); ++i)
  {
    sample[i] = static_cast<double>(values[indices[i] * layout.stride]);
  }
  return detail::schemeFromSample(layout.dims.data(), sample, bound);
}

/// The same scheme for values in device memory: the GPU gathers the same voxels.
template<typename T>
Status deviceScheme(const T* deviceValues,
  const Layout& layout,
  double bound,
  format::Scheme& scheme)
{
  const auto indices = sampleIndices(layout.dims.data());
  std::vector<double> sample;
  Status st = cudaimpl::gather<T>(deviceValues, layout.stride, *indices, sample);
  if (st)
  {
    scheme = detail::schemeFromSample(layout.dims.data(), sample, bound);
  }
  return st;
}

/// The argument checks every encoder entry point makes before it reads a value, in the order the
/// errors are reported: missing pointers, the bound, the layout.
template<typename T>
Status checkEncodeArguments(bool pointersGiven,
  const char* nullPointerMessage,
  double absoluteBound,
  const Layout& layout,
  std::uint64_t& voxels,
  const char* what)
{
  if (!pointersGiven)
  {
    return Status(ErrorCode::InvalidArgument, nullPointerMessage);
  }
  Status st = checkBound<T>(absoluteBound);
  if (st)
  {
    st = detail::checkLayout(layout, voxels, what);
  }
  return st;
}

/// The device-memory entry points choose their backend themselves (the data already lives on the
/// GPU), so they fill the caller's report, or a local one, by hand instead of runWithFallback.
class DeviceCallReport
{
public:
  explicit DeviceCallReport(ExecutionReport* report)
    : Report(report ? *report : this->Local)
  {
    this->Report.note.clear();
    this->Report.kernelSeconds = 0;
  }
  DeviceCallReport(const DeviceCallReport&) = delete;
  DeviceCallReport& operator=(const DeviceCallReport&) = delete;

  ExecutionReport& report() { return this->Report; }
  Status finish(Backend used, const Status& st)
  {
    this->Report.backendUsed = used;
    this->Report.seconds = this->Clock.seconds();
    return st;
  }

private:
  ExecutionReport Local;
  ExecutionReport& Report;
  sparsegrid::detail::Stopwatch Clock;
};

/// Whether the GPU's answer stands: anything but a missing device or memory is final, and so is
/// every answer under strictBackend.
bool deviceResultIsFinal(const Status& st, const ExecutionOptions& options)
{
  return st ||
    (st.code() != ErrorCode::BackendUnavailable && st.code() != ErrorCode::OutOfDeviceMemory) ||
    options.strictBackend;
}
} // namespace

template<typename T>
Status encodeWithStatistics(const T* values,
  const Layout& layout,
  double absoluteBound,
  std::vector<std::uint8_t>& stream,
  EncodeStatistics& statistics,
  const ExecutionOptions& options,
  ExecutionReport* report)
{
  std::uint64_t voxels = 0;
  const Status st = checkEncodeArguments<T>(values != nullptr,
    "encode: the values pointer is null",
    absoluteBound,
    layout,
    voxels,
    "encode");
  if (!st)
  {
    return st;
  }
  statistics = EncodeStatistics();
  const format::Scheme scheme = hostScheme(values, layout, absoluteBound);
  return sparsegrid::detail::runWithFallback(
    options,
    voxels,
    report,
    [&](double* kernelSeconds)
    {
      const cudaimpl::EncodeRequest<T> request{
        values, nullptr, layout, scheme, absoluteBound, &stream, &statistics
      };
      return cudaimpl::encode<T>(request, options, kernelSeconds);
    },
    [&]()
    { return encodeCPU<T>(values, layout, scheme, absoluteBound, stream, statistics, options); });
}

template<typename T>
Status encode(const T* values,
  const Layout& layout,
  double absoluteBound,
  std::vector<std::uint8_t>& stream,
  const ExecutionOptions& options,
  ExecutionReport* report)
{
  EncodeStatistics statistics;
  return encodeWithStatistics(values, layout, absoluteBound, stream, statistics, options, report);
}

Status inspect(const std::uint8_t* stream, std::size_t bytes, StreamInfo& info)
{
  info = StreamInfo();
  Status st = detail::parseHeader(stream, bytes, info, nullptr, nullptr);
  if (!st)
  {
    info = StreamInfo();
  }
  return st;
}

namespace
{

template<typename S, typename T>
Status decodeAs(const std::uint8_t* stream,
  std::size_t bytes,
  int lod,
  const StreamInfo& info,
  const std::uint8_t* lengths,
  std::size_t tableCount,
  T* out,
  const Layout& layout,
  const ExecutionOptions& options)
{
  const std::uint64_t voxels = info.dims[0] * info.dims[1] * info.dims[2];
  const bool direct = std::is_same<S, T>::value && layout.stride == 1;
  S* rec = nullptr;
  if (direct)
  {
    rec = reinterpret_cast<S*>(out);
  }
  else
  {
    Status st = sparsegrid::checkAllocation(voxels * sizeof(S), "the codec's decode buffer");
    if (!st)
    {
      return st;
    }
    rec = scratch<S>(workspace.values, workspace.valueBytes, voxels);
  }
  if (info.raw)
  {
    for (std::uint64_t i = 0; i < voxels; ++i)
    {
      rec[i] = format::load<S>(stream + info.headerBytes + i * sizeof(S));
      if (!std::isfinite(rec[i]))
      {
        return Status(
          ErrorCode::InvalidArgument, "decode: damaged stream: a raw value is NaN or Inf");
      }
    }
  }
  else
  {
    Status st = decodeCPU<S>(stream, bytes, lod, info, lengths, tableCount, rec, options);
    if (!st)
    {
      return st;
    }
  }
  if (!direct)
  {
    const std::uint64_t stride = layout.stride;
    sparsegrid::detail::parallelFor(options,
      static_cast<std::size_t>(voxels),
      1 << 16,
      [&](std::size_t first, std::size_t last)
      {
        for (std::size_t i = first; i < last; ++i)
        {
          out[i * stride] = static_cast<T>(rec[i]);
        }
      });
  }
  return Status::Ok();
}

} // namespace

template<typename T>
Status decode(const std::uint8_t* stream,
  std::size_t bytes,
  int levelOfDetail,
  T* out,
  const Layout& layout,
  const ExecutionOptions& options,
  ExecutionReport* report)
{
  StreamInfo info;
  const std::uint8_t* lengths = nullptr;
  std::size_t tableCount = 0;
  Status st = detail::parseHeader(stream, bytes, info, &lengths, &tableCount);
  if (!st)
  {
    return Status(st.code(), "decode: " + st.message());
  }
  if (!out)
  {
    return Status(ErrorCode::InvalidArgument, "decode: the output pointer is null");
  }
  if (layout.dims != info.dims || layout.stride < 1)
  {
    return Status(ErrorCode::InvalidArgument,
      "decode: the layout's dimensions " + std::to_string(layout.dims[0]) + "x" +
        std::to_string(layout.dims[1]) + "x" + std::to_string(layout.dims[2]) +
        " do not match the stream's " + std::to_string(info.dims[0]) + "x" +
        std::to_string(info.dims[1]) + "x" + std::to_string(info.dims[2]));
  }
  if (levelOfDetail < -1 || levelOfDetail >= info.levels)
  {
    return Status(ErrorCode::InvalidArgument,
      "decode: level of detail " + std::to_string(levelOfDetail) + " is outside -1.." +
        std::to_string(info.levels - 1));
  }
  const int lod = levelOfDetail < 0 ? info.levels - 1 : levelOfDetail;
  const int needLevel = info.raw ? 0 : lod;
  if (bytes < info.levelEnd[needLevel])
  {
    return Status(ErrorCode::InvalidArgument,
      "decode: the stream is truncated: levels 0.." + std::to_string(lod) + " need " +
        std::to_string(info.levelEnd[needLevel]) + " bytes, got " + std::to_string(bytes));
  }
  const std::uint64_t voxels = info.dims[0] * info.dims[1] * info.dims[2];
  return sparsegrid::detail::runWithFallback(
    options,
    voxels,
    report,
    [&](double* kernelSeconds)
    {
      const cudaimpl::DecodeRequest<T> request{
        stream, bytes, false, info.type, lod, info, out, nullptr, layout
      };
      return cudaimpl::decode<T>(request, options, kernelSeconds);
    },
    [&]()
    {
      if (info.type == ValueType::Float32)
      {
        return decodeAs<float, T>(
          stream, bytes, lod, info, lengths, tableCount, out, layout, options);
      }
      return decodeAs<double, T>(
        stream, bytes, lod, info, lengths, tableCount, out, layout, options);
    });
}

template<typename T>
Status encodeDevice(const T* deviceValues,
  const Layout& layout,
  double absoluteBound,
  std::vector<std::uint8_t>& stream,
  const ExecutionOptions& options,
  ExecutionReport* report)
{
  std::uint64_t voxels = 0;
  Status st = checkEncodeArguments<T>(deviceValues != nullptr,
    "encodeDevice: the values pointer is null",
    absoluteBound,
    layout,
    voxels,
    "encodeDevice");
  if (!st)
  {
    return st;
  }
  DeviceCallReport call(report);
  ExecutionReport& r = call.report();
  if (options.backend != Backend::CPU)
  {
    EncodeStatistics stats;
    format::Scheme scheme;
    st = deviceScheme(deviceValues, layout, absoluteBound, scheme);
    if (st)
    {
      const cudaimpl::EncodeRequest<T> request{
        nullptr, deviceValues, layout, scheme, absoluteBound, &stream, &stats
      };
      st = cudaimpl::encode<T>(request, options, &r.kernelSeconds);
    }
    if (deviceResultIsFinal(st, options))
    {
      return call.finish(Backend::CUDA, st);
    }
    r.note = "the CUDA encoder could not run (" + st.message() + "); encoded on the CPU";
  }
  // CPU path: the values still live on the device; copy them over first.
  std::vector<T> host(static_cast<std::size_t>(voxels));
  st = cudaimpl::copyToHost<T>(deviceValues,
    static_cast<std::size_t>(voxels),
    static_cast<std::size_t>(layout.stride),
    host.data());
  if (!st)
  {
    return st;
  }
  Layout contiguous = layout;
  contiguous.stride = 1;
  EncodeStatistics stats;
  st = encodeCPU<T>(host.data(),
    contiguous,
    hostScheme(host.data(), contiguous, absoluteBound),
    absoluteBound,
    stream,
    stats,
    options);
  return call.finish(Backend::CPU, st);
}

template<typename T>
Status decodeDevice(const std::uint8_t* stream,
  std::size_t bytes,
  int levelOfDetail,
  T* deviceOut,
  const Layout& layout,
  bool streamOnDevice,
  const ExecutionOptions& options,
  ExecutionReport* report)
{
  if (!deviceOut || !stream)
  {
    return Status(ErrorCode::InvalidArgument, "decodeDevice: a pointer is null");
  }
  if (streamOnDevice)
  {
    DeviceCallReport call(report);
    ExecutionReport& r = call.report();
    r.backendUsed = Backend::CUDA;
    if (levelOfDetail < -1)
    {
      return Status(ErrorCode::InvalidArgument, "decodeDevice: level of detail out of range");
    }
    // The stream's value type is in its header (byte 6); both instantiations parse the header.
    std::uint8_t head[8] = { 0 };
    Status st =
      cudaimpl::copyToHost<std::uint8_t>(stream, std::min<std::size_t>(bytes, 8), 1, head);
    if (!st)
    {
      return st;
    }
    const cudaimpl::DecodeRequest<T> request{ stream,
      bytes,
      true,
      head[6] == 2 ? ValueType::Float64 : ValueType::Float32,
      levelOfDetail,
      StreamInfo(),
      nullptr,
      deviceOut,
      layout };
    st = cudaimpl::decode<T>(request, options, &r.kernelSeconds);
    return call.finish(Backend::CUDA, st);
  }
  StreamInfo info;
  const std::uint8_t* lengths = nullptr;
  std::size_t tableCount = 0;
  Status st = detail::parseHeader(stream, bytes, info, &lengths, &tableCount);
  if (!st)
  {
    return Status(st.code(), "decodeDevice: " + st.message());
  }
  if (layout.dims != info.dims || layout.stride < 1)
  {
    return Status(ErrorCode::InvalidArgument,
      "decodeDevice: the layout's dimensions do not match the stream's");
  }
  if (levelOfDetail < -1 || levelOfDetail >= info.levels)
  {
    return Status(ErrorCode::InvalidArgument, "decodeDevice: level of detail out of range");
  }
  const int lod = levelOfDetail < 0 ? info.levels - 1 : levelOfDetail;
  if (bytes < info.levelEnd[info.raw ? 0 : lod])
  {
    return Status(ErrorCode::InvalidArgument, "decodeDevice: the stream is truncated");
  }
  DeviceCallReport call(report);
  ExecutionReport& r = call.report();
  if (options.backend != Backend::CPU)
  {
    const cudaimpl::DecodeRequest<T> request{
      stream, bytes, false, info.type, lod, info, nullptr, deviceOut, layout
    };
    st = cudaimpl::decode<T>(request, options, &r.kernelSeconds);
    if (deviceResultIsFinal(st, options))
    {
      return call.finish(Backend::CUDA, st);
    }
    r.note = "the CUDA decoder could not run (" + st.message() + "); decoded on the CPU";
  }
  const std::uint64_t voxels = info.dims[0] * info.dims[1] * info.dims[2];
  std::vector<T> host(static_cast<std::size_t>(voxels));
  Layout contiguous = layout;
  contiguous.stride = 1;
  st = info.type == ValueType::Float32
    ? decodeAs<float, T>(
        stream, bytes, lod, info, lengths, tableCount, host.data(), contiguous, options)
    : decodeAs<double, T>(
        stream, bytes, lod, info, lengths, tableCount, host.data(), contiguous, options);
  if (st)
  {
    st = cudaimpl::copyToDevice<T>(host.data(),
      static_cast<std::size_t>(voxels),
      deviceOut,
      static_cast<std::size_t>(layout.stride));
  }
  return call.finish(Backend::CPU, st);
}

void releaseWorkBuffers()
{
  workspace.values.reset();
  workspace.symbols.reset();
  workspace.valueBytes = 0;
  workspace.symbolBytes = 0;
  cudaimpl::releaseBuffers();
}

std::size_t maxStreamBytes(const Layout& layout, ValueType type)
{
  return detail::headerBytes(1, 0) +
    static_cast<std::size_t>(layout.dims[0] * layout.dims[1] * layout.dims[2]) * valueSize(type);
}

template<typename T>
Status encodeDeviceToDevice(const T* deviceValues,
  const Layout& layout,
  double absoluteBound,
  std::uint8_t* deviceStream,
  std::size_t capacity,
  std::size_t& streamBytes,
  const ExecutionOptions& options,
  ExecutionReport* report)
{
  std::uint64_t voxels = 0;
  Status st = checkEncodeArguments<T>(deviceValues && deviceStream,
    "encodeDeviceToDevice: a pointer is null",
    absoluteBound,
    layout,
    voxels,
    "encodeDeviceToDevice");
  if (!st)
  {
    return st;
  }
  DeviceCallReport call(report);
  ExecutionReport& r = call.report();
  r.backendUsed = Backend::CUDA;
  cudaimpl::DeviceStreamTarget target;
  target.data = deviceStream;
  target.capacity = capacity;
  format::Scheme scheme;
  st = deviceScheme(deviceValues, layout, absoluteBound, scheme);
  if (!st)
  {
    return call.finish(Backend::CUDA, st);
  }
  const cudaimpl::EncodeRequest<T> request{
    nullptr, deviceValues, layout, scheme, absoluteBound, nullptr, nullptr, &target
  };
  st = cudaimpl::encode<T>(request, options, &r.kernelSeconds);
  streamBytes = st ? target.bytes : 0;
  return call.finish(Backend::CUDA, st);
}

#define SPARSEGRID_CODEC_INSTANTIATE(T)                                                            \
  template Status valueRange<T>(                                                                   \
    const T*, const Layout&, double&, double&, const ExecutionOptions&);                           \
  template Status encode<T>(const T*,                                                              \
    const Layout&,                                                                                 \
    double,                                                                                        \
    std::vector<std::uint8_t>&,                                                                    \
    const ExecutionOptions&,                                                                       \
    ExecutionReport*);                                                                             \
  template Status encodeWithStatistics<T>(const T*,                                                \
    const Layout&,                                                                                 \
    double,                                                                                        \
    std::vector<std::uint8_t>&,                                                                    \
    EncodeStatistics&,                                                                             \
    const ExecutionOptions&,                                                                       \
    ExecutionReport*);                                                                             \
  template Status decode<T>(const std::uint8_t*,                                                   \
    std::size_t,                                                                                   \
    int,                                                                                           \
    T*,                                                                                            \
    const Layout&,                                                                                 \
    const ExecutionOptions&,                                                                       \
    ExecutionReport*);                                                                             \
  template Status encodeDevice<T>(const T*,                                                        \
    const Layout&,                                                                                 \
    double,                                                                                        \
    std::vector<std::uint8_t>&,                                                                    \
    const ExecutionOptions&,                                                                       \
    ExecutionReport*);                                                                             \
  template Status encodeDeviceToDevice<T>(const T*,                                                \
    const Layout&,                                                                                 \
    double,                                                                                        \
    std::uint8_t*,                                                                                 \
    std::size_t,                                                                                   \
    std::size_t&,                                                                                  \
    const ExecutionOptions&,                                                                       \
    ExecutionReport*);                                                                             \
  template Status decodeDevice<T>(const std::uint8_t*,                                             \
    std::size_t,                                                                                   \
    int,                                                                                           \
    T*,                                                                                            \
    const Layout&,                                                                                 \
    bool,                                                                                          \
    const ExecutionOptions&,                                                                       \
    ExecutionReport*);
SPARSEGRID_CODEC_INSTANTIATE(float)
SPARSEGRID_CODEC_INSTANTIATE(double)

} // namespace codec
} // namespace sparsegrid
