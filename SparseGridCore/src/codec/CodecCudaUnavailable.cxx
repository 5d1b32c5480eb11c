// Stand-in for the CUDA codec when the library is built without nvcc: every call reports
// BackendUnavailable, with the reason the CUDA backend's stand-in gives, so that callers fall back
// to the CPU and can say why.
#include "CodecMask.h"

#include "../Internal.h"

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
  std::string why;
  sparsegrid::cuda::available(&why);
  return Status(ErrorCode::BackendUnavailable, why);
}
} // namespace

bool available(std::string* why)
{
  return sparsegrid::cuda::available(why);
}

void releaseBuffers() {}

template<typename T>
Status encode(const EncodeRequest<T>&, const ExecutionOptions&, double*)
{
  return notBuilt();
}
template<typename T>
Status decode(const DecodeRequest<T>&, const ExecutionOptions&, double*)
{
  return notBuilt();
}
template<typename T>
Status encodeBricks(const BrickEncodeRequest<T>&, const ExecutionOptions&, double*)
{
  return notBuilt();
}
template<typename T>
Status decodeBricks(const BrickDecodeRequest<T>&,
  std::vector<char>&,
  const ExecutionOptions&,
  double*)
{
  return notBuilt();
}
template<typename T>
Status chooseScheme(const T*,
  std::uint64_t,
  const std::uint64_t*,
  double,
  const SampleIndices&,
  detail::SampleStatistics&,
  format::Scheme&,
  const ExecutionOptions&)
{
  return notBuilt();
}
template<typename T>
Status copyToHost(const T*, std::size_t, std::size_t, T*, const ExecutionOptions&)
{
  return notBuilt();
}
template<typename T>
Status copyToDevice(const T*, std::size_t, T*, std::size_t, const ExecutionOptions&)
{
  return notBuilt();
}

template<typename T>
Status countSpecials(const T*,
  std::uint64_t,
  std::uint64_t,
  const SpecialValues&,
  std::uint64_t&,
  const ExecutionOptions&)
{
  return notBuilt();
}
Status uploadStream(const std::vector<std::uint8_t>&, std::uint8_t*, const ExecutionOptions&)
{
  return notBuilt();
}
SPARSEGRID_CODEC_MASK_CUDA_INSTANTIATE(float)
SPARSEGRID_CODEC_MASK_CUDA_INSTANTIATE(double)

SPARSEGRID_CODEC_CUDA_INSTANTIATE()
SPARSEGRID_CODEC_CUDA_SAMPLE(float)
SPARSEGRID_CODEC_CUDA_SAMPLE(double)
} // namespace cudaimpl
} // namespace codec
} // namespace sparsegrid
