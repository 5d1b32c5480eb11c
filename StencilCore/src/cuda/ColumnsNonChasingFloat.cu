// Column-mesh kernels for float values and nonchasing tables (split per file to compile in
// parallel).
#include "ColumnKernels.cuh"

namespace stencil
{
namespace detail
{
template<>
Status cudaColumnsOf<float, false>(const PreparedTable<float>& table,
  const ColumnArgs<float>& args,
  const ExecutionOptions& options,
  ExecutionReport& report)
{
  return runColumns<float, false>(table, args, options, report);
}
} // namespace detail
} // namespace stencil
