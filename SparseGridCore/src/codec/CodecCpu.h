// The CPU encoder and decoder (CodecCpuEncode.cxx, CodecCpuDecode.cxx) and what they share: the
// per-thread work buffers and the walk over a pass's rows. Compiled with -ffp-contract=off: the
// decoder must repeat the encoder's arithmetic exactly, and the CUDA encoder (--fmad=false) must
// produce the same bytes.
#ifndef SPARSEGRID_CODEC_CPU_H
#define SPARSEGRID_CODEC_CPU_H

#include "CodecInternal.h"

#include "../Internal.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

namespace sparsegrid
{
namespace codec
{
namespace detail
{

using format::Pass;
using format::Plan;
using format::Quantiser;

/// Work buffers kept per calling thread between calls: first-touch page faults of freshly
/// allocated buffers cost more than the coding itself on virtual machines. Not zero-filled.
struct CpuWorkspace
{
  std::unique_ptr<std::uint8_t[]> values, symbols;
  std::size_t valueBytes = 0, symbolBytes = 0;
};
/// The calling thread's workspace.
CpuWorkspace& cpuWorkspace();

template<typename X>
X* scratch(std::unique_ptr<std::uint8_t[]>& buffer, std::size_t& capacity, std::uint64_t count)
{
  const std::size_t bytes = static_cast<std::size_t>(count * sizeof(X));
  if (capacity < bytes || !buffer)
  {
    buffer.reset();
    buffer.reset(new std::uint8_t[std::max<std::size_t>(bytes, 1)]);
    capacity = bytes;
  }
  return reinterpret_cast<X*>(buffer.get());
}

/// Runs one pass over the rows of its voxels: f(index, left, right-or-left, code position).
/// The grain keeps a task at about 16 k voxels.
template<typename F>
void forEachRow(const ExecutionOptions& options,
  const format::Plan& plan,
  const format::Pass& p,
  F&& rowBody)
{
  const std::uint64_t rows = p.count[1] * p.count[2];
  const std::size_t grain = static_cast<std::size_t>(
    std::max<std::uint64_t>(1, 16384 / std::max<std::uint64_t>(1, p.count[0])));
  sparsegrid::detail::parallelFor(options,
    static_cast<std::size_t>(rows),
    grain,
    [&](std::size_t first, std::size_t last)
    {
      for (std::size_t r = first; r < last; ++r)
      {
        const std::uint64_t j1 = r % p.count[1];
        const std::uint64_t j2 = r / p.count[1];
        const std::uint64_t i1 = p.start[1] + j1 * p.step[1];
        const std::uint64_t i2 = p.start[2] + j2 * p.step[2];
        rowBody(r, i1, i2, plan.dims[0] * (i1 + plan.dims[1] * i2));
      }
    });
}

/// Encodes request.hostValues (layout.stride apart) with the request's scheme and bound into
/// *request.stream and *request.statistics on the CPU.
template<typename T>
Status encodeCPU(const EncodeRequest<T>& request, const ExecutionOptions& options);

/// Decodes levels 0..lod of a coded stream into rec, in the stream's value type S, on the CPU.
template<typename S>
Status decodeCPU(const ParsedStream& in, int lod, S* rec, const ExecutionOptions& options);

} // namespace detail
} // namespace codec
} // namespace sparsegrid

#endif
