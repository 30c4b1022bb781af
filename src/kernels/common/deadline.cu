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

// kEarly: launched by programmatic dependent launch (launch_deadline_wait's
// `early`), so it may start before the call's last kernel has ended: it
// waits for that grid, and for its memory, before it reads the clock or the
// state. (A separate instantiation: the stream-ordered kernel stays the
// measured one, instruction for instruction.)
template <bool kEarly>
__global__ void deadline_wait_kernel(dhp_deadline_state* state, uint64_t budget_ns) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if constexpr (kEarly) asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
  const uint64_t start = state->start_ns;
  uint64_t deadline = start + budget_ns;
  const uint64_t arrival = gpu_time_ns();
  state->last_work_ns = arrival - start;
  state->overruns += arrival > deadline ? 1u : 0u;  // a select: the store runs on every call
  // Work past its deadline waits for a later multiple of the budget, the
  // first at least kOverrunGuardNs past its arrival: an overrun's duration
  // shows how many budgets the work took, not the work's own time. The
  // branch is on the clock (public); the path it takes has a fixed length.
  if (arrival > deadline)
    deadline = start + budget_ns * ceil_div_fixed(arrival + kOverrunGuardNs - start, budget_ns);
  // Spin on the clock, not on nanosleep: a sleep's wake-up is coarse and
  // would add its own jitter to the end of every call.
  while (gpu_time_ns() < deadline) {
  }
}

}  // namespace

// Both in stream order through launch_pdl (cudaLaunchKernelEx), which
// returns the launch's own error without touching the error state an earlier
// call of the caller's may have left; the early wait with PDL.
cudaError_t launch_deadline_start(dhp_deadline_state* state, cudaStream_t stream) {
  return launch_pdl(deadline_start_kernel, dim3(1), dim3(1), 0, stream, false, state);
}

cudaError_t launch_deadline_wait(dhp_deadline_state* state, uint64_t budget_ns, cudaStream_t stream, bool early) {
  return early ? launch_pdl(deadline_wait_kernel<true>, dim3(1), dim3(1), 0, stream, true, state, budget_ns)
               : launch_pdl(deadline_wait_kernel<false>, dim3(1), dim3(1), 0, stream, false, state, budget_ns);
}

}  // namespace dhp::kernels
