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
  float* field = nullptr;
  float* scratch = nullptr;
  float* decoded = nullptr;
  if (!cudaOk(cudaMalloc(&field, inputBytes), "cudaMalloc") ||
    !cudaOk(cudaMalloc(&scratch, inputBytes), "cudaMalloc") ||
    !cudaOk(cudaMalloc(&decoded, inputBytes), "cudaMalloc"))
  {
    return 1;
  }
  const int threads = 256;
  const int blocks =
    static_cast<int>(std::min<std::size_t>((voxels + threads - 1) / threads, 65535));
  initialCondition<<<blocks, threads>>>(field, n);
  for (int s = 0; s < options.steps; ++s)
  {
    heatStep<<<blocks, threads>>>(field, scratch, n, 0.1f);
    std::swap(field, scratch);
  }
  if (!cudaOk(cudaDeviceSynchronize(), "simulation kernels"))
  {
    return 1;
  }

  // The host copy serves only the raw reference file and the final check; the range is taken
  // from it with the core's valueRange (a simulation that has no host copy would reduce on the
  // device instead).
  std::vector<float> original(voxels);
  if (!cudaOk(cudaMemcpy(original.data(), field, inputBytes, cudaMemcpyDeviceToHost), "copy"))
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
  for (int r = 0; r <= options.repeats; ++r)
  {
    const auto start = std::chrono::steady_clock::now();
    status = codec::encodeDevice(field, layout, bound, stream, execution, &report);
    const double seconds = secondsSince(start);
    if (!status)
    {
      std::fprintf(stderr,
        "encodeDevice: %s: %s\n",
        sparsegrid::toString(status.code()),
        status.message().c_str());
      return 1;
    }
    if (r > 0)
    {
      encodeSeconds.push_back(seconds);
    }
  }
  std::printf("encodeDevice: backend %s%s%s, stream %zu bytes\n",
    sparsegrid::toString(report.backendUsed),
    report.note.empty() ? "" : ", ",
    report.note.c_str(),
    stream.size());

  // --- write the .sgrid file: one piece covering the image, origin 0, spacing 1 ---
  const std::string sgridPath = options.output + ".sgrid";
  const std::string rawPath = options.output + "_" + std::to_string(n) + "x" + std::to_string(n) +
    "x" + std::to_string(n) + "_float32.raw";
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
    return 1;
  }
  if (!writeRaw(rawPath, original))
  {
    std::fprintf(stderr, "cannot write %s\n", rawPath.c_str());
    return 1;
  }
  struct stat info
  {
  };
  const double fileBytes =
    stat(sgridPath.c_str(), &info) == 0 ? static_cast<double>(info.st_size) : 0;

  // --- read the file back and decode on the device ---
  sgf::Reader reader;
  sgf::StepData read;
  if (!(error = reader.open(sgridPath)).empty() || !(error = reader.readStep(0, read)).empty())
  {
    std::fprintf(stderr, "reading %s: %s\n", sgridPath.c_str(), error.c_str());
    return 1;
  }
  if (read.arrays.size() != 1 || read.arrays[0].streamOffsets.size() != 2 ||
    reader.header().grid.encoding != sgf::Encoding::ErrorBounded)
  {
    std::fprintf(stderr, "%s does not hold one error-bounded stream\n", sgridPath.c_str());
    return 1;
  }
  const sgf::ArrayValues& values = read.arrays[0];
  const std::uint8_t* readStream = values.bytes.data() + values.streamOffsets[0];
  const std::size_t readBytes = values.streamOffsets[1] - values.streamOffsets[0];
  std::vector<double> decodeSeconds;
  for (int r = 0; r <= options.repeats; ++r)
  {
    const auto start = std::chrono::steady_clock::now();
    status =
      codec::decodeDevice(readStream, readBytes, decoded, layout, -1, false, execution, &report);
    const cudaError_t synced = cudaDeviceSynchronize();
    const double seconds = secondsSince(start);
    if (!status || !cudaOk(synced, "decodeDevice"))
    {
      std::fprintf(stderr, "decodeDevice: %s\n", status.message().c_str());
      return 1;
    }
    if (r > 0)
    {
      decodeSeconds.push_back(seconds);
    }
  }

  // --- every voxel against the bound the file states, in double ---
  std::vector<float> result(voxels);
  if (!cudaOk(cudaMemcpy(result.data(), decoded, inputBytes, cudaMemcpyDeviceToHost), "copy"))
  {
    return 1;
  }
  double maxError = 0;
  std::size_t worst = 0;
  for (std::size_t v = 0; v < voxels; ++v)
  {
    const double e = std::fabs(static_cast<double>(result[v]) - static_cast<double>(original[v]));
    if (!(e <= maxError)) // NaN counts as a miss
    {
      maxError = std::isnan(e) ? INFINITY : e;
      worst = v;
    }
  }
  cudaFree(field);
  cudaFree(scratch);
  cudaFree(decoded);

  const double fileBound = values.absoluteBound;
  const double encodeMedian = median(encodeSeconds);
  const double decodeMedian = median(decodeSeconds);
  std::printf("file %s: %.0f bytes (stream %zu), ratio input/file %.2f; raw field %s\n",
    sgridPath.c_str(),
    fileBytes,
    readBytes,
    fileBytes > 0 ? inputBytes / fileBytes : 0.0,
    rawPath.c_str());
  std::printf("max |error| %.6g, file bound %.6g, error/bound %.6f (worst voxel %zu)\n",
    maxError,
    fileBound,
    maxError / fileBound,
    worst);
  std::printf("encodeDevice (device values -> host stream): median %.3f ms of %d, %.1f GB/s\n",
    encodeMedian * 1e3,
    options.repeats,
    inputBytes / encodeMedian / 1e9);
  std::printf("decodeDevice (host stream -> device values): median %.3f ms of %d, %.1f GB/s\n",
    decodeMedian * 1e3,
    options.repeats,
    inputBytes / decodeMedian / 1e9);
  std::printf("JSON {\"device\": \"%s\", \"size\": %d, \"relative_bound\": %g, \"bound\": %.9g, "
              "\"max_error\": %.9g, \"file_bytes\": %.0f, \"ratio\": %.4f, \"encode_ms\": %.4f, "
              "\"decode_ms\": %.4f, \"repeats\": %d}\n",
    properties.name,
    n,
    options.relativeBound,
    fileBound,
    maxError,
    fileBytes,
    fileBytes > 0 ? inputBytes / fileBytes : 0.0,
    encodeMedian * 1e3,
    decodeMedian * 1e3,
    options.repeats);
  if (!(maxError <= fileBound) || !(fileBound <= bound))
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
