#include "kernels/common/function_attribute.hpp"

#include <cuda.h>
#include <cudaTypedefs.h>

#include "kernels/common/driver_entry.hpp"

namespace dhp::kernels {
namespace {

PFN_cuFuncSetAttribute_v9000 driver_set_attribute() {
  static const PFN_cuFuncSetAttribute_v9000 fn =
      reinterpret_cast<PFN_cuFuncSetAttribute_v9000>(driver_entry_point("cuFuncSetAttribute", 9000));
  return fn;
}

// The runtime's code for a driver failure, for the caller's message.
cudaError_t runtime_error_of(CUresult r) {
  switch (r) {
    case CUDA_SUCCESS: return cudaSuccess;
    case CUDA_ERROR_INVALID_VALUE: return cudaErrorInvalidValue;
    case CUDA_ERROR_OUT_OF_MEMORY: return cudaErrorMemoryAllocation;
    case CUDA_ERROR_INVALID_HANDLE: return cudaErrorInvalidResourceHandle;
    case CUDA_ERROR_INVALID_CONTEXT: return cudaErrorDeviceUninitialized;
    case CUDA_ERROR_NOT_INITIALIZED: return cudaErrorInitializationError;
    case CUDA_ERROR_DEINITIALIZED: return cudaErrorCudartUnloading;
    case CUDA_ERROR_CONTEXT_IS_DESTROYED: return cudaErrorContextIsDestroyed;
    case CUDA_ERROR_NOT_PERMITTED: return cudaErrorNotPermitted;
    case CUDA_ERROR_NOT_SUPPORTED: return cudaErrorNotSupported;
    default: return cudaErrorUnknown;
  }
}

}  // namespace

cudaError_t set_function_attribute(const void* kernel, FunctionAttribute attribute, int value) {
  const PFN_cuFuncSetAttribute_v9000 set = driver_set_attribute();
  if (set == nullptr) return cudaErrorCallRequiresNewerDriver;  // not expected: cuFuncSetAttribute dates from CUDA 9.0
  cudaFunction_t function = nullptr;
  // Also loads the kernel's module when loading is lazy. Keeps the record on
  // success; its own failure is cleared here, so that callers need not.
  if (const cudaError_t e = cudaGetFuncBySymbol(&function, kernel); e != cudaSuccess) {
    (void)cudaGetLastError();
    return e;
  }
  const CUfunction_attribute a = attribute == FunctionAttribute::kMaxDynamicSharedBytes
                                     ? CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
                                     : CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT;
  // A driver failure never enters the runtime's record.
  return runtime_error_of(set(reinterpret_cast<CUfunction>(function), a, value));
}

}  // namespace dhp::kernels
