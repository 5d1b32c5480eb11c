// The error-bounded codec's public API: argument checks, the scheme choice from a sample, and the
// choice between the CPU (CodecCpuEncode.cxx, CodecCpuDecode.cxx) and the CUDA implementation
// (src/cuda/codec/), with the CPU fall-back where the GPU cannot run.
#include "CodecCpu.h"
#include "CodecMask.h"

#include "../Internal.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <type_traits>

namespace sparsegrid
{
namespace codec
{

namespace detail
{
CpuWorkspace& cpuWorkspace()
{
  thread_local CpuWorkspace workspace;
  return workspace;
}
} // namespace detail

namespace
{

template<typename T>
Status checkBound(double bound)
{
  if (!(bound > 0) || !std::isfinite(bound))
  {
    return Status(ErrorCode::InvalidArgument,
      "encode: the absolute error bound must be positive and finite (got " + std::to_string(bound) +
        ")");
  }
  return Status::Ok();
}

} // namespace

template<typename T>
Status valueRange(const T* values,
  const Layout& layout,
  ValueRange& range,
  const SpecialValues& specials,
  const ExecutionOptions& options)
{
  std::uint64_t voxels = 0;
  Status st = detail::checkLayout(layout, voxels, "valueRange");
  if (!st)
  {
    return st;
  }
  if (!values)
  {
    return Status(ErrorCode::InvalidArgument, "valueRange: the values pointer is null");
  }
  std::mutex m;
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  std::uint64_t count = 0;
  sparsegrid::detail::parallelFor(options,
    static_cast<std::size_t>(voxels),
    1 << 16,
    [&](std::size_t first, std::size_t last)
    {
      T l = std::numeric_limits<T>::infinity(), h = -l;
      std::uint64_t c = 0;
      for (std::size_t i = first; i < last; ++i)
      {
        const T v = values[i * layout.stride];
        if (specials.contains(v))
        {
          ++c;
          continue;
        }
        l = v < l ? v : l;
        h = v > h ? v : h;
      }
      std::lock_guard<std::mutex> lock(m);
      lo = std::min(lo, static_cast<double>(l));
      hi = std::max(hi, static_cast<double>(h));
      count += c;
    });
  range.min = lo;
  range.max = hi;
  range.specialVoxels = count;
  return Status::Ok();
}

namespace
{
/// The sample indices of dims (all: the host's; the trial blocks' alone: the GPU's), kept for
/// the last dims: a time series encodes the same dims again and again, and the indices take a
/// few tenths of a millisecond to build at 512^3.
std::shared_ptr<const std::vector<std::uint64_t>> sampleIndices(const std::uint64_t dims[3],
  bool trialOnly)
{
  static std::mutex mutex;
  static std::uint64_t lastDims[2][3] = { { 0, 0, 0 }, { 0, 0, 0 } };
  static std::shared_ptr<const std::vector<std::uint64_t>> last[2];
  std::lock_guard<std::mutex> lock(mutex);
  const int k = trialOnly ? 1 : 0;
  if (!last[k] || !std::equal(dims, dims + 3, lastDims[k]))
  {
    auto built = std::make_shared<std::vector<std::uint64_t>>();
    if (trialOnly)
    {
      detail::trialIndices(dims, *built);
    }
    else
    {
      detail::sampleWindows(dims, *built);
    }
    std::copy(dims, dims + 3, lastDims[k]);
    last[k] = built;
  }
  return last[k];
}

/// The sample's values, kept per thread between calls: up to 0.85 MB, whose fresh pages on
/// every encode cost about as much as choosing the scheme.
std::vector<double>& sampleBuffer()
{
  static thread_local std::vector<double> sample;
  return sample;
}

/// The scheme for values in host memory (see detail::schemeFromSample).
template<typename T>
format::Scheme hostScheme(const T* values,
  const Layout& layout,
  double bound,
  const ExecutionOptions& options)
{
  const auto kept = sampleIndices(layout.dims.data(), false);
  const std::vector<std::uint64_t>& indices = *kept;
  // Taken out of the per-thread buffer for the call: a caller's parallelFor that steals work
  // may run another encode on this thread while the scheme choice waits for its tasks.
  std::vector<double> sample;
  sample.swap(sampleBuffer());
  sample.resize(indices.size());
  for (std::size_t i = 0; i < indices.size(); ++i)
  {
    sample[i] = static_cast<double>(values[indices[i] * layout.stride]);
  }
  const format::Scheme scheme =
    detail::schemeFromSample(layout.dims.data(), sample, bound, options);
  sample.swap(sampleBuffer());
  return scheme;
}

/// The same scheme for values in device memory: the GPU measures the same windows and codes
/// the same trial blocks.
template<typename T>
Status deviceScheme(const T* deviceValues,
  const Layout& layout,
  double bound,
  const ExecutionOptions& options,
  format::Scheme& scheme)
{
  // Out of the per-thread buffer for the call, as in hostScheme.
  static thread_local detail::SampleStatistics keptStatistics;
  detail::SampleStatistics statistics;
  std::swap(statistics, keptStatistics);
  const Status st = cudaimpl::chooseScheme<T>(deviceValues,
    layout.stride,
    layout.dims.data(),
    bound,
    sampleIndices(layout.dims.data(), true),
    statistics,
    scheme,
    options);
  std::swap(statistics, keptStatistics);
  return st;
}

/// The argument checks every encoder entry point makes before it reads a value, in the order the
/// errors are reported: missing pointers, the bound, the layout.
template<typename T>
Status checkEncodeArguments(bool pointersGiven,
  const char* nullPointerMessage,
  double absoluteBound,
  const Layout& layout,
  std::uint64_t& voxels,
  const char* what)
{
  if (!pointersGiven)
  {
    return Status(ErrorCode::InvalidArgument, nullPointerMessage);
  }
  Status st = checkBound<T>(absoluteBound);
  if (st)
  {
    st = detail::checkLayout(layout, voxels, what);
  }
  return st;
}

/// The device-memory entry points choose their backend themselves (the data already lives on the
/// GPU), so they fill the caller's report, or a local one, by hand instead of runWithFallback.
class DeviceCallReport
{
public:
  explicit DeviceCallReport(ExecutionReport* report)
    : Report(report ? *report : this->Local)
  {
    this->Report.note.clear();
    this->Report.kernelSeconds = 0;
  }
  DeviceCallReport(const DeviceCallReport&) = delete;
  DeviceCallReport& operator=(const DeviceCallReport&) = delete;

  ExecutionReport& report() { return this->Report; }
  Status finish(Backend used, const Status& st)
  {
    this->Report.backendUsed = used;
    this->Report.seconds = this->Clock.seconds();
    return st;
  }

private:
  ExecutionReport Local;
  ExecutionReport& Report;
  sparsegrid::detail::Stopwatch Clock;
};

/// Whether the GPU's answer stands: anything but a missing device or memory is final, and so is
/// every answer under strictBackend.
bool deviceResultIsFinal(const Status& st, const ExecutionOptions& options)
{
  return st ||
    (st.code() != ErrorCode::BackendUnavailable && st.code() != ErrorCode::OutOfDeviceMemory) ||
    options.strictBackend;
}
} // namespace

namespace
{
/// A host-memory encoding on the GPU, or on the CPU where the GPU cannot run or is not asked for.
template<typename T>
Status runEncode(const detail::EncodeRequest<T>& request,
  std::uint64_t voxels,
  const ExecutionOptions& options,
  ExecutionReport* report)
{
  return sparsegrid::detail::runWithFallback(
    options,
    voxels,
    report,
    [&](double* kernelSeconds) { return cudaimpl::encode<T>(request, options, kernelSeconds); },
    [&]() { return detail::encodeCPU<T>(request, options); });
}

/// Values with special voxels: the filled field coded as any other (on the GPU or the CPU), then
/// the mask section added (or the raw values stored where that is smaller).
template<typename T>
Status encodeMasked(const T* values,
  const Layout& layout,
  const ErrorBound& bound,
  std::vector<std::uint8_t>& stream,
  EncodeStatistics& statistics,
  const ExecutionOptions& options,
  ExecutionReport* report)
{
  detail::MaskedInput<T> masked;
  Status st = detail::maskSpecials(values, layout, bound.specials, masked, options);
  if (!st)
  {
    return st;
  }
  Layout contiguous = layout;
  contiguous.stride = 1;
  const T* filled = masked.filled.data();
  const format::Scheme scheme = hostScheme(filled, contiguous, bound.absolute, options);
  detail::predictSpecials(masked, contiguous.dims.data(), scheme, options);
  statistics = EncodeStatistics();
  const detail::EncodeRequest<T> request{
    filled, nullptr, contiguous, scheme, bound.absolute, &stream, &statistics
  };
  st = runEncode(request, masked.filled.size(), options, report);
  bool raw = false;
  if (st)
  {
    st = detail::addMask(stream, masked, values, layout, raw);
  }
  statistics.raw = raw;
  statistics.specialVoxels = masked.specialVoxels;
  statistics.maskBytes = raw ? 0 : masked.section.size();
  return st;
}
} // namespace

template<typename T>
Status encode(const T* values,
  const Layout& layout,
  const ErrorBound& bound,
  std::vector<std::uint8_t>& stream,
  const ExecutionOptions& options,
  ExecutionReport* report,
  EncodeStatistics* statistics)
{
  std::uint64_t voxels = 0;
  Status st = checkEncodeArguments<T>(values != nullptr,
    "encode: the values pointer is null",
    bound.absolute,
    layout,
    voxels,
    "encode");
  if (!st)
  {
    return st;
  }
  EncodeStatistics local;
  EncodeStatistics& stats = statistics ? *statistics : local;
  stats = EncodeStatistics();
  // NaN and Inf are found by the encoders themselves (no extra pass over the values); a fill
  // value needs one.
  const SpecialValues& specials = bound.specials;
  if (specials.useFillValue && detail::countSpecials(values, layout, specials, options) > 0)
  {
    return encodeMasked(values, layout, bound, stream, stats, options, report);
  }
  const format::Scheme scheme = hostScheme(values, layout, bound.absolute, options);
  const detail::EncodeRequest<T> request{
    values, nullptr, layout, scheme, bound.absolute, &stream, &stats
  };
  st = runEncode(request, voxels, options, report);
  if (st.code() == ErrorCode::NonFinite)
  {
    return encodeMasked(values, layout, bound, stream, stats, options, report);
  }
  return st;
}

Status inspect(const std::uint8_t* stream, std::size_t bytes, StreamInfo& info)
{
  info = StreamInfo();
  Status st = detail::parseHeader(stream, bytes, info, nullptr, nullptr);
  if (!st)
  {
    info = StreamInfo();
  }
  return st;
}

namespace
{

template<typename S, typename T>
Status decodeAs(const detail::ParsedStream& in,
  int lod,
  T* out,
  const Layout& layout,
  const ExecutionOptions& options)
{
  const StreamInfo& info = in.info;
  const std::uint64_t voxels = info.dims[0] * info.dims[1] * info.dims[2];
  const bool direct = std::is_same<S, T>::value && layout.stride == 1;
  S* rec = nullptr;
  if (direct)
  {
    rec = reinterpret_cast<S*>(out);
  }
  else
  {
    Status st = sparsegrid::checkAllocation(voxels * sizeof(S), "the codec's decode buffer");
    if (!st)
    {
      return st;
    }
    detail::CpuWorkspace& workspace = detail::cpuWorkspace();
    rec = detail::scratch<S>(workspace.values, workspace.valueBytes, voxels);
  }
  if (info.raw)
  {
    for (std::uint64_t i = 0; i < voxels; ++i)
    {
      rec[i] = format::load<S>(in.data + info.headerBytes + i * sizeof(S));
      if (info.version < maskedCodecVersion && !std::isfinite(rec[i]))
      {
        return Status(
          ErrorCode::InvalidArgument, "decode: damaged stream: a raw value is NaN or Inf");
      }
    }
  }
  else
  {
    Status st = detail::decodeCPU<S>(in, lod, rec, options);
    if (!st)
    {
      return st;
    }
  }
  if (!direct)
  {
    const std::uint64_t stride = layout.stride;
    sparsegrid::detail::parallelFor(options,
      static_cast<std::size_t>(voxels),
      1 << 16,
      [&](std::size_t first, std::size_t last)
      {
        for (std::size_t i = first; i < last; ++i)
        {
          out[i * stride] = static_cast<T>(rec[i]);
        }
      });
  }
  detail::restoreSpecials(in.data, info, out, layout.stride, options);
  return Status::Ok();
}

/// The checks of every decoder of a host-memory stream, in the order the errors are reported:
/// the header (parsed into `parsed`), the layout against the stream's dimensions, the level of
/// detail (-1: the finest, returned in `lod`), and the bytes the levels 0..lod need. Messages
/// begin with `what`.
Status openStream(const std::uint8_t* stream,
  std::size_t bytes,
  const Layout& layout,
  int levelOfDetail,
  const char* what,
  detail::ParsedStream& parsed,
  int& lod)
{
  const std::string prefix = std::string(what) + ": ";
  parsed.data = stream;
  parsed.bytes = bytes;
  const StreamInfo& info = parsed.info;
  Status st = detail::parseHeader(stream, bytes, parsed.info, &parsed.lengths, &parsed.tableCount);
  if (!st)
  {
    return Status(st.code(), prefix + st.message());
  }
  if (layout.dims != info.dims || layout.stride < 1)
  {
    return Status(ErrorCode::InvalidArgument,
      prefix + "the layout's dimensions " + std::to_string(layout.dims[0]) + "x" +
        std::to_string(layout.dims[1]) + "x" + std::to_string(layout.dims[2]) +
        " do not match the stream's " + std::to_string(info.dims[0]) + "x" +
        std::to_string(info.dims[1]) + "x" + std::to_string(info.dims[2]));
  }
  if (levelOfDetail < -1 || levelOfDetail >= info.levels)
  {
    return Status(ErrorCode::InvalidArgument,
      prefix + "level of detail " + std::to_string(levelOfDetail) + " is outside -1.." +
        std::to_string(info.levels - 1));
  }
  lod = levelOfDetail < 0 ? info.levels - 1 : levelOfDetail;
  const int needLevel = info.raw ? 0 : lod;
  if (bytes < info.levelEnd[needLevel])
  {
    return Status(ErrorCode::InvalidArgument,
      prefix + "the stream is truncated: levels 0.." + std::to_string(lod) + " need " +
        std::to_string(info.levelEnd[needLevel]) + " bytes, got " + std::to_string(bytes));
  }
  return Status::Ok();
}

/// Decodes levels 0..lod on the CPU, in the stream's value type.
template<typename T>
Status decodeOnHost(const detail::ParsedStream& in,
  int lod,
  T* out,
  const Layout& layout,
  const ExecutionOptions& options)
{
  return in.info.type == ValueType::Float32 ? decodeAs<float, T>(in, lod, out, layout, options)
                                            : decodeAs<double, T>(in, lod, out, layout, options);
}

} // namespace

template<typename T>
Status decode(const std::uint8_t* stream,
  std::size_t bytes,
  T* out,
  const Layout& layout,
  int levelOfDetail,
  const ExecutionOptions& options,
  ExecutionReport* report)
{
  if (!out)
  {
    return Status(ErrorCode::InvalidArgument, "decode: the output pointer is null");
  }
  detail::ParsedStream parsed;
  int lod = 0;
  const Status st = openStream(stream, bytes, layout, levelOfDetail, "decode", parsed, lod);
  if (!st)
  {
    return st;
  }
  const StreamInfo& info = parsed.info;
  const std::uint64_t voxels = info.dims[0] * info.dims[1] * info.dims[2];
  return sparsegrid::detail::runWithFallback(
    options,
    voxels,
    report,
    [&](double* kernelSeconds)
    {
      const cudaimpl::DecodeRequest<T> request{
        stream, bytes, false, info.type, lod, info, out, nullptr, layout
      };
      return cudaimpl::decode<T>(request, options, kernelSeconds);
    },
    [&]() { return decodeOnHost(parsed, lod, out, layout, options); });
}

namespace
{
/// Whether device values hold special voxels the device encoder does not see by itself: the
/// voxels equal to a fill value (NaN and Inf make it fail with NonFinite).
template<typename T>
Status deviceFillValues(const T* deviceValues,
  const Layout& layout,
  std::uint64_t voxels,
  const SpecialValues& specials,
  const ExecutionOptions& options,
  bool& found)
{
  found = false;
  if (!specials.useFillValue)
  {
    return Status::Ok();
  }
  std::uint64_t count = 0;
  Status st =
    cudaimpl::countSpecials<T>(deviceValues, layout.stride, voxels, specials, count, options);
  found = count > 0;
  return st;
}

/// Device values with special voxels, or a device that cannot run: the values come to the host
/// and are coded there as encode() codes them (the filled field still on the GPU where it can
/// run, unless onlyCpu).
template<typename T>
Status encodeFromHostCopy(const T* deviceValues,
  const Layout& layout,
  std::uint64_t voxels,
  const ErrorBound& bound,
  std::vector<std::uint8_t>& stream,
  const ExecutionOptions& options,
  bool onlyCpu)
{
  std::vector<T> host(static_cast<std::size_t>(voxels));
  Status st = cudaimpl::copyToHost<T>(deviceValues,
    static_cast<std::size_t>(voxels),
    static_cast<std::size_t>(layout.stride),
    host.data(),
    options);
  if (!st)
  {
    return st;
  }
  Layout contiguous = layout;
  contiguous.stride = 1;
  ExecutionOptions hostOptions = options;
  if (onlyCpu)
  {
    hostOptions.backend = Backend::CPU;
  }
  return encode(host.data(), contiguous, bound, stream, hostOptions);
}
} // namespace

template<typename T>
Status encodeDevice(const T* deviceValues,
  const Layout& layout,
  const ErrorBound& bound,
  std::vector<std::uint8_t>& stream,
  const ExecutionOptions& options,
  ExecutionReport* report)
{
  std::uint64_t voxels = 0;
  Status st = checkEncodeArguments<T>(deviceValues != nullptr,
    "encodeDevice: the values pointer is null",
    bound.absolute,
    layout,
    voxels,
    "encodeDevice");
  if (!st)
  {
    return st;
  }
  DeviceCallReport call(report);
  ExecutionReport& r = call.report();
  if (options.backend != Backend::CPU)
  {
    bool found = false;
    st = deviceFillValues(deviceValues, layout, voxels, bound.specials, options, found);
    if (st && !found)
    {
      EncodeStatistics stats;
      format::Scheme scheme;
      st = deviceScheme(deviceValues, layout, bound.absolute, options, scheme);
      if (st)
      {
        const cudaimpl::EncodeRequest<T> request{
          nullptr, deviceValues, layout, scheme, bound.absolute, &stream, &stats
        };
        st = cudaimpl::encode<T>(request, options, &r.kernelSeconds);
      }
      found = st.code() == ErrorCode::NonFinite;
    }
    if (found)
    {
      // Special voxels: the mask is built on the host copy; the filled field is coded on the GPU.
      st = encodeFromHostCopy(deviceValues, layout, voxels, bound, stream, options, false);
      return call.finish(Backend::CUDA, st);
    }
    if (deviceResultIsFinal(st, options))
    {
      return call.finish(Backend::CUDA, st);
    }
    r.note = "the CUDA encoder could not run (" + st.message() + "); encoded on the CPU";
  }
  // CPU path: the values still live on the device; copy them over first.
  st = encodeFromHostCopy(deviceValues, layout, voxels, bound, stream, options, true);
  return call.finish(Backend::CPU, st);
}

template<typename T>
Status decodeDevice(const std::uint8_t* stream,
  std::size_t bytes,
  T* deviceOut,
  const Layout& layout,
  int levelOfDetail,
  bool streamOnDevice,
  const ExecutionOptions& options,
  ExecutionReport* report)
{
  if (!deviceOut || !stream)
  {
    return Status(ErrorCode::InvalidArgument, "decodeDevice: a pointer is null");
  }
  if (streamOnDevice)
  {
    DeviceCallReport call(report);
    ExecutionReport& r = call.report();
    r.backendUsed = Backend::CUDA;
    if (levelOfDetail < -1)
    {
      return Status(ErrorCode::InvalidArgument, "decodeDevice: level of detail out of range");
    }
    // The stream's value type is in its header (byte 6); both instantiations parse the header.
    std::uint8_t head[8] = { 0 };
    Status st =
      cudaimpl::copyToHost<std::uint8_t>(stream, std::min<std::size_t>(bytes, 8), 1, head, options);
    if (!st)
    {
      return st;
    }
    const cudaimpl::DecodeRequest<T> request{ stream,
      bytes,
      true,
      head[6] == 2 ? ValueType::Float64 : ValueType::Float32,
      levelOfDetail,
      StreamInfo(),
      nullptr,
      deviceOut,
      layout };
    st = cudaimpl::decode<T>(request, options, &r.kernelSeconds);
    return call.finish(Backend::CUDA, st);
  }
  detail::ParsedStream parsed;
  int lod = 0;
  Status st = openStream(stream, bytes, layout, levelOfDetail, "decodeDevice", parsed, lod);
  if (!st)
  {
    return st;
  }
  const StreamInfo& info = parsed.info;
  DeviceCallReport call(report);
  ExecutionReport& r = call.report();
  if (options.backend != Backend::CPU)
  {
    const cudaimpl::DecodeRequest<T> request{
      stream, bytes, false, info.type, lod, info, nullptr, deviceOut, layout
    };
    st = cudaimpl::decode<T>(request, options, &r.kernelSeconds);
    if (deviceResultIsFinal(st, options))
    {
      return call.finish(Backend::CUDA, st);
    }
    r.note = "the CUDA decoder could not run (" + st.message() + "); decoded on the CPU";
  }
  const std::uint64_t voxels = info.dims[0] * info.dims[1] * info.dims[2];
  std::vector<T> host(static_cast<std::size_t>(voxels));
  Layout contiguous = layout;
  contiguous.stride = 1;
  st = decodeOnHost(parsed, lod, host.data(), contiguous, options);
  if (st)
  {
    st = cudaimpl::copyToDevice<T>(host.data(),
      static_cast<std::size_t>(voxels),
      deviceOut,
      static_cast<std::size_t>(layout.stride),
      options);
  }
  return call.finish(Backend::CPU, st);
}

void releaseWorkBuffers()
{
  detail::CpuWorkspace& workspace = detail::cpuWorkspace();
  workspace.values.reset();
  workspace.symbols.reset();
  workspace.valueBytes = 0;
  workspace.symbolBytes = 0;
  cudaimpl::releaseBuffers();
}

std::size_t maxStreamBytes(const Layout& layout, ValueType type)
{
  return detail::headerBytes(1, 0) +
    static_cast<std::size_t>(layout.dims[0] * layout.dims[1] * layout.dims[2]) *
    detail::valueSize(type);
}

template<typename T>
Status encodeDeviceToDevice(const T* deviceValues,
  const Layout& layout,
  const ErrorBound& bound,
  DeviceStream& stream,
  const ExecutionOptions& options,
  ExecutionReport* report)
{
  std::uint64_t voxels = 0;
  stream.bytes = 0;
  Status st = checkEncodeArguments<T>(deviceValues && stream.data,
    "encodeDeviceToDevice: a pointer is null",
    bound.absolute,
    layout,
    voxels,
    "encodeDeviceToDevice");
  if (!st)
  {
    return st;
  }
  DeviceCallReport call(report);
  ExecutionReport& r = call.report();
  r.backendUsed = Backend::CUDA;
  bool found = false;
  if (!(st = deviceFillValues(deviceValues, layout, voxels, bound.specials, options, found)))
  {
    return call.finish(Backend::CUDA, st);
  }
  if (!found)
  {
    format::Scheme scheme;
    st = deviceScheme(deviceValues, layout, bound.absolute, options, scheme);
    if (!st)
    {
      return call.finish(Backend::CUDA, st);
    }
    const cudaimpl::EncodeRequest<T> request{
      nullptr, deviceValues, layout, scheme, bound.absolute, nullptr, nullptr, &stream
    };
    st = cudaimpl::encode<T>(request, options, &r.kernelSeconds);
    if (!st)
    {
      stream.bytes = 0;
    }
    if (st.code() != ErrorCode::NonFinite)
    {
      return call.finish(Backend::CUDA, st);
    }
  }
  // Special voxels: the stream is built from the host copy, then copied into the device buffer.
  std::vector<std::uint8_t> host;
  st = encodeFromHostCopy(deviceValues, layout, voxels, bound, host, options, false);
  if (st && host.size() > stream.capacity)
  {
    st = Status(ErrorCode::InvalidArgument,
      "encode: the device stream buffer holds " + std::to_string(stream.capacity) +
        " bytes, the stream needs " + std::to_string(host.size()) + " (maxStreamBytes)");
  }
  if (st)
  {
    st = cudaimpl::uploadStream(host, stream.data, options);
  }
  stream.bytes = st ? host.size() : 0;
  return call.finish(Backend::CUDA, st);
}

std::size_t maxBrickStreamBytes(const Bricks& bricks, ValueType type)
{
  return static_cast<std::size_t>(bricks.count) * maxStreamBytes(bricks.layout, type);
}

namespace
{
/// The checks of every brick entry point: the pointers, the bound, the layout, and bricks that
/// do not overlap (brickStride at least one brick's extent).
template<typename T>
Status checkBricks(bool pointersGiven,
  const Bricks& bricks,
  double absoluteBound,
  const char* what,
  std::uint64_t& voxels)
{
  Status st = checkEncodeArguments<T>(pointersGiven,
    (std::string(what) + ": a pointer is null").c_str(),
    absoluteBound,
    bricks.layout,
    voxels,
    what);
  if (st && bricks.count > 1 && bricks.brickStride < (voxels - 1) * bricks.layout.stride + 1)
  {
    st = Status(ErrorCode::InvalidArgument,
      std::string(what) + ": brickStride " + std::to_string(bricks.brickStride) +
        " is smaller than a brick (" + std::to_string((voxels - 1) * bricks.layout.stride + 1) +
        " elements)");
  }
  return st;
}

/// The error of brick i, saying which brick.
Status brickError(const Status& st, std::uint64_t i)
{
  return Status(st.code(), "brick " + std::to_string(i) + ": " + st.message());
}
} // namespace

template<typename T>
Status encodeBricks(const T* values,
  const Bricks& bricks,
  const ErrorBound& bound,
  std::vector<std::uint8_t>& streams,
  std::vector<StreamSpan>& spans,
  const ExecutionOptions& options,
  ExecutionReport* report)
{
  streams.clear();
  spans.assign(static_cast<std::size_t>(bricks.count), StreamSpan());
  std::uint64_t voxels = 0;
  Status st = checkBricks<T>(values != nullptr, bricks, bound.absolute, "encodeBricks", voxels);
  if (!st || bricks.count == 0)
  {
    return st;
  }
  const Layout& layout = bricks.layout;
  const format::Scheme scheme =
    hostScheme(values + bricks.count / 2 * bricks.brickStride, layout, bound.absolute, options);
  std::vector<std::uint8_t> one;
  for (std::uint64_t i = 0; i < bricks.count; ++i)
  {
    const T* brick = values + i * bricks.brickStride;
    // The batch's scheme, unless the brick holds special voxels: then as encode() codes it alone.
    bool alone = bound.specials.useFillValue &&
      detail::countSpecials(brick, layout, bound.specials, options) > 0;
    if (!alone)
    {
      EncodeStatistics stats;
      const detail::EncodeRequest<T> request{
        brick, nullptr, layout, scheme, bound.absolute, &one, &stats
      };
      st = runEncode(request, voxels, options, report);
      alone = st.code() == ErrorCode::NonFinite;
    }
    if (alone)
    {
      st = encode(brick, layout, bound, one, options, report);
    }
    if (!st)
    {
      streams.clear();
      spans.assign(spans.size(), StreamSpan());
      return brickError(st, i);
    }
    spans[i] = { streams.size(), one.size() };
    streams.insert(streams.end(), one.begin(), one.end());
  }
  return st;
}

template<typename T>
Status encodeBricksDevice(const T* deviceValues,
  const Bricks& bricks,
  const ErrorBound& bound,
  DeviceStream& streams,
  std::vector<StreamSpan>& spans,
  const ExecutionOptions& options,
  ExecutionReport* report)
{
  streams.bytes = 0;
  spans.assign(static_cast<std::size_t>(bricks.count), StreamSpan());
  std::uint64_t voxels = 0;
  Status st = checkBricks<T>(
    deviceValues && streams.data, bricks, bound.absolute, "encodeBricksDevice", voxels);
  if (!st || bricks.count == 0)
  {
    return st;
  }
  DeviceCallReport call(report);
  ExecutionReport& r = call.report();
  const Layout& layout = bricks.layout;
  // Bricks with a fill value are coded alone (as encode() codes them); the count costs a launch
  // and a read-back per brick, so only where a fill value is asked for.
  std::vector<char> alone(spans.size(), 0);
  for (std::uint64_t i = 0; i < bricks.count && bound.specials.useFillValue; ++i)
  {
    bool found = false;
    if (!(st = deviceFillValues(
            deviceValues + i * bricks.brickStride, layout, voxels, bound.specials, options, found)))
    {
      return call.finish(Backend::CUDA, st);
    }
    alone[i] = found ? 1 : 0;
  }
  format::Scheme scheme;
  st = deviceScheme(
    deviceValues + bricks.count / 2 * bricks.brickStride, layout, bound.absolute, options, scheme);
  if (!st)
  {
    return call.finish(Backend::CUDA, st);
  }
  if (std::find(alone.begin(), alone.end(), 1) == alone.end())
  {
    const cudaimpl::BrickEncodeRequest<T> request{
      deviceValues, bricks, scheme, bound.absolute, &streams, &spans
    };
    st = cudaimpl::encodeBricks<T>(request, options, &r.kernelSeconds);
    if (st.code() == ErrorCode::OutOfDeviceMemory)
    {
      // The batch's buffers do not fit: every brick one after another.
      cudaimpl::releaseBuffers();
      streams.bytes = 0;
      spans.assign(spans.size(), StreamSpan());
      r.note = "the bricks were coded one after another (" + st.message() + ")";
      st = Status::Ok();
    }
    if (!st)
    {
      streams.bytes = 0;
      spans.assign(spans.size(), StreamSpan());
      return call.finish(Backend::CUDA, st);
    }
  }
  // The bricks the batch left: one after another behind the others, with the batch's scheme
  // unless they hold special voxels (the rule encodeBricks follows).
  for (std::uint64_t i = 0; i < bricks.count; ++i)
  {
    if (spans[i].bytes > 0)
    {
      continue;
    }
    const T* brick = deviceValues + i * bricks.brickStride;
    DeviceStream target{ streams.data + streams.bytes, streams.capacity - streams.bytes };
    if (!alone[i])
    {
      const cudaimpl::EncodeRequest<T> request{
        nullptr, brick, layout, scheme, bound.absolute, nullptr, nullptr, &target
      };
      double seconds = 0;
      st = cudaimpl::encode<T>(request, options, &seconds);
      r.kernelSeconds += seconds;
      alone[i] = st.code() == ErrorCode::NonFinite;
    }
    if (alone[i])
    {
      st = encodeDeviceToDevice(brick, layout, bound, target, options);
    }
    if (!st)
    {
      streams.bytes = 0;
      spans.assign(spans.size(), StreamSpan());
      return call.finish(Backend::CUDA, brickError(st, i));
    }
    spans[i] = { streams.bytes, target.bytes };
    streams.bytes += target.bytes;
  }
  return call.finish(Backend::CUDA, st);
}

template<typename T>
Status decodeBricksDevice(const std::uint8_t* deviceStreams,
  const std::vector<StreamSpan>& spans,
  T* deviceOut,
  const Bricks& bricks,
  const ExecutionOptions& options,
  ExecutionReport* report)
{
  std::uint64_t voxels = 0;
  Status st = checkBricks<T>(deviceStreams && deviceOut, bricks, 1.0, "decodeBricksDevice", voxels);
  if (st && spans.size() != bricks.count)
  {
    st = Status(ErrorCode::InvalidArgument,
      "decodeBricksDevice: " + std::to_string(spans.size()) + " spans for " +
        std::to_string(bricks.count) + " bricks");
  }
  if (!st || bricks.count == 0)
  {
    return st;
  }
  DeviceCallReport call(report);
  ExecutionReport& r = call.report();
  std::vector<char> done(spans.size(), 0);
  const cudaimpl::BrickDecodeRequest<T> request{ deviceStreams, &spans, deviceOut, bricks };
  st = cudaimpl::decodeBricks<T>(request, done, options, &r.kernelSeconds);
  if (!st)
  {
    return call.finish(Backend::CUDA, st);
  }
  for (std::uint64_t i = 0; i < bricks.count; ++i)
  {
    if (done[i])
    {
      continue;
    }
    ExecutionReport one;
    st = decodeDevice(deviceStreams + spans[i].offset,
      static_cast<std::size_t>(spans[i].bytes),
      deviceOut + i * bricks.brickStride,
      bricks.layout,
      -1,
      true,
      options,
      &one);
    r.kernelSeconds += one.kernelSeconds;
    if (!st)
    {
      return call.finish(Backend::CUDA, brickError(st, i));
    }
  }
  return call.finish(Backend::CUDA, st);
}

// Every entry point for both value types, with the signature it is declared with in codec.h.
#define SPARSEGRID_CODEC_INSTANTIATE(T)                                                            \
  template decltype(valueRange<T>) valueRange<T>;                                                  \
  template decltype(encode<T>) encode<T>;                                                          \
  template decltype(decode<T>) decode<T>;                                                          \
  template decltype(encodeDevice<T>) encodeDevice<T>;                                              \
  template decltype(encodeDeviceToDevice<T>) encodeDeviceToDevice<T>;                              \
  template decltype(decodeDevice<T>) decodeDevice<T>;                                              \
  template decltype(encodeBricks<T>) encodeBricks<T>;                                              \
  template decltype(encodeBricksDevice<T>) encodeBricksDevice<T>;                                  \
  template decltype(decodeBricksDevice<T>) decodeBricksDevice<T>;
SPARSEGRID_CODEC_INSTANTIATE(float)
SPARSEGRID_CODEC_INSTANTIATE(double)

} // namespace codec
} // namespace sparsegrid
