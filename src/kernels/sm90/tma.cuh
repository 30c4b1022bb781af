// Hopper TMA and mbarrier vocabulary, on CCCL's cuda::ptx: what the
// producer warp issues and the consumers wait on.
//
// Constant-time notes: every tile coordinate passed to a TMA copy must be
// computed from public values (block index, public S_max, loop counters);
// rows beyond the tensor's public extent are zero-filled by the copy engine,
// so no bounds branch is needed. The expected transaction byte count is a
// compile-time tile size. A try_wait spin loop's exit depends on when those
// public byte counts land, not on data (dhp-audit treats the phase result
// as public and requires the count and address to be public).
#pragma once

#include <cuda/ptx>
#include <cstdint>

namespace dhp::sm90::tma {

// One mbarrier per pipeline stage, in shared memory.
__device__ __forceinline__ void barrier_init(uint64_t* bar, uint32_t arrivals) {
  cuda::ptx::mbarrier_init(bar, arrivals);
}
// Makes barrier initialisation visible to the async proxy (TMA) before use.
__device__ __forceinline__ void barrier_init_fence() {
  cuda::ptx::fence_mbarrier_init(cuda::ptx::sem_release, cuda::ptx::scope_cluster);
}
// Producer: arrive and announce `bytes` to be delivered by TMA copies.
__device__ __forceinline__ void arrive_expect_bytes(uint64_t* bar, uint32_t bytes) {
  cuda::ptx::mbarrier_arrive_expect_tx(cuda::ptx::sem_release, cuda::ptx::scope_cta, cuda::ptx::space_shared, bar,
                                       bytes);
}
// Consumer: plain arrival (e.g. "this stage's buffer is free again").
__device__ __forceinline__ void arrive(uint64_t* bar) { (void)cuda::ptx::mbarrier_arrive(bar); }
// Blocks until the barrier's phase with parity `phase` has completed.
// SUSPEND = false: try_wait with the hardware's own time limit, so the loop
// turns a timing-dependent number of times (instruction and branch counts
// then vary from launch to launch). SUSPEND = true: try_wait with a 10 ms
// suspend-time hint, so the thread sleeps until the phase completes and the
// loop normally turns once -- counts that gate 1 can require identical.
#ifndef DHP_SM90_SPIN_WAITS
#define DHP_SM90_SPIN_WAITS 0  // 1: every wait spins (A/B of the suspend hint's latency)
#endif
template <bool SUSPEND = false>
__device__ __forceinline__ void wait(uint64_t* bar, uint32_t phase) {
  if constexpr (SUSPEND && !DHP_SM90_SPIN_WAITS) {
    constexpr uint32_t kSuspendNs = 10000000;
    while (!cuda::ptx::mbarrier_try_wait_parity(bar, phase, kSuspendNs)) {
    }
  } else {
    while (!cuda::ptx::mbarrier_try_wait_parity(bar, phase)) {
    }
  }
}

// Fetches a __grid_constant__ tensor map's descriptor ahead of the first copy.
__device__ __forceinline__ void prefetch_map(const void* tensor_map) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<uint64_t>(tensor_map)) : "memory");
}

// 2-D tile copy global -> shared (coordinates: innermost first), completion
// counted on `bar`.
__device__ __forceinline__ void load_2d(void* smem_dst, const void* tensor_map, int32_t c0, int32_t c1,
                                        uint64_t* bar) {
  const int32_t coords[2] = {c0, c1};
  cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_cluster, cuda::ptx::space_global, smem_dst, tensor_map, coords,
                                  bar);
}
// 4-D tile copy (attention tensors: d, sequence, head, batch).
__device__ __forceinline__ void load_4d(void* smem_dst, const void* tensor_map, int32_t c0, int32_t c1, int32_t c2,
                                        int32_t c3, uint64_t* bar) {
  const int32_t coords[4] = {c0, c1, c2, c3};
  cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_cluster, cuda::ptx::space_global, smem_dst, tensor_map, coords,
                                  bar);
}

// 5-D tile copy global -> shared (the decode kernel's packed Q at S_q > 1:
// tensor_map.hpp, packed_rows_spec).
__device__ __forceinline__ void load_5d(void* smem_dst, const void* tensor_map, int32_t c0, int32_t c1, int32_t c2,
                                        int32_t c3, int32_t c4, uint64_t* bar) {
  const int32_t coords[5] = {c0, c1, c2, c3, c4};
  cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_cluster, cuda::ptx::space_global, smem_dst, tensor_map, coords,
                                  bar);
}

// 4-D tile copy shared -> global (the epilogue's O). Rows outside the
// tensor's public extent are not written: the copy engine clips the box, so
// no bounds branch is needed. The source must have been written through the
// generic proxy and made visible with fence_generic_to_async() first.
__device__ __forceinline__ void store_4d(const void* tensor_map, const void* smem_src, int32_t c0, int32_t c1,
                                         int32_t c2, int32_t c3) {
  const int32_t coords[4] = {c0, c1, c2, c3};
  cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_global, cuda::ptx::space_shared, tensor_map, coords, smem_src);
}
// Closes this thread's outstanding bulk stores into one group.
__device__ __forceinline__ void store_commit() { cuda::ptx::cp_async_bulk_commit_group(); }
// Waits until at most N of this thread's store groups still read shared
// memory (their source bytes may then be overwritten).
template <int N>
__device__ __forceinline__ void store_wait_read() {
  cuda::ptx::cp_async_bulk_wait_group_read(cuda::ptx::n32_t<N>{});
}
// Waits until at most N of this thread's store groups are incomplete: the
// older ones' writes to global memory are done (visible to this thread).
template <int N>
__device__ __forceinline__ void store_wait_complete() {
  cuda::ptx::cp_async_bulk_wait_group(cuda::ptx::n32_t<N>{});
}
// Orders this thread's global-memory accesses across the generic and async
// proxies (TMA reads after an acquire; a release after TMA writes).
__device__ __forceinline__ void fence_proxy_global() { cuda::ptx::fence_proxy_async(cuda::ptx::space_global); }
// Orders this thread's generic-proxy shared-memory writes before later
// async-proxy (TMA) accesses of the same bytes.
__device__ __forceinline__ void fence_generic_to_async() { cuda::ptx::fence_proxy_async(cuda::ptx::space_shared); }

}  // namespace dhp::sm90::tma

namespace dhp::sm90::pdl {
// Programmatic dependent launch (griddepcontrol). wait: blocks until the
// grids this launch depends on have completed and their memory is visible
// (returns at once when launched without the programmatic attribute).
// allow: lets the next grid in the stream, if it was launched with the
// attribute, begin before this one ends.
__device__ __forceinline__ void wait_for_previous_grid() { asm volatile("griddepcontrol.wait;\n" ::: "memory"); }
__device__ __forceinline__ void allow_next_grid() { asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory"); }
}  // namespace dhp::sm90::pdl
