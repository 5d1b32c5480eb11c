// sparsegrid-codec-bench: speed and ratio of the error-bounded codec, beside ZFP's library (when
// built with it) in the same harness, on the same data. Prints a table and writes JSON.
//
//   sparsegrid-codec-bench [--op compress|decompress|both] [--input FILE --dims NX NY NZ]
//       [--synthetic N] [--type float|double] [--rel R | --abs A] [--threads T] [--repeats K]
//       [--backend auto|cpu|cuda] [--no-zfp] [--json FILE] [--level K] [--noise A]
//       [--write-raw FILE] [--bricks B]
//
// Input: a raw little-endian float32 (or float64 with --type double) file, x fastest; or a
// synthetic multi-scale field of N^3 voxels (--synthetic, default 256). Speeds are MB/s of the
// uncompressed input (voxels * sizeof(value)), median of --repeats runs after one warm-up.
// --write-raw writes the input as raw values (x fastest), so that another codec's own tool can be
// run on exactly the same field. --bricks B (with --backend cuda) adds device-to-device rows for
// the field cut into bricks of B^3 (edges smaller), each brick its own stream, coded one after
// another as a bricked piece is: total throughput and time per brick.
#include <sparsegrid/codec.h>

#ifdef SPARSEGRID_HAVE_ZFP
#include <zfp.h>
#endif
#ifdef SPARSEGRID_CODEC_BENCH_CUDA
#include "../src/cuda/codec/CodecCudaProfile.h"

#include "execution/EventTimer.h"

#include <cuda_runtime.h>
#endif

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <functional>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace
{
namespace codec = sparsegrid::codec;

struct Options
{
  std::string op = "both";
  std::string input;
  std::uint64_t dims[3] = { 0, 0, 0 };
  std::uint64_t synthetic = 256;
  bool isDouble = false;
  double rel = 1e-3;
  double abs = 0;
  int threads = 2;
  int repeats = 5;
  std::string backend = "cpu";
  bool zfp = true;
  std::string json;
  int level = -1;
  double noise = 0; ///< uniform noise of this amplitude added to the synthetic field
  std::string writeRaw;
  std::uint64_t bricks = 0;
};

double median(std::vector<double> v)
{
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double processCpuSeconds()
{
  timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

/// Median wall seconds; `cpu` receives the median CPU seconds of the process (all threads): on a
/// machine shared with other jobs, wall time overstates the cost, CPU time does not.
double timeIt(int repeats, const std::function<void()>& f, double* cpu = nullptr)
{
  f(); // warm-up
  std::vector<double> t, c;
  for (int r = 0; r < repeats; ++r)
  {
    const double c0 = processCpuSeconds();
    const auto a = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count());
    c.push_back(processCpuSeconds() - c0);
  }
  if (cpu)
  {
    *cpu = median(c);
  }
  return median(t);
}

/// A multi-scale smooth field with a 1/k^2 spectrum (separable terms), values O(1).
template<typename T>
std::vector<T> synthetic(std::uint64_t n, double noise)
{
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<double> u(0, 2 * M_PI);
  const int terms = 24;
  std::vector<std::vector<double>> fx(terms), fy(terms), fz(terms);
  std::vector<double> amp(terms);
  for (int t = 0; t < terms; ++t)
  {
    const double k = 1.0 + t * 1.7;
    amp[t] = 1.0 / (k * k);
    const double kx = k * (0.5 + 0.5 * std::cos(u(rng))), ky = k * (0.5 + 0.5 * std::sin(u(rng))),
                 kz = k * 0.6;
    const double px = u(rng), py = u(rng), pz = u(rng);
    fx[t].resize(n);
    fy[t].resize(n);
    fz[t].resize(n);
    for (std::uint64_t i = 0; i < n; ++i)
    {
      const double x = double(i) / double(n) * 2 * M_PI;
      fx[t][i] = std::sin(kx * x + px);
      fy[t][i] = std::cos(ky * x + py);
      fz[t][i] = std::sin(kz * x + pz);
    }
  }
  std::vector<T> v(n * n * n);
  for (std::uint64_t k = 0; k < n; ++k)
  {
    for (std::uint64_t j = 0; j < n; ++j)
    {
      T* row = v.data() + n * (j + n * k);
      for (std::uint64_t i = 0; i < n; ++i)
      {
        double s = 0;
        for (int t = 0; t < terms; ++t)
        {
          s += amp[t] * fx[t][i] * fy[t][j] * fz[t][k];
        }
        if (noise > 0)
        {
          // A cheap deterministic hash as noise (splitmix64 of the voxel index).
          std::uint64_t z = (i + n * (j + n * k)) + 0x9e3779b97f4a7c15ull;
          z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
          z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
          z ^= z >> 31;
          s += noise * (double(z >> 11) * 0x1.0p-53 * 2 - 1);
        }
        row[i] = static_cast<T>(s);
      }
    }
  }
  return v;
}

struct Row
{
  std::string codec, op;
  double seconds = 0, mbps = 0, ratio = 0, maxError = 0, psnr = 0;
  std::string note;
  double cpuSeconds = 0; ///< CPU time of the process (all threads), median
};

template<typename A, typename B>
void errorOf(const A* a, const B* b, std::size_t n, double& maxErr, double& psnr)
{
  double lo = INFINITY, hi = -INFINITY, sq = 0;
  maxErr = 0;
  for (std::size_t i = 0; i < n; ++i)
  {
    const double x = static_cast<double>(a[i]);
    const double e = std::fabs(x - static_cast<double>(b[i]));
    lo = std::min(lo, x);
    hi = std::max(hi, x);
    maxErr = std::max(maxErr, e);
    sq += e * e;
  }
  const double rmse = std::sqrt(sq / double(n));
  psnr = rmse > 0 ? 20 * std::log10((hi - lo) / rmse) : INFINITY;
}

#ifdef SPARSEGRID_CODEC_BENCH_CUDA
void printKernelProfile(const char* what, int repeats, const std::function<void()>& call);

/// The field cut into bricks of b^3 (edges smaller), each coded device to device as its own
/// stream, one brick after another; median wall seconds of the whole set, both directions.
/// Every brick is checked against the bound after decoding.
template<typename T>
std::vector<Row> bricksOnDevice(const std::vector<T>& values,
  const codec::Layout& layout,
  std::uint64_t b,
  double bound,
  const sparsegrid::ExecutionOptions& g,
  int repeats)
{
  const std::uint64_t* d = layout.dims.data();
  struct Brick
  {
    codec::Layout layout;
    std::size_t first = 0, count = 0, streamAt = 0, capacity = 0, bytes = 0;
  };
  std::vector<Brick> bricks;
  std::vector<T> packed;
  packed.reserve(values.size());
  std::size_t streamTotal = 0;
  for (std::uint64_t z0 = 0; z0 < d[2]; z0 += b)
    for (std::uint64_t y0 = 0; y0 < d[1]; y0 += b)
      for (std::uint64_t x0 = 0; x0 < d[0]; x0 += b)
      {
        Brick k;
        k.layout.dims = { std::min(b, d[0] - x0), std::min(b, d[1] - y0), std::min(b, d[2] - z0) };
        k.first = packed.size();
        for (std::uint64_t z = z0; z < z0 + k.layout.dims[2]; ++z)
          for (std::uint64_t y = y0; y < y0 + k.layout.dims[1]; ++y)
          {
            const T* row = values.data() + x0 + d[0] * (y + d[1] * z);
            packed.insert(packed.end(), row, row + k.layout.dims[0]);
          }
        k.count = packed.size() - k.first;
        k.capacity = codec::maxStreamBytes(
          k.layout, sizeof(T) == 4 ? codec::ValueType::Float32 : codec::ValueType::Float64);
        k.streamAt = streamTotal;
        streamTotal += k.capacity;
        bricks.push_back(k);
      }
  T* dIn = nullptr;
  T* dOut = nullptr;
  std::uint8_t* dStream = nullptr;
  if (cudaMalloc(&dIn, packed.size() * sizeof(T)) != cudaSuccess ||
    cudaMalloc(&dOut, packed.size() * sizeof(T)) != cudaSuccess ||
    cudaMalloc(&dStream, streamTotal) != cudaSuccess)
  {
    std::cerr << "cudaMalloc failed for the bricks\n";
    std::exit(1);
  }
  cudaMemcpy(dIn, packed.data(), packed.size() * sizeof(T), cudaMemcpyHostToDevice);
  auto encodeAll = [&]
  {
    for (Brick& k : bricks)
    {
      codec::DeviceStream target{ dStream + k.streamAt, k.capacity };
      auto s = codec::encodeDeviceToDevice(dIn + k.first, k.layout, bound, target, g);
      k.bytes = target.bytes;
      if (!s)
      {
        std::cerr << "brick encodeDeviceToDevice: " << s.message() << "\n";
        std::exit(1);
      }
    }
    cudaDeviceSynchronize();
  };
  auto decodeAll = [&]
  {
    for (const Brick& k : bricks)
    {
      auto s =
        codec::decodeDevice(dStream + k.streamAt, k.bytes, dOut + k.first, k.layout, -1, true, g);
      if (!s)
      {
        std::cerr << "brick decodeDevice: " << s.message() << "\n";
        std::exit(1);
      }
    }
    cudaDeviceSynchronize();
  };
  const double encSeconds = timeIt(repeats, encodeAll);
  const double decSeconds = timeIt(repeats, decodeAll);
  std::vector<T> back(packed.size());
  cudaMemcpy(back.data(), dOut, back.size() * sizeof(T), cudaMemcpyDeviceToHost);
  // Bricks of one size: also coded in one batched call each way.
  std::vector<Row> batched;
  const bool equal = std::all_of(bricks.begin(),
    bricks.end(),
    [&](const Brick& k) { return k.layout.dims == bricks[0].layout.dims; });
  if (equal)
  {
    codec::Bricks all{ bricks[0].layout, bricks.size(), bricks[0].count };
    std::vector<codec::StreamSpan> spans;
    codec::DeviceStream streams{ dStream, streamTotal };
    auto encodeBatch = [&]
    {
      auto st = codec::encodeBricksDevice(dIn, all, { bound }, streams, spans, g);
      if (!st)
      {
        std::cerr << "encodeBricksDevice: " << st.message() << "\n";
        std::exit(1);
      }
      cudaDeviceSynchronize();
    };
    auto decodeBatch = [&]
    {
      auto st = codec::decodeBricksDevice(dStream, spans, dOut, all, g);
      if (!st)
      {
        std::cerr << "decodeBricksDevice: " << st.message() << "\n";
        std::exit(1);
      }
      cudaDeviceSynchronize();
    };
    const double enc = timeIt(repeats, encodeBatch);
    printKernelProfile("compress bricks, one batched call", repeats, encodeBatch);
    cudaMemset(dOut, 0, packed.size() * sizeof(T));
    const double dec = timeIt(repeats, decodeBatch);
    printKernelProfile("decompress bricks, one batched call", repeats, decodeBatch);
    std::vector<T> again(packed.size());
    cudaMemcpy(again.data(), dOut, again.size() * sizeof(T), cudaMemcpyDeviceToHost);
    Row r;
    r.codec = "sparsegrid-gpu";
    r.ratio = double(packed.size() * sizeof(T)) / double(streams.bytes);
    errorOf(packed.data(), again.data(), packed.size(), r.maxError, r.psnr);
    const double mb = double(packed.size() * sizeof(T)) / 1e6;
    const std::string what = std::to_string(bricks.size()) + " bricks of " + std::to_string(b) +
      "^3 in one batched call; per brick ";
    Row c = r, x = r;
    c.op = "compress bricks batched (device to device)";
    c.seconds = enc;
    c.mbps = mb / enc;
    c.note = what + std::to_string(enc / double(bricks.size()) * 1e6) + " us";
    x.op = "decompress bricks batched (device to device)";
    x.seconds = dec;
    x.mbps = mb / dec;
    x.note = what + std::to_string(dec / double(bricks.size()) * 1e6) + " us";
    batched = { c, x };
  }
  cudaFree(dIn);
  cudaFree(dOut);
  cudaFree(dStream);
  std::size_t bytes = 0;
  for (const Brick& k : bricks)
  {
    bytes += k.bytes;
  }
  Row r;
  r.codec = "sparsegrid-gpu";
  r.ratio = double(packed.size() * sizeof(T)) / double(bytes);
  errorOf(packed.data(), back.data(), packed.size(), r.maxError, r.psnr);
  const double mb = double(packed.size() * sizeof(T)) / 1e6;
  const std::string what = std::to_string(bricks.size()) + " bricks of " + std::to_string(b) +
    "^3, one after another; per brick ";
  Row c = r, x = r;
  c.op = "compress bricks (device to device)";
  c.seconds = encSeconds;
  c.mbps = mb / encSeconds;
  c.note = what + std::to_string(encSeconds / double(bricks.size()) * 1e6) + " us";
  x.op = "decompress bricks (device to device)";
  x.seconds = decSeconds;
  x.mbps = mb / decSeconds;
  x.note = what + std::to_string(decSeconds / double(bricks.size()) * 1e6) + " us";
  std::vector<Row> rows{ c, x };
  rows.insert(rows.end(), batched.begin(), batched.end());
  return rows;
}
#endif

/// The field under test and what every row shares: its value range, the absolute bound and the
/// size of the input.
template<typename T>
struct Field
{
  std::vector<T> values;
  codec::Layout layout;
  std::string source;
  double lo = 0, hi = 0;
  double bound = 0;
  double inputMB = 0;
};

/// Reads the input file or makes the synthetic field, writes it raw when asked, and derives the
/// bound. Returns the exit code on failure, 0 otherwise.
template<typename T>
int loadField(const Options& o, Field<T>& f)
{
  std::vector<T>& values = f.values;
  codec::Layout& layout = f.layout;
  if (!o.input.empty())
  {
    layout.dims = { o.dims[0], o.dims[1], o.dims[2] };
    const std::size_t n = o.dims[0] * o.dims[1] * o.dims[2];
    values.resize(n);
    std::ifstream in(o.input, std::ios::binary);
    if (!in.read(
          reinterpret_cast<char*>(values.data()), static_cast<std::streamsize>(n * sizeof(T))))
    {
      std::cerr << "cannot read " << n << " values from " << o.input << "\n";
      return 2;
    }
    f.source = o.input;
  }
  else
  {
    layout.dims = { o.synthetic, o.synthetic, o.synthetic };
    values = synthetic<T>(o.synthetic, o.noise);
    f.source = "synthetic " + std::to_string(o.synthetic) + "^3" +
      (o.noise > 0 ? " + noise " + std::to_string(o.noise) : "");
  }
  const std::size_t n = values.size();
  if (!o.writeRaw.empty())
  {
    std::ofstream raw(o.writeRaw, std::ios::binary);
    if (!raw.write(reinterpret_cast<const char*>(values.data()),
          static_cast<std::streamsize>(n * sizeof(T))))
    {
      std::cerr << "cannot write " << o.writeRaw << "\n";
      return 2;
    }
  }
  codec::ValueRange range;
  auto st = codec::valueRange(values.data(), layout, range);
  if (!st)
  {
    std::cerr << st.message() << "\n";
    return 1;
  }
  f.lo = range.min;
  f.hi = range.max;
  f.bound = o.abs > 0 ? o.abs : o.rel * (f.hi > f.lo ? f.hi - f.lo : 1.0);
  f.inputMB = double(n * sizeof(T)) / 1e6;
  return 0;
}

/// The codec on the host: one stream encoded for the ratio, then the timed compress and
/// decompress rows (each row carries the decoded error). False when encoding fails.
template<typename T>
bool hostRows(const Options& o,
  const Field<T>& f,
  const sparsegrid::ExecutionOptions& ex,
  double& ratio,
  std::vector<Row>& rows)
{
  const std::vector<T>& values = f.values;
  const codec::Layout& layout = f.layout;
  const double bound = f.bound;
  const double inputMB = f.inputMB;
  const std::size_t n = values.size();
  std::vector<std::uint8_t> stream;
  sparsegrid::ExecutionReport report;
  auto st = codec::encode(values.data(), layout, bound, stream, ex, &report);
  if (!st)
  {
    std::cerr << "encode: " << st.message() << "\n";
    return false;
  }
  std::vector<T> out(n);
  ratio = double(n * sizeof(T)) / double(stream.size());
  std::string note = std::string("backend ") + sparsegrid::toString(report.backendUsed) +
    (report.note.empty() ? "" : " (" + report.note + ")");
  if (o.op == "compress" || o.op == "both")
  {
    Row r;
    r.codec = "sparsegrid";
    r.op = "compress";
    std::vector<std::uint8_t> s; // reused, as ZFP's output buffer is
    r.seconds = timeIt(
      o.repeats, [&] { (void)codec::encode(values.data(), layout, bound, s, ex); }, &r.cpuSeconds);
    r.mbps = inputMB / r.seconds;
    r.ratio = ratio;
    r.note = note;
    rows.push_back(r);
  }
  {
    Row r;
    r.codec = "sparsegrid";
    r.op = "decompress";
    auto dec = [&]
    { (void)codec::decode(stream.data(), stream.size(), out.data(), layout, o.level, ex); };
    if (o.op == "decompress" || o.op == "both")
    {
      r.seconds = timeIt(o.repeats, dec, &r.cpuSeconds);
      r.mbps = inputMB / r.seconds;
    }
    else
    {
      dec();
    }
    r.ratio = ratio;
    errorOf(values.data(), out.data(), n, r.maxError, r.psnr);
    r.note = note;
    if (o.op == "decompress" || o.op == "both")
    {
      rows.push_back(r);
    }
    if (o.op == "compress")
    {
      rows.back().maxError = r.maxError;
      rows.back().psnr = r.psnr;
    }
    else if (o.op == "both")
    {
      rows[0].maxError = r.maxError;
      rows[0].psnr = r.psnr;
    }
  }
  return true;
}

#ifdef SPARSEGRID_CODEC_BENCH_CUDA
/// Where the time goes: CUDA events around every launch, in separate repeats (the timed runs
/// carry no extra events). Per call: launches and milliseconds, summed by kernel name.
void printKernelProfile(const char* what, int repeats, const std::function<void()>& call)
{
  namespace ci = codec::cudaimpl;
  ci::profileEnable(true);
  for (int r = 0; r < repeats; ++r)
  {
    call();
  }
  const std::string lines = ci::profileReport();
  ci::profileEnable(false);
  std::printf("profile: %s, per call (mean of %d calls), GPU time by kernel\n", what, repeats);
  std::printf("| kernel | launches | ms | share |\n|---|---|---|---|\n");
  double sum = 0;
  std::vector<std::string> names;
  std::vector<double> launches, ms;
  std::istringstream in(lines);
  std::string line;
  while (std::getline(in, line))
  {
    const auto t1 = line.find('\t'), t2 = line.rfind('\t');
    names.push_back(line.substr(0, t1));
    launches.push_back(std::stod(line.substr(t1 + 1, t2 - t1 - 1)) / repeats);
    ms.push_back(std::stod(line.substr(t2 + 1)) / repeats);
    sum += ms.back();
  }
  for (std::size_t i = 0; i < names.size(); ++i)
  {
    std::printf("| %s | %.0f | %.4f | %.1f%% |\n",
      names[i].c_str(),
      launches[i],
      ms[i],
      sum > 0 ? 100 * ms[i] / sum : 0.0);
  }
  std::printf("| sum of kernels | | %.4f | |\n", sum);
}

/// Copy bandwidth: device-to-device memcpy of the input moves 2x its bytes. `copyGBs`: that
/// bandwidth in GB/s.
template<typename T>
Row copyRow(const T* dIn, T* dOut, std::size_t n, double inputMB, int repeats, double& copyGBs)
{
  execution::cuda::EventTimer timer;
  std::vector<double> copies;
  for (int r = 0; r < repeats + 1; ++r)
  {
    timer.reset();
    auto status = timer.start();
    if (status)
    {
      cudaMemcpy(dOut, dIn, n * sizeof(T), cudaMemcpyDeviceToDevice);
      status = timer.stop();
    }
    if (status)
    {
      status = timer.collect();
    }
    if (!status)
    {
      std::cerr << "copy bandwidth: " << status.message() << "\n";
      std::exit(1);
    }
    if (r > 0)
    {
      copies.push_back(timer.seconds());
    }
  }
  copyGBs = 2 * double(n * sizeof(T)) / median(copies) / 1e9;
  return Row{ "device",
    "copy (read + write)",
    median(copies),
    2 * inputMB / median(copies),
    0,
    0,
    0,
    "device bandwidth " + std::to_string(copyGBs) + " GB/s" };
}

/// Runs `call` (a device call returning its status) once as a warm-up and `repeats` times
/// more: the wall seconds of the timed runs and the kernel seconds `rep` reports for each.
template<typename Call>
void timeDeviceCalls(int repeats,
  const char* what,
  const sparsegrid::ExecutionReport& rep,
  const Call& call,
  std::vector<double>& wall,
  std::vector<double>& kernel)
{
  for (int r = 0; r <= repeats; ++r)
  {
    const auto a = std::chrono::steady_clock::now();
    auto s2 = call();
    cudaDeviceSynchronize();
    const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count();
    if (!s2)
    {
      std::cerr << what << ": " << s2.message() << "\n";
      std::exit(1);
    }
    if (r > 0)
    {
      wall.push_back(t);
      kernel.push_back(rep.kernelSeconds);
    }
  }
}

/// Device-resident data, as in situ: kernel time (report.kernelSeconds) and end to end (device
/// values -> host stream; host stream -> device values), device to device, the kernels'
/// profile, the copy bandwidth and the bricked rows. False when device memory runs out.
template<typename T>
bool deviceRows(const Options& o,
  const Field<T>& f,
  const sparsegrid::ExecutionOptions& ex,
  double ratio,
  std::vector<Row>& rows)
{
  const std::vector<T>& values = f.values;
  const codec::Layout& layout = f.layout;
  const double bound = f.bound;
  const double inputMB = f.inputMB;
  const std::size_t n = values.size();
  T* dIn = nullptr;
  T* dOut = nullptr;
  if (cudaMalloc(&dIn, n * sizeof(T)) != cudaSuccess ||
    cudaMalloc(&dOut, n * sizeof(T)) != cudaSuccess)
  {
    std::cerr << "cudaMalloc failed\n";
    return false;
  }
  cudaMemcpy(dIn, values.data(), n * sizeof(T), cudaMemcpyHostToDevice);
  sparsegrid::ExecutionOptions g = ex;
  g.strictBackend = true;
  // References from the CPU backend (all threads).
  sparsegrid::ExecutionOptions c = ex;
  c.backend = sparsegrid::Backend::CPU;
  c.threads = 0;
  std::vector<std::uint8_t> cpuStream;
  std::vector<T> cpuOut(n);
  (void)codec::encode(values.data(), layout, bound, cpuStream, c);
  (void)codec::decode(cpuStream.data(), cpuStream.size(), cpuOut.data(), layout, o.level, c);
  std::vector<std::uint8_t> ds;
  std::vector<double> kernel, wall;
  sparsegrid::ExecutionReport rep;
  auto enc = [&]
  {
    const auto a = std::chrono::steady_clock::now();
    auto s2 = codec::encodeDevice(dIn, layout, bound, ds, g, &rep);
    cudaDeviceSynchronize();
    wall.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count());
    kernel.push_back(rep.kernelSeconds);
    if (!s2)
    {
      std::cerr << "encodeDevice: " << s2.message() << "\n";
      std::exit(1);
    }
  };
  enc();
  kernel.clear();
  wall.clear();
  for (int r = 0; r < o.repeats; ++r)
  {
    enc();
  }
  const bool same = ds == cpuStream;
  Row kc{ "sparsegrid-gpu",
    "compress (kernels)",
    median(kernel),
    inputMB / median(kernel),
    ratio,
    0,
    0,
    same ? "stream == CPU stream" : "STREAM DIFFERS FROM CPU" };
  Row ec{ "sparsegrid-gpu",
    "compress (device to host stream)",
    median(wall),
    inputMB / median(wall),
    ratio,
    0,
    0,
    "encodeDevice wall time" };
  kernel.clear();
  wall.clear();
  auto dec = [&]
  {
    const auto a = std::chrono::steady_clock::now();
    auto s2 = codec::decodeDevice(ds.data(), ds.size(), dOut, layout, o.level, false, g, &rep);
    cudaDeviceSynchronize();
    wall.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count());
    kernel.push_back(rep.kernelSeconds);
    if (!s2)
    {
      std::cerr << "decodeDevice: " << s2.message() << "\n";
      std::exit(1);
    }
  };
  dec();
  kernel.clear();
  wall.clear();
  for (int r = 0; r < o.repeats; ++r)
  {
    dec();
  }
  std::vector<T> back(n);
  cudaMemcpy(back.data(), dOut, n * sizeof(T), cudaMemcpyDeviceToHost);
  Row kd{ "sparsegrid-gpu",
    "decompress (kernels)",
    median(kernel),
    inputMB / median(kernel),
    ratio,
    0,
    0,
    std::memcmp(back.data(), cpuOut.data(), n * sizeof(T)) == 0 ? "output == CPU decode"
                                                                : "OUTPUT DIFFERS FROM CPU" };
  errorOf(values.data(), back.data(), n, kd.maxError, kd.psnr);
  kc.maxError = ec.maxError = kd.maxError;
  kc.psnr = ec.psnr = kd.psnr;
  Row ed{ "sparsegrid-gpu",
    "decompress (host stream to device)",
    median(wall),
    inputMB / median(wall),
    ratio,
    kd.maxError,
    kd.psnr,
    "decodeDevice wall time" };
  // Device to device: the stream stays in device memory both ways.
  const std::size_t capacity = codec::maxStreamBytes(
    layout, sizeof(T) == 4 ? codec::ValueType::Float32 : codec::ValueType::Float64);
  std::uint8_t* dStream = nullptr;
  cudaMalloc(&dStream, capacity);
  codec::DeviceStream target{ dStream, capacity };
  std::size_t& dBytes = target.bytes;
  std::vector<double> wallEnc, wallDec, kernEnc, kernDec;
  timeDeviceCalls(
    o.repeats,
    "encodeDeviceToDevice",
    rep,
    [&] { return codec::encodeDeviceToDevice(dIn, layout, bound, target, g, &rep); },
    wallEnc,
    kernEnc);
  timeDeviceCalls(
    o.repeats,
    "decodeDevice (device stream)",
    rep,
    [&] { return codec::decodeDevice(dStream, dBytes, dOut, layout, o.level, true, g, &rep); },
    wallDec,
    kernDec);
  std::vector<std::uint8_t> dsCopy(dBytes);
  cudaMemcpy(dsCopy.data(), dStream, dBytes, cudaMemcpyDeviceToHost);
  cudaMemcpy(back.data(), dOut, n * sizeof(T), cudaMemcpyDeviceToHost);
  const bool sameD =
    dsCopy == cpuStream && std::memcmp(back.data(), cpuOut.data(), n * sizeof(T)) == 0;
  Row dc{ "sparsegrid-gpu",
    "compress (device to device)",
    median(wallEnc),
    inputMB / median(wallEnc),
    ratio,
    kd.maxError,
    kd.psnr,
    "encodeDeviceToDevice wall; kernels " + std::to_string(median(kernEnc) * 1e3) + " ms" +
      (sameD ? "" : "; STREAM/OUTPUT DIFFERS FROM CPU") };
  Row dd{ "sparsegrid-gpu",
    "decompress (device to device)",
    median(wallDec),
    inputMB / median(wallDec),
    ratio,
    kd.maxError,
    kd.psnr,
    "decodeDevice(stream on device) wall; kernels " + std::to_string(median(kernDec) * 1e3) +
      " ms" };
  printKernelProfile("compress, device to device",
    o.repeats,
    [&] { (void)codec::encodeDeviceToDevice(dIn, layout, bound, target, g); });
  printKernelProfile("decompress, device to device",
    o.repeats,
    [&] { (void)codec::decodeDevice(dStream, dBytes, dOut, layout, o.level, true, g); });
  cudaFree(dStream);
  double copyGBs = 0;
  const Row bw = copyRow(dIn, dOut, n, inputMB, o.repeats, copyGBs);
  rows.push_back(kc);
  rows.push_back(ec);
  rows.push_back(kd);
  rows.push_back(ed);
  rows.push_back(dc);
  rows.push_back(dd);
  rows.push_back(bw);
  if (o.bricks > 0)
  {
    for (const Row& r : bricksOnDevice(values, layout, o.bricks, bound, g, o.repeats))
    {
      rows.push_back(r);
    }
  }
  cudaDeviceProp prop;
  cudaGetDeviceProperties(&prop, 0);
  std::printf("device: %s; kernel compress %.1f GB/s (%.0f%% of copy bandwidth %.0f GB/s), "
              "kernel decompress %.1f GB/s (%.0f%%)\n",
    prop.name,
    kc.mbps / 1e3,
    100 * kc.mbps / 1e3 / copyGBs,
    copyGBs,
    kd.mbps / 1e3,
    100 * kd.mbps / 1e3 / copyGBs);
  cudaFree(dIn);
  cudaFree(dOut);
  return true;
}
#endif

#ifdef SPARSEGRID_HAVE_ZFP
/// ZFP's fixed-accuracy mode with the same bound on the same field: compress (OpenMP when more
/// than one thread) and decompress (serial) rows.
template<typename T>
void zfpRows(const Options& o, Field<T>& f, std::vector<Row>& rows)
{
  std::vector<T>& values = f.values;
  const codec::Layout& layout = f.layout;
  const double bound = f.bound;
  const double inputMB = f.inputMB;
  const std::size_t n = values.size();
  const zfp_type type = sizeof(T) == 4 ? zfp_type_float : zfp_type_double;
  zfp_field* field = nullptr;
  const bool d3 = layout.dims[2] > 1, d2 = layout.dims[1] > 1;
  field = d3 ? zfp_field_3d(values.data(), type, layout.dims[0], layout.dims[1], layout.dims[2])
             : (d2 ? zfp_field_2d(values.data(), type, layout.dims[0], layout.dims[1])
                   : zfp_field_1d(values.data(), type, layout.dims[0]));
  zfp_stream* zs = zfp_stream_open(nullptr);
  zfp_stream_set_accuracy(zs, bound);
  const bool omp = o.threads > 1 && zfp_stream_set_execution(zs, zfp_exec_omp);
  if (omp)
  {
    zfp_stream_set_omp_threads(zs, static_cast<unsigned>(o.threads));
  }
  const std::size_t cap = zfp_stream_maximum_size(zs, field);
  std::vector<unsigned char> buf(cap);
  bitstream* bs = stream_open(buf.data(), cap);
  zfp_stream_set_bit_stream(zs, bs);
  std::size_t zbytes = 0;
  auto comp = [&]
  {
    zfp_stream_rewind(zs);
    zbytes = zfp_compress(zs, field);
  };
  std::vector<T> zout(n);
  zfp_field* outField = d3
    ? zfp_field_3d(zout.data(), type, layout.dims[0], layout.dims[1], layout.dims[2])
    : (d2 ? zfp_field_2d(zout.data(), type, layout.dims[0], layout.dims[1])
          : zfp_field_1d(zout.data(), type, layout.dims[0]));
  auto decomp = [&]
  {
    zfp_stream_set_execution(zs, zfp_exec_serial);
    zfp_stream_rewind(zs);
    zfp_decompress(zs, outField);
    if (omp)
    {
      zfp_stream_set_execution(zs, zfp_exec_omp);
    }
  };
  Row c;
  c.codec = "zfp-accuracy";
  c.op = "compress";
  c.seconds = timeIt(o.repeats, comp, &c.cpuSeconds);
  c.mbps = inputMB / c.seconds;
  c.ratio = double(n * sizeof(T)) / double(zbytes);
  c.note = omp ? "OpenMP " + std::to_string(o.threads) + " threads" : "serial";
  Row d = c;
  d.op = "decompress";
  d.seconds = timeIt(o.repeats, decomp, &d.cpuSeconds);
  d.mbps = inputMB / d.seconds;
  d.note = "serial (ZFP 1.0 decompresses serially on the CPU)";
  errorOf(values.data(), zout.data(), n, d.maxError, d.psnr);
  c.maxError = d.maxError;
  c.psnr = d.psnr;
  if (o.op != "decompress")
  {
    rows.push_back(c);
  }
  if (o.op != "compress")
  {
    rows.push_back(d);
  }
  zfp_field_free(field);
  zfp_field_free(outField);
  zfp_stream_close(zs);
  stream_close(bs);
}
#endif

/// The Markdown table on standard output.
template<typename T>
void printTable(const Options& o, const Field<T>& f, const std::vector<Row>& rows)
{
  const codec::Layout& layout = f.layout;
  const double bound = f.bound, lo = f.lo, hi = f.hi;
  const double inputMB = f.inputMB;
  const std::string& source = f.source;
  std::printf(
    "source: %s (%llu x %llu x %llu %s, %.1f MB), bound %.6g (relative %.3g), %d thread(s), "
    "median of %d after a warm-up\n",
    source.c_str(),
    (unsigned long long)layout.dims[0],
    (unsigned long long)layout.dims[1],
    (unsigned long long)layout.dims[2],
    sizeof(T) == 4 ? "float" : "double",
    inputMB,
    bound,
    bound / (hi > lo ? hi - lo : 1.0),
    o.threads,
    o.repeats);
  std::printf(
    "| codec | op | seconds | MB/s | CPU s | ratio | max error / bound | PSNR dB | note |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|\n");
  for (const Row& r : rows)
  {
    std::printf("| %s | %s | %.4f | %.1f | %.4f | %.2f | %.3f | %.2f | %s |\n",
      r.codec.c_str(),
      r.op.c_str(),
      r.seconds,
      r.mbps,
      r.cpuSeconds,
      r.ratio,
      r.maxError / bound,
      r.psnr,
      r.note.c_str());
  }
}

/// The same rows as JSON (--json).
template<typename T>
void writeJson(const Options& o, const Field<T>& f, const std::vector<Row>& rows)
{
  const codec::Layout& layout = f.layout;
  const double bound = f.bound, lo = f.lo, hi = f.hi;
  const std::string& source = f.source;
  std::ofstream js(o.json);
  js << "{\n  \"source\": \"" << source << "\",\n  \"dims\": [" << layout.dims[0] << ", "
     << layout.dims[1] << ", " << layout.dims[2] << "],\n  \"type\": \""
     << (sizeof(T) == 4 ? "float" : "double") << "\",\n  \"bound\": " << bound
     << ",\n  \"relative\": " << bound / (hi > lo ? hi - lo : 1.0)
     << ",\n  \"threads\": " << o.threads << ",\n  \"repeats\": " << o.repeats
     << ",\n  \"results\": [\n";
  for (std::size_t i = 0; i < rows.size(); ++i)
  {
    const Row& r = rows[i];
    js << "    {\"codec\": \"" << r.codec << "\", \"op\": \"" << r.op
       << "\", \"seconds\": " << r.seconds << ", \"cpuSeconds\": " << r.cpuSeconds
       << ", \"MBps\": " << r.mbps << ", \"ratio\": " << r.ratio << ", \"maxError\": " << r.maxError
       << ", \"psnr\": " << (std::isfinite(r.psnr) ? r.psnr : 999.0) << ", \"note\": \"" << r.note
       << "\"}" << (i + 1 < rows.size() ? "," : "") << "\n";
  }
  js << "  ]\n}\n";
}

template<typename T>
int run(const Options& o)
{
  Field<T> f;
  if (const int failed = loadField(o, f))
  {
    return failed;
  }
  sparsegrid::ExecutionOptions ex;
  ex.threads = o.threads;
  ex.backend = o.backend == "cuda"
    ? sparsegrid::Backend::CUDA
    : (o.backend == "auto" ? sparsegrid::Backend::Auto : sparsegrid::Backend::CPU);
  std::vector<Row> rows;
  double ratio = 0;
  if (!hostRows(o, f, ex, ratio, rows))
  {
    return 1;
  }
#ifdef SPARSEGRID_CODEC_BENCH_CUDA
  if (o.backend == "cuda" && !deviceRows(o, f, ex, ratio, rows))
  {
    return 1;
  }
#endif
#ifdef SPARSEGRID_HAVE_ZFP
  if (o.zfp)
  {
    zfpRows(o, f, rows);
  }
#endif
  printTable(o, f, rows);
  if (!o.json.empty())
  {
    writeJson(o, f, rows);
  }
  return 0;
}

} // namespace

int main(int argc, char** argv)
{
  Options o;
  for (int i = 1; i < argc; ++i)
  {
    const std::string a = argv[i];
    auto next = [&]() -> std::string
    {
      if (i + 1 >= argc)
      {
        std::cerr << a << " needs a value\n";
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--op")
      o.op = next();
    else if (a == "--input")
      o.input = next();
    else if (a == "--dims")
    {
      for (int d = 0; d < 3; ++d)
        o.dims[d] = std::stoull(next());
    }
    else if (a == "--synthetic")
      o.synthetic = std::stoull(next());
    else if (a == "--type")
      o.isDouble = next() == "double";
    else if (a == "--rel")
      o.rel = std::stod(next());
    else if (a == "--abs")
      o.abs = std::stod(next());
    else if (a == "--threads")
      o.threads = std::stoi(next());
    else if (a == "--repeats")
      o.repeats = std::stoi(next());
    else if (a == "--backend")
      o.backend = next();
    else if (a == "--no-zfp")
      o.zfp = false;
    else if (a == "--json")
      o.json = next();
    else if (a == "--noise")
      o.noise = std::stod(next());
    else if (a == "--level")
      o.level = std::stoi(next());
    else if (a == "--write-raw")
      o.writeRaw = next();
    else if (a == "--bricks")
      o.bricks = std::stoull(next());
    else
    {
      std::cerr << "unknown option " << a << " (see the comment at the top of codec-bench.cxx)\n";
      return 2;
    }
  }
  if (o.op != "compress" && o.op != "decompress" && o.op != "both")
  {
    std::cerr << "--op must be compress, decompress or both\n";
    return 2;
  }
  return o.isDouble ? run<double>(o) : run<float>(o);
}
