// TMA + mbarrier helpers shared by the corpus kernels (sm_90a only). The
// tile coordinate is the caller's: public in clean.cu, secret in leaky.cu.
#pragma once
#include <cuda.h>
#include <cstdint>

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
// A 16x16 fp32 shared tile and its mbarrier, with their shared-window
// addresses (the operands the PTX below takes).
#define CORPUS_TMA_SHARED_TILE(tile, bar, s_tile, s_bar)                         \
  __shared__ alignas(128) float tile[16 * 16];                                  \
  __shared__ alignas(8) uint64_t bar;                                           \
  const uint32_t s_tile = static_cast<uint32_t>(__cvta_generic_to_shared(tile)); \
  const uint32_t s_bar = static_cast<uint32_t>(__cvta_generic_to_shared(&bar))

// One thread: initialise the mbarrier, announce 1024 bytes, issue the 2-D
// tensor copy of the 16x16 fp32 tile at (0, row).
__device__ __forceinline__ void corpus_tma_load(uint32_t s_tile, uint32_t s_bar, const CUtensorMap& tmap,
                                                int row) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(s_bar) : "memory");
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], 1024;" ::"r"(s_bar) : "memory");
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];" ::"r"(
          s_tile),
      "l"(&tmap), "r"(0), "r"(row), "r"(s_bar)
      : "memory");
}

// Every thread: spin on the mbarrier's phase bit. The exit depends on when
// the public byte count has landed, not on any loaded value.
__device__ __forceinline__ void corpus_mbarrier_wait(uint32_t s_bar) {
  uint32_t done = 0;
  do {
    asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0; selp.u32 %0, 1, 0, p; }"
                 : "=r"(done)
                 : "r"(s_bar)
                 : "memory");
  } while (!done);
}
#endif
