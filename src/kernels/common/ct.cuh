// Constant-time primitives: every site in a kernel that handles a secret
// value (anything loaded from Q, K, V or the length arrays) goes through one
// of these, so the secret-handling sites are visible by name and their
// compiled form is fixed by inline PTX rather than left to the optimiser.
//
// Each primitive states its invariant. Common to all: the instruction
// sequence, its latency and any memory access are the same for every value
// of the operands. None of them branches, and none touches memory.
#pragma once
#include <cstdint>

namespace dhp::ct {

// An all-ones (true) or all-zeros (false) 32-bit word: the only boolean form a
// secret condition takes when it must outlive one instruction.
using Mask = uint32_t;

// ct_mask_lt: a < b as a Mask. Invariant: a compare and a select of two
// constants (ISETP + SEL), no branch. Plain C++ so that constant operands
// fold into immediates; the SASS audit checks the compiled form.
__device__ __forceinline__ Mask ct_mask_lt(int32_t a, int32_t b) { return a < b ? ~0u : 0u; }

// ct_mask_eq_f: x == y (IEEE: NaN is unequal to everything) as a Mask.
// Invariant: one `set` instruction.
__device__ __forceinline__ Mask ct_mask_eq_f(float x, float y) {
  Mask m;
  asm("set.eq.u32.f32 %0, %1, %2;" : "=r"(m) : "f"(x), "f"(y));
  return m;
}

// ct_mask_and: both masks true. Invariant: bitwise AND.
__device__ __forceinline__ Mask ct_mask_and(Mask a, Mask b) { return a & b; }

// ct_mask_not: the complement. Invariant: bitwise NOT.
__device__ __forceinline__ Mask ct_mask_not(Mask a) { return ~a; }

// ct_and_mask: x where m is true, 0 where false, bit by bit (m may mix
// halves, e.g. 0x0000FFFF keeps the low 16-bit element of a pair).
// Invariant: one LOP.
__device__ __forceinline__ uint32_t ct_and_mask(Mask m, uint32_t x) { return x & m; }

// ct_select_bits: m ? a : b on raw 32-bit words. Invariant: one LOP3
// bit-select; both operands are always evaluated.
__device__ __forceinline__ uint32_t ct_select_bits(Mask m, uint32_t a, uint32_t b) {
  uint32_t d;
  asm("lop3.b32 %0, %1, %2, %3, 0xE4;" : "=r"(d) : "r"(a), "r"(b), "r"(m));
  return d;
}

// ct_select: m ? a : b on floats. Invariant: as ct_select_bits.
__device__ __forceinline__ float ct_select(Mask m, float a, float b) {
  return __uint_as_float(ct_select_bits(m, __float_as_uint(a), __float_as_uint(b)));
}

// ct_select_le: (i <= lim) ? a : b. Invariant: compiles to one compare into
// a predicate register and one FSEL; the predicate never guards a branch or
// a memory access. Written in C++ rather than PTX so that compile-time `i`
// folds into an immediate operand (the SASS audit checks the result).
__device__ __forceinline__ float ct_select_le(int32_t i, int32_t lim, float a, float b) {
  return i <= lim ? a : b;
}

// ct_select_eq_f: (x == y) ? a : b, IEEE equality (NaN compares unequal).
// Invariant: setp + selp, as ct_select_le.
__device__ __forceinline__ float ct_select_eq_f(float x, float y, float a, float b) {
  float d;
  asm("{\n\t.reg .pred p;\n\tsetp.eq.f32 p, %1, %2;\n\tselp.f32 %0, %3, %4, p;\n\t}"
      : "=f"(d)
      : "f"(x), "f"(y), "f"(a), "f"(b));
  return d;
}

// ct_min / ct_max on signed 32-bit integers. Invariant: one IMNMX.
__device__ __forceinline__ int32_t ct_min(int32_t a, int32_t b) {
  int32_t d;
  asm("min.s32 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
}
__device__ __forceinline__ int32_t ct_max(int32_t a, int32_t b) {
  int32_t d;
  asm("max.s32 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
}

// ct_clamp: lo <= result <= hi (requires lo <= hi). Invariant: two IMNMX.
// Used to bring secret lengths into [0, S_max] without validating them.
__device__ __forceinline__ int32_t ct_clamp(int32_t x, int32_t lo, int32_t hi) {
  return ct_min(ct_max(x, lo), hi);
}

// ct_column_mask(rel): bit i (0 <= i < 32) set iff 8*(i/2) + i%2 <= rel --
// which of a thread's 32 accumulator columns of one row (16 column blocks of
// 8, two columns each, in register order) lie at or left of column offset
// rel. Arithmetic only: the count of such columns is clamped to [0, 32] and
// `shl.b32` by 32 gives 0, so no branch and no out-of-range shift.
__device__ __forceinline__ uint32_t ct_column_mask(int32_t rel) {
  const int32_t lim = rel + 1;  // columns with offset < lim
  int32_t count = 2 * (lim >> 3) + ct_min(lim & 7, 2);
  count = ct_clamp(count, 0, 32);
  uint32_t bit;
  asm("shl.b32 %0, %1, %2;" : "=r"(bit) : "r"(1u), "r"(count));
  return bit - 1u;
}

// ct_select_bit: bit i of mask ? a : b, for a compile-time i. Invariant: in
// unrolled code ptxas turns a word of these into R2P (7 predicates per
// instruction) + one FSEL each -- no branch, no memory access on the bit
// (the SASS audit checks the result).
__device__ __forceinline__ float ct_select_bit(uint32_t mask, int i, float a, float b) {
  return (mask >> i) & 1u ? a : b;
}


// ct_fmax: IEEE maxNum (a NaN operand is ignored unless both are NaN).
// Invariant: one FMNMX.
__device__ __forceinline__ float ct_fmax(float a, float b) {
  float d;
  asm("max.f32 %0, %1, %2;" : "=f"(d) : "f"(a), "f"(b));
  return d;
}

// ct_exp2: 2^x by MUFU.EX2. Invariant: fixed latency for every x (no slow
// path); subnormal results flush to zero. Max relative error about 2^-22
// (PTX ISA, ex2.approx.ftz.f32); ex2(-inf) = +0, ex2(NaN) = NaN.
__device__ __forceinline__ float ct_exp2(float x) {
  float d;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(d) : "f"(x));
  return d;
}

// ct_rcp: 1/x by MUFU.RCP. Invariant: fixed latency; no IEEE division and
// so no slow-path subroutine. Max error 1 ulp (PTX ISA, rcp.approx.ftz.f32);
// rcp(0) = +inf, which callers replace by select.
__device__ __forceinline__ float ct_rcp(float x) {
  float d;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(d) : "f"(x));
  return d;
}

// ct_log2: log2(x) by MUFU.LG2. Invariant: fixed latency; max absolute error
// about 2^-22 (PTX ISA, lg2.approx.ftz.f32); log2(0) = -inf.
__device__ __forceinline__ float ct_log2(float x) {
  float d;
  asm("lg2.approx.ftz.f32 %0, %1;" : "=f"(d) : "f"(x));
  return d;
}

}  // namespace dhp::ct
