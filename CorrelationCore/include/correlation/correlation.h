/**
 * @file correlation.h
 * @brief CorrelationCore: definition-based and FFT 2-D cross-correlation on CPUs and CUDA GPUs,
 * with normalisation, sub-pixel peak search and interrogation-window displacements.
 *
 * The one public header of the core. No VTK dependency; the core never prints and never exits:
 * every fallible call returns a Status.
 *
 * Conventions (docs/correlation.md has the pictures):
 * - A matrix is row-major with x (axis 0) fastest: element (x, y) of a w x h matrix is at
 *   y * w + x, VTK's order for a 2-D image.
 * - Cross-correlation of a left matrix L (lw x lh) with a right matrix R (rw x rh) at the lag
 *   (dx, dy) is C(dx, dy) = sum over the overlap of L(x, y) * R(x + dx, y + dy). When R is L
 *   translated by d (R(p) = L(p - d)), C peaks at the lag d: the lag is the displacement of the
 *   right matrix relative to the left one.
 * - Every mode computes a rectangle of lags (a LagWindow): Full all lags with overlap, Same the
 *   size of the right matrix centred on zero lag, Valid the lags where the smaller matrix lies
 *   completely inside the larger one.
 */
#ifndef CORRELATION_CORRELATION_H
#define CORRELATION_CORRELATION_H

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "execution/CoreNames.h"

namespace correlation
{

// Errors, backends and the CUDA check come from the execution layer shared by the cores (Common/).
EXECUTION_CORE_NAMES;

//------------------------------------------------------------------------------------------------
// Problem description
//------------------------------------------------------------------------------------------------
/**
 * The four input shapes. All left matrices have one size and all right matrices
 * another. Pair p = i * m + j (i < n, j < m) correlates left i with
 * - OneToOne: right 0 (n = m = 1),
 * - OneToMany: right j (n = 1),
 * - NToMN: right i * m + j (each left has its own m rights; n * m rights in all),
 * - NToM: right j (every left with every right; m rights in all).
 * Output map p is stored at p * lagWindow.size().
 */
enum class Shape
{
  OneToOne,
  OneToMany,
  NToMN,
  NToM
};
enum class Mode
{
  Full,
  Same,
  Valid
};
/**
 * None: the raw sum. NCC: C / sqrt(sum L^2 * sum R^2) over each lag's overlap. ZNCC: the
 * Pearson coefficient of the overlapping parts (local means removed). Normalised values are set
 * to 0 where the overlap is smaller than ExecutionOptions::minOverlapFraction of the smaller
 * matrix or where a part has (numerically) zero energy / variance.
 */
enum class Normalization
{
  None,
  NCC,
  ZNCC
};
enum class Algorithm
{
  Auto,   ///< Direct or FFT from the measured crossover (see autoFftCrossover)
  Direct, ///< the definition: sum over the overlap of every lag
  FFT     ///< padded FFTs (FFTW on the CPU, cuFFT on the GPU)
};
const char* toString(Shape shape);
const char* toString(Mode mode);
const char* toString(Normalization normalization);
const char* toString(Algorithm algorithm);

struct Size2
{
  int width = 0;
  int height = 0;
  std::size_t count() const { return static_cast<std::size_t>(width) * height; }
};

struct Batch
{
  Shape shape = Shape::OneToOne;
  int n = 1; ///< left matrices
  int m = 1; ///< right matrices per left (see Shape)
  Size2 left;
  Size2 right;

  std::size_t pairs() const { return static_cast<std::size_t>(n) * m; }
  std::size_t leftCount() const { return static_cast<std::size_t>(n); }
  std::size_t rightCount() const
  {
    return this->shape == Shape::NToMN ? static_cast<std::size_t>(n) * m : m;
  }
  /// Index of the right matrix of pair (i, j).
  std::size_t rightOf(std::size_t i, std::size_t j) const
  {
    return this->shape == Shape::NToMN ? i * m + j : j;
  }
  static Batch oneToOne(Size2 left, Size2 right) { return { Shape::OneToOne, 1, 1, left, right }; }
};

/// The rectangle of lags of one output map: lag (x0 + i, y0 + j) is stored at j * width + i.
struct LagWindow
{
  int x0 = 0;
  int y0 = 0;
  int width = 0;
  int height = 0;
  std::size_t size() const { return static_cast<std::size_t>(width) * height; }
};

/// Validates the batch (sizes, counts, shape) and computes the lag window of a mode.
Status lagWindow(const Batch& batch, Mode mode, LagWindow& window);

//------------------------------------------------------------------------------------------------
// Execution
//------------------------------------------------------------------------------------------------
/// The GPU direct kernels (the CPU direct path is one loop nest for all of them).
enum class DirectKernel
{
  /// The fastest measured (docs/correlation.md): PairPerLane (24 warps per block) for 1024 or
  /// more pairs per left matrix when its staging fits; RegisterTiled with 2 rights per thread
  /// when both matrices are at most 16 x 16 and there are 8 or more pairs; otherwise SplitTiled
  /// (one pair per warp below 128 pairs, 8 pairs per warp with 4-row sliding tiles from 128 on)
  /// when its staging fits in shared memory; beyond that RegisterTiled (2 rights per thread) for
  /// 8 or more pairs and WarpShuffle with Rectangle distribution (4 rows per worker) for fewer.
  /// The other DirectOptions fields are then ignored.
  Auto,
  /// One thread per lag (and pair), sums its overlap alone.
  Baseline,
  /// A warp computes 32 consecutive x lags; data moves by warp shuffles.
  WarpShuffle,
  /// Matrices in shared memory, 8 y lags per thread in a sliding register ring (one shared load
  /// per 8 multiply-adds). Needs the left matrix and rightsPerThread (1, 2 or 4) right matrices
  /// to fit in a block's shared memory; otherwise the warp-shuffle kernel runs.
  RegisterTiled,
  /// The block stages one left matrix and P right matrices in shared memory; every lane owns a
  /// 4 x 8 tile of lags; the 32 lanes of a warp are P pairs times 32 / P lanes splitting the
  /// tile's sum (combined by warp shuffles at the end). P is pairsPerWarp (0: the pairs per left
  /// rounded up to a power of two, at most 32), halved until the staging fits; when one pair
  /// does not fit, RegisterTiled runs. warpsPerBlock: at most 16.
  SplitTiled,
  /// For many pairs per left matrix: a block stages one left matrix and 32 right matrices in
  /// shared memory; lane l of every warp sums pair l, all lanes of a warp the same 8 x lags of
  /// one y lag, with the right values in a sliding window of 8 registers (one shared load per 8
  /// multiply-adds) and the padding products of the window's first or last steps skipped
  /// (peelEdges). warpsPerBlock: at most 32 (16 in double). When the 32 rights do not fit in
  /// shared memory, SplitTiled runs (which may itself give way, see there).
  PairPerLane,
  /// Float only: the definition computed on the tensor cores in 3xTF32 (each float split into
  /// two TF32 parts, three products per term, float accumulation: about 1e-6 of the sum of
  /// |products|, like FP32 FMA). Per lag row and template row, image rows of 16 pairs times
  /// Toeplitz blocks of the template row (mma.sync m16n8k8), all-zero blocks skipped. A block
  /// stages the template and 32 right matrices; warpsPerBlock: at most 16. Falls back to Auto's
  /// choice (kernelUsed says which) in double, on GPUs without TF32 tensor cores (below compute
  /// capability 8.0) and when the 32 rights do not fit in shared memory (float beyond about
  /// 40 x 40). Auto does not pick it (not faster than Auto's choice, docs/correlation.md).
  TensorTf32,
  /// TensorTf32's tiles and work split with FP16 operands (twice the tensor rate of TF32 on the
  /// H100), float only: each matrix scaled by a power of two so that its largest |value| is in
  /// [2^14, 2^15), each value split into two FP16 parts (hi, lo), three products per term, float
  /// accumulation, maps scaled back. As accurate as TensorTf32 (about 1e-6 of the sum of
  /// |products|) for values above 2^-17 of their matrix's largest; smaller ones keep an absolute
  /// accuracy of about 2^-40 of that largest value. Same fall-backs as TensorTf32.
  TensorF16
};
const char* toString(DirectKernel kernel);

/**
 * How the overlap rows of a lag are split between workers (warp shuffle only): None one worker
 * per lag; Rectangle as many workers per lag as the largest lag needs (idle ones exit at once);
 * Triangle exactly one worker per task. Split work is summed with atomicAdd.
 */
enum class WorkDistribution
{
  None,
  Rectangle,
  Triangle
};
const char* toString(WorkDistribution distribution);

struct DirectOptions
{
  DirectKernel kernel = DirectKernel::Auto;
  WorkDistribution distribution = WorkDistribution::None;
  int rowsPerWorker = 8;   ///< overlap rows per task (Rectangle / Triangle)
  int shiftsPerThread = 1; ///< consecutive y lags per thread: 1, 2, 4 or 8
  int rightsPerThread = 1; ///< right matrices per thread (many-matrix shapes): 1, 2, 4 or 8
  int warpsPerBlock = 4;   ///< 1..32
  int pairsPerWarp = 0;    ///< SplitTiled: 0 (automatic), 1, 2, 4, 8, 16 or 32
  /// SplitTiled in float with 8 or more pairs per warp: each lane walks whole column strips down
  /// the right matrix keeping the tile's 8 left rows in registers (3 shared loads per 128
  /// multiply-adds instead of about 16; more registers, so fewer warps per SM).
  bool slideRows = true;
  /// SplitTiled with slideRows: a strip starts at the end where the tile's lag rows overhang
  /// the left matrix and skips the lag rows whose left row is zero padding there (instead of
  /// multiplying zeros): 18% fewer multiply-adds for 32 x 32 full maps. PairPerLane: the first
  /// (or last) 8 steps of a block of 8 x lags whose overlaps start (or end) one column apart
  /// skip the products with padding (22% fewer for 32 x 32 full maps). false: every product,
  /// for the benchmark's comparison.
  bool peelEdges = true;
  /// SplitTiled with slideRows: lag rows per lane's tile, 8 or 4. 4 halves the accumulators
  /// and the ring of left rows (about 64 instead of 128 registers, so twice the warps per SM)
  /// for twice the shared loads per multiply-add and more tiles.
  int tileRows = 8;

  /// A kernel with `warpsPerBlock` warps per block and the other settings at their defaults.
  static DirectOptions of(DirectKernel kernel, int warpsPerBlock)
  {
    DirectOptions o;
    o.kernel = kernel;
    o.warpsPerBlock = warpsPerBlock;
    return o;
  }
  /// The warp-shuffle kernel with a work distribution, y lags and rights per thread.
  static DirectOptions warpShuffle(WorkDistribution distribution,
    int rowsPerWorker,
    int shiftsPerThread,
    int rightsPerThread,
    int warpsPerBlock = 4)
  {
    DirectOptions o = of(DirectKernel::WarpShuffle, warpsPerBlock);
    o.distribution = distribution;
    o.rowsPerWorker = rowsPerWorker;
    o.shiftsPerThread = shiftsPerThread;
    o.rightsPerThread = rightsPerThread;
    return o;
  }
  static DirectOptions registerTiled(int rightsPerThread, int warpsPerBlock)
  {
    DirectOptions o = of(DirectKernel::RegisterTiled, warpsPerBlock);
    o.rightsPerThread = rightsPerThread;
    return o;
  }
  static DirectOptions splitTiled(int pairsPerWarp,
    int warpsPerBlock,
    bool slideRows = true,
    bool peelEdges = true,
    int tileRows = 8)
  {
    DirectOptions o = of(DirectKernel::SplitTiled, warpsPerBlock);
    o.pairsPerWarp = pairsPerWarp;
    o.slideRows = slideRows;
    o.peelEdges = peelEdges;
    o.tileRows = tileRows;
    return o;
  }
  static DirectOptions pairPerLane(int warpsPerBlock, bool peelEdges = true)
  {
    DirectOptions o = of(DirectKernel::PairPerLane, warpsPerBlock);
    o.peelEdges = peelEdges;
    return o;
  }
  static DirectOptions tensorTf32(int warpsPerBlock = 16)
  {
    return of(DirectKernel::TensorTf32, warpsPerBlock);
  }
  static DirectOptions tensorF16(int warpsPerBlock = 16)
  {
    return of(DirectKernel::TensorF16, warpsPerBlock);
  }
};

/// Kernel variants and FFT settings, for benchmarks: every setting gives the same result (to
/// rounding); the defaults are the fastest measured.
struct Tuning
{
  DirectOptions direct; ///< the GPU direct kernel and its shape
  /// Keep cuFFT plans between calls; false creates them per call.
  bool cacheFftPlans = true;
  /// FFT sizes: false the smallest 2^a 3^b 5^c 7^d >= lw + rw - 1 per axis (63 for 32 + 32);
  /// true the smallest power of two (64). Which is faster depends on the library and size.
  bool fftPowerOfTwo = false;
  /**
   * ExecutionReport::kernelSeconds is timed with CUDA events around the launches; the host's
   * launch latency then falls inside that window because the GPU waits for each launch. true
   * queues a wait kernel (0.5 ms) ahead of the timed launches so that they are all queued
   * before the first event: the window then holds GPU execution only. It adds the wait to the
   * call.
   */
  bool deviceOnlyKernelTiming = false;
};

/// The common execution options (backend, strictBackend, threads, parallelFor, progress, abort,
/// autoGpuThreshold in multiply-adds of the direct method) plus the core's own. Progress and
/// abort are honoured between pieces of CPU work and between the stages of a call.
struct ExecutionOptions : execution::ExecutionOptions
{
  ExecutionOptions() { this->autoGpuThreshold = std::uint64_t(1) << 22; }
  Algorithm algorithm = Algorithm::Auto;
  /// See Normalization.
  double minOverlapFraction = 0.25;
  Tuning tuning;
};

struct ExecutionReport : execution::ExecutionReport
{
  Algorithm algorithmUsed = Algorithm::Direct;
  /// CUDA direct: the kernel that ran (Auto resolved; a kernel whose matrices do not fit
  /// shared memory gives way to another, see DirectKernel). Auto for the CPU and FFT paths.
  DirectKernel kernelUsed = DirectKernel::Auto;
};

/// True when the library was built with the CUDA backend (cudaAvailable() says whether a device
/// is usable).
bool cudaCompiled();
/// True when the library was built with FFTW (the CPU FFT path).
bool fftwCompiled();

/// Multiply-adds of the direct method for a batch and window (the Auto decisions' size).
std::uint64_t directOperations(const Batch& batch, const LagWindow& window);
/**
 * Auto's choice between Direct and FFT. The crossover constants come from the measurements in
 * docs/correlation.md: FFT when the direct count exceeds `ratio` times the FFT's estimated cost.
 */
Algorithm autoAlgorithm(const Batch& batch, const LagWindow& window, Backend backend);

/**
 * What correlate() computes: the batch, its matrices (`lefts` holds batch.leftCount() left
 * matrices, `rights` batch.rightCount() right matrices, all finite) and the maps made of them.
 */
template<typename T>
struct Request
{
  Batch batch;
  const T* lefts = nullptr;
  const T* rights = nullptr;
  Mode mode = Mode::Full;
  Normalization normalization = Normalization::None;
};

/**
 * Cross-correlates a batch into `out`: pairs() * window.size() values, window from
 * lagWindow(request.batch, request.mode). Non-finite inputs give NonFinite.
 */
template<typename T>
Status correlate(const Request<T>& request,
  T* out,
  const ExecutionOptions& options = {},
  ExecutionReport* report = nullptr);

//------------------------------------------------------------------------------------------------
// Peaks and windows
//------------------------------------------------------------------------------------------------
enum class PeakFit
{
  None,      ///< integer lag only
  Parabolic, ///< three-point parabola per axis
  Gaussian   ///< three-point Gaussian per axis (parabola where a value is not positive)
};

struct Peak
{
  int x = 0; ///< integer lag of the maximum
  int y = 0;
  double subX = 0; ///< sub-pixel lag
  double subY = 0;
  double value = 0; ///< the maximum
  /// The largest local maximum outside the primary's neighbourhood, edge samples excluded
  /// (there a slope is cut off, not a peak); 0 when there is none.
  double secondValue = 0;
  double ratio = 0;      ///< value / secondValue (inf when no second peak)
  bool onBorder = false; ///< the maximum lies on the window's edge (no sub-pixel fit there)
  double zeroLag = 0;    ///< the map at lag (0, 0), NaN when outside the window
};

/// Finds the maximum of one map. `exclusion`: half-size of the neighbourhood ignored for the
/// second peak.
template<typename T>
Peak findPeak(const T* map,
  const LagWindow& window,
  PeakFit fit = PeakFit::Gaussian,
  int exclusion = 2);

struct WindowSpec
{
  int windowSize = 32;  ///< interrogation window edge (pixels)
  int step = 16;        ///< distance between window centres (windowSize - overlap)
  int searchRadius = 8; ///< largest displacement searched, per axis
  PeakFit fit = PeakFit::Gaussian;
  double minPeak = 0.3;  ///< valid needs a ZNCC peak at least this high
  double minRatio = 1.2; ///< and a peak ratio at least this large
};

/**
 * Displacements on the window-centre lattice. Window (i, j) covers reference pixels
 * [ox + i * step - windowSize/2, ... + windowSize) (same in y) and is searched in the image
 * within +-searchRadius; only windows whose search region lies inside the image are used.
 * Displacement d means image(p) ~ reference(p - d).
 */
struct DisplacementField
{
  int nx = 0;
  int ny = 0;
  int originX = 0; ///< pixel coordinates of the first window's centre
  int originY = 0;
  int step = 0;
  std::vector<double> dx, dy, peak, ratio;
  std::vector<std::uint8_t> valid;
};

/// Two images of one size: the reference and the image displaced from it (row-major, finite).
template<typename T>
struct ImagePair
{
  const T* reference = nullptr;
  const T* image = nullptr;
  Size2 size;
};
template<typename T>
ImagePair(const T*, const T*, Size2) -> ImagePair<T>;

template<typename T>
Status windowDisplacements(const ImagePair<T>& images,
  const WindowSpec& spec,
  DisplacementField& field,
  const ExecutionOptions& options = {},
  ExecutionReport* report = nullptr);

/// NonFinite naming `what` and the first bad index, or Ok.
template<typename T>
Status checkFinite(const T* data, std::size_t n, const char* what);

} // namespace correlation

#endif
