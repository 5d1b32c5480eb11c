// The direct kernels for float (one translation unit per type: they compile in parallel).
#include "Direct.cuh"

CORRELATION_CUDA_DIRECT_INSTANCE(float)
