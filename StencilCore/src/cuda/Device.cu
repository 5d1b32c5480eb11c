// CUDA backend: device queries, the copy-bandwidth probe, the regular-image kernel, and the
// column-mesh entry point (the kernels live in ColumnKernels.cuh).
#include "CudaCommon.cuh"

namespace stencil
{
namespace detail
{
bool cudaAvailableImpl(std::string* why)
{
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess)
  {
    cudaGetLastError();
    if (why)
    {
      *why = cudaGetErrorString(error);
    }
    return false;
  }
  if (count == 0)
  {
    if (why)
    {
      *why = "no CUDA device";
    }
    return false;
  }
  return true;
}

std::string cudaDeviceNameImpl()
{
  if (!cudaAvailableImpl(nullptr))
  {
    return std::string();
  }
  cudaDeviceProp properties;
  if (cudaGetDeviceProperties(&properties, 0) != cudaSuccess)
  {
    return std::string();
  }
  return properties.name;
}

namespace
{
template<typename V>
__global__ void copyKernel(const V* __restrict__ in, V* __restrict__ out, std::size_t n)
{
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
  {
    out[i] = in[i];
  }
}

template<typename T>
__global__ void imageKernel(ImageArgs<T> a)
{
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  const long long j = blockIdx.y * static_cast<long long>(blockDim.y) + threadIdx.y;
  if (i >= a.dims[0] || j >= a.dims[1])
  {
    return;
  }
  for (long long k = blockIdx.z; k < a.dims[2]; k += gridDim.z)
  {
    a.out[i + j * a.stride[1] + k * a.stride[2]] = imageValue(a, i, j, k);
  }
}
} // namespace

Status cudaBandwidth(std::size_t bytes, int repeats, double& bytesPerSecond)
{
  std::string why;
  if (!cudaAvailableImpl(&why))
  {
    return Status(ErrorCode::BackendUnavailable, "CUDA unavailable: " + why);
  }
  const std::size_t n = bytes / sizeof(double2);
  DeviceBuffer in;
  DeviceBuffer out;
  Status status = checkDeviceMemory(2 * n * sizeof(double2));
  if (!status || !(status = cudaStatus(in.allocate(n * sizeof(double2)), "cudaMalloc")) ||
    !(status = cudaStatus(out.allocate(n * sizeof(double2)), "cudaMalloc")))
  {
    return status;
  }
  cudaMemset(in.as<void>(), 0, n * sizeof(double2));
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  const int blocks = std::max(1, sms) * 8;
  double seconds = 0;
  status = timeKernel(
    repeats,
    [&]() { copyKernel<<<blocks, 256>>>(in.as<double2>(), out.as<double2>(), n); },
    seconds);
  if (!status)
  {
    return status;
  }
  bytesPerSecond = 2.0 * n * sizeof(double2) / seconds;
  return Status::Ok();
}

template<typename T>
Status cudaImage(const ImageArgs<T>& args,
  std::size_t size,
  const ExecutionOptions& options,
  ExecutionReport& report)
{
  const std::size_t bytes = size * sizeof(T);
  Status status = checkDeviceMemory(2 * bytes);
  DeviceBuffer in;
  DeviceBuffer out;
  if (!status || !(status = cudaStatus(in.allocate(bytes), "cudaMalloc input")) ||
    !(status = cudaStatus(out.allocate(bytes), "cudaMalloc output")))
  {
    return status;
  }
  if (!(status =
          cudaStatus(cudaMemcpy(in.as<T>(), args.u, bytes, cudaMemcpyHostToDevice), "copy in")))
  {
    return status;
  }
  ImageArgs<T> device = args;
  device.u = in.as<T>();
  device.out = out.as<T>();
  const dim3 block(64, 4, 1);
  const dim3 grid(static_cast<unsigned>((args.dims[0] + block.x - 1) / block.x),
    static_cast<unsigned>((args.dims[1] + block.y - 1) / block.y),
    static_cast<unsigned>(std::min<long long>(args.dims[2], 65535)));
  if (grid.y > 65535)
  {
    return Status(ErrorCode::BackendUnavailable, "image: more than 262140 rows on axis 1");
  }
  double seconds = 0;
  status = timeKernel(
    options.timingRepeats, [&]() { imageKernel<T><<<grid, block>>>(device); }, seconds);
  if (!status)
  {
    return status;
  }
  report.kernelSeconds = seconds;
  return cudaStatus(cudaMemcpy(args.out, out.as<T>(), bytes, cudaMemcpyDeviceToHost), "copy out");
}

template<typename T>
Status cudaColumns(const PreparedTable<T>& table,
  const ColumnArgs<T>& args,
  const ExecutionOptions& options,
  ExecutionReport& report)
{
  if (table.chasing)
  {
    return cudaColumnsChasing(table, args, options, report);
  }
  return cudaColumnsNonChasing(table, args, options, report);
}

template Status cudaImage<float>(const ImageArgs<float>&,
  std::size_t,
  const ExecutionOptions&,
  ExecutionReport&);
template Status cudaImage<double>(const ImageArgs<double>&,
  std::size_t,
  const ExecutionOptions&,
  ExecutionReport&);
template Status cudaColumns<float>(const PreparedTable<float>&,
  const ColumnArgs<float>&,
  const ExecutionOptions&,
  ExecutionReport&);
template Status cudaColumns<double>(const PreparedTable<double>&,
  const ColumnArgs<double>&,
  const ExecutionOptions&,
  ExecutionReport&);
} // namespace detail
} // namespace stencil
