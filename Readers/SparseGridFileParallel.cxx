// Writing one .sgrid file from several MPI processes at once (Writer::beginParallel): the file
// is opened through HDF5's MPI-IO driver, the header is written collectively with the same
// values on every process, and each process writes its own streams' byte ranges. Only the
// level tables travel between the processes (a few numbers per stream). docs/file-format.md,
// section "Writing from several processes".
#include "SparseGridFileParallel.h"
#include "SparseGridFile.h"
#include "SparseGridFileChecksums.h"
#include "SparseGridFileHdf5.h"

#include <algorithm>
#include <limits>

namespace sparsegrid
{
namespace file
{
using namespace h5;

bool Writer::parallelSupported()
{
#ifdef H5_HAVE_PARALLEL
  return true;
#else
  return false;
#endif
}

#ifdef H5_HAVE_PARALLEL

namespace
{
/// Collective: whether `value` is the same on every process.
bool sameOnAll(MPI_Comm comm, std::uint32_t value)
{
  unsigned long long mine = value, low = 0, high = 0;
  MPI_Allreduce(&mine, &low, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, comm);
  MPI_Allreduce(&mine, &high, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, comm);
  return low == high;
}

/// Collective: elementwise sum (integers) or bitwise or (checksums) of `values` over the
/// processes, in place, in parts that an MPI count can address.
template<typename T>
void reduceInPlace(MPI_Comm comm, std::vector<T>& values, MPI_Datatype type, MPI_Op op)
{
  const std::size_t part = static_cast<std::size_t>(std::numeric_limits<int>::max() / 2);
  for (std::size_t at = 0; at < values.size(); at += part)
  {
    const int n = static_cast<int>(std::min(part, values.size() - at));
    MPI_Allreduce(MPI_IN_PLACE, values.data() + at, n, type, op, comm);
  }
}
} // namespace

bool Writer::Parallel::useMpiIo(hid_t fapl) const
{
  return H5Pset_fapl_mpio(fapl, this->Comm, MPI_INFO_NULL) >= 0;
}

std::string Writer::beginParallel(const std::string& path,
  const GridDescription& gridIn,
  const std::vector<ArrayDescription>& arrays,
  const void* communicator,
  const WriteOptions& options)
{
  this->abort();
  if (!communicator)
  {
    return "cannot write " + path + ": no MPI communicator given";
  }
  auto collective = std::make_unique<Parallel>();
  collective->Comm = *static_cast<const MPI_Comm*>(communicator);
  if (MPI_Comm_rank(collective->Comm, &collective->Rank) != MPI_SUCCESS ||
    MPI_Comm_size(collective->Comm, &collective->Size) != MPI_SUCCESS)
  {
    return "cannot write " + path + ": invalid MPI communicator";
  }
  this->Collective = std::move(collective);
  this->Path = path;
  this->StepsHaveTime = false;
  this->BytesWritten = 0;
  std::string error = path.empty() ? std::string("no file name given") : std::string();
  GridDescription grid;
  if (error.empty())
  {
    error = validatedGrid(path, gridIn, arrays, grid);
  }
  if (error.empty() && grid.encoding != Encoding::ErrorBounded)
  {
    error = "cannot write " + path +
      ": only error-bounded data is written from several processes at once";
  }
  this->Grid = grid;
  this->Arrays = arrays;
  // Every process must describe the same file: its layout text's checksum is compared.
  const std::uint32_t layout =
    error.empty() ? checksums::checksumOf(checksums::layoutText(this->headerOf())) : 0;
  if (!sameOnAll(this->Collective->Comm, layout) && error.empty())
  {
    error = "cannot write " + path + ": the processes disagree on the grid or the arrays";
  }
  if (!(error = this->agree(error)).empty())
  {
    return error;
  }
  // Process 0 creates the temporary file; the others learn its name.
  if (this->Collective->Rank == 0)
  {
    error = this->createTemporary(path);
  }
  if (!(error = this->agree(error)).empty())
  {
    return error;
  }
  unsigned long long length = this->TempPath.size();
  MPI_Bcast(&length, 1, MPI_UNSIGNED_LONG_LONG, 0, this->Collective->Comm);
  std::string name(static_cast<std::size_t>(length), '\0');
  if (this->Collective->Rank == 0)
  {
    name = this->TempPath;
  }
  MPI_Bcast(&name[0], static_cast<int>(length), MPI_CHAR, 0, this->Collective->Comm);
  this->TempPath = name;
  return this->agree(this->createFile(options));
}

std::string Writer::agree(const std::string& error)
{
  if (!this->Collective)
  {
    return error;
  }
  const Parallel& p = *this->Collective;
  int mine = error.empty() ? p.Size : p.Rank;
  int first = p.Size;
  MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, p.Comm);
  if (first == p.Size)
  {
    return std::string();
  }
  // The lowest failing process's message, on every process.
  std::string text = error.substr(0, std::min<std::size_t>(error.size(), 4096));
  unsigned long long length = text.size();
  MPI_Bcast(&length, 1, MPI_UNSIGNED_LONG_LONG, first, p.Comm);
  text.resize(static_cast<std::size_t>(length));
  MPI_Bcast(&text[0], static_cast<int>(length), MPI_CHAR, first, p.Comm);
  const std::string message =
    first == p.Rank ? error : "process " + std::to_string(first) + ": " + text;
  this->abort(); // collective: every process closes the file, process 0 removes it
  return message;
}

std::string Writer::gatherLevelTables(const StepInput& step,
  std::vector<checksums::ArrayRecord>& records)
{
  MPI_Comm comm = this->Collective->Comm;
  // Streams of all arrays one after the other: who writes each (a count), its levels.
  std::size_t total = 0;
  for (const ArrayInput& a : step.arrays)
  {
    total += a.streams.size();
  }
  std::vector<int> claims(2 * total, 0);
  std::vector<std::vector<std::uint32_t>> ownCrcs(total);
  std::vector<std::uint32_t> ownStreamCrcs(total, 0);
  std::string error;
  std::size_t t = 0;
  for (const ArrayInput& a : step.arrays)
  {
    for (std::size_t s = 0; s < a.streams.size(); ++s, ++t)
    {
      if (!a.streams[s])
      {
        continue;
      }
      claims[t] = 1;
      const std::uint64_t size = a.streamOffsets[s + 1] - a.streamOffsets[s];
      std::vector<int> levels;
      const std::string why =
        checksums::streamLevelChecksums(a.streams[s], size, s, levels, ownCrcs[t]);
      if (!why.empty() && error.empty())
      {
        error = "array " + quoted(a.name) + ": " + why;
      }
      claims[total + t] = levels.empty() ? 0 : levels.back();
      ownStreamCrcs[t] = crc32(a.streams[s], static_cast<std::size_t>(size));
    }
  }
  reduceInPlace(comm, claims, MPI_INT, MPI_SUM);
  // Then every level checksum and each stream's checksum, each from the process that wrote it.
  std::vector<std::size_t> levelAt(total + 1, 0);
  for (std::size_t i = 0; i < total; ++i)
  {
    levelAt[i + 1] = levelAt[i] + static_cast<std::size_t>(std::max(0, claims[total + i]));
  }
  std::vector<std::uint32_t> crcs(total + levelAt.back(), 0);
  for (std::size_t i = 0; i < total; ++i)
  {
    if (!ownCrcs[i].empty() && ownCrcs[i].size() == levelAt[i + 1] - levelAt[i])
    {
      crcs[i] = ownStreamCrcs[i];
      std::copy(ownCrcs[i].begin(), ownCrcs[i].end(), crcs.begin() + total + levelAt[i]);
    }
  }
  reduceInPlace(comm, crcs, MPI_UINT32_T, MPI_BOR);
  t = 0;
  for (std::size_t k = 0; k < step.arrays.size(); ++k)
  {
    const ArrayInput& a = step.arrays[k];
    checksums::ArrayRecord& r = records[k];
    r.crc32 = 0;
    for (std::size_t s = 0; s < a.streams.size(); ++s, ++t)
    {
      if (claims[t] != 1 && error.empty())
      {
        error = "stream " + std::to_string(s) + " of array " + quoted(a.name) + " is given by " +
          std::to_string(claims[t]) + " processes; each must be given by exactly one";
      }
      r.streamLevels.push_back(claims[total + t]);
      r.levelCrc32.insert(r.levelCrc32.end(),
        crcs.begin() + static_cast<std::ptrdiff_t>(total + levelAt[t]),
        crcs.begin() + static_cast<std::ptrdiff_t>(total + levelAt[t + 1]));
      r.crc32 =
        checksums::crc32Combine(r.crc32, crcs[t], a.streamOffsets[s + 1] - a.streamOffsets[s]);
    }
  }
  // The step's metadata (time, metrics, tables) must be the same everywhere.
  StepInfo info;
  info.time = step.time;
  info.metrics = step.metrics;
  std::vector<checksums::ArrayRecord> described = records;
  for (std::size_t k = 0; k < step.arrays.size(); ++k)
  {
    described[k].name = step.arrays[k].name;
    described[k].components = step.arrays[k].components;
    described[k].streamOffsets = step.arrays[k].streamOffsets;
    described[k].absoluteBound = step.arrays[k].absoluteBound;
    described[k].metrics = step.arrays[k].metrics;
  }
  const std::uint32_t text =
    checksums::checksumOf(checksums::stepText(this->headerOf(), this->Steps, info, described));
  if (!sameOnAll(comm, text) && error.empty())
  {
    error = "the processes disagree on the time, the metrics or the stream tables of step " +
      std::to_string(this->Steps);
  }
  return error;
}

#else // no parallel HDF5: beginParallel refuses, nothing else is reached

bool Writer::Parallel::useMpiIo(hid_t) const
{
  return false;
}

std::string Writer::beginParallel(const std::string& path,
  const GridDescription&,
  const std::vector<ArrayDescription>&,
  const void*,
  const WriteOptions&)
{
  this->abort();
  return "cannot write " + path + " from several processes: this HDF5 has no MPI-IO support";
}

std::string Writer::agree(const std::string& error)
{
  return error;
}

std::string Writer::gatherLevelTables(const StepInput&, std::vector<checksums::ArrayRecord>&)
{
  return "no parallel write in progress";
}

#endif

} // namespace file
} // namespace sparsegrid
