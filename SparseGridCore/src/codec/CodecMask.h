// Special voxels (NaN, +Inf, -Inf, the fill value): kept bit for bit by a mask section in the
// header of a version-3 stream, while the codec codes a field where they are replaced by values
// that predict well. The section (docs/compression.md, "The mask section"):
//
//   u64 special voxels S, u32 palette entries P, u32 program bytes R,
//   P values of the stream's type (the special values' exact bit patterns, first seen first),
//   R bytes of program, zero padding to a multiple of 4.
//
// The program describes the voxels (x fastest) as groups of equal planes, each a list of groups
// of equal rows, each row a list of runs of one special value, all as unsigned LEB128 varints:
//   volume := (repeat, plane)...        repeats sum to dims[2]
//   plane  := (repeat, row)...          repeats sum to dims[1]
//   row    := m, m x (gap, length[, palette entry where P > 1])   gaps and lengths fit the row
// so that a border, a solid block or a land mask repeated along z costs a few bytes.
#ifndef SPARSEGRID_CODEC_MASK_H
#define SPARSEGRID_CODEC_MASK_H

#include "CodecInternal.h"

namespace sparsegrid
{
namespace codec
{
namespace detail
{

/// Checks a mask section (`bytes` bytes, from a header whose dims and type are in info): its
/// sizes, its palette, every varint and that the runs fit the image; the number of special
/// voxels. A damaged section is an InvalidArgument error.
Status checkMask(const std::uint8_t* section,
  std::size_t bytes,
  const StreamInfo& info,
  std::uint64_t& specialVoxels);

/// Voxels first .. first + count - 1 (x fastest) hold palette entry `entry`.
struct SpecialRun
{
  std::uint64_t first = 0;
  std::uint64_t count = 0;
  std::uint32_t entry = 0;
};

/// Every run of the mask section of a parsed stream (its header checked by parseHeader), each
/// cut into pieces of at most maxCount voxels; the palette as values of T.
template<typename T>
void specialRuns(const std::uint8_t* stream,
  const StreamInfo& info,
  std::uint64_t maxCount,
  std::vector<SpecialRun>& runs,
  std::vector<T>& palette);

/// Puts the special voxels of a parsed stream back into out[i * stride] (nothing without a
/// mask section).
template<typename T>
void restoreSpecials(const std::uint8_t* stream,
  const StreamInfo& info,
  T* out,
  std::uint64_t stride,
  const ExecutionOptions& options);

/// Special voxels of values (layout.stride apart).
template<typename T>
std::uint64_t countSpecials(const T* values,
  const Layout& layout,
  const SpecialValues& specials,
  const ExecutionOptions& options);

/// What the encoder codes instead of values with special voxels: the field with each special
/// voxel replaced (the mean of the linear interpolations, or short extrapolations, of the
/// ordinary voxels on its lines along x, y and z; else interpolated from filled voxels; else 0),
/// and the mask section that puts them back; `special` flags them (2, or 3 inside a hole).
template<typename T>
struct MaskedInput
{
  std::vector<T> filled;
  std::vector<std::uint8_t> special;
  std::vector<std::uint8_t> section;
  std::uint64_t specialVoxels = 0;
};
template<typename T>
Status maskSpecials(const T* values,
  const Layout& layout,
  const SpecialValues& specials,
  MaskedInput<T>& out,
  const ExecutionOptions& options);

/// Once the scheme is chosen (from the filled field): each special voxel inside a hole (no
/// ordinary voxel among its six neighbours), pass by pass in coding order, becomes the scheme's
/// prediction from the voxels before it, so that its
/// residual is about the difference between predicting from the input and from the
/// reconstruction (mostly a zero code) instead of the linear fill's.
template<typename T>
void predictSpecials(MaskedInput<T>& masked,
  const std::uint64_t dims[3],
  const format::Scheme& scheme,
  const ExecutionOptions& options);

/// Turns `stream`, the coded (version 2) stream of masked.filled, into the version-3 stream with
/// the mask section; where that would not be smaller than raw storage (or `stream` is raw), the
/// raw stream of the original values (version 3: raw values may be special). `raw` says which.
template<typename T>
Status addMask(std::vector<std::uint8_t>& stream,
  const MaskedInput<T>& masked,
  const T* values,
  const Layout& layout,
  bool& raw);

} // namespace detail

/// The device side of special voxels (src/cuda/codec/CodecMaskCuda.cu; BackendUnavailable from
/// CodecCudaUnavailable.cxx without CUDA).
namespace cudaimpl
{
/// Voxels of device values (stride apart) that are special (on the options' CUDA stream, as
/// every call of the CUDA codec). The decoder puts a stream's special voxels back into device
/// memory itself (restoreSpecials in CodecCudaShared.cuh).
template<typename T>
Status countSpecials(const T* device,
  std::uint64_t stride,
  std::uint64_t voxels,
  const SpecialValues& specials,
  std::uint64_t& count,
  const ExecutionOptions& options);
/// Copies a stream from host memory into device memory (on the options' CUDA stream).
Status uploadStream(const std::vector<std::uint8_t>& stream,
  std::uint8_t* device,
  const ExecutionOptions& options);
} // namespace cudaimpl

/// Explicit instantiations of the device side, one list for the CUDA build and its stand-in.
#define SPARSEGRID_CODEC_MASK_CUDA_INSTANTIATE(T)                                                  \
  template Status countSpecials<T>(const T*,                                                       \
    std::uint64_t,                                                                                 \
    std::uint64_t,                                                                                 \
    const SpecialValues&,                                                                          \
    std::uint64_t&,                                                                                \
    const ExecutionOptions&);

} // namespace codec
} // namespace sparsegrid

#endif
