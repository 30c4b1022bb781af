// Diagnostic (LD_PRELOAD; not linked into anything): prints a backtrace to
// stderr each time cudaGetLastError returns an error, so that a run shows
// which call site consumes a thread's last-error record. Session 52 saw a
// shape's first call clear an error the caller had left pending; this names
// the site, if it is one of ours (a record cleared inside the CUDA runtime
// itself does not pass through here):
//   LD_PRELOAD=build/hopper/tools/validate/libdhp_last_error_trace.so \
//     build/hopper/tests/dhp_gpu_tests --gtest_filter=CallState.ErrorPending*
// Works where the library links the CUDA runtime as a shared library.
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <execinfo.h>

#include <cstdio>

extern "C" cudaError_t cudaGetLastError(void) {
  using Fn = cudaError_t (*)(void);
  static const Fn real = reinterpret_cast<Fn>(dlsym(RTLD_NEXT, "cudaGetLastError"));
  if (real == nullptr) return cudaErrorUnknown;
  const cudaError_t e = real();
  if (e != cudaSuccess) {
    std::fprintf(stderr, "[last_error_trace] cudaGetLastError -> %d, from:\n", static_cast<int>(e));
    void* frames[16];
    const int n = backtrace(frames, 16);
    backtrace_symbols_fd(frames, n, 2);
  }
  return e;
}
