// The Hopper launcher's D = 64 tile height and D = 256 main loop, from the
// public shape and the SM count alone (launch.cuh, launch_by_shape, says
// why each is taken where it is). Host-only and pure, so that the CPU tests
// can check what a shape gets on a given GPU (tests/gpu/test_schedule.cu).
#pragma once

#include <cstdint>

#include "kernels/forward_args.hpp"

namespace dhp::sm90 {

// The shape the launcher plans a call by. With a secret causal diagonal
// (separate length arrays: the offset L_k - L_q is secret) every query tile
// visits every key tile and masks by select (docs/threat-model.md), so its
// tiles weigh the same as without causal masking: tile shape, grid, tile
// order, schedule and V's copy are chosen as for a non-causal call
// (docs/perf-log.md, session 29). Only the plan: the kernel still gets the
// causal flag and masks by it. `as_causal` keeps the causal plan (A/B knob
// DHP_SM90_SECRET_DIAGONAL=causal, launch.cuh). Public fields only.
inline kernels::ForwardArgs planning_shape(const kernels::ForwardArgs& a, bool as_causal = false) {
  kernels::ForwardArgs s = a;
  if (a.causal && !a.causal_diagonal_public && !as_causal) s.causal = 0;
  return s;
}

// Query tiles of `rows` rows over the whole problem (public shape).
inline int64_t query_tiles(const kernels::ForwardArgs& a, int rows) {
  return (static_cast<int64_t>(a.seqlen_q) + rows - 1) / rows * a.heads_q * a.batch;
}

// 192, 128, 64 or 32 query rows (32: half-row tiles, only without secret
// lengths and where `half_rows_built`).
inline int d64_tile_rows(const kernels::ForwardArgs& a, bool secret_lengths, int sms, bool half_rows_built = true) {
  int rows = a.seqlen_q > 2048 || (!a.causal && a.seqlen_q >= 512) ? 192 : 128;
  if (a.seqlen_q < 2048 && 2 * query_tiles(a, 128) <= sms) rows = 64;
  if (rows == 64 && !secret_lengths && half_rows_built && query_tiles(a, 32) <= sms) rows = 32;
  return rows;
}

// D = 256 with one GEMM in flight and 128-key tiles (Sm90Traits, ONE_GEMM_)
// instead of the overlapped loop with 80-key tiles and two K/V stages:
// causal with S_k <= 1024, and S_k <= 512. Not with secret lengths (that
// kernel is not built: builds stay lean). Public shape only; never the batch.
inline bool d256_one_gemm(const kernels::ForwardArgs& a, bool secret_lengths) {
  return !secret_lengths && (a.seqlen_k <= 512 || (a.causal && a.seqlen_k <= 1024));
}

// The fewest CTAs that run `tiles` equal tiles in as many rounds as one CTA
// per SM would (ceil(tiles / sms)): 128 instead of 132 for 1 024, 2 048 or
// 4 096 tiles. The call lasts the same number of tile times; the SMs left
// out idle from the start instead of in the last round.
inline int64_t fewest_ctas_same_rounds(int64_t tiles, int sms) {
  const int64_t rounds = tiles > sms ? (tiles + sms - 1) / sms : 1;
  return (tiles + rounds - 1) / rounds;
}

// CTAs of the persistent grid (before the cap at the tile count): one per
// SM, but for D = 128 without causal masking the fewest with the same
// rounds. Measured +0.3 to +1.2 % on those rows on the H100 and the H200
// (their tiles are equal; the SMs left out leave the others power), while
// D = 64 / 256 and causal rows moved either way (docs/perf-log.md, sessions
// 19 and 25). `v_copy`: the call makes V's zero-padded copy (secret key
// lengths, sm90/padding_scrub.hpp), which runs beside the attention on the
// SMs such a grid leaves idle: D = 256 then takes the fewest CTAs too (+1.5 %
// net on the H100: the copy beside gained 4 %, the smaller grid cost its
// secret-length kernel 2.5 %). Not D = 64: its non-causal 192-row tiles end
// each head with a cheaper partial one, so the rounds argument does not hold
// (128 CTAs cost it 2.7 %, the copy beside gained 0.5 %: docs/perf-log.md,
// session 28). Public shape only; it never changes a tile's arithmetic.
inline int64_t persistent_ctas(const kernels::ForwardArgs& a, int64_t tiles, int sms, int head_dim,
                               bool v_copy = false) {
  return (head_dim == 128 || (v_copy && head_dim == 256)) && !a.causal ? fewest_ctas_same_rounds(tiles, sms) : sms;
}

}  // namespace dhp::sm90
