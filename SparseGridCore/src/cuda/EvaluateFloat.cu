// Evaluation kernels in float (see Evaluate.cuh). Split by precision so that they compile in
// parallel.
#include "Evaluate.cuh"

namespace sparsegrid
{
namespace cuda
{
namespace impl
{
template class DeviceEvaluator<float>;
} // namespace impl
} // namespace cuda
} // namespace sparsegrid
