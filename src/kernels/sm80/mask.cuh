// Masking of score tiles. Key j is visible to query row i iff j <= lim(i),
// where lim(i) = min(L_k - 1, causal ? i + L_k - L_q : +inf). With secret
// lengths lim is secret and the mask is applied by select in every tile;
// with public lengths it is applied only in tiles the public structure says
// need it (partial last tile, causal diagonal).
#pragma once
#include <cmath>

#include "kernels/common/ct.cuh"

namespace dhp::sm80 {

// Per-thread row limits in two registers: row (mt, hh) of the thread,
// i = first_row + mt*16 + hh*8, sees key j iff
//   j <= min(key_last, diag + mt*16 + hh*8)
// with key_last = L_k - 1 and diag = first_row + L_k - L_q (causal) or
// key_last (not causal). Two registers rather than 2*MT: the key loop is
// register-bound.
template <int MT>
struct RowLimits {
  int32_t key_last, diag;

  __device__ __forceinline__ void init(int32_t first_row, int32_t L_q, int32_t L_k, bool causal) {
    key_last = L_k - 1;
    diag = causal ? first_row + L_k - L_q : key_last;  // `causal` is public
  }
};

// s[mt][nt][e]: accumulator fragment of a score tile; the thread's column
// for element e of n-tile nt is col0 + nt*8 + (e & 1), its row half e >> 1.
// Invisible scores become -inf (zero weight after exp2). HALVES = 1: only
// the first row half holds query rows (the Hopper kernel's half-row tiles,
// whose second half is never read), so only it is masked.
//
// select_word: the selects of visibility word w (16 column blocks) in rows
// mt0 <= mt < mt1, hh0 <= hh < hh1, column by column, so that each
// predicate (R2P, 7 per instruction) serves every row it is given: 1.1
// instead of 2 instructions per element for a compare + FSEL.
template <int MT, int NT>
__device__ __forceinline__ void select_word(float (&s)[MT][NT][4], uint32_t visible, int w, int mt0, int mt1, int hh0,
                                            int hh1) {
#pragma unroll
  for (int nt = 16 * w; nt < NT && nt < 16 * w + 16; ++nt)
#pragma unroll
    for (int e = 0; e < 2; ++e)
#pragma unroll
      for (int mt = mt0; mt < mt1; ++mt)
#pragma unroll
        for (int hh = hh0; hh < hh1; ++hh)
          s[mt][nt][2 * hh + e] =
              ct::ct_select_bit(visible, 2 * (nt - 16 * w) + e, s[mt][nt][2 * hh + e], -INFINITY);
}

template <int MT, int NT, int HALVES = 2>
__device__ __forceinline__ void mask_scores(float (&s)[MT][NT][4], int32_t col0,
                                            const RowLimits<MT>& rows) {
  const int32_t last_rel = rows.key_last - col0, diag_rel = rows.diag - col0;
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int hh = 0; hh < HALVES; ++hh) {
      // Visible iff (column offset) <= rel: compares against immediates.
      const int32_t rel = ct::ct_min(last_rel, diag_rel + mt * 16 + hh * 8);
#pragma unroll
      for (int w = 0; w < (NT + 15) / 16; ++w) select_word(s, ct::ct_column_mask(rel - 128 * w), w, mt, mt + 1, hh, hh + 1);
    }
}

// One row tile (MT = 1) whose two row halves have causal limits of their
// own, diag[hh] (key j visible iff j <= diag[hh] and j <= key_last): rows
// whose positions are not their indices (the Hopper decode kernel's packed
// rows, position row >> q_shift: sm90/consumer_view.cuh), so the halves'
// limits are not 8 apart.
template <int NT, int HALVES = 2>
__device__ __forceinline__ void mask_scores_halves(float (&s)[1][NT][4], int32_t col0, int32_t key_last,
                                                   const int32_t (&diag)[HALVES]) {
#pragma unroll
  for (int hh = 0; hh < HALVES; ++hh) {
    const int32_t rel = ct::ct_min(key_last - col0, diag[hh] - col0);
#pragma unroll
    for (int w = 0; w < (NT + 15) / 16; ++w) select_word(s, ct::ct_column_mask(rel - 128 * w), w, 0, 1, hh, hh + 1);
  }
}

// Without causal masking every row of the thread sees the same keys
// (j < L_k), so one visibility word per 16 column blocks serves all of its
// rows: each predicate feeds 2 * MT * HALVES selects instead of one row's,
// and the limits and words are made once instead of per row.
template <int MT, int NT, int HALVES = 2>
__device__ __forceinline__ void mask_scores_same_rows(float (&s)[MT][NT][4], int32_t col0, int32_t key_last) {
  const int32_t rel = key_last - col0;
#pragma unroll
  for (int w = 0; w < (NT + 15) / 16; ++w) select_word(s, ct::ct_column_mask(rel - 128 * w), w, 0, MT, 0, HALVES);
}

// Masks for the B fragments of V in one k-step of P*V: register b0 holds
// keys key0 and key0 + 1 (key0 = k-step start + 2t), b1 holds key0 + 8 and
// + 9, low half first. Padded keys (j >= L_k) are zeroed so that garbage
// there, NaN included, never meets the zero weight it gets (0 * NaN = NaN).
struct KeyMask {
  uint32_t b0, b1;

  // keys_left = L_k - key0 (of the k-step's first key): a per-tile value, so
  // that the compares below are against immediates and nothing loop
  // invariant is left for the compiler to hoist into registers.
  __device__ __forceinline__ void init(int32_t keys_left) {
    b0 = ct::ct_select_bits(0x0000FFFFu, ct::ct_mask_lt(0, keys_left), ct::ct_mask_lt(1, keys_left));
    b1 = ct::ct_select_bits(0x0000FFFFu, ct::ct_mask_lt(8, keys_left), ct::ct_mask_lt(9, keys_left));
  }
};

}  // namespace dhp::sm80
