// Stand-in for the CUDA codec when the library is built without nvcc: every call reports
// BackendUnavailable so that callers fall back to the CPU and can say why.
#include "CodecInternal.h"

namespace sparsegrid
{
namespace codec
{
namespace cudaimpl
{
namespace
{
Status notBuilt()
{
  return Status(
    ErrorCode::BackendUnavailable, "this build has no CUDA backend (built without nvcc)");
}
} // namespace

bool available(std::string* why)
{
  if (why)
  {
    *why = "this build has no CUDA backend (built without nvcc)";
  }
  return false;
}

void releaseBuffers() {}

template<typename T>
Status encode(const T*,
  const T*,
  const Layout&,
  const format::Scheme&,
  double,
  std::vector<std::uint8_t>&,
  EncodeStatistics*,
  const ExecutionOptions&,
  double*,
  DeviceStreamTarget*)
{
  return notBuilt();
}
template<typename S, typename T>
Status decode(const std::uint8_t*,
  std::size_t,
  int,
  const StreamInfo&,
  T*,
  T*,
  const Layout&,
  const ExecutionOptions&,
  double*,
  bool)
{
  return notBuilt();
}
template<typename T>
Status copyToHost(const T*, std::size_t, std::size_t, T*)
{
  return notBuilt();
}
template<typename T>
Status gather(const T*, std::uint64_t, const std::vector<std::uint64_t>&, std::vector<double>&)
{
  return notBuilt();
}
template Status gather<float>(const float*,
  std::uint64_t,
  const std::vector<std::uint64_t>&,
  std::vector<double>&);
template Status gather<double>(const double*,
  std::uint64_t,
  const std::vector<std::uint64_t>&,
  std::vector<double>&);
template<typename T>
Status copyToDevice(const T*, std::size_t, T*, std::size_t)
{
  return notBuilt();
}

template Status encode<float>(const float*,
  const float*,
  const Layout&,
  const format::Scheme&,
  double,
  std::vector<std::uint8_t>&,
  EncodeStatistics*,
  const ExecutionOptions&,
  double*,
  DeviceStreamTarget*);
template Status encode<double>(const double*,
  const double*,
  const Layout&,
  const format::Scheme&,
  double,
  std::vector<std::uint8_t>&,
  EncodeStatistics*,
  const ExecutionOptions&,
  double*,
  DeviceStreamTarget*);
template Status decode<float, float>(const std::uint8_t*,
  std::size_t,
  int,
  const StreamInfo&,
  float*,
  float*,
  const Layout&,
  const ExecutionOptions&,
  double*,
  bool);
template Status decode<float, double>(const std::uint8_t*,
  std::size_t,
  int,
  const StreamInfo&,
  double*,
  double*,
  const Layout&,
  const ExecutionOptions&,
  double*,
  bool);
template Status decode<double, float>(const std::uint8_t*,
  std::size_t,
  int,
  const StreamInfo&,
  float*,
  float*,
  const Layout&,
  const ExecutionOptions&,
  double*,
  bool);
template Status decode<double, double>(const std::uint8_t*,
  std::size_t,
  int,
  const StreamInfo&,
  double*,
  double*,
  const Layout&,
  const ExecutionOptions&,
  double*,
  bool);
template Status copyToHost<float>(const float*, std::size_t, std::size_t, float*);
template Status copyToHost<double>(const double*, std::size_t, std::size_t, double*);
template Status copyToHost<std::uint8_t>(const std::uint8_t*,
  std::size_t,
  std::size_t,
  std::uint8_t*);
template Status copyToDevice<float>(const float*, std::size_t, float*, std::size_t);
template Status copyToDevice<double>(const double*, std::size_t, double*, std::size_t);
} // namespace cudaimpl
} // namespace codec
} // namespace sparsegrid
