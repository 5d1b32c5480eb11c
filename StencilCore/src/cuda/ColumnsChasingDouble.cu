// Column-mesh kernels for double values and chasing tables (split per file to compile in parallel).
#include "ColumnKernels.cuh"

namespace stencil
{
namespace detail
{
template<>
Status cudaColumnsOf<double, true>(const PreparedTable<double>& table,
  const ColumnArgs<double>& args,
  const ExecutionOptions& options,
  ExecutionReport& report)
{
  return runColumns<double, true>(table, args, options, report);
}
} // namespace detail
} // namespace stencil
