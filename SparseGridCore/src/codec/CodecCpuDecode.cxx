// The error-bounded codec's decoder on the CPU: the chunk tables of each decoded level checked
// against its section, the chunks' Huffman codes decoded in parallel, then the level's passes
// (prediction plus dequantised symbol; the prediction alone beyond the requested level of
// detail, which is what makes a prefix of the stream a coarser reconstruction).
#include "CodecCpu.h"

#include <atomic>
#include <cmath>
#include <mutex>

namespace sparsegrid
{
namespace codec
{
namespace detail
{

namespace
{

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

/// Decodes chunk c (codes [begin, end) of its level, `size` bytes at `in` with this head) into
/// symbols; its escapes into escCode and escValue from slot escBase on. Returns what is wrong with
/// the chunk, or nullptr.
template<typename S>
const char* decodeChunk(const std::uint8_t* in,
  std::uint64_t size,
  const format::ChunkHead& head,
  std::uint64_t begin,
  std::uint64_t end,
  const huffman::Decoder& dec,
  std::uint16_t* symbols,
  std::uint64_t escBase,
  std::vector<std::uint64_t>& escCode,
  std::vector<S>& escValue)
{
  std::uint16_t* out = symbols + begin;
  if (size == 0)
  {
    std::fill(out, out + (end - begin), std::uint16_t(0));
    return nullptr;
  }
  const std::uint64_t mask = head.mask;
  const std::uint32_t esc = head.escapes;
  const std::uint32_t words = head.words;
  const std::uint64_t blocks = (end - begin + format::BlockCodes - 1) / format::BlockCodes;
  if (mask == 0 || (mask & ~format::blocksMask(end - begin)) != 0)
  {
    return "an invalid block mask";
  }
  const std::uint8_t* escIn = in + head.headBytes;
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
        const std::size_t slot = static_cast<std::size_t>(escBase + seenEsc);
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
    return "an invalid Huffman code or too many escapes";
  }
  if (seenEsc != esc || (reader.consumed() + 31) / 32 != words)
  {
    return "a bit stream whose length does not match its header";
  }
  return nullptr;
}

/// The symbols of level k (its codes from symbols[0]) and its escapes (codes and values, in code
/// order), from its chunks.
template<typename S>
Status decodeLevelChunks(const std::uint8_t* stream,
  std::size_t bytes,
  const StreamInfo& info,
  const Plan& plan,
  int k,
  const huffman::Decoder& dec,
  std::uint16_t* symbols,
  std::vector<std::uint64_t>& escCode,
  std::vector<S>& escValue,
  const ExecutionOptions& options)
{
  std::vector<std::uint64_t> chunkOffset, escBase;
  std::vector<format::ChunkHead> heads;
  Status st = readChunkTable<S>(stream, bytes, info, plan, k, chunkOffset, escBase, heads);
  if (!st)
  {
    return st;
  }
  const std::uint64_t nChunks = plan.levelChunks[k];
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
        const std::uint64_t end = std::min<std::uint64_t>(begin + format::ChunkCodes, levelCodes);
        const char* what = decodeChunk<S>(stream + chunkOffset[c],
          chunkOffset[c + 1] - chunkOffset[c],
          heads[c],
          begin,
          end,
          dec,
          symbols,
          escBase[c],
          escCode,
          escValue);
        if (what)
        {
          std::lock_guard<std::mutex> lock(errorMutex);
          if (!failed.exchange(true))
          {
            error = std::string("decode: damaged stream: ") + what + " in " + describeChunk(k, c);
          }
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
        "decode: damaged stream: a stored value of level " + std::to_string(k) + " is NaN or Inf");
    }
  }
  return Status::Ok();
}

/// The passes of level k: prediction plus dequantised symbol (the prediction alone where the
/// level is not coded), then the escaped values.
template<typename S>
void reconstructLevel(const Plan& plan,
  int k,
  bool coded,
  const Quantiser& qz,
  const std::uint16_t* symbols,
  const std::vector<std::uint64_t>& escCode,
  const std::vector<S>& escValue,
  S* rec,
  const ExecutionOptions& options)
{
  for (int pi = plan.levelPassBegin[k]; pi < plan.levelPassBegin[k + 1]; ++pi)
  {
    const Pass& p = plan.passes[pi];
    const std::uint16_t* sym = symbols + p.codeBegin;
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
}

} // namespace

template<typename S>
Status decodeCPU(const ParsedStream& in, int lod, S* rec, const ExecutionOptions& options)
{
  const StreamInfo& info = in.info;
  CodingPlan setup;
  makeDecodePlan(info, setup);
  const Plan& plan = setup.plan;
  const std::vector<Quantiser>& quantisers = setup.quantisers;
  huffman::Decoder dec;
  std::string why;
  if (!dec.build(in.lengths.data(), in.tableCount, why))
  {
    return Status(ErrorCode::InvalidArgument, "decode: damaged stream: " + why);
  }
  std::uint64_t largest = 0;
  for (int k = 0; k < plan.levels; ++k)
  {
    largest = std::max(largest, plan.levelCodes[k]);
  }
  CpuWorkspace& workspace = cpuWorkspace();
  std::uint16_t* symbols =
    scratch<std::uint16_t>(workspace.symbols, workspace.symbolBytes, largest);
  std::vector<std::uint64_t> escCode;
  std::vector<S> escValue;
  for (int k = 0; k < plan.levels; ++k)
  {
    const bool coded = k <= lod;
    escCode.clear();
    escValue.clear();
    if (coded)
    {
      Status st = decodeLevelChunks<S>(
        in.data, in.bytes, info, plan, k, dec, symbols, escCode, escValue, options);
      if (!st)
      {
        return st;
      }
    }
    reconstructLevel<S>(plan,
      k,
      coded,
      quantisers[static_cast<std::size_t>(k)],
      symbols,
      escCode,
      escValue,
      rec,
      options);
    if (sparsegrid::detail::aborted(options))
    {
      return sparsegrid::detail::abortedStatus();
    }
    sparsegrid::detail::progress(options, double(k + 1) / plan.levels);
  }
  return Status::Ok();
}

template Status decodeCPU<float>(const ParsedStream&, int, float*, const ExecutionOptions&);
template Status decodeCPU<double>(const ParsedStream&, int, double*, const ExecutionOptions&);

} // namespace detail
} // namespace codec
} // namespace sparsegrid
