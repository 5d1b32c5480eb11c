// Per-kernel GPU times of the CUDA codec, for the benchmark (issue 13): CUDA events around every
// launch of encode() and decode(), summed by kernel name. Off unless switched on, so that timed
// runs carry no extra events. Not part of the public API (the benchmark includes this header).
#ifndef SPARSEGRID_CODEC_CUDA_PROFILE_H
#define SPARSEGRID_CODEC_CUDA_PROFILE_H

#include <string>

namespace sparsegrid
{
namespace codec
{
namespace cudaimpl
{
/// Starts (true) or stops recording; starting clears what was recorded.
void profileEnable(bool on);
/// One line per kernel, in first-launch order: "name<TAB>launches<TAB>total ms".
std::string profileReport();
} // namespace cudaimpl
} // namespace codec
} // namespace sparsegrid

#endif
