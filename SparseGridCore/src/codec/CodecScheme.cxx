// The coding plan of a stream: the checks of the layout, the scheme (axis order, cubic or linear
// prediction) chosen from a fixed sample of the values, the quantiser of each level, and the
// bounds a prefix of the stream guarantees for each level of detail.
#include "CodecInternal.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace sparsegrid
{
namespace codec
{
namespace detail
{

using format::Plan;

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

std::vector<format::Quantiser> levelQuantisers(double bound,
  int levels,
  const format::Scheme& scheme)
{
  std::vector<format::Quantiser> q(static_cast<std::size_t>(std::max(levels, 1)));
  for (int k = 0; k < levels; ++k)
  {
    const double b =
      format::levelQuantBound(bound, levels, k, scheme.coarseRatio, scheme.coarseMax);
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
  const SampleWindowGrid g = sampleWindowGrid(dims, a);
  const std::uint64_t axisStride[3] = { 1, dims[0], dims[0] * dims[1] };
  for (std::uint64_t j2 = 0; j2 < g.m[2] && g.windows > 0; ++j2)
  {
    for (std::uint64_t j1 = 0; j1 < g.m[1]; ++j1)
    {
      for (std::uint64_t j0 = 0; j0 < g.m[0]; ++j0)
      {
        f(samplePosition(g.lo[0], g.hi[0], j0, g.m[0]) +
          axisStride[1] * samplePosition(g.lo[1], g.hi[1], j1, g.m[1]) +
          axisStride[2] * samplePosition(g.lo[2], g.hi[2], j2, g.m[2]));
      }
    }
  }
  return g.windows;
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
    // Kept per thread: up to 256 KB, whose fresh pages on every call cost more than counting.
    static thread_local std::vector<std::uint32_t> count;
    count.assign(static_cast<std::size_t>(*range.second - lo) + 1, 0);
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

/// Trial blocks: the level-wise quantisation is tuned by coding a few small blocks of the image
/// with each candidate schedule, as QoZ does. Blocks of TrialEdge voxels per axis (the whole
/// axis where it is shorter), at most two per axis, spread evenly.
constexpr std::uint64_t TrialEdge = 17; // 2^4 + 1: the four finest levels of any larger image

struct TrialBlocks
{
  std::uint64_t edge[3] = { 1, 1, 1 };
  std::uint64_t count[3] = { 1, 1, 1 };
  std::uint64_t start[3][2] = { { 0, 0 }, { 0, 0 }, { 0, 0 } };
  std::uint64_t voxels() const { return edge[0] * edge[1] * edge[2]; }
  /// Blocks (b0, b1, b2) with an even b0 + b1 + b2 are used: at most 4 of the 2 x 2 x 2.
  std::uint64_t blocks() const
  {
    const std::uint64_t all = count[0] * count[1] * count[2];
    return all > 1 ? all / 2 : 1;
  }
};

TrialBlocks trialBlocks(const std::uint64_t dims[3])
{
  TrialBlocks t;
  for (int a = 0; a < 3; ++a)
  {
    t.edge[a] = std::min(TrialEdge, dims[a]);
    t.count[a] = dims[a] >= 3 * TrialEdge ? 2 : 1;
    const std::uint64_t room = dims[a] - t.edge[a];
    for (std::uint64_t j = 0; j < t.count[a]; ++j)
    {
      t.start[a][j] = room * (j + 1) / (t.count[a] + 1);
    }
  }
  return t;
}

/// Visits the voxels of every trial block, block after block, x fastest: f(voxel index).
template<typename F>
void forEachTrialVoxel(const std::uint64_t dims[3], const TrialBlocks& t, F&& f)
{
  for (std::uint64_t b2 = 0; b2 < t.count[2]; ++b2)
    for (std::uint64_t b1 = 0; b1 < t.count[1]; ++b1)
      for (std::uint64_t b0 = 0; b0 < t.count[0]; ++b0)
        for (std::uint64_t z = 0; (b0 + b1 + b2) % 2 == 0 && z < t.edge[2]; ++z)
          for (std::uint64_t y = 0; y < t.edge[1]; ++y)
            for (std::uint64_t x = 0; x < t.edge[0]; ++x)
            {
              f((t.start[0][b0] + x) +
                dims[0] * ((t.start[1][b1] + y) + dims[1] * (t.start[2][b2] + z)));
            }
}

/// Work buffers of a trial.
struct TrialBuffers
{
  std::vector<double> rec;
  std::vector<std::uint16_t> codes;
};

/// Codes trial block `block` (t.voxels() values, x fastest) under a scheme: the encoder's
/// prediction and quantisation (in double), the codes of each level cut into blocks of
/// format::BlockCodes and tokenised as the stream does.
void trialBlock(const TrialBlocks& t,
  const double* block,
  const format::Plan& plan,
  const std::vector<format::Quantiser>& qz,
  const format::Scheme& scheme,
  TrialBuffers& w,
  TrialCounts& out)
{
  const std::uint64_t stride[3] = { 1, t.edge[0], t.edge[0] * t.edge[1] };
  out.histogram.clear();
  out.maskBits = 0;
  w.rec.assign(block, block + t.voxels());
  double* rec = w.rec.data();
  for (int k = 1; k < plan.levels; ++k)
  {
    w.codes.clear();
    for (int pi = plan.levelPassBegin[k]; pi < plan.levelPassBegin[k + 1]; ++pi)
    {
      const format::Pass& p = plan.passes[pi];
      const int a = p.axis;
      const std::uint64_t off = p.gap * stride[a];
      std::uint64_t j[3];
      for (j[2] = 0; j[2] < p.count[2]; ++j[2])
      {
        for (j[1] = 0; j[1] < p.count[1]; ++j[1])
        {
          const std::uint64_t row = stride[1] * (p.start[1] + j[1] * p.step[1]) +
            stride[2] * (p.start[2] + j[2] * p.step[2]);
          for (j[0] = 0; j[0] < p.count[0]; ++j[0])
          {
            const std::uint64_t idx = row + p.start[0] + j[0] * p.step[0];
            const std::uint64_t i = p.start[a] + j[a] * p.step[a];
            const double pred =
              format::predictAlong(rec, idx, off, i, p.gap, t.edge[a], scheme.cubic);
            double r;
            w.codes.push_back(format::quantise(rec[idx], pred, qz[k], r));
            rec[idx] = r;
          }
        }
      }
    }
    for (std::size_t c = 0; c < w.codes.size(); c += format::BlockCodes)
    {
      const std::uint32_t m =
        static_cast<std::uint32_t>(std::min<std::size_t>(format::BlockCodes, w.codes.size() - c));
      out.maskBits += 1;
      format::tokenize(w.codes.data() + c,
        m,
        [&](std::uint32_t token, std::uint32_t)
        {
          if (token >= out.histogram.size())
          {
            out.histogram.resize(token + 1, 0);
          }
          ++out.histogram[token];
        });
    }
  }
}

/// Estimated coded bits of the trial blocks under one schedule, from the blocks' counts: the
/// order-0 entropy of their tokens together, one mask bit per block of codes and 32 bits per
/// escape. Integer counts: the estimate does not depend on the order the blocks were coded in.
double trialBits(const TrialCounts* blocks, std::size_t count)
{
  std::vector<std::uint32_t> histogram(format::EscapeSymbol + 1, 0);
  double bits = 0;
  for (std::size_t b = 0; b < count; ++b)
  {
    bits += blocks[b].maskBits;
    const std::vector<std::uint32_t>& h = blocks[b].histogram;
    if (h.size() > histogram.size())
    {
      histogram.resize(h.size(), 0);
    }
    for (std::size_t k = 0; k < h.size(); ++k)
    {
      histogram[k] += h[k];
    }
  }
  double tokens = 0;
  for (const std::uint32_t c : histogram)
  {
    tokens += c;
  }
  for (const std::uint32_t c : histogram)
  {
    if (c > 0)
    {
      bits += static_cast<double>(c) * std::log2(tokens / static_cast<double>(c));
    }
  }
  return bits + 32.0 * histogram[format::EscapeSymbol];
}

/// The level-wise schedules tried (coarseRatio, coarseMax): the default (SZ3's) and one
/// quantiser for all levels. Steeper schedules (QoZ tries ratios up to 2 and caps up to 4) lost
/// ratio on every shared volume at relative bounds 1e-2..1e-4; the flat one won at the tighter
/// bounds and on integer data (see docs/compression.md).
constexpr double TrialSchedules[][2] = { { 1.25, 2.0 }, { 1.0, 1.0 } };
/// A schedule other than the default must be estimated this much smaller: the estimate misses
/// the code-length table and the coarse levels, and differences below it were noise. With the
/// compact table of version 4 the flat schedule's estimated savings that paid on the shared
/// volumes were 1.0-5.2 %, and hydrogen at 1e-4 of its range (0.8 % estimated) lost 3.4 % of
/// ratio and 1.5 dB of PSNR with it.
constexpr double TrialMargin = 0.009;
/// Below this many estimated bits per voxel (with the default) the default is kept: most 64-code
/// blocks are then zero, and whether they stay zero depends on the coarse levels' errors, which
/// the trial blocks (exact at their corners) do not carry (hydrogen at 3e-2 of its range: 343:1
/// flat against 669:1, where the trial had estimated the flat schedule 3 % smaller).
constexpr double TrialDenseBits = 1.0;

} // namespace

SampleWindowGrid sampleWindowGrid(const std::uint64_t dims[3], int a)
{
  SampleWindowGrid g;
  g.half = sampleHalfWidth(dims[a]);
  if (g.half == 0)
  {
    return g;
  }
  for (int b = 0; b < 3; ++b)
  {
    g.lo[b] = b == a ? g.half : 0;
    g.hi[b] = b == a ? dims[b] - 1 - g.half : dims[b] - 1;
    g.m[b] = std::min<std::uint64_t>(16, g.hi[b] - g.lo[b] + 1);
  }
  g.windows = g.m[0] * g.m[1] * g.m[2];
  return g;
}

void trialIndices(const std::uint64_t dims[3], std::vector<std::uint64_t>& indices)
{
  forEachTrialVoxel(dims, trialBlocks(dims), [&](std::uint64_t i) { indices.push_back(i); });
}

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
  trialIndices(dims, indices);
}

bool scheduleTrial(const std::uint64_t dims[3],
  std::size_t trialCount,
  double bound,
  const format::Scheme& scheme,
  ScheduleTrial& trial)
{
  const TrialBlocks t = trialBlocks(dims);
  if (trialCount < t.blocks() * t.voxels())
  {
    return false;
  }
  for (int a = 0; a < 3; ++a)
  {
    trial.edge[a] = t.edge[a];
  }
  trial.blocks = t.blocks();
  trial.voxels = t.voxels();
  constexpr std::size_t Schedules = sizeof(TrialSchedules) / sizeof(TrialSchedules[0]);
  trial.candidates.assign(Schedules, scheme);
  trial.quantisers.resize(Schedules);
  for (std::size_t c = 0; c < Schedules; ++c)
  {
    trial.candidates[c].coarseRatio = TrialSchedules[c][0];
    trial.candidates[c].coarseMax = TrialSchedules[c][1];
  }
  // The schedules change the quantisers, not the passes.
  trial.plan.build(t.edge, trial.candidates[0]);
  for (std::size_t c = 0; c < Schedules; ++c)
  {
    trial.quantisers[c] = levelQuantisers(bound, trial.plan.levels, trial.candidates[c]);
  }
  return true;
}

void chooseSchedule(const ScheduleTrial& trial,
  const std::vector<TrialCounts>& counts,
  format::Scheme& scheme)
{
  double best = std::numeric_limits<double>::infinity();
  double first = best;
  format::Scheme chosen = scheme;
  for (std::size_t c = 0; c < trial.candidates.size() && c < counts.size(); ++c)
  {
    const double bits = trialBits(&counts[c], 1);
    if (std::isinf(first))
    {
      first = bits;
      if (bits < TrialDenseBits * static_cast<double>(trial.blocks * trial.voxels))
      {
        break;
      }
    }
    if (bits < best && (bits == first || bits < first * (1 - TrialMargin)))
    {
      best = bits;
      chosen = trial.candidates[c];
    }
  }
  scheme = chosen;
}

namespace
{
/// Tunes the scheme's level-wise quantisation on the trial blocks (`count` values, block after
/// block): the schedule of TrialSchedules whose estimated size is the smallest. Every (schedule,
/// block) pair is coded at once on the threads of `options` (about 0.1 ms each); the blocks'
/// counts are summed per schedule (integers: the estimate does not depend on the order). Values
/// in device memory take the same trial on the device (cudaimpl::chooseScheme).
void scheduleOnHost(const std::uint64_t dims[3],
  const double* trial,
  std::size_t count,
  double bound,
  const ExecutionOptions& options,
  format::Scheme& scheme)
{
  ScheduleTrial tr;
  if (!scheduleTrial(dims, count, bound, scheme, tr))
  {
    return;
  }
  for (std::size_t i = 0; i < count; ++i)
  {
    if (!std::isfinite(trial[i]))
    {
      return; // the encoder reports NaN/Inf; the choice must not depend on them
    }
  }
  const TrialBlocks t = trialBlocks(dims);
  const std::size_t blocks = static_cast<std::size_t>(tr.blocks);
  std::vector<TrialCounts> perBlock(tr.candidates.size() * blocks);
  execution::parallelFor(options,
    perBlock.size(),
    1,
    [&](std::size_t lo, std::size_t hi)
    {
      // Kept by each thread: fresh pages for a block's values on every call cost about as much
      // as coding it.
      static thread_local TrialBuffers buffers;
      for (std::size_t i = lo; i < hi; ++i)
      {
        const std::size_t c = i / blocks, b = i % blocks;
        trialBlock(t,
          trial + b * t.voxels(),
          tr.plan,
          tr.quantisers[c],
          tr.candidates[c],
          buffers,
          perBlock[i]);
      }
    });
  std::vector<TrialCounts> counts(tr.candidates.size());
  for (std::size_t c = 0; c < counts.size(); ++c)
  {
    for (std::size_t b = 0; b < blocks; ++b)
    {
      const TrialCounts& one = perBlock[c * blocks + b];
      std::vector<std::uint32_t>& h = counts[c].histogram;
      if (one.histogram.size() > h.size())
      {
        h.resize(one.histogram.size(), 0);
      }
      for (std::size_t k = 0; k < one.histogram.size(); ++k)
      {
        h[k] += one.histogram[k];
      }
      counts[c].maskBits += one.maskBits;
    }
  }
  chooseSchedule(tr, counts, scheme);
}
} // namespace

namespace
{
/// The statistics of axis a from its windows in the sample, which start at `at` (the sum is
/// taken window after window, so the result does not depend on the threads). `linear` and
/// `cubic` receive the residuals of this axis.
void axisStatistics(const std::uint64_t dims[3],
  int a,
  const std::vector<double>& sample,
  std::size_t at,
  double invStep,
  double& sum,
  std::vector<std::int64_t>& linear,
  std::vector<std::int64_t>& cubic)
{
  const std::uint64_t h = sampleHalfWidth(dims[a]);
  const std::size_t width = static_cast<std::size_t>(2 * h + 1);
  sum = 0;
  linear.clear();
  cubic.clear();
  forEachSampleWindow(dims,
    a,
    [&](std::uint64_t)
    {
      if (at + width > sample.size())
      {
        return;
      }
      const double* w = sample.data() + at + (width / 2 - 1);
      const double d2 = secondDifference(w[0], w[1], w[2]);
      sum += std::isfinite(d2) ? std::fabs(d2) : 0.0;
      if (h == 3)
      {
        linear.push_back(sampleQuantised(linearResidual(sample.data() + at), invStep));
        cubic.push_back(sampleQuantised(cubicResidual(sample.data() + at), invStep));
      }
      at += width;
    });
}
} // namespace

format::Scheme schemeFromSample(const std::uint64_t dims[3],
  const std::vector<double>& sample,
  double bound,
  const ExecutionOptions& options)
{
  // The three axes are measured on the options' threads (about 0.2 ms one after another).
  std::size_t begin[4] = { 0, 0, 0, 0 };
  // The statistics' and residual vectors' capacity is kept per thread (taken out of the
  // thread's keeping while the pool may run another encode on it).
  static thread_local SampleStatistics keptStatistics;
  static thread_local std::vector<std::int64_t> kept[6];
  SampleStatistics statistics;
  std::swap(statistics, keptStatistics);
  statistics.linear.clear();
  statistics.cubic.clear();
  for (int a = 0; a < 3; ++a)
  {
    const SampleWindowGrid g = sampleWindowGrid(dims, a);
    statistics.windows[a] = g.windows;
    begin[a + 1] = begin[a] + static_cast<std::size_t>(g.windows * (2 * g.half + 1));
  }
  std::vector<std::int64_t> q[6];
  for (int i = 0; i < 6; ++i)
  {
    std::swap(q[i], kept[i]);
  }
  const double invStep = 1.0 / (2 * bound);
  execution::parallelFor(options,
    3,
    1,
    [&](std::size_t lo, std::size_t hi)
    {
      for (std::size_t a = lo; a < hi; ++a)
      {
        axisStatistics(dims,
          static_cast<int>(a),
          sample,
          begin[a],
          invStep,
          statistics.roughnessSum[a],
          q[2 * a],
          q[2 * a + 1]);
      }
    });
  for (int a = 0; a < 3; ++a)
  {
    statistics.linear.insert(statistics.linear.end(), q[2 * a].begin(), q[2 * a].end());
    statistics.cubic.insert(statistics.cubic.end(), q[2 * a + 1].begin(), q[2 * a + 1].end());
  }
  for (int i = 0; i < 6; ++i)
  {
    std::swap(q[i], kept[i]);
  }
  const std::size_t at = std::min(begin[3], sample.size());
  const format::Scheme scheme =
    schemeFromStatistics(dims, statistics, sample.data() + at, sample.size() - at, bound, options);
  std::swap(statistics, keptStatistics);
  return scheme;
}

format::Scheme schemeFromStatistics(const std::uint64_t dims[3],
  SampleStatistics& statistics,
  const double* trial,
  std::size_t trialCount,
  double bound,
  const ExecutionOptions& options)
{
  format::Scheme scheme = schemeFromWindows(statistics);
  scheduleOnHost(dims, trial, trialCount, bound, options, scheme);
  return scheme;
}

format::Scheme schemeFromWindows(SampleStatistics& statistics)
{
  // Per axis: the mean |second difference| orders the axes; over all windows wide enough, the
  // entropy of the finest level's quantised residuals under either predictor picks the
  // predictor (cubic wins on smooth data; linear on noise and on integer data at bounds below
  // one, where cubic weights spread the residuals over sixteenths). NaN/Inf are left to the
  // encoder to report; here they only must not change the choice.
  double roughness[3];
  for (int a = 0; a < 3; ++a)
  {
    const std::uint64_t w = statistics.windows[a];
    roughness[a] = w ? statistics.roughnessSum[a] / static_cast<double>(w) : 0.0;
  }
  format::Scheme scheme;
  // Roughest first; equal roughness keeps the higher axis first (the slowest in memory).
  std::sort(scheme.order,
    scheme.order + 3,
    [&](int x, int y)
    { return roughness[x] > roughness[y] || (roughness[x] == roughness[y] && x > y); });
  scheme.cubic = !(entropyBits(statistics.linear) < entropyBits(statistics.cubic));
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
    out.quantisers = levelQuantisers(bound, out.plan.levels, scheme);
  }
  return st;
}

void makeDecodePlan(const StreamInfo& info, CodingPlan& out)
{
  format::Scheme scheme;
  scheme.cubic = info.cubic;
  scheme.compactChunks = info.version >= 5;
  for (int a = 0; a < 3; ++a)
  {
    scheme.order[a] = info.axisOrder[a];
  }
  out.voxels = info.dims[0] * info.dims[1] * info.dims[2];
  out.plan.build(info.dims.data(), scheme);
  out.quantisers = levelQuantisers(info);
}

} // namespace detail
} // namespace codec
} // namespace sparsegrid
