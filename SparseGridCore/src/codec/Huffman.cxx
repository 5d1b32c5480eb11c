#include "Huffman.h"

#include <algorithm>
#include <cstring>

namespace sparsegrid
{
namespace codec
{
namespace huffman
{
namespace
{

/// Optimal code lengths by the two-queue method on leaves sorted by (frequency, symbol); returns
/// the longest length.
int huffmanLengths(const std::vector<std::uint64_t>& freq,
  const std::vector<std::uint32_t>& leaves,
  std::vector<std::uint8_t>& lengths)
{
  const std::size_t n = leaves.size();
  if (n == 1)
  {
    lengths[leaves[0]] = 1;
    return 1;
  }
  // Nodes 0..n-1 are leaves, n..2n-2 internal nodes created in non-decreasing weight order.
  std::vector<std::uint64_t> weight(2 * n - 1);
  std::vector<std::uint32_t> parent(2 * n - 1, 0);
  for (std::size_t i = 0; i < n; ++i)
  {
    weight[i] = freq[leaves[i]];
  }
  std::size_t nextLeaf = 0, nextInternal = n, created = n;
  auto takeSmallest = [&]() -> std::size_t
  {
    if (nextLeaf < n && (nextInternal >= created || weight[nextLeaf] <= weight[nextInternal]))
    {
      return nextLeaf++;
    }
    return nextInternal++;
  };
  while (created < 2 * n - 1)
  {
    const std::size_t a = takeSmallest();
    const std::size_t b = takeSmallest();
    weight[created] = weight[a] + weight[b];
    parent[a] = parent[b] = static_cast<std::uint32_t>(created);
    ++created;
  }
  std::vector<std::uint32_t> depth(2 * n - 1, 0);
  int longest = 0;
  for (std::size_t i = 2 * n - 1; i-- > 0;)
  {
    if (i != 2 * n - 2)
    {
      depth[i] = depth[parent[i]] + 1;
    }
    if (i < n)
    {
      const int d = static_cast<int>(std::min<std::uint32_t>(depth[i], 255));
      lengths[leaves[i]] = static_cast<std::uint8_t>(d);
      longest = std::max(longest, d);
    }
  }
  return longest;
}

} // namespace

void buildLengths(const std::vector<std::uint64_t>& freqIn, std::vector<std::uint8_t>& lengths)
{
  lengths.assign(freqIn.size(), 0);
  std::vector<std::uint64_t> freq = freqIn;
  for (;;)
  {
    std::vector<std::uint32_t> leaves;
    for (std::size_t s = 0; s < freq.size(); ++s)
    {
      if (freq[s] > 0)
      {
        leaves.push_back(static_cast<std::uint32_t>(s));
      }
    }
    if (leaves.empty())
    {
      return;
    }
    std::stable_sort(leaves.begin(),
      leaves.end(),
      [&](std::uint32_t a, std::uint32_t b) { return freq[a] < freq[b]; });
    std::fill(lengths.begin(), lengths.end(), 0);
    if (huffmanLengths(freq, leaves, lengths) <= format::MaxCodeLength)
    {
      return;
    }
    // Too deep: flatten the distribution (rare symbols gain weight) and rebuild.
    for (auto& f : freq)
    {
      if (f > 0)
      {
        f = (f >> 2) | 1;
      }
    }
  }
}

void canonicalCodes(const std::vector<std::uint8_t>& lengths, std::vector<std::uint32_t>& codes)
{
  codes.assign(lengths.size(), 0);
  std::uint32_t countOf[format::MaxCodeLength + 2] = { 0 };
  for (std::uint8_t l : lengths)
  {
    ++countOf[l];
  }
  countOf[0] = 0;
  std::uint32_t next[format::MaxCodeLength + 2] = { 0 };
  std::uint32_t code = 0;
  for (int l = 1; l <= format::MaxCodeLength; ++l)
  {
    code = (code + countOf[l - 1]) << 1;
    next[l] = code;
  }
  for (std::size_t s = 0; s < lengths.size(); ++s)
  {
    if (lengths[s] > 0)
    {
      codes[s] = next[lengths[s]]++;
    }
  }
}

namespace
{
/// Calls visit(begin, end) for the groups of eight tokens (the last one shorter) that hold a code,
/// in token order: a group of eight unused tokens is skipped at once (much of a large table is
/// runs of unused tokens), the tokens of the others are visited without a branch per token (used
/// and unused ones alternate without a pattern a branch could predict).
template<typename Visit>
void forEachGroupUsed(const std::uint8_t* lengths, std::size_t count, Visit&& visit)
{
  std::size_t s = 0;
  for (; s + 8 <= count; s += 8)
  {
    std::uint64_t word;
    std::memcpy(&word, lengths + s, 8);
    if (word != 0)
    {
      visit(s, s + 8);
    }
  }
  if (s < count)
  {
    visit(s, count);
  }
}
} // namespace

bool Decoder::build(const std::uint8_t* lengths, std::size_t count, std::string& why, bool withLut)
{
  // The longest length first (in a loop the compiler makes a vector one), then how many tokens
  // have each length (unused ones counted at 0, or not at all where skipped). Four counts per
  // length, by token index modulo 4: a row of tokens of one length (a run of unused ones, most
  // often) would make each step wait for the previous one's count.
  int longest = 0;
  for (std::size_t s = 0; s < count; ++s)
  {
    longest = std::max(longest, static_cast<int>(lengths[s]));
  }
  if (longest > format::MaxCodeLength)
  {
    why = "a Huffman code length exceeds " + std::to_string(format::MaxCodeLength) + " bits";
    return false;
  }
  constexpr int Over = format::MaxCodeLength + 1;
  std::uint32_t byLengthOf[4][Over] = {};
  forEachGroupUsed(lengths,
    count,
    [&](std::size_t begin, std::size_t end)
    {
      for (std::size_t s = begin; s < end; ++s)
      {
        ++byLengthOf[s & 3][lengths[s]];
      }
    });
  std::uint32_t byLength[Over];
  for (int l = 0; l < Over; ++l)
  {
    byLength[l] = byLengthOf[0][l] + byLengthOf[1][l] + byLengthOf[2][l] + byLengthOf[3][l];
  }
  std::fill(std::begin(this->countOf), std::end(this->countOf), 0u);
  std::uint64_t kraft = 0;
  this->maxLength = longest;
  for (int l = 1; l <= longest; ++l)
  {
    this->countOf[l] = byLength[l];
    kraft += std::uint64_t(byLength[l]) << (format::MaxCodeLength - l);
  }
  if (kraft > (std::uint64_t(1) << format::MaxCodeLength))
  {
    why = "the Huffman code lengths are over-subscribed (Kraft sum > 1)";
    return false;
  }
  std::uint32_t code = 0, index = 0;
  for (int l = 1; l <= format::MaxCodeLength; ++l)
  {
    code = (code + (l > 1 ? this->countOf[l - 1] : 0)) << 1;
    if (l == 1)
    {
      code = 0;
    }
    this->firstCode[l] = code;
    this->firstIndex[l] = index;
    index += this->countOf[l];
  }
  // Every entry is written below: the symbols of each length in token order, from where that
  // length's codes begin. Unused tokens are written to a slot of their own, and the position after
  // them to another one (so that a run of them does not make each step wait for the previous one).
  this->sorted.resize(index);
  std::uint32_t unused = 0;
  std::uint32_t* next[Over + 1];
  next[0] = &unused;
  for (int l = 1; l <= format::MaxCodeLength; ++l)
  {
    next[l] = this->sorted.data() + this->firstIndex[l];
  }
  forEachGroupUsed(lengths,
    count,
    [&](std::size_t begin, std::size_t end)
    {
      for (std::size_t s = begin; s < end; ++s)
      {
        const int l = lengths[s];
        std::uint32_t* const to = next[l];
        *to = static_cast<std::uint32_t>(s);
        next[l != 0 ? l : Over] = to + 1;
      }
    });
  if (!withLut)
  {
    this->lut.clear();
    return true;
  }
  this->lut.assign(std::size_t(1) << format::LutBits, 0);
  for (int l = 1; l <= std::min(this->maxLength, format::LutBits); ++l)
  {
    for (std::uint32_t j = 0; j < this->countOf[l]; ++j)
    {
      const std::uint32_t c = this->firstCode[l] + j;
      const std::uint32_t symbol = this->sorted[this->firstIndex[l] + j];
      const int shift = format::LutBits - l;
      for (std::uint32_t f = 0; f < (1u << shift); ++f)
      {
        this->lut[(c << shift) | f] = (symbol << 8) | static_cast<std::uint32_t>(l);
      }
    }
  }
  return true;
}

} // namespace huffman
} // namespace codec
} // namespace sparsegrid
