// The deadline kernels (deadline.hpp). Nothing here reads Q, K, V or the
// lengths: the only values are the GPU clock and the public budget. The wait
// loop's trip count does follow the attention's duration -- that is its
// purpose, and what it hides -- so, like the mbarrier retry loops, it is a
// wait and not a computation on secrets (docs/threat-model.md §8;
// src/kernels/public_pointers.audit declares the state pointer).
#include "kernels/common/deadline.hpp"

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

__global__ void deadline_wait_kernel(dhp_deadline_state* state, uint64_t budget_ns) {
  const uint64_t start = state->start_ns;
  uint64_t deadline = start + budget_ns;
  const uint64_t arrival = gpu_time_ns();
  state->last_work_ns = arrival - start;
  state->overruns += arrival > deadline ? 1u : 0u;  // a select: the store runs on every call
  // Work past its deadline waits for the next multiple of the budget: an
  // overrun's duration then shows how many budgets the work took, never the
  // work's own time.
  while (deadline < arrival) deadline += budget_ns;
  // Spin on the clock, not on nanosleep: a sleep's wake-up is coarse and
  // would add its own jitter to the end of every call.
  while (gpu_time_ns() < deadline) {
  }
}

}  // namespace

// cudaLaunchKernel returns this launch's error without touching the error
// state an earlier call of the caller's may have left.
cudaError_t launch_deadline_start(dhp_deadline_state* state, cudaStream_t stream) {
  void* args[] = {&state};
  return cudaLaunchKernel(deadline_start_kernel, dim3(1), dim3(1), args, 0, stream);
}

cudaError_t launch_deadline_wait(dhp_deadline_state* state, uint64_t budget_ns, cudaStream_t stream) {
  void* args[] = {&state, &budget_ns};
  return cudaLaunchKernel(deadline_wait_kernel, dim3(1), dim3(1), args, 0, stream);
}

}  // namespace dhp::kernels
