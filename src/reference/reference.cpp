// Float64 CPU reference: the ground truth the GPU kernels are tested against.
// It is written for reading, not speed: one query row at a time, two passes
// over the keys (max, then sum), no tiling and no online rescaling, so every
// line maps directly onto the semantics documented in reference.hpp and
// include/dhp/attention.h.
#include "reference/reference.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace dhp::ref {

int64_t clamp_length(int64_t len, int64_t S) {
  // The library clamps secret lengths into [0, S] instead of rejecting them
  // (rejecting would mean branching on a secret), so the reference does too.
  return std::min(std::max(len, int64_t{0}), S);
}

namespace {

// Length actually used for batch entry b: the given length clamped, or the
// full padded length when no lengths were given.
int64_t effective_length(const std::vector<int32_t>& lens, int64_t b, int64_t S) {
  return lens.empty() ? S : clamp_length(lens[static_cast<size_t>(b)], S);
}

}  // namespace

void attention(const Problem& p, const double* q, const double* k, const double* v, double* o,
               double* lse) {
  const int64_t B = p.batch, Sq = p.seqlen_q, Sk = p.seqlen_k;
  const int64_t Hq = p.heads_q, Hkv = p.heads_kv, D = p.head_dim;
  const int64_t group = Hq / Hkv;  // q heads per kv head (GQA / MQA)
  const double neg_inf = -std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();

  // Contiguous BSHD offsets.
  auto q_at = [&](int64_t b, int64_t i, int64_t h) { return q + ((b * Sq + i) * Hq + h) * D; };
  auto kv_off = [&](int64_t b, int64_t j, int64_t h) { return ((b * Sk + j) * Hkv + h) * D; };
  auto o_at = [&](int64_t b, int64_t i, int64_t h) { return o + ((b * Sq + i) * Hq + h) * D; };

  std::vector<double> s(static_cast<size_t>(Sk));  // scores of one row
  std::vector<char> visible(static_cast<size_t>(Sk));

  for (int64_t b = 0; b < B; ++b) {
    const int64_t Lq = effective_length(p.lens_q, b, Sq);
    const int64_t Lk = effective_length(p.lens_k, b, Sk);
    for (int64_t h = 0; h < Hq; ++h) {
      const int64_t hk = h / group;  // consecutive q heads share one kv head
      for (int64_t i = 0; i < Sq; ++i) {
        double* out = o_at(b, i, h);
        double* row_lse = lse ? lse + (b * Hq + h) * Sq + i : nullptr;

        // Visibility uses only lengths and indices. Causal is bottom-right
        // aligned: the last valid query sees every valid key.
        bool any = false;
        for (int64_t j = 0; j < Sk; ++j) {
          const bool vis = i < Lq && j < Lk && (!p.causal || j <= i + Lk - Lq);
          visible[static_cast<size_t>(j)] = vis;
          any = any || vis;
        }
        if (!any) {  // padded query row, or a row that sees no key
          std::fill(out, out + D, 0.0);
          if (row_lse) *row_lse = neg_inf;
          continue;
        }

        // Scores of visible keys only: masked keys are skipped, never
        // multiplied by zero, so NaN/Inf stored in padding cannot leak in.
        const double* qi = q_at(b, i, h);
        double m = neg_inf;
        bool saw_nan = false;
        for (int64_t j = 0; j < Sk; ++j) {
          if (!visible[static_cast<size_t>(j)]) continue;
          const double* kj = k + kv_off(b, j, hk);
          double dot = 0.0;
          for (int64_t d = 0; d < D; ++d) dot += qi[d] * kj[d];
          const double sj = p.scale * dot;
          s[static_cast<size_t>(j)] = sj;
          // std::max would silently drop a NaN depending on argument order;
          // a NaN score must poison the whole row, so track it explicitly.
          if (std::isnan(sj)) saw_nan = true;
          else if (sj > m) m = sj;
        }
        if (saw_nan) m = nan;

        // Plain IEEE arithmetic from here on: NaN (and inf - inf) propagate.
        double l = 0.0;
        std::fill(out, out + D, 0.0);
        for (int64_t j = 0; j < Sk; ++j) {
          if (!visible[static_cast<size_t>(j)]) continue;
          const double pj = std::exp(s[static_cast<size_t>(j)] - m);
          l += pj;
          const double* vj = v + kv_off(b, j, hk);
          for (int64_t d = 0; d < D; ++d) out[d] += pj * vj[d];
        }
        for (int64_t d = 0; d < D; ++d) out[d] /= l;
        if (row_lse) *row_lse = m + std::log(l);
      }
    }
  }
}

}  // namespace dhp::ref
