// A CUDA driver function by name, through the runtime (no link against
// libcuda): tensor maps (sm90/tensor_map.cpp) and kernel attributes
// (common/function_attribute.cpp).
#pragma once
#include <cuda_runtime.h>

namespace dhp::kernels {

// The driver's `symbol` at ABI `version` (e.g. 12000 for a _v12000 typedef),
// or nullptr; a failed lookup's record is cleared (the caller's pending
// error, if any, was replaced by it already).
inline void* driver_entry_point(const char* symbol, unsigned int version) {
  void* p = nullptr;
  cudaDriverEntryPointQueryResult q{};
  if (cudaGetDriverEntryPointByVersion(symbol, &p, version, cudaEnableDefault, &q) != cudaSuccess) {
    (void)cudaGetLastError();
    return nullptr;
  }
  return q == cudaDriverEntryPointSuccess ? p : nullptr;
}

}  // namespace dhp::kernels
