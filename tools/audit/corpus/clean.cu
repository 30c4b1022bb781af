// dhp-audit corpus: kernels that must audit CLEAN (no finding).
//
// Model: "secret" = any value loaded from memory (texture, surface and user
// __constant__ data included); "public" = kernel params, thread/block ids,
// immediates. Secrets may flow into arithmetic, selects,
// predicated ALU ops, shuffles and stores/loads at PUBLIC addresses, but never
// into branches, loop bounds, addresses, memory-op guards or variable-time
// routines. Each kernel's comment says why it is constant-time.
#include <cuda_runtime.h>
#include <cstdint>

#define GTID (blockIdx.x * blockDim.x + threadIdx.x)

// 1 select on a secret: compiles to FSEL, both operands always computed.
//   NOTE: `out[i] = x > 0 ? a[i] : b[i]` is NOT clean in SASS -- nvcc sinks the
//   b[i] load under the predicate (@!P0 LDG); see leak_select_sunk_load in
//   leaky.cu. Here both operands are also consumed unconditionally.
extern "C" __global__ void clean_select(const float* __restrict__ in,
                                        const float* __restrict__ a,
                                        const float* __restrict__ b,
                                        float* __restrict__ out,
                                        float* __restrict__ out2) {
  unsigned i = GTID;
  float x = in[i];
  float va = a[i], vb = b[i];  // public addresses
  out[i] = x > 0.0f ? va : vb;
  out2[i] = va + vb;           // keeps both loads unconditional
}

// 2 predicated arithmetic: the secret predicate only gates an ALU op
//   (@P FADD or FSEL), never a memory op or branch.
extern "C" __global__ void clean_predicated_arith(const float* __restrict__ in,
                                                  const float* __restrict__ y,
                                                  float* __restrict__ out) {
  unsigned i = GTID;
  float x = in[i];
  float acc = y[i];
  float t = acc * 1.5f;
  if (x > 0.0f) acc += t;
  if (x < -1.0f) acc *= 0.5f;
  out[i] = acc;
}

// 3 loop with a PUBLIC bound (kernel parameter).
extern "C" __global__ void clean_public_loop(const float* __restrict__ v,
                                             float* __restrict__ out, int n) {
  float acc = 0.0f;
#pragma unroll 1
  for (int k = 0; k < n; ++k) acc = fmaf(acc, 0.5f, v[k * blockDim.x + threadIdx.x]);
  out[GTID] = acc;
}

// 4 warp-shuffle reduction of secrets: lane offsets are immediates.
extern "C" __global__ void clean_shfl_reduce(const float* __restrict__ in,
                                             float* __restrict__ out) {
  float x = in[GTID];
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);
  out[GTID] = x;  // every lane stores: no lane-id guard on a secret
}

// 5 shared-memory tree reduction with public (threadIdx / immediate) indices.
//   Guards `threadIdx.x < s` are public.
extern "C" __global__ void clean_smem_tree_reduce(const float* __restrict__ in,
                                                  float* __restrict__ out) {
  __shared__ float s[256];
  s[threadIdx.x] = in[GTID];
  __syncthreads();
#pragma unroll
  for (int st = 128; st > 0; st >>= 1) {
    if (threadIdx.x < st) s[threadIdx.x] += s[threadIdx.x + st];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[blockIdx.x] = s[0];
}

// 6 length masking by select inside a public-bound loop: the loaded length is
//   clamped and used ONLY in a comparison feeding a select.
extern "C" __global__ void clean_len_mask_select(const int* __restrict__ lens,
                                                 const float* __restrict__ v,
                                                 float* __restrict__ out, int nmax) {
  int len = lens[blockIdx.x];
  len = min(max(len, 0), nmax);
  float acc = 0.0f;
#pragma unroll 1
  for (int k = 0; k < nmax; ++k) {
    float e = v[k * blockDim.x + threadIdx.x];  // always loaded
    acc += (k < len) ? e : 0.0f;                 // masked by select
  }
  out[GTID] = acc;
}

// 7 approximate (fixed-latency) MUFU ops via inline PTX: no slow path.
extern "C" __global__ void clean_approx_ex2_rcp(const float* __restrict__ in,
                                                float* __restrict__ out) {
  float x = in[GTID];
  float e, r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(e) : "f"(x));
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(e + 1.0f));
  out[GTID] = e * r;
}

// 8 bounds guard on PUBLIC values only (ids and parameter n).
extern "C" __global__ void clean_bounds_guard(const float* __restrict__ in,
                                              float* __restrict__ out, int n) {
  if (threadIdx.x + blockIdx.x * blockDim.x < (unsigned)n) {
    out[GTID] = in[GTID] * 2.0f + 1.0f;
  }
}

// 9 fast-math intrinsics __fdividef and __expf: MUFU.RCP / MUFU.EX2 + fixed
//   arithmetic, no slow path (unlike IEEE '/' in leaky.cu).
extern "C" __global__ void clean_fast_intrinsics(const float* __restrict__ a,
                                                 const float* __restrict__ b,
                                                 float* __restrict__ out) {
  unsigned i = GTID;
  out[i] = __fdividef(__expf(a[i]), b[i] + 2.0f);
}

// 10 online-softmax style update: max / exp / rescale, all selects + MUFU.EX2
//    approx, public-bound loop. Mirrors the constant-time attention inner loop.
extern "C" __global__ void clean_online_softmax(const float* __restrict__ s,
                                                float* __restrict__ out, int nkeys) {
  float m = -1e30f, l = 0.0f;
#pragma unroll 1
  for (int k = 0; k < nkeys; ++k) {
    float x = s[k * blockDim.x + threadIdx.x];
    float mn = fmaxf(m, x);
    float c, p;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(c) : "f"((m - mn) * 1.4426950f));
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(p) : "f"((x - mn) * 1.4426950f));
    l = l * c + p;
    m = mn;
  }
  out[GTID] = l;
}

// 11 small private array with a secret index WITHOUT volatile: nvcc -O3 keeps
//    arr[] in registers and lowers arr[j & 15] into 16 compare + predicated MOV
//    pairs (constant time, no LDL/STL). Compiler-dependent: check_corpus.sh
//    reports the LDL/STL count so a regression is visible.
extern "C" __global__ void clean_small_array_select(const float* __restrict__ in,
                                                    const int* __restrict__ idx,
                                                    float* __restrict__ out) {
  unsigned i = GTID;
  float arr[16];
#pragma unroll
  for (int k = 0; k < 16; ++k) arr[k] = in[i * 16 + k] * (1.0f + k);
  out[i] = arr[idx[i] & 15];
}

// 12 TMA load at public coordinates, completion awaited with an mbarrier
//   try_wait spin loop: the loop's exit depends on when the copy lands (a
//   phase bit the hardware flips once the public byte count arrived), not on
//   any value. sm_90a only; dhp-audit treats mbarrier phase results as public
//   and requires the transaction count to be public.
#include "tma_common.cuh"
extern "C" __global__ void clean_tma_mbarrier_wait(const __grid_constant__ CUtensorMap tmap,
                                                   float* __restrict__ out) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  CORPUS_TMA_SHARED_TILE(tile, bar, s_tile, s_bar);
  if (threadIdx.x == 0) {
    corpus_tma_load(s_tile, s_bar, tmap, static_cast<int>(blockIdx.x) * 16);
  }
  __syncthreads();
  corpus_mbarrier_wait(s_bar);
  out[GTID] = tile[threadIdx.x & 255] * 2.0f;
#else
  out[GTID] = 0.0f;
#endif
}

// 13 a loop bound loaded through a pointer DECLARED PUBLIC for this kernel
//   (public-pointers.txt: parameter at byte offset 0). Clean only with the
//   declaration; without it dhp-audit must flag the loop (the corpus check
//   runs both ways). Models a library mode where lengths are public.
extern "C" __global__ void clean_declared_public_lengths(const int* __restrict__ public_lens,
                                                         const float* __restrict__ v,
                                                         float* __restrict__ out) {
  const int n = public_lens[blockIdx.x] & 1023;
  float acc = 0.0f;
#pragma unroll 1
  for (int k = 0; k < n; ++k) acc += v[k * blockDim.x + threadIdx.x];
  out[GTID] = acc;
}

// 14 texture fetches at public coordinates (thread id, immediates) with a
//    public handle (a parameter): the texels are secret but only stored.
extern "C" __global__ void clean_tex_public_coords(cudaTextureObject_t t,
                                                   float* __restrict__ out) {
  unsigned i = GTID;
  const float a = tex1Dfetch<float>(t, (int)i);
  const float b = tex2D<float>(t, 0.25f + (float)threadIdx.x, 0.5f);
  const float4 c = tex2Dgather<float4>(t, 0.25f, (float)blockIdx.x, 0);
  out[i] = a + b + c.x + c.w;
}

// 15 surface load and store at public coordinates with a public handle; the
//    value read is secret and only stored back.
extern "C" __global__ void clean_surf_public_coords(cudaSurfaceObject_t s,
                                                    float* __restrict__ out) {
  const float v = surf2Dread<float>(s, (int)threadIdx.x * 4, (int)blockIdx.x);
  surf2Dwrite(v * 2.0f, s, (int)threadIdx.x * 4, (int)blockIdx.x + 1);
  out[GTID] = v;
}

// 16 a load with an L2 cache policy made from an immediate fraction: the
//    descriptor (UR pair) is public.
extern "C" __global__ void clean_cache_policy_public(const float* __restrict__ in,
                                                     float* __restrict__ out) {
  uint64_t pol;
  asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(pol));
  float v;
  asm volatile("ld.global.L2::cache_hint.f32 %0, [%1], %2;" : "=f"(v) : "l"(in + GTID), "l"(pol));
  out[GTID] = v;
}

// 17 64-bit conversions of public values (ids) index memory; conversions of
//    secrets are only stored.
extern "C" __global__ void clean_conversions_64(const int* __restrict__ in,
                                                float* __restrict__ out,
                                                double* __restrict__ out2) {
  const long long v = ((long long)blockIdx.x << 32) | threadIdx.x;
  const double d = __hiloint2double((int)blockIdx.x & 0x3ff, (int)threadIdx.x);
  const long long s = ((long long)in[GTID] << 32) | threadIdx.x;
  out[(int)(float)v & 1023] = (float)s;
  out2[(int)d & 1023] = (double)s + __hiloint2double(in[GTID + 1], 0);
}

// 18 the same generic pointer into a local array, but the value stored
//    through it is public (the block id): loc[3] stays public.
extern "C" __global__ void clean_generic_store_to_stack(const int* __restrict__ in,
                                                        int* __restrict__ g,
                                                        int* __restrict__ out, int sel) {
  int loc[8];
#pragma unroll
  for (int k = 0; k < 8; ++k) loc[k] = (int)threadIdx.x + k;
  int* p = sel ? &loc[sel & 7] : g;
  *p = (int)blockIdx.x;
  out[loc[3] & 1023] = in[GTID];
}

// 19 both halves of the slot overwritten with public values (nvcc merges
//    them into one STL), so what is read back is public.
extern "C" __global__ void clean_local_subword_overwrite(const int* __restrict__ in,
                                                         int* __restrict__ out) {
  volatile union { int i; short s[2]; } u;
  u.i = in[GTID];
  u.s[0] = (short)threadIdx.x;
  u.s[1] = (short)(threadIdx.x >> 1);
  out[(u.i >> 16) & 1023] = 1;
}

// 20 __constant__ data (bank 3, secret) read at a public index and only
//    stored; the loop bound is a parameter.
__constant__ float corpus_const_weights[256];
extern "C" __global__ void clean_constant_public_index(const float* __restrict__ v,
                                                       float* __restrict__ out, int n) {
  float acc = 0.0f;
#pragma unroll 1
  for (int k = 0; k < n; ++k) acc = fmaf(acc, corpus_const_weights[k & 255], v[k * blockDim.x + threadIdx.x]);
  out[GTID] = acc + corpus_const_weights[threadIdx.x & 255];
}
