// stencil-bench: the stencil study's table on this machine. Measures the device copy bandwidth,
// the regular-grid laplap against it, every access strategy x table layout on a column mesh that
// emulates the same grid (row-major and z-curve numbering), and the CPU beside them. Prints a
// table and writes JSON (--json FILE); --image-only leaves the column meshes out. GPU times are
// medians of kernel-only times (CUDA events); CPU times are medians of whole calls without the
// table preparation (input NaN scan off).
#include "stencil/Stencil.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace
{
struct Row
{
  std::string precision;
  std::string backend;
  std::string layout; // "regular" or the mesh numbering
  std::string op;
  std::string strategy;
  std::string table;
  double seconds = 0;
  double ratio = 0;    // to the regular-grid time of the same backend and precision
  double fraction = 0; // GPU regular grid: effective bandwidth / copy bandwidth
  std::size_t patterns = 0;
  std::size_t tableBytes = 0;
  double maxDiff = 0; // to the regular-grid result
};

std::vector<Row> rows;

double median(std::vector<double> v)
{
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

template<typename T>
double maxDifference(const std::vector<T>& a, const std::vector<T>& b)
{
  double m = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
  {
    const double d = std::fabs(double(a[i]) - double(b[i]));
    if (!(d <= m))
    {
      m = std::isnan(d) ? INFINITY : d;
    }
  }
  return m;
}

/// What every measurement of one precision shares: the image and its input, the column meshes
/// that emulate it (and the input in the z-curve numbering), the outputs and the references.
template<typename T>
struct Bench
{
  const char* name = nullptr;
  std::size_t nx = 0, ny = 0, nz = 0;
  int repeats = 0;
  int cpuRepeats = 0;
  double copyBandwidth = 0;
  stencil::ImageGrid g;
  std::vector<T> u;
  std::vector<T> reference;
  std::vector<T> out;
  stencil::StencilOptions s;
  stencil::GeneratedColumns rowMajor;
  stencil::GeneratedColumns zCurve;
  std::vector<std::size_t> curveToRow; ///< z-curve cell -> row-major cell
  std::vector<T> uCurve;
  std::vector<T> referenceCurve;
};

template<typename T>
void setUp(Bench<T>& b)
{
  const std::size_t nx = b.nx, ny = b.ny, nz = b.nz;
  b.g.dims = { nx, ny, nz };
  b.u.resize(b.g.size());
  for (std::size_t i = 0; i < b.u.size(); ++i)
  {
    b.u[i] = static_cast<T>(std::sin(0.001 * i) + 0.5 * std::cos(0.37 * (i % nx)));
  }
  b.reference.resize(b.u.size());
  b.out.resize(b.u.size());
  b.s.op = stencil::Operator::HorizontalLaplap;
  b.s.boundary = stencil::BoundaryMode::ZeroFlux;
  b.s.rejectNonFinite = false;
  stencil::ColumnGrid grid{ stencil::HorizontalShape::Quad, nx, ny, nz };
  stencil::Status status = stencil::generateColumns(grid, b.rowMajor);
  grid.ordering = stencil::Ordering::ZCurve;
  if (!status || !(status = stencil::generateColumns(grid, b.zCurve)))
  {
    std::fprintf(stderr, "column mesh %s: %s\n", b.name, status.message().c_str());
    std::exit(1);
  }
  // The z-curve mesh numbers cells differently: permute the input so that results compare.
  b.curveToRow.resize(nx * ny);
  for (std::size_t i = 0; i < nx * ny; ++i)
  {
    b.curveToRow[i] = static_cast<std::size_t>(std::llround(b.zCurve.centres[2 * i])) +
      nx * static_cast<std::size_t>(std::llround(b.zCurve.centres[2 * i + 1]));
  }
  b.uCurve.resize(b.u.size());
  for (std::size_t k = 0; k < nz; ++k)
  {
    for (std::size_t i = 0; i < nx * ny; ++i)
    {
      b.uCurve[k * nx * ny + i] = b.u[k * nx * ny + b.curveToRow[i]];
    }
  }
  b.referenceCurve.resize(b.u.size());
}

/// The GPU's kernel seconds of one call (the library repeats it), or the CPU's median of
/// `cpuRepeats` whole calls after a warm-up, without the table preparation.
template<typename Call>
double timeCall(bool onGpu, int cpuRepeats, const Call& call, stencil::ExecutionReport& report)
{
  if (onGpu)
  {
    call(report);
    return report.kernelSeconds;
  }
  std::vector<double> times;
  call(report); // warm-up
  for (int r = 0; r < cpuRepeats; ++r)
  {
    call(report);
    times.push_back(report.seconds - report.tableSeconds);
  }
  return median(times);
}

/// One shape of the GPU image kernels (its tuning knobs).
struct Variant
{
  stencil::ImageKernel kernel;
  int columns;
  int rows;
  int blockRows;
  bool tight = false;
  int gridBlocks = 0;
  bool streaming = false;
  bool tiles = false;
  int tileThreads = 0;
  int tileRows = 0;
  int warpRows = 0; // -1: the strips where the warp rows are the default
  int warpPrefetch = 0;
  int warpFrame = 0;
  int framePlacement = 0;
};

/// The warp-row shapes of the 2-D laplap: the strips where the warp rows are the default, the
/// compiled shapes, the other frame forms and the frame placements.
void addWarpRowVariants(std::vector<Variant>& variants)
{
  // The default strips where the warp rows are the default (the 2-D laplap), and the
  // compiled warp-row shapes (output rows per warp x input rows in flight).
  Variant v{ stencil::ImageKernel::RowStrips, 0, 0, 0 };
  v.warpRows = -1;
  variants.push_back(v);
  for (const auto& shape : { std::pair<int, int>{ 4, 8 },
         std::pair<int, int>{ 8, 4 },
         std::pair<int, int>{ 8, 12 },
         std::pair<int, int>{ 16, 4 },
         std::pair<int, int>{ 16, 6 } })
  {
    v.warpRows = shape.first;
    v.warpPrefetch = shape.second;
    variants.push_back(v);
  }
  // The default shape with the other forms of the frame (frame-row warps, point blocks).
  v.warpRows = 0;
  v.warpPrefetch = 0;
  for (int frame : { 1, 2 })
  {
    v.warpFrame = frame;
    variants.push_back(v);
  }
  // Where the frame goes: the strips and the default, first, spread, last.
  v.warpFrame = 0;
  for (int warpRows : { -1, 0 })
    for (int placement : { 1, 2, 3 })
    {
      v.warpRows = warpRows;
      v.framePlacement = placement;
      variants.push_back(v);
    }
}

/// The GPU image kernels compared for operator `op`.
std::vector<Variant> imageVariants(stencil::Operator op)
{
  std::vector<Variant> variants;
  for (int columns : { 1, 2, 4 })
    for (int r : { 1, 2, 4, 8 })
      variants.push_back(Variant{ stencil::ImageKernel::RowStrips, columns, r, 0 });
  // The default strips in blocks of 1, 2, 8 rows of 32 threads (default 4).
  for (int blockRows : { 1, 2, 8 })
    variants.push_back(Variant{ stencil::ImageKernel::RowStrips, 0, 0, blockRows });
  // The default strips capped at 40 registers, in blocks of 4 and 8 rows.
  for (int blockRows : { 0, 8 })
    variants.push_back(Variant{ stencil::ImageKernel::RowStrips, 0, 0, blockRows, true });
  // The default strips (and the capped ones) in resident blocks that loop over the strip
  // blocks.
  for (bool tight : { false, true })
    variants.push_back(Variant{ stencil::ImageKernel::RowStrips, 0, 0, 0, tight, -1 });
  // The default strips with evict-first (streaming) stores of the output.
  variants.push_back(Variant{ stencil::ImageKernel::RowStrips, 0, 0, 0, false, 0, true });
  // Row tiles (2-D operators only; the 3-D ones would run the strips): threads per block
  // with the automatic span, and spans of 16 .. 128 rows with 64 and 128 threads.
  if (op == stencil::Operator::HorizontalLaplap || op == stencil::Operator::HorizontalLaplacian)
  {
    for (int tileThreads : { 32, 64, 128, 256 })
      variants.push_back(
        Variant{ stencil::ImageKernel::RowStrips, 0, 0, 0, false, 0, false, true, tileThreads, 0 });
    for (int tileThreads : { 64, 128 })
      for (int tileRows : { 16, 32, 64, 128 })
        variants.push_back(Variant{
          stencil::ImageKernel::RowStrips, 0, 0, 0, false, 0, false, true, tileThreads, tileRows });
  }
  if (op == stencil::Operator::HorizontalLaplap)
  {
    addWarpRowVariants(variants);
  }
  // Where the boundary blocks go, for every operator: the default strips with
  // their boundary first, spread, last (the default is spread, first for the 3-D laplap).
  for (int placement : { 1, 2, 3 })
  {
    Variant v{ stencil::ImageKernel::RowStrips, 0, 0, 0 };
    v.warpRows = -1;
    v.framePlacement = placement;
    variants.push_back(v);
  }
  variants.push_back(Variant{ stencil::ImageKernel::LayerSlices, 0, 0, 0 });
  return variants;
}

/// The GPU image kernels side by side (layout "regular-variant": not used for the ratios), each
/// against `row`, the default kernel's row of `t` seconds; `b.out` keeps the default's result.
template<typename T>
void runImageVariants(Bench<T>& b,
  const stencil::ExecutionOptions& o,
  const stencil::StencilOptions& so,
  const Row& row,
  double t)
{
  const std::vector<T> chosen = b.out;
  for (const Variant& v : imageVariants(so.op))
  {
    stencil::ExecutionOptions ov = o;
    ov.tuning.imageKernel = v.kernel;
    ov.tuning.imageColumnsPerThread = v.columns;
    ov.tuning.imageRowsPerThread = v.rows;
    ov.tuning.imageBlockRows = v.blockRows;
    ov.tuning.imageTightRegisters = v.tight;
    ov.tuning.imageGridBlocks = v.gridBlocks;
    ov.tuning.imageStreamingStores = v.streaming;
    ov.tuning.imageRowTiles = v.tiles;
    ov.tuning.imageTileThreads = v.tileThreads;
    ov.tuning.imageTileRows = v.tileRows;
    ov.tuning.imageWarpRows = v.warpRows;
    ov.tuning.imageWarpPrefetch = v.warpPrefetch;
    ov.tuning.imageWarpFrame = v.warpFrame;
    ov.tuning.imageFramePlacement = v.framePlacement;
    stencil::ExecutionReport rep;
    const auto st = stencil::apply(b.g, b.u.data(), b.out.data(), so, ov, &rep);
    if (!st)
    {
      std::fprintf(stderr, "image variant %s: %s\n", b.name, st.message().c_str());
      std::exit(1);
    }
    Row variant = row;
    variant.layout = "regular-variant";
    variant.strategy = std::string(stencil::toString(v.kernel)) +
      (v.rows > 0 ? " C=" + std::to_string(v.columns) + " R=" + std::to_string(v.rows)
                  : std::string()) +
      (v.blockRows > 0 || v.tight || v.gridBlocks != 0 || v.streaming || v.tiles ||
            v.warpRows != 0 || v.warpFrame != 0 || v.framePlacement != 0
          ? " (" + rep.imageKernel + ")"
          : std::string());
    variant.seconds = rep.kernelSeconds;
    variant.ratio = rep.kernelSeconds / t;
    variant.fraction = (2.0 * b.u.size() * sizeof(T) / rep.kernelSeconds) / b.copyBandwidth;
    variant.maxDiff = maxDifference(b.out, chosen);
    rows.push_back(variant);
  }
  b.out = chosen;
}

/// The regular grid: every operator with the default kernel (and on the GPU every image
/// kernel); the 2-D laplap's result becomes the reference of both numberings.
template<typename T>
void runImage(Bench<T>& b, stencil::Backend backend, const stencil::ExecutionOptions& o)
{
  const bool onGpu = backend == stencil::Backend::CUDA;
  const std::size_t nx = b.nx, ny = b.ny, nz = b.nz;
  for (stencil::Operator op : { stencil::Operator::HorizontalLaplap,
         stencil::Operator::Laplap,
         stencil::Operator::Laplacian,
         stencil::Operator::HorizontalLaplacian })
  {
    stencil::StencilOptions so = b.s;
    so.op = op;
    stencil::ExecutionReport report;
    const double t = timeCall(
      onGpu,
      b.cpuRepeats,
      [&](stencil::ExecutionReport& rep)
      {
        const auto st = stencil::apply(b.g, b.u.data(), b.out.data(), so, o, &rep);
        if (!st)
        {
          std::fprintf(stderr, "image %s: %s\n", b.name, st.message().c_str());
          std::exit(1);
        }
      },
      report);
    Row row;
    row.precision = b.name;
    row.backend = stencil::toString(backend);
    row.layout = "regular";
    row.op = stencil::toString(op);
    row.strategy = onGpu ? "default: " + report.imageKernel : "direct";
    row.table = "-";
    row.seconds = t;
    row.ratio = 1;
    row.fraction = onGpu ? (2.0 * b.u.size() * sizeof(T) / t) / b.copyBandwidth : 0;
    rows.push_back(row);
    if (onGpu)
    {
      runImageVariants(b, o, so, row, t);
    }
    if (op == stencil::Operator::HorizontalLaplap)
    {
      b.reference = b.out;
      for (std::size_t k = 0; k < nz; ++k)
      {
        for (std::size_t i = 0; i < nx * ny; ++i)
        {
          b.referenceCurve[k * nx * ny + i] = b.reference[k * nx * ny + b.curveToRow[i]];
        }
      }
    }
  }
}

/// The seconds of the regular-grid 2-D laplap already measured for this precision and backend.
double regularSeconds(const char* name, stencil::Backend backend)
{
  double regular = 0;
  for (const Row& r : rows)
  {
    if (r.precision == name && r.backend == stencil::toString(backend) && r.layout == "regular" &&
      r.op == "HorizontalLaplap")
    {
      regular = r.seconds;
    }
  }
  return regular;
}

/// One access strategy of the column kernels with its tuning.
struct Choice
{
  stencil::AccessStrategy strategy;
  int slice;
  int tileLayers; // 0: the default
  bool prefetch;
  int stagedSlice = 0;
  int async = -1; // staged async copies: -1 the default, 0 off, 1 on
  int lanes = -1; // staged lanes over layers: -1 the default, 0 off, 1 on
  int groups = 0; // staged ring groups: -1 the default, 0 off, 1 on
};

std::vector<Choice> columnChoices()
{
  std::vector<Choice> choices = { { stencil::AccessStrategy::Naive, 8, 0, false },
    { stencil::AccessStrategy::IdxVar, 8, 0, false },
    { stencil::AccessStrategy::Shared, 8, 0, false },
    { stencil::AccessStrategy::ZLoop, 8, 0, false },
    { stencil::AccessStrategy::SlicedZLoop, 8, 0, false },
    { stencil::AccessStrategy::StagedZLoop, 8, 0, false, 0, -1, -1, -1 } };
  // Staged laplap: layers per step x layers per block (GPU, z-curve, chasing tables only).
  // "prefetch" selects the staged kernel with the wider register cap.
  // Then the same without and with the async copies of the next step.
  for (int async : { 0, 1 })
    for (bool wide : { false, true })
      for (int stagedSlice : { 0, 32 })
        for (int layers : { 1, 2, 4 })
          if (!(async && wide))
          {
            choices.push_back(
              { stencil::AccessStrategy::StagedZLoop, 8, layers, wide, stagedSlice, async, 0 });
          }
  // The staged laplap with its rings as groups of 4 cells (float), whole
  // columns and slices of 32.
  for (int stagedSlice : { 0, 32 })
    choices.push_back({ stencil::AccessStrategy::StagedZLoop, 8, 4, false, stagedSlice, 0, 0, 1 });
  // The staged laplap with lanes over layers, whole columns and slices of 32.
  for (int stagedSlice : { 0, 32 })
    choices.push_back({ stencil::AccessStrategy::StagedZLoop, 8, 0, false, stagedSlice, -1, 1 });
  // Slice sizes of the sliced z-loop (GPU, z-curve, chasing compressed table only).
  for (int slice : { 2, 4, 16, 32 })
    choices.push_back({ stencil::AccessStrategy::SlicedZLoop, slice, 0, false });
  // Layers per step of the tiled laplap, with and without prefetch (GPU, z-curve, chasing
  // tables only).
  for (bool prefetch : { false, true })
    for (int layers : { 1, 2, 4 })
    {
      choices.push_back({ stencil::AccessStrategy::ZLoop, 8, layers, prefetch });
      choices.push_back({ stencil::AccessStrategy::SlicedZLoop, 16, layers, prefetch });
    }
  return choices;
}

/// Whether the column study measures `choice` with table `variant` (chasing, compressed:
/// 0 both, 1 chasing/plain, 2 compressed, 3 plain) in numbering `ordering` (0 row-major).
bool measured(const Choice& choice, int variant, int ordering, bool onGpu)
{
  if (choice.slice != 8 && choice.tileLayers == 0 && (!onGpu || ordering == 0 || variant != 0))
  {
    return false;
  }
  if (choice.tileLayers > 0 && (!onGpu || ordering == 0 || variant > 1))
  {
    return false;
  }
  // The CPU has no shared memory (it maps Shared to z-loop); to keep the device run
  // short it runs the z-curve numbering, every strategy with the chasing compressed
  // table and every table with the z-loop.
  return onGpu ||
    !(choice.strategy == stencil::AccessStrategy::Shared || ordering == 0 ||
      (variant != 0 && choice.strategy != stencil::AccessStrategy::ZLoop));
}

/// One column-mesh measurement: the 2-D laplap with `choice` and table `variant` in numbering
/// `ordering`, against the regular grid's `regular` seconds.
template<typename T>
void runColumnChoice(Bench<T>& b,
  stencil::Backend backend,
  const stencil::ExecutionOptions& o,
  int ordering,
  const Choice& choice,
  int variant,
  double regular)
{
  const bool onGpu = backend == stencil::Backend::CUDA;
  const stencil::GeneratedColumns& mesh = ordering == 0 ? b.rowMajor : b.zCurve;
  const std::vector<T>& input = ordering == 0 ? b.u : b.uCurve;
  const std::vector<T>& expected = ordering == 0 ? b.reference : b.referenceCurve;
  const stencil::AccessStrategy strategy = choice.strategy;
  stencil::ExecutionOptions co = o;
  co.strategy = strategy;
  co.sliceSize = choice.slice;
  co.tuning.tileLayers = choice.tileLayers;
  co.tuning.tilePrefetch = choice.prefetch;
  co.tuning.stagedSlice = choice.stagedSlice;
  co.tuning.stagedWideRegisters = choice.prefetch;
  co.tuning.stagedAsyncCopies = choice.async;
  co.tuning.stagedLayerLanes = choice.lanes;
  co.tuning.stagedRingGroups = choice.groups;
  co.tuning.chasingTable = variant < 2;
  co.tuning.compressedTable = variant % 2 == 0;
  stencil::ExecutionReport report;
  const double t = timeCall(
    onGpu,
    b.cpuRepeats,
    [&](stencil::ExecutionReport& rep)
    {
      const auto st = stencil::apply(mesh.mesh, input.data(), b.out.data(), b.s, co, &rep);
      if (!st)
      {
        std::fprintf(stderr, "columns %s: %s\n", b.name, st.message().c_str());
        std::exit(1);
      }
    },
    report);
  Row row;
  row.precision = b.name;
  row.backend = stencil::toString(backend);
  row.layout =
    stencil::toString(ordering == 0 ? stencil::Ordering::RowMajor : stencil::Ordering::ZCurve);
  row.op = "HorizontalLaplap";
  row.strategy = std::string(stencil::toString(strategy)) +
    (strategy == stencil::AccessStrategy::SlicedZLoop ? " S=" + std::to_string(choice.slice)
                                                      : std::string()) +
    (choice.stagedSlice > 0 ? " slice=" + std::to_string(choice.stagedSlice) : std::string()) +
    " (" + report.columnKernel + ")";
  row.table = std::string(co.tuning.chasingTable ? "chasing" : "non-chasing") +
    (co.tuning.compressedTable ? "/compressed" : "/plain");
  row.seconds = t;
  row.ratio = regular > 0 ? t / regular : 0;
  row.patterns = report.tablePatterns;
  row.tableBytes = report.tableBytes;
  row.maxDiff = maxDifference(b.out, expected);
  rows.push_back(row);
  std::fprintf(stderr,
    "%s %s %s %s %s: %.1f us\n",
    b.name,
    row.backend.c_str(),
    row.layout.c_str(),
    row.strategy.c_str(),
    row.table.c_str(),
    t * 1e6);
}

/// The column meshes: every access strategy x table layout in both numberings.
template<typename T>
void runColumns(Bench<T>& b, stencil::Backend backend, const stencil::ExecutionOptions& o)
{
  const bool onGpu = backend == stencil::Backend::CUDA;
  const double regular = regularSeconds(b.name, backend);
  for (int ordering = 0; ordering < 2; ++ordering)
  {
    for (const Choice& choice : columnChoices())
    {
      for (int variant = 0; variant < 4; ++variant)
      {
        if (measured(choice, variant, ordering, onGpu))
        {
          runColumnChoice(b, backend, o, ordering, choice, variant, regular);
        }
      }
    }
  }
}

/// Medians over the repeats (the mean of the middle two for an even count).
double medianOfRepeats(std::vector<double> t)
{
  std::sort(t.begin(), t.end());
  const std::size_t n = t.size();
  return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

/// The stability study's kernels and what its repeats collect.
struct Stability
{
  static constexpr int Kinds = 4;
  stencil::ExecutionOptions firstOptions;
  stencil::ExecutionOptions spreadOptions;
  stencil::ExecutionOptions warpOptions;
  const stencil::ExecutionOptions* kinds[Kinds] = {};
  const char* kindNames[Kinds] = { "default",
    "strips frame first",
    "strips frame spread",
    "warp rows 8" };
  std::vector<double> kindTimes[Kinds];
  std::vector<double> kindRatios[Kinds];
  std::vector<double> copyRates;
  std::vector<double> stagedTimes;  // the default staged z-loop per repeat
  std::vector<double> stagedRatios; // ... over the same repeat's regular default
  std::string stagedKernel;

  /// The regular default, the strips with the frame first and spread, the warp rows of 8 rows
  /// asked for.
  explicit Stability(const stencil::ExecutionOptions& o)
  {
    this->firstOptions = o;
    this->firstOptions.tuning.imageWarpRows = -1;
    this->firstOptions.tuning.imageFramePlacement = 1;
    this->spreadOptions = this->firstOptions;
    this->spreadOptions.tuning.imageFramePlacement = 2;
    this->warpOptions = o;
    this->warpOptions.tuning.imageWarpRows = 8;
    this->kinds[0] = &o;
    this->kinds[1] = &this->firstOptions;
    this->kinds[2] = &this->spreadOptions;
    this->kinds[3] = &this->warpOptions;
  }
  Stability(const Stability&) = delete;
  Stability& operator=(const Stability&) = delete;
};

/// The default z-loop and staged z-loop (z-curve, chasing/plain) of one stability repeat,
/// against the same repeat's regular default.
template<typename T>
void stabilityColumns(Bench<T>& b,
  stencil::Backend backend,
  const stencil::ExecutionOptions& o,
  int run,
  const stencil::ExecutionReport& regularReport,
  Stability& st)
{
  Row row;
  row.precision = b.name;
  row.backend = stencil::toString(backend);
  row.layout = "repeat " + std::to_string(run + 1);
  row.op = "HorizontalLaplap";
  stencil::ExecutionOptions co = o;
  co.strategy = stencil::AccessStrategy::ZLoop;
  co.tuning.compressedTable = false;
  stencil::ExecutionReport columnReport;
  if (!stencil::apply(b.zCurve.mesh, b.uCurve.data(), b.out.data(), b.s, co, &columnReport))
  {
    std::exit(1);
  }
  row.strategy = "z-loop (" + columnReport.columnKernel + ")";
  row.table = "chasing/plain";
  row.seconds = columnReport.kernelSeconds;
  row.ratio = row.seconds / regularReport.kernelSeconds;
  row.fraction = 0;
  rows.push_back(row);
  co.strategy = stencil::AccessStrategy::StagedZLoop;
  if (!stencil::apply(b.zCurve.mesh, b.uCurve.data(), b.out.data(), b.s, co, &columnReport))
  {
    std::exit(1);
  }
  row.strategy = "staged-z-loop (" + columnReport.columnKernel + ")";
  row.seconds = columnReport.kernelSeconds;
  row.ratio = row.seconds / regularReport.kernelSeconds;
  row.maxDiff = maxDifference(b.out, b.referenceCurve);
  rows.push_back(row);
  st.stagedTimes.push_back(row.seconds);
  st.stagedRatios.push_back(row.ratio);
  st.stagedKernel = columnReport.columnKernel;
}

/// One stability repeat: the kernels and the copy references in turn, the one going first
/// rotating every repeat, each kernel's bandwidth rated against this repeat's faster copy.
template<typename T>
void stabilityRepeat(Bench<T>& b,
  stencil::Backend backend,
  const stencil::ExecutionOptions& o,
  bool columns,
  int run,
  Stability& st)
{
  constexpr int Kinds = Stability::Kinds;
  stencil::ExecutionReport reports[Kinds];
  double diffs[Kinds] = { 0, 0, 0, 0 };
  double copyKernel = 0;
  double copyMemcpy = 0;
  for (int turn = 0; turn <= Kinds; ++turn)
  {
    const int which = (turn + run) % (Kinds + 1);
    if (which == Kinds)
    {
      if (!stencil::measureDeviceBandwidth(
            b.u.size() * sizeof(T), b.repeats, copyKernel, copyMemcpy))
      {
        std::exit(1);
      }
      continue;
    }
    if (!stencil::apply(b.g, b.u.data(), b.out.data(), b.s, *st.kinds[which], &reports[which]))
    {
      std::exit(1);
    }
    diffs[which] = maxDifference(b.out, b.reference);
    st.kindTimes[which].push_back(reports[which].kernelSeconds);
  }
  const double copyRate = std::max(copyKernel, copyMemcpy);
  st.copyRates.push_back(copyRate);
  for (int which = 0; which < Kinds; ++which)
  {
    st.kindRatios[which].push_back(
      (2.0 * b.u.size() * sizeof(T) / reports[which].kernelSeconds) / copyRate);
  }
  std::fprintf(stderr,
    "%s repeat %d: default %.1f us (%.1f %%), strips frame first %.1f us (%.1f %%), strips "
    "frame spread %.1f us (%.1f %%), warp rows 8 %.1f us (%.1f %%); copy kernel %.1f GB/s, "
    "cudaMemcpy %.1f GB/s (%% of the faster)\n",
    b.name,
    run + 1,
    reports[0].kernelSeconds * 1e6,
    100 * st.kindRatios[0].back(),
    reports[1].kernelSeconds * 1e6,
    100 * st.kindRatios[1].back(),
    reports[2].kernelSeconds * 1e6,
    100 * st.kindRatios[2].back(),
    reports[3].kernelSeconds * 1e6,
    100 * st.kindRatios[3].back(),
    copyKernel * 1e-9,
    copyMemcpy * 1e-9);
  for (int which = 0; which < Kinds; ++which)
  {
    Row row;
    row.precision = b.name;
    row.backend = stencil::toString(backend);
    row.layout = "repeat " + std::to_string(run + 1);
    row.op = "HorizontalLaplap";
    row.strategy =
      std::string(which == 0 ? "regular default: " : "regular: ") + reports[which].imageKernel;
    row.table = "-";
    row.seconds = reports[which].kernelSeconds;
    row.ratio = row.seconds / reports[0].kernelSeconds;
    row.fraction = st.kindRatios[which].back();
    row.maxDiff = diffs[which];
    rows.push_back(row);
  }
  if (columns)
  {
    stabilityColumns(b, backend, o, run, reports[0], st);
  }
}

/// The medians over the stability repeats, against the copy bandwidth measured at the start of
/// the run and against each repeat's own.
template<typename T>
void printStability(const Bench<T>& b, const Stability& st)
{
  const double copyMedian = medianOfRepeats(st.copyRates);
  for (int which = 0; which < Stability::Kinds; ++which)
  {
    const std::vector<double>& t = st.kindTimes[which];
    const std::vector<double>& f = st.kindRatios[which];
    const double m = medianOfRepeats(t);
    std::fprintf(stderr,
      "%s %s median of %zu repeats %.1f us (%.1f-%.1f) = %.1f %% of the copy bandwidth "
      "%.1f GB/s (start of the run); against each repeat's own copy: median %.1f %% "
      "(%.1f-%.1f), copy median %.1f GB/s\n",
      b.name,
      st.kindNames[which],
      t.size(),
      m * 1e6,
      *std::min_element(t.begin(), t.end()) * 1e6,
      *std::max_element(t.begin(), t.end()) * 1e6,
      100.0 * (2.0 * b.u.size() * sizeof(T) / m) / b.copyBandwidth,
      b.copyBandwidth * 1e-9,
      100 * medianOfRepeats(f),
      100 * *std::min_element(f.begin(), f.end()),
      100 * *std::max_element(f.begin(), f.end()),
      copyMedian * 1e-9);
  }
  const std::vector<double>& times = st.stagedTimes;
  const std::vector<double>& ratios = st.stagedRatios;
  if (!times.empty())
  {
    std::fprintf(stderr,
      "%s staged z-loop (%s, z-curve, chasing/plain) median of %zu repeats %.1f us "
      "(%.1f-%.1f); x the same repeat's regular default: median %.2f (%.2f-%.2f)\n",
      b.name,
      st.stagedKernel.c_str(),
      times.size(),
      medianOfRepeats(times) * 1e6,
      *std::min_element(times.begin(), times.end()) * 1e6,
      *std::max_element(times.begin(), times.end()) * 1e6,
      medianOfRepeats(ratios),
      *std::min_element(ratios.begin(), ratios.end()),
      *std::max_element(ratios.begin(), ratios.end()));
  }
}

/// Stability: the regular default, the strips with the frame first and spread, the warp rows of
/// 8 rows asked for (both precisions) and the copy references (the copy kernel and cudaMemcpy at
/// this image's size), in turn, the one going first rotating every repeat, so that none always
/// follows the same one; each a median of `repeats` runs. Per repeat, every kernel's bandwidth
/// is also rated against the same repeat's faster copy (the reference drifts by a few percent
/// between runs); then the default z-loop and staged z-loop (z-curve, chasing/plain) again,
/// alternating.
template<typename T>
void runStability(Bench<T>& b,
  stencil::Backend backend,
  const stencil::ExecutionOptions& o,
  bool columns,
  int stabilityRuns)
{
  Stability st(o);
  for (int run = 0; run < stabilityRuns; ++run)
  {
    stabilityRepeat(b, backend, o, columns, run, st);
  }
  printStability(b, st);
}

template<typename T>
void runPrecision(const char* name,
  std::size_t nx,
  std::size_t ny,
  std::size_t nz,
  int repeats,
  int cpuRepeats,
  int threads,
  bool gpu,
  double copyBandwidth,
  int stabilityRuns,
  bool cpu,
  bool columns)
{
  Bench<T> b;
  b.name = name;
  b.nx = nx;
  b.ny = ny;
  b.nz = nz;
  b.repeats = repeats;
  b.cpuRepeats = cpuRepeats;
  b.copyBandwidth = copyBandwidth;
  setUp(b);
  std::vector<stencil::Backend> backends;
  if (gpu)
  {
    backends.push_back(stencil::Backend::CUDA);
  }
  if (cpu)
  {
    backends.push_back(stencil::Backend::CPU);
  }
  for (stencil::Backend backend : backends)
  {
    const bool onGpu = backend == stencil::Backend::CUDA;
    stencil::ExecutionOptions o;
    o.backend = backend;
    o.strictBackend = true;
    o.threads = threads;
    o.tuning.timingRepeats = onGpu ? repeats : 1;
    runImage(b, backend, o);
    if (columns)
    {
      runColumns(b, backend, o);
    }
    if (onGpu && stabilityRuns > 0)
    {
      runStability(b, backend, o, columns, stabilityRuns);
    }
  }
}

std::vector<std::size_t> parseSize(const char* text)
{
  std::vector<std::size_t> dims;
  std::stringstream in(text);
  std::string part;
  while (std::getline(in, part, 'x'))
  {
    dims.push_back(std::strtoull(part.c_str(), nullptr, 10));
  }
  return dims;
}
} // namespace

int main(int argc, char** argv)
{
  std::vector<std::size_t> dims = { 512, 512, 64 };
  int repeats = 20;
  int cpuRepeats = 3;
  int threads = 0;
  int stabilityRuns = 0;
  bool useGpu = true;
  bool useCpu = true;
  bool useColumns = true;
  std::string json;
  for (int a = 1; a < argc; ++a)
  {
    const std::string arg = argv[a];
    if (arg == "--size" && a + 1 < argc)
      dims = parseSize(argv[++a]);
    else if (arg == "--repeats" && a + 1 < argc)
      repeats = std::atoi(argv[++a]);
    else if (arg == "--cpu-repeats" && a + 1 < argc)
      cpuRepeats = std::atoi(argv[++a]);
    else if (arg == "--threads" && a + 1 < argc)
      threads = std::atoi(argv[++a]);
    else if (arg == "--json" && a + 1 < argc)
      json = argv[++a];
    else if (arg == "--stability" && a + 1 < argc)
      stabilityRuns = std::atoi(argv[++a]);
    else if (arg == "--gpu-only")
      useCpu = false;
    else if (arg == "--cpu-only")
      useGpu = false;
    else if (arg == "--image-only")
      useColumns = false;
    else
    {
      std::fprintf(stderr,
        "usage: stencil-bench [--size 512x512x64] [--repeats 20] [--cpu-repeats 3] [--threads N]"
        " [--stability N] [--cpu-only | --gpu-only] [--image-only] [--json FILE]\n");
      return 2;
    }
  }
  if (dims.size() != 3)
  {
    std::fprintf(stderr, "--size needs NXxNYxNZ\n");
    return 2;
  }
  std::string why;
  const bool gpu = useGpu && stencil::cudaAvailable(&why);
  if (useGpu && !gpu)
  {
    std::fprintf(stderr, "no CUDA device (%s): CPU only\n", why.c_str());
  }
  // Copy bandwidth (read + write), the yardstick of the image kernels: the grid-stride copy
  // kernel and cudaMemcpy device to device, each over buffers of the float image's size and of
  // the double image's size. Each precision's rows are measured against the faster copy at its
  // own size.
  double kernelFloat = 0, memcpyFloat = 0, kernelDouble = 0, memcpyDouble = 0;
  const std::string device = gpu ? stencil::cudaDeviceName() : std::string("none");
  if (gpu)
  {
    const std::size_t values = dims[0] * dims[1] * dims[2];
    auto st = stencil::measureDeviceBandwidth(values * 4, repeats, kernelFloat, memcpyFloat);
    if (st)
    {
      st = stencil::measureDeviceBandwidth(values * 8, repeats, kernelDouble, memcpyDouble);
    }
    if (!st)
    {
      std::fprintf(stderr, "bandwidth: %s\n", st.message().c_str());
      return 1;
    }
  }
  const double bandwidthFloat = std::max(kernelFloat, memcpyFloat);
  const double bandwidthDouble = std::max(kernelDouble, memcpyDouble);
  runPrecision<float>("float",
    dims[0],
    dims[1],
    dims[2],
    repeats,
    cpuRepeats,
    threads,
    gpu,
    bandwidthFloat,
    stabilityRuns,
    useCpu,
    useColumns);
  runPrecision<double>("double",
    dims[0],
    dims[1],
    dims[2],
    repeats,
    cpuRepeats,
    threads,
    gpu,
    bandwidthDouble,
    stabilityRuns,
    useCpu,
    useColumns);

  std::printf("device: %s; copy bandwidth (read + write): float size %.1f GB/s, double size %.1f "
              "GB/s (the faster of: copy kernel %.1f / %.1f GB/s, cudaMemcpy %.1f / %.1f GB/s; "
              "\"of copy BW\" uses each precision's own); size %zux%zux%zu; CPU threads %d\n",
    device.c_str(),
    bandwidthFloat * 1e-9,
    bandwidthDouble * 1e-9,
    kernelFloat * 1e-9,
    kernelDouble * 1e-9,
    memcpyFloat * 1e-9,
    memcpyDouble * 1e-9,
    dims[0],
    dims[1],
    dims[2],
    threads);
  std::printf(
    "| precision | backend | layout | operator | strategy | table | time (us) | x regular | "
    "of copy BW | patterns | table MB | max diff "
    "|\n|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (const Row& r : rows)
  {
    std::printf("| %s | %s | %s | %s | %s | %s | %.1f | %.2f | %s | %zu | %.2f | %.1e |\n",
      r.precision.c_str(),
      r.backend.c_str(),
      r.layout.c_str(),
      r.op.c_str(),
      r.strategy.c_str(),
      r.table.c_str(),
      r.seconds * 1e6,
      r.ratio,
      r.fraction > 0 ? (std::to_string(int(std::lround(r.fraction * 100))) + "%").c_str() : "-",
      r.patterns,
      r.tableBytes / 1048576.0,
      r.maxDiff);
  }
  if (!json.empty())
  {
    std::ofstream f(json);
    f << "{\n  \"device\": \"" << device
      << "\",\n  \"copyBandwidthBytesPerSecond\": {\"float\": " << bandwidthFloat
      << ", \"double\": " << bandwidthDouble << ", \"kernelFloatSize\": " << kernelFloat
      << ", \"memcpyFloatSize\": " << memcpyFloat << ", \"kernelDoubleSize\": " << kernelDouble
      << ", \"memcpyDoubleSize\": " << memcpyDouble << "}"
      << ",\n  \"size\": [" << dims[0] << ", " << dims[1] << ", " << dims[2]
      << "],\n  \"cpuThreads\": " << threads << ",\n  \"rows\": [\n";
    for (std::size_t i = 0; i < rows.size(); ++i)
    {
      const Row& r = rows[i];
      f << "    {\"precision\": \"" << r.precision << "\", \"backend\": \"" << r.backend
        << "\", \"layout\": \"" << r.layout << "\", \"operator\": \"" << r.op
        << "\", \"strategy\": \"" << r.strategy << "\", \"table\": \"" << r.table
        << "\", \"seconds\": " << r.seconds << ", \"ratioToRegular\": " << r.ratio
        << ", \"fractionOfCopyBandwidth\": " << r.fraction << ", \"patterns\": " << r.patterns
        << ", \"tableBytes\": " << r.tableBytes << ", \"maxDiff\": " << r.maxDiff << "}"
        << (i + 1 < rows.size() ? "," : "") << "\n";
    }
    f << "  ]\n}\n";
  }
  return 0;
}
