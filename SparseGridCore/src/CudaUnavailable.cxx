// Stand-in for the CUDA backend when the library is built without nvcc: every call reports
// BackendUnavailable so that callers fall back to the CPU and can say why.
#include "Internal.h"

namespace sparsegrid
{
namespace cuda
{
namespace
{
Status notBuilt()
{
  return Status(
    ErrorCode::BackendUnavailable, "this build has no CUDA backend (built without nvcc)");
}
} // namespace

template<typename T>
Status hierarchize(const Grid&, T*, const ExecutionOptions&, bool, double*)
{
  return notBuilt();
}

struct Resident
{
};
template<typename T>
Status makeResident(const Grid&, const T*, int, const ExecutionOptions&, std::shared_ptr<Resident>&)
{
  return notBuilt();
}
// Never called: makeResident fails, so there is nothing resident to use.
template<typename T>
Status evaluateResident(const Resident&,
  const Grid&,
  int,
  const detail::PointBatch<T>&,
  const ExecutionOptions&,
  double*)
{
  return notBuilt();
}
template<typename T>
Status reconstructResident(const Resident&,
  const Grid&,
  int,
  const RegularGrid&,
  T*,
  const ExecutionOptions&,
  double*)
{
  return notBuilt();
}

SPARSEGRID_CUDA_INSTANTIATE(float)
SPARSEGRID_CUDA_INSTANTIATE(double)

} // namespace cuda
} // namespace sparsegrid
