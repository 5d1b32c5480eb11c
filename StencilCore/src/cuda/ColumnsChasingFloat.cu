// Column-mesh kernels for float values and chasing tables (split per file to compile in parallel).
#include "ColumnKernels.cuh"

namespace stencil
{
namespace detail
{
template<>
Status cudaColumnsOf<float, true>(const PreparedTable<float>& table,
  const ColumnArgs<float>& args,
  const ExecutionOptions& options,
  ExecutionReport& report)
{
  return runColumns<float, true>(table, args, options, report);
}
} // namespace detail
} // namespace stencil
