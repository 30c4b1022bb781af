// Sets a kernel's function attribute without touching the calling thread's
// CUDA last-error record.
#pragma once
#include <cuda_runtime.h>

namespace dhp::kernels {

enum class FunctionAttribute {
  kMaxDynamicSharedBytes,   // the kernel's opt-in dynamic shared-memory cap
  kPreferredSharedCarveout  // percent of the unified L1/shared storage asked for as shared memory
};

// cudaFuncSetAttribute resets the thread's last-error record even when it
// succeeds (seen on CUDA 13.0, driver 580, H200: an error the caller left
// pending was gone after it; every other runtime call a forward makes kept
// it). A shape's first call sets attributes, so it cleared the caller's
// error. This goes through the driver instead (cudaGetFuncBySymbol, then
// cuFuncSetAttribute from cudaGetDriverEntryPointByVersion), which keeps the
// record. `kernel` is the kernel's host-side symbol, as for <<<>>>. Its own
// failures do not stay in the record either (callers need not clear it).
// The attribute is the current context's function's (as cudaFuncSetAttribute
// sets it, per the CUDA 13 headers), which is what a launch in that context uses.
// cudaFuncGetAttributes does not see a value set this way (it still read the
// 48 KB default after a 100 000-byte cap, while a launch with that much
// dynamic shared memory ran): the library never reads attributes back.
cudaError_t set_function_attribute(const void* kernel, FunctionAttribute attribute, int value);

}  // namespace dhp::kernels
