// Interfaces between the translation units of the CUDA backend (host side). Internal.
#ifndef SPARSEGRID_CUDA_KERNELS_H
#define SPARSEGRID_CUDA_KERNELS_H

#include "Common.cuh"

namespace sparsegrid
{
namespace cuda
{
namespace impl
{

/// Evaluation of the interpolant at points held in device memory (Evaluate.cuh).
///
/// Fast path (inv1 and sred1): one thread per point (ichg2: several points per thread, the
/// blocks loop outside the points loop), blocks visited in the lexicographic order of their
/// per-axis (level, corner) slots so that the partial index and weight of a common prefix of
/// axes are reused ("prefix sharing"); cell index by shifting a fixed-point copy of the
/// coordinate, weight by the CPU's formula. Generic path otherwise: fastsg's kernel with the
/// switches applied one by one.
template<typename T>
class DeviceEvaluator
{
public:
  /// Builds and uploads the block tables; `coefficients` is a device pointer that must stay
  /// valid while run() is used.
  Status prepare(const Grid& grid,
    const Optimizations& opt,
    const Tuning& tuning,
    const DeviceInfo& info,
    const T* coefficients);
  /// Device bytes prepare() will allocate (for the memory plan).
  static u64 tableBytes(const Grid& grid, const Optimizations& opt);
  /// Evaluates n points (row-major n x D, device memory) into out[i * outStride] (device
  /// memory); `counter` is one device word for the kernel's work distribution (reset by run()).
  Status run(const T* points,
    u64 n,
    T* out,
    u64 outStride,
    cudaStream_t stream,
    unsigned long long* counter);
  /// Switches to another coefficient array of the same grid (another component; device memory).
  void useCoefficients(const T* coefficients) { this->Coefficients = coefficients; }
  /// A short description of the kernel variant that run() uses (for notes and benchmarks).
  const std::string& variant() const { return this->Variant; }

  /// Device tables of one grid (cached across calls).
  struct Tables
  {
    TablePack pack;
    u32 numEntries = 0;
    std::size_t entries = 0; // fast path
    std::size_t offsets = 0, levels = 0, shifts = 0, zeroAxes = 0, suffix = 0, groupBegin = 0,
                caps = 0; // generic path
  };

private:
  std::string Variant;
  const Grid* GridPtr = nullptr;
  Optimizations Opt;
  DeviceInfo Info;
  const T* Coefficients = nullptr;
  bool Fast = false;
  int PointsPerThread = 1;
  bool SharedCoefficients = false;
  std::shared_ptr<Tables> Prepared;
};

/// Hierarchization (inverse = false) or dehierarchization of device values (Hierarchize.cu) on
/// the kernel stream of `kernels`, timed by its timer.
template<typename T>
Status hierarchizeDevice(const Grid& grid,
  T* values,
  bool inverse,
  const ExecutionOptions& options,
  const KernelStream& kernels);
/// Device bytes hierarchizeDevice() allocates for its tables.
u64 hierarchizeTableBytes(const Grid& grid, const Optimizations& opt);

/// One reconstruction: device coefficients, host target image.
template<typename T>
struct Reconstruction
{
  const Grid& grid;
  const T* coefficients; ///< device memory
  const RegularGrid& target;
  T* out; ///< host memory
  const ExecutionOptions& options;
  const DeviceInfo& info;
};

/// Reconstruction onto a regular grid from device coefficients into host `out` (Lattice.cu):
/// the lattice path (or batched evaluation), the image's download, kernel time into
/// `kernelSeconds`.
template<typename T>
Status reconstructDevice(const Reconstruction<T>& job, double* kernelSeconds);

} // namespace impl
} // namespace cuda
} // namespace sparsegrid

#endif
