// Special voxels: finding them, the filled field the encoder codes instead, the mask section
// (building, checking, walking) and the version-3 stream around it (see CodecMask.h).
#include "CodecMask.h"

#include "CodecCpu.h"

#include "../Internal.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <unordered_map>

namespace sparsegrid
{
namespace codec
{
namespace detail
{

namespace
{

template<typename T>
using BitsOf = typename std::conditional<sizeof(T) == 4, std::uint32_t, std::uint64_t>::type;

void putVarint(std::vector<std::uint8_t>& out, std::uint64_t v)
{
  while (v >= 0x80)
  {
    out.push_back(static_cast<std::uint8_t>(v | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<std::uint8_t>(v));
}

/// Reads unsigned LEB128 varints, refusing overlong or truncated ones.
class VarintReader
{
public:
  VarintReader(const std::uint8_t* data, std::size_t bytes)
    : Data(data)
    , Bytes(bytes)
  {
  }
  bool read(std::uint64_t& v)
  {
    v = 0;
    for (int shift = 0; shift < 64; shift += 7)
    {
      if (this->At >= this->Bytes)
      {
        return false;
      }
      const std::uint8_t b = this->Data[this->At++];
      if (shift == 63 && b > 1)
      {
        return false;
      }
      v |= static_cast<std::uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80))
      {
        return true;
      }
    }
    return false;
  }
  std::size_t at() const { return this->At; }
  void seek(std::size_t at) { this->At = at; }

private:
  const std::uint8_t* Data;
  std::size_t Bytes;
  std::size_t At = 0;
};

/// Walks a program over an image of dims with `palette` entries. Checks everything; with
/// `visit`, calls f(first voxel, count, entry) for every run, repeats expanded. Counts the
/// special voxels. Returns what is wrong, or nullptr.
template<typename F>
const char* walkProgram(const std::uint8_t* program,
  std::size_t bytes,
  const std::uint64_t dims[3],
  std::uint64_t palette,
  bool visit,
  std::uint64_t& specials,
  F&& f)
{
  VarintReader in(program, bytes);
  specials = 0;
  const std::uint64_t n0 = dims[0], n1 = dims[1], n2 = dims[2];
  for (std::uint64_t z = 0; z < n2;)
  {
    std::uint64_t planeRepeat = 0;
    if (!in.read(planeRepeat) || planeRepeat == 0 || planeRepeat > n2 - z)
    {
      return "an invalid plane repeat";
    }
    const std::size_t planeAt = in.at();
    std::uint64_t planeSpecials = 0;
    for (std::uint64_t pz = 0; pz < (visit ? planeRepeat : 1); ++pz)
    {
      in.seek(planeAt);
      for (std::uint64_t y = 0; y < n1;)
      {
        std::uint64_t rowRepeat = 0, runs = 0;
        if (!in.read(rowRepeat) || rowRepeat == 0 || rowRepeat > n1 - y)
        {
          return "an invalid row repeat";
        }
        const std::size_t rowAt = in.at();
        std::uint64_t rowSpecials = 0;
        for (std::uint64_t py = 0; py < (visit ? rowRepeat : 1); ++py)
        {
          in.seek(rowAt);
          if (!in.read(runs) || runs > n0)
          {
            return "an invalid run count";
          }
          const std::uint64_t base = n0 * ((y + py) + n1 * (z + pz));
          std::uint64_t x = 0;
          rowSpecials = 0;
          for (std::uint64_t r = 0; r < runs; ++r)
          {
            std::uint64_t gap = 0, length = 0, entry = 0;
            if (!in.read(gap) || !in.read(length) || (palette > 1 && !in.read(entry)))
            {
              return "a truncated run";
            }
            if (gap > n0 - x || length == 0 || length > n0 - x - gap || entry >= palette)
            {
              return "a run outside its row or palette";
            }
            x += gap;
            if (visit)
            {
              f(base + x, length, static_cast<std::uint32_t>(entry));
            }
            x += length;
            rowSpecials += length;
          }
        }
        planeSpecials += pz == 0 ? rowRepeat * rowSpecials : 0;
        y += rowRepeat;
      }
    }
    specials += planeRepeat * planeSpecials;
    z += planeRepeat;
  }
  return in.at() == bytes ? nullptr : "bytes after the last plane";
}

struct SectionView
{
  std::uint64_t specials = 0;
  std::uint32_t palette = 0;
  std::uint32_t programBytes = 0;
  const std::uint8_t* values = nullptr;
  const std::uint8_t* program = nullptr;
};

SectionView viewOf(const std::uint8_t* section)
{
  SectionView v;
  v.specials = format::load<std::uint64_t>(section);
  v.palette = format::load<std::uint32_t>(section + 8);
  v.programBytes = format::load<std::uint32_t>(section + 12);
  v.values = section + format::MaskFixedBytes;
  return v;
}

const std::uint8_t* maskOf(const std::uint8_t* stream, const StreamInfo& info)
{
  return stream + info.headerBytes - 4 - info.maskBytes;
}

/// Linear interpolation over the voxels of one line (n voxels, `step` apart) whose state is 1,
/// between the nearest voxels of another state (copies of the nearest one at the line's ends);
/// lines without such a voxel stay as they are. Filled voxels get state 2.
template<typename T>
void fillLine(T* v, std::uint8_t* state, std::uint64_t n, std::uint64_t step)
{
  std::uint64_t first = 0;
  while (first < n && state[first * step] == 1)
  {
    ++first;
  }
  if (first == n)
  {
    return;
  }
  for (std::uint64_t i = 0; i < first; ++i)
  {
    v[i * step] = v[first * step];
    state[i * step] = 2;
  }
  std::uint64_t last = first;
  for (std::uint64_t i = first + 1; i < n; ++i)
  {
    if (state[i * step] == 1)
    {
      continue;
    }
    if (i > last + 1)
    {
      const double a = static_cast<double>(v[last * step]);
      const double b = static_cast<double>(v[i * step]);
      const double span = static_cast<double>(i - last);
      for (std::uint64_t j = last + 1; j < i; ++j)
      {
        const double t = static_cast<double>(j - last) / span;
        const T value = static_cast<T>(a * (1.0 - t) + b * t);
        v[j * step] = std::isfinite(value) ? value : v[last * step];
        state[j * step] = 2;
      }
    }
    last = i;
  }
  for (std::uint64_t i = last + 1; i < n; ++i)
  {
    v[i * step] = v[last * step];
    state[i * step] = 2;
  }
}

/// Adds to v and count, for each special voxel (state 1) of one line (n voxels, `step` apart), the
/// line's estimate of it: the linear interpolation between the nearest ordinary voxels (state 0)
/// on both sides; beyond the line's first (last) ordinary voxel, the linear extrapolation of the
/// two nearest ordinary voxels, at most two voxels out, where that predicts the nearest one from
/// the next two with less than half a copy's error (smooth data), else a copy of the nearest
/// (noisy data, whose extrapolation amplifies the noise). v holds 0 at the special voxels before
/// the first line.
template<typename T>
void estimateLine(T* v,
  const std::uint8_t* state,
  std::uint8_t* count,
  std::uint64_t n,
  std::uint64_t step)
{
  const std::uint64_t none = n;
  auto at = [&](std::uint64_t i) { return static_cast<double>(v[i * step]); };
  auto add = [&](std::uint64_t j, double value)
  {
    const T t = static_cast<T>(value);
    if (std::isfinite(t))
    {
      v[j * step] = static_cast<T>(static_cast<double>(v[j * step]) + value);
      ++count[j * step];
    }
  };
  // Ordinary voxels: the first three and the last three (nearest the end first).
  std::uint64_t head[3] = { none, none, none }, tail[3] = { none, none, none };
  int heads = 0;
  for (std::uint64_t i = 0; i < n; ++i)
  {
    if (state[i * step] != 0)
    {
      continue;
    }
    if (heads < 3)
    {
      head[heads++] = i;
    }
    const std::uint64_t previous = tail[0];
    if (previous != none && i > previous + 1)
    {
      const double a = at(previous), b = at(i);
      const double span = static_cast<double>(i - previous);
      for (std::uint64_t j = previous + 1; j < i; ++j)
      {
        const double t = static_cast<double>(j - previous) / span;
        add(j, a * (1.0 - t) + b * t);
      }
    }
    tail[2] = tail[1];
    tail[1] = tail[0];
    tail[0] = i;
  }
  if (heads == 0)
  {
    return;
  }
  // The line through p[0] and p[1] evaluated at x (positions as doubles).
  auto line = [&](std::uint64_t p0, std::uint64_t p1, double x)
  {
    const double x0 = static_cast<double>(p0), x1 = static_cast<double>(p1);
    return at(p0) + (at(p0) - at(p1)) / (x0 - x1) * (x - x0);
  };
  // Whether extrapolating from p[1], p[2] predicts p[0] better than copying p[1].
  auto extrapolates = [&](const std::uint64_t p[3])
  {
    if (p[2] == none)
    {
      return false;
    }
    const double byLine = std::fabs(at(p[0]) - line(p[1], p[2], static_cast<double>(p[0])));
    return 2 * byLine < std::fabs(at(p[0]) - at(p[1]));
  };
  const bool headLine = extrapolates(head), tailLine = extrapolates(tail);
  for (std::uint64_t j = 0; j < head[0]; ++j)
  {
    const double d = std::max(static_cast<double>(j), static_cast<double>(head[0]) - 2.0);
    add(j, headLine ? line(head[0], head[1], d) : at(head[0]));
  }
  for (std::uint64_t j = tail[0] + 1; j < n; ++j)
  {
    const double d = std::min(static_cast<double>(j), static_cast<double>(tail[0]) + 2.0);
    add(j, tailLine ? line(tail[0], tail[1], d) : at(tail[0]));
  }
}

/// Fills the special voxels (state 1): the mean of the estimates of the lines through it along x,
/// y and z that hold ordinary voxels (estimateLine); then the voxels whose three lines hold none
/// are interpolated along x from the filled ones, else along y, else z; what is left (every voxel
/// special) becomes 0. Filled voxels get state 2, or 3 where none of their six neighbours is
/// ordinary (inside a hole: predictSpecials refills those).
template<typename T>
void fillSpecials(T* v,
  std::uint8_t* state,
  const std::uint64_t dims[3],
  const ExecutionOptions& options)
{
  const std::uint64_t n0 = dims[0], n1 = dims[1], n2 = dims[2];
  const std::uint64_t voxels = n0 * n1 * n2;
  const std::uint64_t axisStride[3] = { 1, n0, n0 * n1 };
  std::vector<std::uint8_t> count(static_cast<std::size_t>(voxels), 0);
  std::vector<std::uint8_t> inside(static_cast<std::size_t>(voxels), 0);
  sparsegrid::detail::parallelFor(options,
    static_cast<std::size_t>(voxels),
    1 << 16,
    [&](std::size_t first, std::size_t last)
    {
      for (std::size_t i = first; i < last; ++i)
      {
        if (state[i] != 1)
        {
          continue;
        }
        v[i] = T(0);
        const std::uint64_t c[3] = { i % n0, (i / n0) % n1, i / (n0 * n1) };
        bool hole = true;
        for (int a = 0; a < 3 && hole; ++a)
        {
          hole = (c[a] == 0 || state[i - axisStride[a]] != 0) &&
            (c[a] + 1 == dims[a] || state[i + axisStride[a]] != 0);
        }
        inside[i] = hole ? 1 : 0;
      }
    });
  auto forEachLine = [&](int a, auto&& body)
  {
    const int b = a == 0 ? 1 : 0, c = a == 2 ? 1 : 2;
    const std::uint64_t lines = dims[b] * dims[c];
    sparsegrid::detail::parallelFor(options,
      static_cast<std::size_t>(lines),
      std::max<std::size_t>(1, static_cast<std::size_t>(65536 / dims[a])),
      [&](std::size_t firstLine, std::size_t lastLine)
      {
        for (std::size_t l = firstLine; l < lastLine; ++l)
        {
          const std::uint64_t ib = l % dims[b], ic = l / dims[b];
          body(ib * axisStride[b] + ic * axisStride[c]);
        }
      });
  };
  for (int a = 0; a < 3; ++a)
  {
    if (dims[a] > 1)
    {
      forEachLine(a,
        [&](std::uint64_t start)
        { estimateLine(v + start, state + start, count.data() + start, dims[a], axisStride[a]); });
    }
  }
  for (std::uint64_t i = 0; i < voxels; ++i)
  {
    if (state[i] == 1 && count[i] > 0)
    {
      v[i] = static_cast<T>(static_cast<double>(v[i]) / count[i]);
      state[i] = 2;
    }
  }
  for (int a = 0; a < 3; ++a)
  {
    forEachLine(
      a, [&](std::uint64_t start) { fillLine(v + start, state + start, dims[a], axisStride[a]); });
  }
  for (std::uint64_t i = 0; i < voxels; ++i)
  {
    if (state[i] == 1)
    {
      v[i] = T(0);
      state[i] = 2;
    }
    state[i] = state[i] == 2 && inside[i] ? 3 : state[i];
  }
}

/// Assigns palette entries to bit patterns in order of first appearance.
template<typename T>
class Palette
{
public:
  std::uint32_t entryOf(T value)
  {
    BitsOf<T> bits;
    std::memcpy(&bits, &value, sizeof(bits));
    if (!this->Entries.empty() && bits == this->LastBits)
    {
      return this->Last;
    }
    auto it = this->Index.find(bits);
    if (it == this->Index.end())
    {
      it = this->Index.emplace(bits, static_cast<std::uint32_t>(this->Entries.size())).first;
      this->Entries.push_back(bits);
    }
    this->LastBits = bits;
    this->Last = it->second;
    return this->Last;
  }
  const std::vector<BitsOf<T>>& entries() const { return this->Entries; }

private:
  std::vector<BitsOf<T>> Entries;
  std::unordered_map<BitsOf<T>, std::uint32_t> Index;
  BitsOf<T> LastBits = 0;
  std::uint32_t Last = 0;
};

struct Run
{
  std::uint64_t gap, length;
  std::uint32_t entry;
};

/// Appends `body` to `out` as (repeat, body) groups of equal consecutive bodies: call add() for
/// every body, then flush().
class RepeatGroups
{
public:
  explicit RepeatGroups(std::vector<std::uint8_t>& out)
    : Out(out)
  {
  }
  void add(std::vector<std::uint8_t>& body)
  {
    if (this->Repeat > 0 && body == this->Previous)
    {
      ++this->Repeat;
      return;
    }
    this->flush();
    this->Previous.swap(body);
    this->Repeat = 1;
  }
  void flush()
  {
    if (this->Repeat > 0)
    {
      putVarint(this->Out, this->Repeat);
      this->Out.insert(this->Out.end(), this->Previous.begin(), this->Previous.end());
    }
    this->Repeat = 0;
  }

private:
  std::vector<std::uint8_t>& Out;
  std::vector<std::uint8_t> Previous;
  std::uint64_t Repeat = 0;
};

/// The program and palette of the special voxels of v (contiguous); state[i] = 1 where special.
template<typename T>
void buildProgram(const T* v,
  const std::uint64_t dims[3],
  const SpecialValues& specials,
  std::uint8_t* state,
  std::vector<std::uint8_t>& program,
  std::vector<BitsOf<T>>& palette,
  std::uint64_t& count)
{
  Palette<T> entries;
  std::vector<Run> runs;
  std::vector<std::uint8_t> plane, row;
  RepeatGroups planes(program);
  count = 0;
  // First the runs of every row with entries; P > 1 is known only at the end, so the rows are
  // coded with entries and the entries dropped afterwards where the palette has one value.
  std::vector<std::vector<Run>> rowRuns;
  const std::uint64_t n0 = dims[0], n1 = dims[1], n2 = dims[2];
  rowRuns.resize(static_cast<std::size_t>(n1 * n2));
  for (std::uint64_t r = 0; r < n1 * n2; ++r)
  {
    const T* row0 = v + r * n0;
    std::vector<Run>& out = rowRuns[static_cast<std::size_t>(r)];
    std::uint64_t x = 0, end = 0;
    while (x < n0)
    {
      if (!specials.contains(row0[x]))
      {
        state[r * n0 + x] = 0;
        ++x;
        continue;
      }
      const std::uint32_t entry = entries.entryOf(row0[x]);
      std::uint64_t y = x;
      BitsOf<T> bits, next;
      std::memcpy(&bits, &row0[x], sizeof(bits));
      while (y < n0 && specials.contains(row0[y]))
      {
        std::memcpy(&next, &row0[y], sizeof(next));
        if (next != bits)
        {
          break;
        }
        state[r * n0 + y] = 1;
        ++y;
      }
      out.push_back(Run{ x - end, y - x, entry });
      count += y - x;
      end = y;
      x = y;
    }
  }
  palette = entries.entries();
  const bool withEntries = palette.size() > 1;
  for (std::uint64_t z = 0; z < n2; ++z)
  {
    plane.clear();
    RepeatGroups rows(plane);
    for (std::uint64_t y = 0; y < n1; ++y)
    {
      const std::vector<Run>& rr = rowRuns[static_cast<std::size_t>(y + n1 * z)];
      row.clear();
      putVarint(row, rr.size());
      for (const Run& run : rr)
      {
        putVarint(row, run.gap);
        putVarint(row, run.length);
        if (withEntries)
        {
          putVarint(row, run.entry);
        }
      }
      rows.add(row);
    }
    rows.flush();
    planes.add(plane);
  }
  planes.flush();
}

} // namespace

Status checkMask(const std::uint8_t* section,
  std::size_t bytes,
  const StreamInfo& info,
  std::uint64_t& specialVoxels)
{
  auto damaged = [](const std::string& what)
  { return Status(ErrorCode::InvalidArgument, "inspect: damaged mask section: " + what); };
  if (bytes < format::MaskFixedBytes)
  {
    return damaged("too short");
  }
  const SectionView v = viewOf(section);
  const std::uint64_t voxels = info.dims[0] * info.dims[1] * info.dims[2];
  const std::uint64_t valueBytes = valueSize(info.type);
  const std::uint64_t used =
    format::MaskFixedBytes + std::uint64_t(v.palette) * valueBytes + v.programBytes;
  if (v.specials == 0 || v.specials > voxels || v.palette == 0 || v.palette > v.specials ||
    (used + 3) / 4 * 4 != bytes)
  {
    return damaged("inconsistent sizes");
  }
  for (std::size_t i = static_cast<std::size_t>(used); i < bytes; ++i)
  {
    if (section[i] != 0)
    {
      return damaged("non-zero padding");
    }
  }
  std::uint64_t counted = 0;
  const char* what = walkProgram(section + format::MaskFixedBytes + v.palette * valueBytes,
    v.programBytes,
    info.dims.data(),
    v.palette,
    false,
    counted,
    [](std::uint64_t, std::uint64_t, std::uint32_t) {});
  if (what)
  {
    return damaged(what);
  }
  if (counted != v.specials)
  {
    return damaged("its runs hold " + std::to_string(counted) + " voxels, its count says " +
      std::to_string(v.specials));
  }
  specialVoxels = v.specials;
  return Status::Ok();
}

template<typename T>
void specialRuns(const std::uint8_t* stream,
  const StreamInfo& info,
  std::uint64_t maxCount,
  std::vector<SpecialRun>& runs,
  std::vector<T>& palette)
{
  runs.clear();
  palette.clear();
  if (info.maskBytes == 0)
  {
    return;
  }
  const std::uint8_t* section = maskOf(stream, info);
  const SectionView v = viewOf(section);
  const std::size_t valueBytes = valueSize(info.type);
  for (std::uint32_t e = 0; e < v.palette; ++e)
  {
    palette.push_back(info.type == ValueType::Float32
        ? static_cast<T>(format::load<float>(v.values + e * valueBytes))
        : static_cast<T>(format::load<double>(v.values + e * valueBytes)));
  }
  std::uint64_t counted = 0;
  walkProgram(section + format::MaskFixedBytes + v.palette * valueBytes,
    v.programBytes,
    info.dims.data(),
    v.palette,
    true,
    counted,
    [&](std::uint64_t first, std::uint64_t count, std::uint32_t entry)
    {
      for (std::uint64_t at = 0; at < count; at += maxCount)
      {
        runs.push_back(SpecialRun{ first + at, std::min(maxCount, count - at), entry });
      }
    });
}

template<typename T>
void restoreSpecials(const std::uint8_t* stream,
  const StreamInfo& info,
  T* out,
  std::uint64_t stride,
  const ExecutionOptions& options)
{
  std::vector<SpecialRun> runs;
  std::vector<T> palette;
  specialRuns<T>(stream, info, 1 << 16, runs, palette);
  sparsegrid::detail::parallelFor(options,
    runs.size(),
    64,
    [&](std::size_t first, std::size_t last)
    {
      for (std::size_t r = first; r < last; ++r)
      {
        const T value = palette[runs[r].entry];
        for (std::uint64_t i = runs[r].first; i < runs[r].first + runs[r].count; ++i)
        {
          out[i * stride] = value;
        }
      }
    });
}

template<typename T>
std::uint64_t countSpecials(const T* values,
  const Layout& layout,
  const SpecialValues& specials,
  const ExecutionOptions& options)
{
  const std::uint64_t voxels = layout.dims[0] * layout.dims[1] * layout.dims[2];
  return sparsegrid::detail::parallelCount(options,
    voxels,
    1 << 16,
    [&](std::size_t i) { return specials.contains(values[i * layout.stride]); });
}

template<typename T>
Status maskSpecials(const T* values,
  const Layout& layout,
  const SpecialValues& specials,
  MaskedInput<T>& out,
  const ExecutionOptions& options)
{
  const std::uint64_t voxels = layout.dims[0] * layout.dims[1] * layout.dims[2];
  Status st = sparsegrid::checkAllocation(voxels * (sizeof(T) + 1), "the codec's mask buffers");
  if (!st)
  {
    return st;
  }
  out.filled.resize(static_cast<std::size_t>(voxels));
  T* v = out.filled.data();
  sparsegrid::detail::parallelFor(options,
    static_cast<std::size_t>(voxels),
    1 << 16,
    [&](std::size_t first, std::size_t last)
    {
      for (std::size_t i = first; i < last; ++i)
      {
        v[i] = values[i * layout.stride];
      }
    });
  out.special.assign(static_cast<std::size_t>(voxels), 0);
  std::uint8_t* state = out.special.data();
  std::vector<std::uint8_t> program;
  std::vector<BitsOf<T>> palette;
  buildProgram(v, layout.dims.data(), specials, state, program, palette, out.specialVoxels);
  fillSpecials(v, state, layout.dims.data(), options);
  const std::uint64_t used = format::MaskFixedBytes + palette.size() * sizeof(T) + program.size();
  if (program.size() >= (std::uint64_t(1) << 32) || palette.size() >= (std::uint64_t(1) << 32) ||
    used >= (std::uint64_t(1) << 31))
  {
    out.section.clear(); // too large for a mask section: addMask stores the raw values
    return Status::Ok();
  }
  out.section.assign(static_cast<std::size_t>((used + 3) / 4 * 4), 0);
  std::uint8_t* s = out.section.data();
  format::store<std::uint64_t>(s, out.specialVoxels);
  format::store<std::uint32_t>(s + 8, static_cast<std::uint32_t>(palette.size()));
  format::store<std::uint32_t>(s + 12, static_cast<std::uint32_t>(program.size()));
  if (!palette.empty())
  {
    std::memcpy(s + format::MaskFixedBytes, palette.data(), palette.size() * sizeof(T));
  }
  if (!program.empty())
  {
    std::memcpy(
      s + format::MaskFixedBytes + palette.size() * sizeof(T), program.data(), program.size());
  }
  return Status::Ok();
}

template<typename T>
void predictSpecials(MaskedInput<T>& masked,
  const std::uint64_t dims[3],
  const format::Scheme& scheme,
  const ExecutionOptions& options)
{
  format::Plan plan;
  plan.build(dims, scheme);
  T* r = masked.filled.data();
  const std::uint8_t* special = masked.special.data();
  const std::uint64_t n0 = plan.dims[0];
  const std::uint64_t axisStride[3] = { 1, n0, n0 * plan.dims[1] };
  for (int pi = 1; pi < plan.passCount; ++pi) // the anchors (pass 0) keep their linear fill
  {
    const format::Pass& p = plan.passes[pi];
    const std::uint64_t off = p.gap * axisStride[p.axis];
    const std::uint64_t na = plan.dims[p.axis];
    forEachRow(options,
      plan,
      p,
      [&](std::uint64_t, std::uint64_t i1, std::uint64_t i2, std::uint64_t base)
      {
        for (std::uint64_t j0 = 0; j0 < p.count[0]; ++j0)
        {
          const std::uint64_t i0 = p.start[0] + j0 * p.step[0];
          const std::uint64_t idx = base + i0;
          if (special[idx] != 3)
          {
            continue; // ordinary, or special next to an ordinary voxel (keeps its line estimate)
          }
          const std::uint64_t ia = p.axis == 0 ? i0 : (p.axis == 1 ? i1 : i2);
          const T pred = format::predictAlong<T>(r, idx, off, ia, p.gap, na, scheme.cubic);
          if (std::isfinite(pred))
          {
            r[idx] = pred;
          }
        }
      });
  }
}

template<typename T>
Status addMask(std::vector<std::uint8_t>& stream,
  const MaskedInput<T>& masked,
  const T* values,
  const Layout& layout,
  bool& raw)
{
  StreamInfo info;
  std::vector<std::uint8_t> lengths;
  std::size_t tableCount = 0;
  Status st = parseHeader(stream.data(), stream.size(), info, &lengths, &tableCount);
  if (!st)
  {
    return Status(ErrorCode::Internal, "encode: the coded stream does not parse: " + st.message());
  }
  const std::uint64_t voxels = layout.dims[0] * layout.dims[1] * layout.dims[2];
  const std::uint64_t rawTotal = headerBytes(1, 0) + voxels * sizeof(T);
  const std::uint64_t maskBytes = masked.section.size();
  raw = info.raw || maskBytes == 0 || stream.size() + maskBytes >= rawTotal;
  if (raw)
  {
    std::vector<T> original(static_cast<std::size_t>(voxels));
    for (std::uint64_t i = 0; i < voxels; ++i)
    {
      original[i] = values[i * layout.stride];
    }
    writeRaw(original.data(), layout.dims.data(), info.absoluteBound, stream, true);
    return Status::Ok();
  }
  HeaderFields h;
  h.type = info.type;
  for (int a = 0; a < 3; ++a)
  {
    h.dims[a] = info.dims[a];
    h.scheme.order[a] = info.axisOrder[a];
  }
  h.scheme.cubic = info.cubic;
  h.bound = info.absoluteBound;
  h.levels = info.levels;
  h.levelBound = info.levelBound;
  h.levelQuantBound = info.levelQuantBound;
  h.lengths = lengths;
  h.mask = masked.section;
  h.levelEnd = info.levelEnd;
  for (std::uint64_t& end : h.levelEnd)
  {
    end += maskBytes;
  }
  const std::size_t header =
    headerBytes(h.levels, lengthTableBytes(h.lengths.data(), tableCount), 4, h.mask.size());
  std::vector<std::uint8_t> out(stream.size() + static_cast<std::size_t>(maskBytes));
  writeHeader(h, out.data());
  std::memcpy(out.data() + header,
    stream.data() + info.headerBytes,
    stream.size() - static_cast<std::size_t>(info.headerBytes));
  stream.swap(out);
  return Status::Ok();
}

#define SPARSEGRID_CODEC_MASK_INSTANTIATE(T)                                                       \
  template void specialRuns<T>(const std::uint8_t*,                                                \
    const StreamInfo&,                                                                             \
    std::uint64_t,                                                                                 \
    std::vector<SpecialRun>&,                                                                      \
    std::vector<T>&);                                                                              \
  template void restoreSpecials<T>(                                                                \
    const std::uint8_t*, const StreamInfo&, T*, std::uint64_t, const ExecutionOptions&);           \
  template std::uint64_t countSpecials<T>(                                                         \
    const T*, const Layout&, const SpecialValues&, const ExecutionOptions&);                       \
  template Status maskSpecials<T>(                                                                 \
    const T*, const Layout&, const SpecialValues&, MaskedInput<T>&, const ExecutionOptions&);      \
  template void predictSpecials<T>(                                                                \
    MaskedInput<T>&, const std::uint64_t*, const format::Scheme&, const ExecutionOptions&);        \
  template Status addMask<T>(                                                                      \
    std::vector<std::uint8_t>&, const MaskedInput<T>&, const T*, const Layout&, bool&);
SPARSEGRID_CODEC_MASK_INSTANTIATE(float)
SPARSEGRID_CODEC_MASK_INSTANTIATE(double)
#undef SPARSEGRID_CODEC_MASK_INSTANTIATE

} // namespace detail
} // namespace codec
} // namespace sparsegrid
