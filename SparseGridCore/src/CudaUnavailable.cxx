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

bool available(std::string* why)
{
  if (why)
  {
    *why = "this build has no CUDA backend (built without nvcc)";
  }
  return false;
}

template<typename T>
Status hierarchize(const Grid&, T*, const ExecutionOptions&, bool, double*)
{
  return notBuilt();
}
template<typename T>
Status evaluate(const Grid&, const T*, const T*, std::size_t, T*, const ExecutionOptions&, double*)
{
  return notBuilt();
}
template<typename T>
Status reconstructImage(const Grid&,
  const T*,
  const RegularGrid&,
  T*,
  const ExecutionOptions&,
  double*)
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
template<typename T>
Status evaluateResident(const Resident&,
  const Grid&,
  int,
  const T*,
  std::size_t,
  T*,
  std::size_t,
  const ExecutionOptions&,
  double*)
{
  return notBuilt();
}

#define SPARSEGRID_INSTANTIATE(T)                                                                  \
  template Status hierarchize<T>(const Grid&, T*, const ExecutionOptions&, bool, double*);         \
  template Status evaluate<T>(                                                                     \
    const Grid&, const T*, const T*, std::size_t, T*, const ExecutionOptions&, double*);           \
  template Status reconstructImage<T>(                                                             \
    const Grid&, const T*, const RegularGrid&, T*, const ExecutionOptions&, double*);              \
  template Status makeResident<T>(                                                                 \
    const Grid&, const T*, int, const ExecutionOptions&, std::shared_ptr<Resident>&);              \
  template Status evaluateResident<T>(const Resident&,                                             \
    const Grid&,                                                                                   \
    int,                                                                                           \
    const T*,                                                                                      \
    std::size_t,                                                                                   \
    T*,                                                                                            \
    std::size_t,                                                                                   \
    const ExecutionOptions&,                                                                       \
    double*);
SPARSEGRID_INSTANTIATE(float)
SPARSEGRID_INSTANTIATE(double)
#undef SPARSEGRID_INSTANTIATE

} // namespace cuda
} // namespace sparsegrid
