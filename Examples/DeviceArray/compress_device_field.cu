/**
 * @file compress_device_field.cu
 * @brief What a GPU simulation does to write an error-bounded .sgrid file from a field that
 * lives in device memory, with no VTK and no host copy on the compression path.
 *
 * A CUDA kernel makes a 3-D float field (a smooth initial condition and a few explicit
 * heat-equation steps), sparsegrid::codec::encodeDevice compresses it from the device pointer at
 * a bound relative to the field's range, sparsegrid::file::Writer writes a version-2 .sgrid file,
 * sparsegrid::file::Reader reads it back and sparsegrid::codec::decodeDevice decodes it into
 * device memory. Every voxel is then checked against the bound, in double, against the field as
 * the kernel made it. The field is also written as raw little-endian float32 so that another
 * program (check_file.py, through ParaView's reader) can compare.
 *
 * Usage: compress_device_field [--size N] [--relative-bound R] [--steps S] [--repeats K]
 *                              [--output PREFIX]
 * Writes PREFIX.sgrid and PREFIX_NxNxN_float32.raw. Exit 0: bound kept on every voxel;
 * 1: bound missed or an error; 2: bad arguments; 77: no usable GPU.
 */
#include "SparseGridFile.h"
#include "sparsegrid/codec.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <sys/stat.h>

namespace
{

namespace codec = sparsegrid::codec;
namespace sgf = sparsegrid::file;

struct Options
{
  int size = 256;
  double relativeBound = 1e-3;
  int steps = 20;
  int repeats = 5;
  std::string output = "device_field";
};

bool parse(int argc, char** argv, Options& options)
{
  for (int i = 1; i < argc; ++i)
  {
    const std::string arg = argv[i];
    if (i + 1 >= argc)
    {
      std::fprintf(stderr, "%s needs a value\n", arg.c_str());
      return false;
    }
    const char* value = argv[++i];
    if (arg == "--size")
    {
      options.size = std::atoi(value);
    }
    else if (arg == "--relative-bound")
    {
      options.relativeBound = std::atof(value);
    }
    else if (arg == "--steps")
    {
      options.steps = std::atoi(value);
    }
    else if (arg == "--repeats")
    {
      options.repeats = std::atoi(value);
    }
    else if (arg == "--output")
    {
      options.output = value;
    }
    else
    {
      std::fprintf(stderr, "unknown option %s\n", arg.c_str());
      return false;
    }
  }
  // 1290^3 floats would pass 2^31 voxels, past what the kernels' int indexing here covers.
  if (options.size < 3 || options.size > 1290 || !(options.relativeBound > 0) ||
    !std::isfinite(options.relativeBound) || options.steps < 0 || options.repeats < 1)
  {
    std::fprintf(stderr,
      "need 3 <= size <= 1290, a positive finite relative bound, steps >= 0, repeats >= 1\n");
    return false;
  }
  return true;
}

bool cudaOk(cudaError_t error, const char* what)
{
  if (error != cudaSuccess)
  {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(error));
    return false;
  }
  return true;
}

/// A smooth field with structure at two scales: a sine mode (zero on the boundary) and a narrow
/// off-centre Gaussian, which the heat steps then spread.
__global__ void initialCondition(float* field, int n)
{
  const long long voxels = static_cast<long long>(n) * n * n;
  for (long long v = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; v < voxels;
       v += static_cast<long long>(gridDim.x) * blockDim.x)
  {
    const int i = static_cast<int>(v % n);
    const int j = static_cast<int>((v / n) % n);
    const int k = static_cast<int>(v / (static_cast<long long>(n) * n));
    const float h = 1.0f / static_cast<float>(n - 1);
    const float x = i * h, y = j * h, z = k * h;
    const float pi = 3.14159265358979f;
    const float dx = x - 0.3f, dy = y - 0.6f, dz = z - 0.45f;
    field[v] = sinf(pi * x) * sinf(pi * y) * sinf(pi * z) +
      2.0f * expf(-(dx * dx + dy * dy + dz * dz) / 0.005f);
  }
}

/// One explicit step of u_t = Laplace(u) on the unit grid (7-point stencil), the boundary held
/// fixed; alpha = dt / h^2 below the 1/6 stability limit.
__global__ void heatStep(const float* in, float* out, int n, float alpha)
{
  const long long voxels = static_cast<long long>(n) * n * n;
  const long long plane = static_cast<long long>(n) * n;
  for (long long v = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; v < voxels;
       v += static_cast<long long>(gridDim.x) * blockDim.x)
  {
    const int i = static_cast<int>(v % n);
    const int j = static_cast<int>((v / n) % n);
    const int k = static_cast<int>(v / plane);
    if (i == 0 || j == 0 || k == 0 || i == n - 1 || j == n - 1 || k == n - 1)
    {
      out[v] = in[v];
      continue;
    }
    const float sum =
      in[v - 1] + in[v + 1] + in[v - n] + in[v + n] + in[v - plane] + in[v + plane] - 6.0f * in[v];
    out[v] = in[v] + alpha * sum;
  }
}

double median(std::vector<double> values)
{
  std::sort(values.begin(), values.end());
  const std::size_t m = values.size() / 2;
  return values.size() % 2 ? values[m] : 0.5 * (values[m - 1] + values[m]);
}

double secondsSince(std::chrono::steady_clock::time_point start)
{
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

bool writeRaw(const std::string& path, const std::vector<float>& values)
{
  // float32 little-endian: the layout of every machine this runs on (x86-64, aarch64).
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(values.data()),
    static_cast<std::streamsize>(values.size() * sizeof(float)));
  return static_cast<bool>(out);
}

/// The device buffers: the field, the heat step's other buffer and the decoded field.
struct DeviceFields
{
  float* field = nullptr;
  float* scratch = nullptr;
  float* decoded = nullptr;
};

/// What the run measured, for the closing report.
struct Measured
{
  std::string sgridPath, rawPath;
  double fileBytes = 0;
  std::size_t readBytes = 0;
  double maxError = 0;
  std::size_t worst = 0;
  double fileBound = 0;
  double encodeMedian = 0, decodeMedian = 0;
};

// The "simulation": allocates the buffers and makes the field, only in device memory.
bool simulate(const Options& options, std::size_t voxels, std::size_t inputBytes, DeviceFields& d)
{
  const int n = options.size;
  if (!cudaOk(cudaMalloc(&d.field, inputBytes), "cudaMalloc") ||
    !cudaOk(cudaMalloc(&d.scratch, inputBytes), "cudaMalloc") ||
    !cudaOk(cudaMalloc(&d.decoded, inputBytes), "cudaMalloc"))
  {
    return false;
  }
  const int threads = 256;
  const int blocks =
    static_cast<int>(std::min<std::size_t>((voxels + threads - 1) / threads, 65535));
  initialCondition<<<blocks, threads>>>(d.field, n);
  for (int s = 0; s < options.steps; ++s)
  {
    heatStep<<<blocks, threads>>>(d.field, d.scratch, n, 0.1f);
    std::swap(d.field, d.scratch);
  }
  return cudaOk(cudaDeviceSynchronize(), "simulation kernels");
}

// Compresses from the device pointer: a warm-up, then the repeats' times.
bool encodeRepeated(const Options& options,
  const float* field,
  const codec::Layout& layout,
  double bound,
  const sparsegrid::ExecutionOptions& execution,
  std::vector<std::uint8_t>& stream,
  std::vector<double>& encodeSeconds,
  sparsegrid::ExecutionReport& report)
{
  for (int r = 0; r <= options.repeats; ++r)
  {
    const auto start = std::chrono::steady_clock::now();
    const sparsegrid::Status status =
      codec::encodeDevice(field, layout, bound, stream, execution, &report);
    const double seconds = secondsSince(start);
    if (!status)
    {
      std::fprintf(stderr,
        "encodeDevice: %s: %s\n",
        sparsegrid::toString(status.code()),
        status.message().c_str());
      return false;
    }
    if (r > 0)
    {
      encodeSeconds.push_back(seconds);
    }
  }
  return true;
}

// Writes the .sgrid file (one piece covering the image, origin 0, spacing 1) and the raw field.
bool writeFiles(const Options& options,
  std::size_t inputBytes,
  double bound,
  const std::vector<std::uint8_t>& stream,
  const sparsegrid::ExecutionReport& report,
  const std::vector<float>& original,
  Measured& m)
{
  const int n = options.size;
  m.sgridPath = options.output + ".sgrid";
  m.rawPath = options.output + "_" + std::to_string(n) + "x" + std::to_string(n) + "x" +
    std::to_string(n) + "_float32.raw";
  const std::string& sgridPath = m.sgridPath;
  sgf::GridDescription grid;
  grid.dimensions = 3;
  grid.axisMap = { 0, 1, 2 };
  grid.bounds = { { 0.0, n - 1.0, 0.0, n - 1.0, 0.0, n - 1.0 } };
  grid.imageDimensions = { { n, n, n } };
  grid.imageOrigin = { { 0, 0, 0 } };
  grid.imageSpacing = { { 1, 1, 1 } };
  grid.precision = sparsegrid::Precision::Float;
  grid.encoding = sgf::Encoding::ErrorBounded;
  grid.boundMode = 2;
  grid.requestedBound = options.relativeBound;
  grid.pieceExtents = { 0, n - 1, 0, n - 1, 0, n - 1 };
  sgf::ArrayInput array;
  array.name = "temperature";
  array.bytes = stream.data();
  array.streamOffsets = { 0, stream.size() };
  array.absoluteBound = bound;
  sgf::StepInput step;
  step.time = 0.0;
  step.metrics.compressionRatio = static_cast<double>(inputBytes) / stream.size();
  step.metrics.backend = sparsegrid::toString(report.backendUsed);
  step.arrays.push_back(array);
  sgf::WriteOptions writeOptions;
  writeOptions.writer = "Examples/DeviceArray/compress_device_field (encodeDevice)";
  std::string error =
    sgf::writeFile(sgridPath, grid, { { array.name, 1 } }, { step }, writeOptions);
  if (!error.empty())
  {
    std::fprintf(stderr, "writing %s: %s\n", sgridPath.c_str(), error.c_str());
    return false;
  }
  if (!writeRaw(m.rawPath, original))
  {
    std::fprintf(stderr, "cannot write %s\n", m.rawPath.c_str());
    return false;
  }
  struct stat info
  {
  };
  m.fileBytes = stat(sgridPath.c_str(), &info) == 0 ? static_cast<double>(info.st_size) : 0;
  return true;
}

// Reads the file back and decodes its stream on the device: a warm-up, then the repeats' times.
bool readAndDecode(const Options& options,
  const codec::Layout& layout,
  float* decoded,
  const sparsegrid::ExecutionOptions& execution,
  sparsegrid::ExecutionReport& report,
  std::vector<double>& decodeSeconds,
  Measured& m)
{
  const std::string& sgridPath = m.sgridPath;
  sgf::Reader reader;
  sgf::StepData read;
  std::string error;
  if (!(error = reader.open(sgridPath)).empty() || !(error = reader.readStep(0, read)).empty())
  {
    std::fprintf(stderr, "reading %s: %s\n", sgridPath.c_str(), error.c_str());
    return false;
  }
  if (read.arrays.size() != 1 || read.arrays[0].streamOffsets.size() != 2 ||
    reader.header().grid.encoding != sgf::Encoding::ErrorBounded)
  {
    std::fprintf(stderr, "%s does not hold one error-bounded stream\n", sgridPath.c_str());
    return false;
  }
  const sgf::ArrayValues& values = read.arrays[0];
  const std::uint8_t* readStream = values.bytes.data() + values.streamOffsets[0];
  const std::size_t readBytes = values.streamOffsets[1] - values.streamOffsets[0];
  m.readBytes = readBytes;
  m.fileBound = values.absoluteBound;
  for (int r = 0; r <= options.repeats; ++r)
  {
    const auto start = std::chrono::steady_clock::now();
    const sparsegrid::Status status =
      codec::decodeDevice(readStream, readBytes, decoded, layout, -1, false, execution, &report);
    const cudaError_t synced = cudaDeviceSynchronize();
    const double seconds = secondsSince(start);
    if (!status || !cudaOk(synced, "decodeDevice"))
    {
      std::fprintf(stderr, "decodeDevice: %s\n", status.message().c_str());
      return false;
    }
    if (r > 0)
    {
      decodeSeconds.push_back(seconds);
    }
  }
  return true;
}

// The largest error of every voxel, in double (NaN counts as a miss), and where it is.
void measureError(const std::vector<float>& result, const std::vector<float>& original, Measured& m)
{
  double maxError = 0;
  std::size_t worst = 0;
  for (std::size_t v = 0; v < result.size(); ++v)
  {
    const double e = std::fabs(static_cast<double>(result[v]) - static_cast<double>(original[v]));
    if (!(e <= maxError)) // NaN counts as a miss
    {
      maxError = std::isnan(e) ? INFINITY : e;
      worst = v;
    }
  }
  m.maxError = maxError;
  m.worst = worst;
}

// Prints the file, error and timing lines and the JSON summary.
void printSummary(const Options& options,
  const cudaDeviceProp& properties,
  std::size_t inputBytes,
  const Measured& m)
{
  const int n = options.size;
  std::printf("file %s: %.0f bytes (stream %zu), ratio input/file %.2f; raw field %s\n",
    m.sgridPath.c_str(),
    m.fileBytes,
    m.readBytes,
    m.fileBytes > 0 ? inputBytes / m.fileBytes : 0.0,
    m.rawPath.c_str());
  std::printf("max |error| %.6g, file bound %.6g, error/bound %.6f (worst voxel %zu)\n",
    m.maxError,
    m.fileBound,
    m.maxError / m.fileBound,
    m.worst);
  std::printf("encodeDevice (device values -> host stream): median %.3f ms of %d, %.1f GB/s\n",
    m.encodeMedian * 1e3,
    options.repeats,
    inputBytes / m.encodeMedian / 1e9);
  std::printf("decodeDevice (host stream -> device values): median %.3f ms of %d, %.1f GB/s\n",
    m.decodeMedian * 1e3,
    options.repeats,
    inputBytes / m.decodeMedian / 1e9);
  std::printf("JSON {\"device\": \"%s\", \"size\": %d, \"relative_bound\": %g, \"bound\": %.9g, "
              "\"max_error\": %.9g, \"file_bytes\": %.0f, \"ratio\": %.4f, \"encode_ms\": %.4f, "
              "\"decode_ms\": %.4f, \"repeats\": %d}\n",
    properties.name,
    n,
    options.relativeBound,
    m.fileBound,
    m.maxError,
    m.fileBytes,
    m.fileBytes > 0 ? inputBytes / m.fileBytes : 0.0,
    m.encodeMedian * 1e3,
    m.decodeMedian * 1e3,
    options.repeats);
}

int run(const Options& options)
{
  int devices = 0;
  const cudaError_t probe = cudaGetDeviceCount(&devices);
  std::string why;
  if (probe != cudaSuccess || devices == 0 || !sparsegrid::cudaAvailable(&why))
  {
    std::printf("SKIP: no GPU (%s)\n",
      probe != cudaSuccess ? cudaGetErrorString(probe)
                           : (devices == 0 ? "no CUDA device" : why.c_str()));
    return 77;
  }
  cudaDeviceProp properties{};
  cudaGetDeviceProperties(&properties, 0);
  const int n = options.size;
  const std::size_t voxels = static_cast<std::size_t>(n) * n * n;
  const std::size_t inputBytes = voxels * sizeof(float);
  std::printf("device: %s; field %d^3 float32 (%.1f MB), %d heat steps, relative bound %g\n",
    properties.name,
    n,
    inputBytes / 1e6,
    options.steps,
    options.relativeBound);

  // --- the "simulation": the field exists only in device memory ---
  DeviceFields d;
  if (!simulate(options, voxels, inputBytes, d))
  {
    return 1;
  }

  // The host copy serves only the raw reference file and the final check; the range is taken
  // from it with the core's valueRange (a simulation that has no host copy would reduce on the
  // device instead).
  std::vector<float> original(voxels);
  if (!cudaOk(cudaMemcpy(original.data(), d.field, inputBytes, cudaMemcpyDeviceToHost), "copy"))
  {
    return 1;
  }
  codec::Layout layout;
  layout.dims = {
    { static_cast<std::uint64_t>(n), static_cast<std::uint64_t>(n), static_cast<std::uint64_t>(n) }
  };
  codec::ValueRange range;
  sparsegrid::Status status = codec::valueRange(original.data(), layout, range);
  const double lo = range.min, hi = range.max;
  if (!status)
  {
    std::fprintf(stderr, "valueRange: %s\n", status.message().c_str());
    return 1;
  }
  // A constant field has range 0; any positive bound then keeps it exact.
  const double bound = hi > lo ? options.relativeBound * (hi - lo) : options.relativeBound;
  std::printf(
    "range [%.6g, %.6g] (valueRange on the host copy); absolute bound %.6g\n", lo, hi, bound);

  // --- compress from the device pointer: a warm-up, then the median of the repeats ---
  sparsegrid::ExecutionOptions execution;
  execution.backend = sparsegrid::Backend::CUDA;
  execution.strictBackend = true; // a timing of the CPU fall-back would be a wrong number
  std::vector<std::uint8_t> stream;
  std::vector<double> encodeSeconds;
  sparsegrid::ExecutionReport report;
  if (!encodeRepeated(options, d.field, layout, bound, execution, stream, encodeSeconds, report))
  {
    return 1;
  }
  std::printf("encodeDevice: backend %s%s%s, stream %zu bytes\n",
    sparsegrid::toString(report.backendUsed),
    report.note.empty() ? "" : ", ",
    report.note.c_str(),
    stream.size());

  // --- write the .sgrid file, read it back and decode on the device ---
  Measured m;
  std::vector<double> decodeSeconds;
  if (!writeFiles(options, inputBytes, bound, stream, report, original, m) ||
    !readAndDecode(options, layout, d.decoded, execution, report, decodeSeconds, m))
  {
    return 1;
  }

  // --- every voxel against the bound the file states, in double ---
  std::vector<float> result(voxels);
  if (!cudaOk(cudaMemcpy(result.data(), d.decoded, inputBytes, cudaMemcpyDeviceToHost), "copy"))
  {
    return 1;
  }
  measureError(result, original, m);
  cudaFree(d.field);
  cudaFree(d.scratch);
  cudaFree(d.decoded);

  m.encodeMedian = median(encodeSeconds);
  m.decodeMedian = median(decodeSeconds);
  printSummary(options, properties, inputBytes, m);
  if (!(m.maxError <= m.fileBound) || !(m.fileBound <= bound))
  {
    std::printf("FAIL: the bound is missed\n");
    return 1;
  }
  std::printf("PASS: every voxel within the bound\n");
  return 0;
}

} // namespace

int main(int argc, char** argv)
{
  Options options;
  if (!parse(argc, argv, options))
  {
    return 2;
  }
  return run(options);
}
