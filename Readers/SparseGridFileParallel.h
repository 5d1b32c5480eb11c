/**
 * @file SparseGridFileParallel.h
 * @brief The communicator of a parallel `.sgrid` write (internal to Readers/, not installed):
 * what Writer::beginParallel keeps, and how the file is opened through HDF5's MPI-IO driver.
 * Without parallel HDF5 (H5_HAVE_PARALLEL) the struct exists but is never created.
 */
#ifndef SparseGridFileParallel_h
#define SparseGridFileParallel_h

#include "SparseGridFile.h"

#include <hdf5.h> // includes mpi.h when HDF5 is built for MPI

namespace sparsegrid
{
namespace file
{

struct Writer::Parallel
{
#ifdef H5_HAVE_PARALLEL
  MPI_Comm Comm = MPI_COMM_NULL;
#endif
  int Rank = 0;
  int Size = 1;
  /// Sets `fapl` to open the file on every process of Comm through MPI-IO.
  bool useMpiIo(hid_t fapl) const;
};

/// The grid a writer stores: `grid` validated with `arrays`, its point count filled in; or
/// "cannot write <path>: <why>".
std::string validatedGrid(const std::string& path,
  const GridDescription& grid,
  const std::vector<ArrayDescription>& arrays,
  GridDescription& out);

} // namespace file
} // namespace sparsegrid

#endif
