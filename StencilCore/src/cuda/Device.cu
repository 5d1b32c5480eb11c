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
__global__ void imageKernel(ImageArgs<T> args)
{
  const ImageArgs<T> a = args;
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

/**
 * Regular grids with active x and y axes: straight-line interior stencils in 32-bit offsets, one
 * thread per (i, j) looping over a slice of k, so that index work is paid once per column slice;
 * values near the boundary go through the generic imageValue.
 */
/// The generic path for values near the boundary, kept out of line so that its registers do not
/// lower the occupancy of the interior path.
template<typename T>
__device__ __noinline__ T boundaryValue(const ImageArgs<T>& a, int i, int j, int k)
{
  return imageValue(a, i, j, k);
}

template<typename T, bool Laplap, bool Vertical>
__global__ void __launch_bounds__(256, 4)
  regularKernel(const __grid_constant__ ImageArgs<T> args, int slice)
{
  // __grid_constant__: the boundary path takes the parameter's address without a local copy.
  const ImageArgs<T>& a = args;
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const int j = blockIdx.y * blockDim.y + threadIdx.y;
  const int nx = static_cast<int>(a.dims[0]);
  const int ny = static_cast<int>(a.dims[1]);
  const int nz = static_cast<int>(a.dims[2]);
  if (i >= nx || j >= ny)
  {
    return;
  }
  constexpr int reach = Laplap ? 2 : 1;
  const bool horizontalInside = i >= reach && i < nx - reach && j >= reach && j < ny - reach;
  const int sy = nx;
  const int sz = nx * ny;
  const T wx = a.weight[0];
  const T wy = a.weight[1];
  const T wz = a.weight[2];
  const int first = blockIdx.z * slice;
  const int last = min(nz, first + slice);
  for (int k = first; k < last; ++k)
  {
    const long long centre = i + static_cast<long long>(sy) * j + static_cast<long long>(sz) * k;
    const bool inside = horizontalInside && (!Vertical || (k >= reach && k < nz - reach));
    if (!inside)
    {
      a.out[centre] = boundaryValue(a, i, j, k);
      continue;
    }
    const T* __restrict__ u = a.u + centre;
    const T u0 = __ldg(u);
    const T xp = __ldg(u + 1);
    const T xm = __ldg(u - 1);
    const T yp = __ldg(u + sy);
    const T ym = __ldg(u - sy);
    T result;
    if (!Laplap)
    {
      result = (xp - T(2) * u0 + xm) * wx + (yp - T(2) * u0 + ym) * wy;
      if (Vertical)
      {
        result += (__ldg(u + sz) - T(2) * u0 + __ldg(u - sz)) * wz;
      }
    }
    else
    {
      const T x2 = __ldg(u + 2) + __ldg(u - 2);
      const T y2 = __ldg(u + 2 * sy) + __ldg(u - 2 * sy);
      const T xy = __ldg(u + 1 + sy) + __ldg(u + 1 - sy) + __ldg(u - 1 + sy) + __ldg(u - 1 - sy);
      result = (x2 - T(4) * (xp + xm) + T(6) * u0) * wx * wx +
        (y2 - T(4) * (yp + ym) + T(6) * u0) * wy * wy +
        T(2) * wx * wy * (xy - T(2) * (xp + xm + yp + ym) + T(4) * u0);
      if (Vertical)
      {
        const T zp = __ldg(u + sz);
        const T zm = __ldg(u - sz);
        const T z2 = __ldg(u + 2 * sz) + __ldg(u - 2 * sz);
        const T xz = __ldg(u + 1 + sz) + __ldg(u + 1 - sz) + __ldg(u - 1 + sz) + __ldg(u - 1 - sz);
        const T yz =
          __ldg(u + sy + sz) + __ldg(u + sy - sz) + __ldg(u - sy + sz) + __ldg(u - sy - sz);
        result += (z2 - T(4) * (zp + zm) + T(6) * u0) * wz * wz +
          T(2) * wx * wz * (xz - T(2) * (xp + xm + zp + zm) + T(4) * u0) +
          T(2) * wy * wz * (yz - T(2) * (yp + ym + zp + zm) + T(4) * u0);
      }
    }
    a.out[centre] = result;
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
  const bool fast =
    args.active[0] && args.active[1] && args.dims[0] * args.dims[1] * args.dims[2] < (1LL << 31);
  const bool vertical = args.active[2];
  // Slices of 8 layers keep enough threads in flight for 512 x 512 x 64 and more.
  const int slice = 8;
  const dim3 slicedGrid(grid.x,
    grid.y,
    static_cast<unsigned>(std::min<long long>(65535, (args.dims[2] + slice - 1) / slice)));
  auto launch = [&]()
  {
    if (!fast)
    {
      imageKernel<T><<<grid, block>>>(device);
    }
    else if (args.laplap)
    {
      vertical ? regularKernel<T, true, true><<<slicedGrid, block>>>(device, slice)
               : regularKernel<T, true, false><<<slicedGrid, block>>>(device, slice);
    }
    else
    {
      vertical ? regularKernel<T, false, true><<<slicedGrid, block>>>(device, slice)
               : regularKernel<T, false, false><<<slicedGrid, block>>>(device, slice);
    }
  };
  if (fast && (args.dims[2] + slice - 1) / slice > 65535)
  {
    return Status(ErrorCode::BackendUnavailable, "image: too many layers for the CUDA kernel");
  }
  status = timeKernel(options.timingRepeats, launch, seconds);
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
