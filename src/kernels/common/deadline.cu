// The deadline kernels (deadline.hpp). Nothing here reads Q, K, V or the
// lengths: the only values are the GPU clock and the public budget. The wait
// loop's trip count does follow the attention's duration -- that is its
// purpose, and what it hides -- so, like the mbarrier retry loops, it is a
// wait and not a computation on secrets (docs/threat-model.md §8;
// src/kernels/public_pointers.audit declares the state pointer).
#include "kernels/common/deadline.hpp"

#include "kernels/common/launch_util.hpp"

namespace dhp::kernels {
namespace {

// %globaltimer: the GPU's nanosecond clock, the same on every SM and
// independent of the SM clock's frequency. It steps every 32 ns on the H200
// (dhp_validate measures it); a coarser one would only round the deadline
// up to its next step, the same for every input.
__device__ __forceinline__ uint64_t gpu_time_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void deadline_start_kernel(dhp_deadline_state* state) { state->start_ns = gpu_time_ns(); }

// ceil(n / d) for d >= 1 in 64 fixed steps of restoring division: its time
// must not follow n (a work's duration). A loop adding d until it passes n
// would take n / d turns -- millions for a 1 ns budget.
__device__ __forceinline__ uint64_t ceil_div_fixed(uint64_t n, uint64_t d) {
  uint64_t q = 0, r = 0;
#pragma unroll
  for (int i = 63; i >= 0; --i) {
    r = (r << 1) | ((n >> i) & 1u);
    const uint64_t ge = r >= d ? 1u : 0u;
    r -= ge * d;
    q |= ge << i;
  }
  return q + (r != 0 ? 1u : 0u);
}

// Past a deadline the computation above runs before the wait: the next
// deadline lies at least this far past the arrival, so that the wait, not
// the computation, still sets the call's end.
constexpr uint64_t kOverrunGuardNs = 2000;

// The deadline a wait ends at, from the start stamp and the work's arrival:
// start + budget, or past it (an overrun) a later multiple of the budget,
// the first at least kOverrunGuardNs past the arrival -- an overrun's
// duration shows how many budgets the work took, not the work's own time.
// The branch is on the clock (public); the path it takes has a fixed length.
__device__ __forceinline__ uint64_t deadline_after(uint64_t start, uint64_t budget_ns, uint64_t arrival) {
  uint64_t deadline = start + budget_ns;
  if (arrival > deadline)
    deadline = start + budget_ns * ceil_div_fixed(arrival + kOverrunGuardNs - start, budget_ns);
  return deadline;
}

// The burn wait's load (WaitMode::kBurn; deadline.hpp): eight independent
// FMA chains per thread from public constants (the lane's index among
// them, so that lanes differ) -- no memory, no value from the call --
// between two readings of the clock. The chains iterate x <- x * x - 1.9,
// which stays in [-1.9, 1.9] and never settles, so the operands keep
// toggling (a map converging to a fixed point would soon multiply one
// constant and draw little). Two turns of eight chains with four warps per
// scheduler: about 64 SM cycles (32 ns) between a warp's readings of the
// clock, the timer's own step.
constexpr int kBurnChains = 8, kBurnTurns = 2;
constexpr int kBurnBlocksPerSm = 2, kBurnThreads = 256;

// kMode: WaitMode (deadline.hpp), and kBurnMark: the burn wait's first
// kernel. kEarly waits for the call's last grid, and its memory, before it
// reads the clock or the state (a separate instantiation: the
// stream-ordered kernel stays the measured one, instruction for
// instruction). kBurnMark keeps the state like the others but does not
// wait; the kBurn grid after it then derives the one deadline from the
// state (start + last_work_ns is the mark's arrival), so every thread ends
// at the same deadline and an overrun is counted exactly when the call
// ends past start + budget, however late a block of the grid starts.
enum class WaitKernel { kStreamOrdered, kEarly, kBurnMark, kBurn };

template <WaitKernel kKind>
__global__ void deadline_wait_kernel(dhp_deadline_state* state, uint64_t budget_ns) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if constexpr (kKind == WaitKernel::kEarly) asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
  const uint64_t start = state->start_ns;
  if constexpr (kKind == WaitKernel::kBurn) {
    const uint64_t deadline = deadline_after(start, budget_ns, start + state->last_work_ns);
    float acc[kBurnChains];
#pragma unroll
    for (int c = 0; c < kBurnChains; ++c) acc[c] = 0.1f + 0.2f * c + 0.001f * (threadIdx.x & 31);
    while (gpu_time_ns() < deadline) {
#pragma unroll
      for (int t = 0; t < kBurnTurns; ++t)
#pragma unroll
        for (int c = 0; c < kBurnChains; ++c) acc[c] = fmaf(acc[c], acc[c], -1.9f);
    }
    // Keeps the chains: their sum is stored to shared memory (volatile, so
    // the store stays), else ptxas drops FMAs whose results nothing reads.
    __shared__ volatile float sink[kBurnThreads];
    float sum = 0.0f;
#pragma unroll
    for (int c = 0; c < kBurnChains; ++c) sum += acc[c];
    sink[threadIdx.x] = sum;
  } else {
    // (In this order: the shipped kernel's instructions as measured in
    // sessions 48-51.)
    uint64_t deadline = start + budget_ns;
    const uint64_t arrival = gpu_time_ns();
    state->last_work_ns = arrival - start;
    state->overruns += arrival > deadline ? 1u : 0u;  // a select: the store runs on every call
    if constexpr (kKind != WaitKernel::kBurnMark) {
      deadline = deadline_after(start, budget_ns, arrival);
      // Spin on the clock, not on nanosleep: a sleep's wake-up is coarse
      // and would add its own jitter to the end of every call.
      while (gpu_time_ns() < deadline) {
      }
    }
  }
}

}  // namespace

// Both in stream order through launch_pdl (cudaLaunchKernelEx), which
// returns the launch's own error without touching the error state an earlier
// call of the caller's may have left; the early wait with PDL.
cudaError_t launch_deadline_start(dhp_deadline_state* state, cudaStream_t stream) {
  return launch_pdl(deadline_start_kernel, dim3(1), dim3(1), 0, stream, false, state);
}

cudaError_t deadline_wait_blocks(WaitMode mode, int* blocks) {
  *blocks = 1;
  if (mode != WaitMode::kBurn) return cudaSuccess;
  int device = 0, sms = 0;
  cudaError_t e = cudaGetDevice(&device);
  if (e == cudaSuccess) e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  if (e == cudaSuccess) *blocks = sms * kBurnBlocksPerSm;
  return e;
}

cudaError_t launch_deadline_wait(dhp_deadline_state* state, uint64_t budget_ns, cudaStream_t stream, WaitMode mode,
                                 int blocks) {
  switch (mode) {
    case WaitMode::kEarly:
      return launch_pdl(deadline_wait_kernel<WaitKernel::kEarly>, dim3(1), dim3(1), 0, stream, true, state,
                        budget_ns);
    case WaitMode::kBurn: {
      const cudaError_t e = launch_pdl(deadline_wait_kernel<WaitKernel::kBurnMark>, dim3(1), dim3(1), 0, stream,
                                       false, state, budget_ns);
      if (e != cudaSuccess) return e;
      return launch_pdl(deadline_wait_kernel<WaitKernel::kBurn>, dim3(blocks), dim3(kBurnThreads), 0, stream, false,
                        state, budget_ns);
    }
    case WaitMode::kStreamOrdered:
    default:
      return launch_pdl(deadline_wait_kernel<WaitKernel::kStreamOrdered>, dim3(1), dim3(1), 0, stream, false, state,
                        budget_ns);
  }
}

}  // namespace dhp::kernels
