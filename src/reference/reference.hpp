// Float64 CPU reference of exactly the library's semantics. Used by the
// tests as the ground truth; deliberately simple (no tiling, no online
// softmax) so that it can be checked by reading.
#pragma once
#include <cstdint>
#include <vector>

namespace dhp::ref {

struct Problem {
  int64_t batch = 1, seqlen_q = 1, seqlen_k = 1, heads_q = 1, heads_kv = 1, head_dim = 64;
  double scale = 0.125;  // already resolved (default 1/sqrt(D) applied by the caller)
  bool causal = false;
  // Secret lengths as given to the library (before clamping). Empty = full
  // padded length. For the shared `seqlens` mode pass the same vector twice.
  std::vector<int32_t> lens_q, lens_k;
};

// q: [B, S_q, H_q, D], k/v: [B, S_k, H_kv, D], all contiguous (BSHD).
// o: [B, S_q, H_q, D] contiguous; lse: [B, H_q, S_q] (natural log).
// Rows i >= L_q and rows that see no key get o = 0 and lse = -inf.
// Key j is visible to query i iff j < L_k and (!causal || j <= i + L_k - L_q).
// NaN/Inf in inputs propagate through the arithmetic as IEEE dictates.
void attention(const Problem& p, const double* q, const double* k, const double* v, double* o,
               double* lse);

// Length after the library's clamp into [0, S].
int64_t clamp_length(int64_t len, int64_t S);

}  // namespace dhp::ref
