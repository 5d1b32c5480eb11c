// Column-mesh kernels for double values and nonchasing tables (split per file to compile in
// parallel).
#include "ColumnKernels.cuh"

namespace stencil
{
namespace detail
{
template<>
Status cudaColumnsOf<double, false>(const PreparedTable<double>& table,
  const ColumnArgs<double>& args,
  const ExecutionOptions& options,
  ExecutionReport& report)
{
  return runColumns<double, false>(table, args, options, report);
}
} // namespace detail
} // namespace stencil
