// The Hopper launcher's D = 64 tile height and D = 256 main loop, from the
// public shape and the SM count alone (launch.cuh, launch_by_shape, says
// why each is taken where it is). Host-only and pure, so that the CPU tests
// can check what a shape gets on a given GPU (tests/gpu/test_schedule.cu).
#pragma once

#include <cstdint>

#include "kernels/forward_args.hpp"

namespace dhp::sm90 {

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

}  // namespace dhp::sm90
