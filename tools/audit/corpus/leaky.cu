// dhp-audit corpus: kernels that each plant EXACTLY ONE constant-time leak.
//
// Model: "secret" = any value loaded from memory (global / shared / local /
//        texture / surface, and user __constant__ data: constant bank 3).
//        "public" = kernel parameters, threadIdx/blockIdx/blockDim, immediates.
// Rules: (a) control flow (branch / loop exit / early exit) depends on a secret
//        (b) a memory address (texture coordinate / LOD / handle, surface
//            coordinate / handle, descriptor and cache policy included), or a
//            memory-op guard, depends on a secret
//        (c) a side effect (store/atomic) is guarded by a secret predicate
//        (d) a call into a variable-time routine (IEEE div/sqrt slow paths) or
//            into a routine outside the kernel (printf, malloc)
// Kernels 19-38: false negatives of an earlier dhp-audit; 39-41: lock-ins.
//
// Each kernel has a "// LEAK <rule>: <what>" comment and the one source line
// that the auditor must flag ends with the marker "// LEAK-LINE". <rule> may
// list alternatives ("c|a": nvcc may turn a secret-guarded store into a
// secret-guarded EXIT) and may be limited to some architectures
// ("b [sm_90a]": the instruction exists only there).
// Everything else in a kernel is meant to be constant-time so the planted
// leak is the only finding. Results are always stored so nothing is dead.
// Build: see check_corpus.sh (nvcc -O3 -lineinfo -cubin, sm_80 and sm_90a).
#include <cuda_runtime.h>
#include <cstdint>

#define GTID (blockIdx.x * blockDim.x + threadIdx.x)

// 1 ---------------------------------------------------------------------------
// Both arms do a data-dependent-length-free but *different* expensive loop and
// different stores, so the compiler cannot if-convert into a select.
extern "C" __global__ void leak_secret_branch(const float* __restrict__ in,
                                              float* __restrict__ out,
                                              float* __restrict__ out2) {
  unsigned i = GTID;
  float x = in[i];
  // LEAK a: branch on a loaded value
  if (x > 0.0f) {  // LEAK-LINE
    float acc = x;
#pragma unroll 1
    for (int k = 0; k < 64; ++k) acc = __sinf(acc) * 1.0001f + x;
    out[i] = acc;
  } else {
    float acc = -x;
#pragma unroll 1
    for (int k = 0; k < 32; ++k) acc = __cosf(acc) * 0.999f - x;
    out2[i] = acc;
  }
}

// 2 ---------------------------------------------------------------------------
extern "C" __global__ void leak_loop_bound_loaded(const int* __restrict__ lens,
                                                  const float* __restrict__ v,
                                                  float* __restrict__ out,
                                                  int stride) {
  unsigned i = GTID;
  int n = lens[blockIdx.x];
  float acc = 0.0f;
  // LEAK a: trip count comes from a loaded length
#pragma unroll 1
  for (int k = 0; k < n; ++k) {  // LEAK-LINE
    acc = fmaf(acc, 0.5f, v[k * stride + threadIdx.x]);
  }
  out[i] = acc;
}

// 3 ---------------------------------------------------------------------------
extern "C" __global__ void leak_early_return_len(const int* __restrict__ lens,
                                                 const float* __restrict__ v,
                                                 float* __restrict__ out) {
  int len = lens[blockIdx.x];
  // LEAK a: thread exits early depending on a loaded sequence length
  if ((int)threadIdx.x >= len) return;  // LEAK-LINE
  unsigned i = GTID;
  out[i] = v[i] * 3.0f + 1.0f;
}

// 4 ---------------------------------------------------------------------------
extern "C" __global__ void leak_smem_table_index(const uint8_t* __restrict__ key,
                                                 const uint32_t* __restrict__ tbl,
                                                 uint32_t* __restrict__ out) {
  __shared__ uint32_t s_tbl[256];
  s_tbl[threadIdx.x & 255] = tbl[threadIdx.x & 255];
  __syncthreads();
  unsigned i = GTID;
  uint8_t k = key[i];
  // LEAK b: shared-memory address depends on a secret byte (S-box lookup)
  uint32_t r = s_tbl[k];  // LEAK-LINE
  out[i] = r ^ 0x9e3779b9u;
}

// 5 ---------------------------------------------------------------------------
extern "C" __global__ void leak_global_secret_index(const int* __restrict__ idx,
                                                   const float* __restrict__ tbl,
                                                   float* __restrict__ out) {
  unsigned i = GTID;
  int j = idx[i];
  // LEAK b: global load address computed from a loaded index (gather)
  float r = tbl[j & 4095];  // LEAK-LINE
  out[i] = r * 2.0f;
}

// 6 ---------------------------------------------------------------------------
extern "C" __global__ void leak_store_guarded(const float* __restrict__ in,
                                              float* __restrict__ out) {
  unsigned i = GTID;
  float x = in[i];
  // LEAK c|a: whether the store happens depends on the secret (predicated STG
  // or, as nvcc emits it, a secret-guarded EXIT before the store)
  if (x > 0.0f) out[i] = x * 7.0f;  // LEAK-LINE
}

// 7 ---------------------------------------------------------------------------
extern "C" __global__ void leak_load_guarded(const float* __restrict__ in,
                                             const float* __restrict__ other,
                                             float* __restrict__ out) {
  unsigned i = GTID;
  float x = in[i];
  float v = 1.0f;
  // LEAK b|a: whether a global load is issued depends on the secret (sm_90a:
  // predicated LDG; sm_80: a secret branch around it)
  if (x > 0.0f) v = other[i];  // LEAK-LINE
  out[i] = v + x;
}

// 8 ---------------------------------------------------------------------------
extern "C" __global__ void leak_ballot_branch(const float* __restrict__ in,
                                              float* __restrict__ out,
                                              float* __restrict__ out2) {
  unsigned i = GTID;
  float x = in[i];
  unsigned b = __ballot_sync(0xffffffffu, x > 0.0f);  // public op, secret data
  // LEAK a: the ballot of a secret predicate is still secret; branch on it
  if (b != 0u) {  // LEAK-LINE
    float acc = x;
#pragma unroll 1
    for (int k = 0; k < 48; ++k) acc = __sinf(acc) + 1.0f;
    out[i] = acc;
  } else {
    out2[i] = x;
  }
}

// 9 ---------------------------------------------------------------------------
extern "C" __global__ void leak_ieee_fdiv(const float* __restrict__ a,
                                          const float* __restrict__ b,
                                          float* __restrict__ out) {
  unsigned i = GTID;
  // LEAK d: IEEE-correct division has a slow-path subroutine taken for
  // denormal / huge operands (MUFU.RCP fast path + FCHK + CALL slow path)
  out[i] = a[i] / b[i];  // LEAK-LINE
}

// 10 --------------------------------------------------------------------------
extern "C" __global__ void leak_ieee_sqrtf(const float* __restrict__ a,
                                           float* __restrict__ out) {
  unsigned i = GTID;
  // LEAK d: IEEE sqrtf (no fast-math) = MUFU.RSQ + branch to a slow path for
  // denormal / special inputs
  out[i] = sqrtf(a[i]);  // LEAK-LINE
}

// 11 --------------------------------------------------------------------------
extern "C" __global__ void leak_atomic_secret_addr(const int* __restrict__ val,
                                                   unsigned* __restrict__ hist) {
  unsigned i = GTID;
  int v = val[i];
  // LEAK b: atomic target address depends on the secret (histogram)
  atomicAdd(&hist[v & 255], 1u);  // LEAK-LINE
}

// 12 --------------------------------------------------------------------------
// Attention-style key loop over a PUBLIC number of key blocks, but it stops as
// soon as the loaded mask says the rest of the row is fully masked.
extern "C" __global__ void leak_break_masked_row(const int* __restrict__ mask,
                                                 const float* __restrict__ s,
                                                 float* __restrict__ out,
                                                 int nblocks) {
  unsigned i = GTID;
  float acc = 0.0f;
#pragma unroll 1
  for (int kb = 0; kb < nblocks; ++kb) {
    int m = mask[blockIdx.x * nblocks + kb];
    // LEAK a: loop exit depends on a loaded mask word
    if (m == 0) break;  // LEAK-LINE
    acc += __expf(s[kb * blockDim.x + threadIdx.x]);
  }
  out[i] = acc;
}

// 13 --------------------------------------------------------------------------
extern "C" __global__ void leak_cp_async_secret_src(const int* __restrict__ idx,
                                                    const float4* __restrict__ g,
                                                    float* __restrict__ out) {
  __shared__ float4 buf[256];
  unsigned i = GTID;
  int j = idx[i];
  const float4* src = g + (j & 1023);
  unsigned saddr = (unsigned)__cvta_generic_to_shared(&buf[threadIdx.x & 255]);
  // LEAK b: async global->shared copy whose SOURCE address is secret
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" :: "r"(saddr), "l"(src) : "memory");  // LEAK-LINE
  asm volatile("cp.async.commit_group;\n" ::: "memory");
  asm volatile("cp.async.wait_group 0;\n" ::: "memory");
  __syncthreads();
  float4 r = buf[(threadIdx.x ^ 1) & 255];
  out[i] = r.x + r.y + r.z + r.w;
}

// 14 --------------------------------------------------------------------------
extern "C" __global__ void leak_smem_roundtrip_bound(const int* __restrict__ lens,
                                                     const float* __restrict__ v,
                                                     float* __restrict__ out) {
  __shared__ int s_len;
  if (threadIdx.x == 0) s_len = lens[blockIdx.x];  // secret -> shared
  __syncthreads();
  int n = s_len;  // read back: still secret (loaded from shared memory)
  float acc = 0.0f;
  // LEAK a: loop bound read back from shared memory
#pragma unroll 1
  for (int k = 0; k < n; ++k) {  // LEAK-LINE
    acc = fmaf(acc, 0.75f, v[k * blockDim.x + threadIdx.x]);
  }
  out[GTID] = acc;
}

// 15 --------------------------------------------------------------------------
extern "C" __global__ void leak_local_array_index(const float* __restrict__ in,
                                                  const int* __restrict__ idx,
                                                  float* __restrict__ out) {
  unsigned i = GTID;
  // 256 entries: with 16 (even `volatile`) or 64 entries nvcc -O3 keeps the
  // array in registers and lowers arr[j & mask] into a constant-time chain of
  // predicated MOVs (no local memory) -- see clean_small_array_select.
  float arr[256];
#pragma unroll
  for (int k = 0; k < 256; ++k) arr[k] = in[i * 256 + k] * (1.0f + k);
  int j = idx[i];
  // LEAK b: dynamically indexed private array lives in local memory, so the
  // LDL address depends on the secret index
  out[i] = arr[j & 255];  // LEAK-LINE
}

// 16 --------------------------------------------------------------------------
extern "C" __global__ void leak_atomic_guarded(const float* __restrict__ in,
                                               float* __restrict__ sum) {
  float x = in[GTID];
  // LEAK c|a: atomic side effect only when the secret predicate holds
  if (x > 1.0f) atomicAdd(sum, x);  // LEAK-LINE
}

// 17 --------------------------------------------------------------------------
// Looks like a clean select in the source, but nvcc -O3 turns
// `x > 0 ? a[i] : b[i]` into SEL of the two POINTERS on the secret predicate
// and a single LDG from the selected address (sm_80 and sm_90a, nvcc 13.0).
// (Split into `va = a[i], vb = b[i]; x>0 ? va : vb` it instead becomes a
// `@!P0 LDG` -- also a leak.) The auditor must work on SASS, not source.
extern "C" __global__ void leak_select_sunk_load(const float* __restrict__ in,
                                                 const float* __restrict__ a,
                                                 const float* __restrict__ b,
                                                 float* __restrict__ out) {
  unsigned i = GTID;
  float x = in[i];
  // LEAK b: compiler-introduced secret-dependent load address (SEL ptr; LDG)
  out[i] = x > 0.0f ? a[i] : b[i];  // LEAK-LINE
}

// 18 --------------------------------------------------------------------------
// TMA (cp.async.bulk.tensor) with a tile coordinate read from memory: the
// copy engine fetches a secret-dependent tile. sm_90a only (UTMALDG).
#include "tma_common.cuh"
extern "C" __global__ void leak_tma_secret_coord(const __grid_constant__ CUtensorMap tmap,
                                                 const int* __restrict__ rows,
                                                 float* __restrict__ out) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  CORPUS_TMA_SHARED_TILE(tile, bar, s_tile, s_bar);
  const int row = rows[blockIdx.x] & 1023;  // secret
  if (threadIdx.x == 0) {
    // LEAK b [sm_90a]: TMA tile coordinate from a secret
    corpus_tma_load(s_tile, s_bar, tmap, row);  // LEAK-LINE
  }
  __syncthreads();
  corpus_mbarrier_wait(s_bar);
  out[GTID] = tile[threadIdx.x & 255];
#else
  out[GTID] = static_cast<float>(rows[0]);
#endif
}

// 19 --------------------------------------------------------------------------
// Texture fetches are memory reads: coordinates, LOD, gradients and the
// texture handle are addresses; the texel read is secret. (The generic opcode
// table took only the first destination, RZ, as written and read the
// coordinates as data: none of 19-25 was flagged.)
extern "C" __global__ void leak_tex_fetch_secret_index(cudaTextureObject_t t,
                                                       const int* __restrict__ idx,
                                                       float* __restrict__ out) {
  unsigned i = GTID;
  // LEAK b: tex1Dfetch (TLD) at a secret element index (one line: nvcc
  // gives the fetch the line of the instruction before it)
  out[i] = tex1Dfetch<float>(t, idx[i] & 4095);  // LEAK-LINE
}

// 20 --------------------------------------------------------------------------
extern "C" __global__ void leak_tex2d_secret_coord(cudaTextureObject_t t,
                                                   const float* __restrict__ u,
                                                   float* __restrict__ out) {
  unsigned i = GTID;
  // LEAK b: filtered 2-D fetch (TEX) at a secret coordinate
  out[i] = tex2D<float>(t, u[i], 0.5f);  // LEAK-LINE
}

// 21 --------------------------------------------------------------------------
extern "C" __global__ void leak_tex_gather_secret_coord(cudaTextureObject_t t,
                                                        const float* __restrict__ u,
                                                        float* __restrict__ out) {
  unsigned i = GTID;
  // LEAK b: four-texel gather (TLD4) at a secret coordinate
  const float4 r = tex2Dgather<float4>(t, 0.25f, u[i], 0);  // LEAK-LINE
  out[i] = r.x + r.y + r.z + r.w;
}

// 22 --------------------------------------------------------------------------
extern "C" __global__ void leak_tex_grad_secret(cudaTextureObject_t t,
                                                const float* __restrict__ g,
                                                float* __restrict__ out) {
  unsigned i = GTID;
  // LEAK b: explicit-gradient fetch (TXD): the gradient picks the mip level
  out[i] = tex2DGrad<float>(t, 0.25f, 0.5f, make_float2(g[i], 0.0f), make_float2(0.0f, 1.0f));  // LEAK-LINE
}

// 23 --------------------------------------------------------------------------
extern "C" __global__ void leak_tex_lod_secret(cudaTextureObject_t t,
                                               const float* __restrict__ lod,
                                               float* __restrict__ out) {
  unsigned i = GTID;
  // LEAK b: explicit-LOD fetch (TEX.LL): the LOD picks the mip level
  out[i] = tex2DLod<float>(t, 0.25f, 0.5f, lod[i]);  // LEAK-LINE
}

// 24 --------------------------------------------------------------------------
extern "C" __global__ void leak_tex_secret_handle(const cudaTextureObject_t* __restrict__ ts,
                                                  float* __restrict__ out) {
  // LEAK b: the texture object is read from memory (at a public index), so
  // it is secret (sm_80: TLD.B with the handle in a register; sm_90a: R2UR
  // into the uniform handle operand)
  out[threadIdx.x] = tex1Dfetch<float>(ts[blockIdx.x & 3], (int)threadIdx.x);  // LEAK-LINE
}

// 25 --------------------------------------------------------------------------
extern "C" __global__ void leak_tex_texel_branch(cudaTextureObject_t t,
                                                 float* __restrict__ out,
                                                 float* __restrict__ out2) {
  unsigned i = GTID;
  const float v = tex1Dfetch<float>(t, (int)i);  // public address, secret texel
  // LEAK a: branch on a texel
  if (v > 0.0f) {  // LEAK-LINE
    float acc = v;
#pragma unroll 1
    for (int k = 0; k < 64; ++k) acc = __sinf(acc) * 1.0001f + v;
    out[i] = acc;
  } else {
    float acc = -v;
#pragma unroll 1
    for (int k = 0; k < 32; ++k) acc = __cosf(acc) * 0.999f - v;
    out2[i] = acc;
  }
}

// 26 --------------------------------------------------------------------------
// Surface stores and loads: the bracket names a group of coordinate
// registers ([R4] is x in R4 and y in R5 for .2D) and the handle follows the
// data. Only the bracket's first register was checked, and the handle was
// read as data: 26-28 were not flagged.
extern "C" __global__ void leak_surf_write_secret_row(cudaSurfaceObject_t s,
                                                      const int* __restrict__ rows,
                                                      float* __restrict__ out) {
  // LEAK b: surface store (SUST) at a secret y coordinate
  surf2Dwrite(1.0f, s, (int)threadIdx.x * 4, rows[GTID] & 255);  // LEAK-LINE
  out[GTID] = 0.0f;
}

// 27 --------------------------------------------------------------------------
extern "C" __global__ void leak_surf_read_secret_row(cudaSurfaceObject_t s,
                                                     const int* __restrict__ rows,
                                                     float* __restrict__ out) {
  // LEAK b: surface load (SULD) at a secret y coordinate
  out[GTID] = surf2Dread<float>(s, (int)threadIdx.x * 4, rows[GTID] & 255);  // LEAK-LINE
}

// 28 --------------------------------------------------------------------------
extern "C" __global__ void leak_surf_secret_handle(const cudaSurfaceObject_t* __restrict__ ss,
                                                   float* __restrict__ out) {
  // LEAK b: the surface object is read from memory (at a public index), so
  // it is secret (sm_80: SUST.B with the handle in a register after the data)
  surf1Dwrite(2.0f, ss[blockIdx.x & 3], (int)threadIdx.x * 4);  // LEAK-LINE
  out[GTID] = 0.0f;
}

// 29 --------------------------------------------------------------------------
// The 64-bit memory descriptor of desc[UR6][R4.64] is UR6:UR7; createpolicy
// puts the L2 eviction policy in the upper register. Only UR6 was checked.
__device__ __forceinline__ uint64_t corpus_l2_policy(float fraction) {
  uint64_t pol;
  asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, %1;" : "=l"(pol) : "f"(fraction));
  return pol;
}
__device__ __forceinline__ float corpus_load_with_policy(const float* p, uint64_t pol) {
  float v;
  asm volatile("ld.global.L2::cache_hint.f32 %0, [%1], %2;" : "=f"(v) : "l"(p), "l"(pol));
  return v;
}
extern "C" __global__ void leak_cache_policy_secret(const float* __restrict__ in,
                                                    const float* __restrict__ frac,
                                                    float* __restrict__ out) {
  unsigned i = GTID;
  // LEAK b: the load's L2 cache policy (descriptor upper half) is secret
  out[i] = corpus_load_with_policy(in + i, corpus_l2_policy(frac[0]));  // LEAK-LINE
}

// 30 --------------------------------------------------------------------------
// 64-bit conversions read and write register pairs, and which type is the
// destination depends on the opcode: I2F.S64 (float <- s64) reads a pair and
// writes one register; F2I.F64 (s32 <- f64) reads a pair. The first type
// modifier was taken as the destination's and the second as the source's, so
// these read only the low register and the secret high word was lost.
extern "C" __global__ void leak_i2f_s64_high_word(const int* __restrict__ hi,
                                                  float* __restrict__ out) {
  const long long v = ((long long)hi[GTID] << 32) | threadIdx.x;  // secret high word only
  // LEAK b: I2F.S64 of the pair; the converted value indexes the store
  out[(int)(float)v & 1023] = 1.0f;  // LEAK-LINE
}

// 31 --------------------------------------------------------------------------
extern "C" __global__ void leak_f2i_f64_high_word(const int* __restrict__ hi,
                                                  float* __restrict__ out) {
  const double d = __hiloint2double(hi[GTID] & 0x3ff, (int)threadIdx.x);  // secret high word only
  // LEAK b: F2I.F64 of the pair; the converted value indexes the store
  out[(int)d & 1023] = 1.0f;  // LEAK-LINE
}

// 32 --------------------------------------------------------------------------
// A generic pointer that may point into the thread's stack (the address of a
// local array, made generic) and a generic store of a secret through it: a
// later LDL of the array must see the secret. Only STL wrote stack slots.
extern "C" __global__ void leak_generic_store_to_stack(const int* __restrict__ in,
                                                       int* __restrict__ g,
                                                       int* __restrict__ out, int sel) {
  int loc[8];
#pragma unroll
  for (int k = 0; k < 8; ++k) loc[k] = (int)threadIdx.x + k;
  int* p = sel ? &loc[sel & 7] : g;  // public choice of a generic pointer
  *p = in[GTID];                     // generic ST of a secret, may land in loc[]
  // LEAK b: loc[3] may hold the secret; it indexes the store
  out[loc[3] & 1023] = 1;  // LEAK-LINE
}

// 33 --------------------------------------------------------------------------
// A half-word store into a stack slot that held a secret: the other half
// keeps the secret. Every STL replaced the whole slot's taint.
extern "C" __global__ void leak_local_subword_overwrite(const int* __restrict__ in,
                                                        int* __restrict__ out) {
  volatile union { int i; short s[2]; } u;  // volatile: kept in local memory
  u.i = in[GTID];                // STL: secret, four bytes
  u.s[0] = (short)threadIdx.x;   // STL.U16: public, the low two bytes only
  // LEAK b: the high half read back is the secret's
  out[(u.i >> 16) & 1023] = 1;  // LEAK-LINE
}

// 34 --------------------------------------------------------------------------
// User __constant__ memory is constant bank 3 (nvcc 13, sm_80 and sm_90a):
// data the host wrote, as secret as global memory. Every constant bank was
// public (banks 0, 2 and 4 are: parameters, driver and compiler constants).
__constant__ int corpus_const_len;
__constant__ int corpus_const_perm[256];
extern "C" __global__ void leak_constant_loop_bound(const float* __restrict__ v,
                                                    float* __restrict__ out) {
  float acc = 0.0f;
  // LEAK a: trip count read from __constant__ memory (c[0x3][...])
#pragma unroll 1
  for (int k = 0; k < corpus_const_len; ++k) {  // LEAK-LINE
    acc = fmaf(acc, 0.5f, v[k * blockDim.x + threadIdx.x]);
  }
  out[GTID] = acc;
}

// 35 --------------------------------------------------------------------------
extern "C" __global__ void leak_constant_table_index(float* __restrict__ out) {
  // LEAK b: a __constant__ table entry (read at a public index) indexes the store
  out[corpus_const_perm[threadIdx.x & 255] & 1023] = 1.0f;  // LEAK-LINE
}

// 36 --------------------------------------------------------------------------
// Calls into routines outside the kernel: printf (vprintf) and malloc / free
// are CALL.ABS through an address in constant bank 4. What they run, and for
// how long, is not in the audited SASS. Such calls were not findings.
#include <cstdio>
extern "C" __global__ void leak_printf_call(const float* __restrict__ in,
                                            float* __restrict__ out) {
  out[GTID] = in[GTID] * 2.0f;
  // LEAK d: vprintf, outside the kernel (its arguments here are public)
  printf("block %d thread %d\n", (int)blockIdx.x, (int)threadIdx.x);  // LEAK-LINE
}

// 37 --------------------------------------------------------------------------
extern "C" __global__ void leak_device_malloc(const int* __restrict__ in,
                                              int* __restrict__ out) {
  // LEAK d: device-side malloc, outside the kernel
  int* p = static_cast<int*>(malloc(64));  // LEAK-LINE
  if (p == nullptr) return;
  p[threadIdx.x & 15] = in[GTID];
  out[GTID] = p[(threadIdx.x + 1) & 15];  // (no free(): a second call, a second finding)
}

// 38 --------------------------------------------------------------------------
// prefetch.global.L2 is CCTL at an address: a memory operation (rule b). It
// was flagged, but as a control transfer (rule a) with "target is secret".
extern "C" __global__ void leak_prefetch_secret_addr(const int* __restrict__ idx,
                                                     const float* __restrict__ tbl,
                                                     float* __restrict__ out) {
  // LEAK b: L2 prefetch of a secret-indexed line
  asm volatile("prefetch.global.L2 [%0];" ::"l"(tbl + (idx[GTID] & 4095)));  // LEAK-LINE
  out[GTID] = 0.0f;
}

// 39 --------------------------------------------------------------------------
// Lock-ins: red-team cases that were already flagged, kept so they stay so.
extern "C" __global__ void leak_ldmatrix_secret_row(const int* __restrict__ rows,
                                                    float* __restrict__ out) {
  __shared__ __align__(16) uint16_t s[64 * 64];
  for (int k = threadIdx.x; k < 64 * 64; k += blockDim.x) s[k] = static_cast<uint16_t>(k);
  __syncthreads();
  const unsigned a = static_cast<unsigned>(__cvta_generic_to_shared(&s[(rows[GTID] & 63) * 64]));
  unsigned r0, r1, r2, r3;
  // LEAK b: ldmatrix (LDSM) of a secret row
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];" : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(a));  // LEAK-LINE
  out[GTID] = static_cast<float>(r0 + r1 + r2 + r3);
}

// 40 --------------------------------------------------------------------------
extern "C" __global__ void leak_nanosleep_secret(const int* __restrict__ in,
                                                 float* __restrict__ out) {
  // LEAK a: the sleep time is secret (NANOSLEEP R)
  __nanosleep(static_cast<unsigned>(in[GTID]) & 1023u);  // LEAK-LINE
  out[GTID] = 0.0f;
}

// 41 --------------------------------------------------------------------------
// red.async (REDAS, sm_90a) is in no opcode table; its bracket operand makes
// it a memory operation all the same.
extern "C" __global__ void leak_red_async_secret_addr(const int* __restrict__ idx,
                                                      float* __restrict__ out) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  __shared__ __align__(8) uint64_t bar;
  __shared__ unsigned s[256];
  const unsigned b = static_cast<unsigned>(__cvta_generic_to_shared(&bar));
  const unsigned a = static_cast<unsigned>(__cvta_generic_to_shared(&s[idx[GTID] & 255]));
  // LEAK b [sm_90a]: asynchronous shared-memory reduction at a secret address
  asm volatile("red.async.relaxed.cluster.shared::cluster.mbarrier::complete_tx::bytes.add.u32 [%0], 1, [%1];" ::"r"(a), "r"(b) : "memory");  // LEAK-LINE
  out[GTID] = 0.0f;
#else
  out[GTID] = static_cast<float>(idx[0]);
#endif
}
