// Self-checks of the float64 reference (src/reference/reference.cpp). The GPU
// tests trust the reference, so it is checked here against hand-computed
// values and against independent restatements of the semantics.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "reference/reference.hpp"

namespace {

using dhp::ref::Problem;
using Vec = std::vector<double>;
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

size_t q_size(const Problem& p) { return size_t(p.batch * p.seqlen_q * p.heads_q * p.head_dim); }
size_t kv_size(const Problem& p) { return size_t(p.batch * p.seqlen_k * p.heads_kv * p.head_dim); }
size_t qi(const Problem& p, int64_t b, int64_t i, int64_t h) {  // row offset in q / o
  return size_t(((b * p.seqlen_q + i) * p.heads_q + h) * p.head_dim);
}
size_t ki(const Problem& p, int64_t b, int64_t j, int64_t h) {  // row offset in k / v
  return size_t(((b * p.seqlen_k + j) * p.heads_kv + h) * p.head_dim);
}
size_t li(const Problem& p, int64_t b, int64_t h, int64_t i) {  // offset in lse
  return size_t((b * p.heads_q + h) * p.seqlen_q + i);
}

struct Out {
  Vec o, lse;
};
// Outputs start as garbage so that a row the reference forgets to write shows.
Out run(const Problem& p, const Vec& q, const Vec& k, const Vec& v) {
  Out r{Vec(q_size(p), 12345.0), Vec(size_t(p.batch * p.heads_q * p.seqlen_q), 777.0)};
  dhp::ref::attention(p, q.data(), k.data(), v.data(), r.o.data(), r.lse.data());
  return r;
}

// Fresh random data each run; the seed is printed (SCOPED_TRACE) on failure.
struct Rng {
  uint32_t seed = std::random_device{}();
  std::mt19937 gen{seed};
  std::string trace() const { return "seed=" + std::to_string(seed); }
  Vec normal(size_t n) {
    std::normal_distribution<double> d(0.0, 1.0);
    Vec x(n);
    for (auto& e : x) e = d(gen);
    return x;
  }
  // Lengths over [-2, S + 2] so the clamp is exercised at both ends.
  std::vector<int32_t> lens(int64_t B, int64_t S) {
    std::uniform_int_distribution<int32_t> d(-2, int32_t(S) + 2);
    std::vector<int32_t> l(size_t(B), 0);
    for (auto& e : l) e = d(gen);
    return l;
  }
};

int64_t len_of(const std::vector<int32_t>& l, int64_t b, int64_t S) {
  return l.empty() ? S : dhp::ref::clamp_length(l[size_t(b)], S);
}

void expect_empty_row(const Problem& p, const Out& r, int64_t b, int64_t i, int64_t h) {
  for (int64_t d = 0; d < p.head_dim; ++d) EXPECT_EQ(r.o[qi(p, b, i, h) + d], 0.0);
  EXPECT_EQ(r.lse[li(p, b, h, i)], -kInf) << "b=" << b << " i=" << i << " h=" << h;
}

// (a) D=2, S=2, scale 0.5: scores of query 0 are {0, ln 3} -> weights {1/4, 3/4};
// query 1 is orthogonal to both keys -> weights {1/2, 1/2}.
TEST(Reference, HandComputed) {
  Problem p;
  p.seqlen_q = p.seqlen_k = 2;
  p.head_dim = 2;
  p.scale = 0.5;
  const Vec q = {1, 0, 0, 1}, k = {0, 0, 2 * std::log(3.0), 0}, v = {4, 0, 0, 8};
  Out r = run(p, q, k, v);
  const Vec o_full = {1, 6, 2, 4}, lse_full = {std::log(4.0), std::log(2.0)};
  for (size_t x = 0; x < 4; ++x) EXPECT_NEAR(r.o[x], o_full[x], 1e-12) << x;
  for (size_t x = 0; x < 2; ++x) EXPECT_NEAR(r.lse[x], lse_full[x], 1e-12) << x;

  p.causal = true;  // query 0 sees only key 0
  r = run(p, q, k, v);
  const Vec o_causal = {4, 0, 2, 4}, lse_causal = {0.0, std::log(2.0)};
  for (size_t x = 0; x < 4; ++x) EXPECT_NEAR(r.o[x], o_causal[x], 1e-12) << x;
  for (size_t x = 0; x < 2; ++x) EXPECT_NEAR(r.lse[x], lse_causal[x], 1e-12) << x;

  p.causal = false;
  p.lens_q = p.lens_k = {1};  // shared length 1: query 0 vs key 0 only, row 1 empty
  r = run(p, q, k, v);
  EXPECT_NEAR(r.o[0], 4.0, 1e-12);
  EXPECT_NEAR(r.o[1], 0.0, 1e-12);
  EXPECT_NEAR(r.lse[0], 0.0, 1e-12);
  expect_empty_row(p, r, 0, 1, 0);
}

// (b) Softmax weights sum to 1, so identical V rows come out unchanged.
TEST(Reference, UniformValueRows) {
  Rng rng;
  SCOPED_TRACE(rng.trace());
  int64_t rows_seen = 0;
  for (bool causal : {false, true}) {
    Problem p{2, 5, 7, 4, 2, 3, 0.7, causal, {}, {}};
    p.lens_q = rng.lens(2, 5);
    p.lens_k = rng.lens(2, 7);
    p.lens_q[1] = 5;  // batch entry 1 full: some rows always see keys
    p.lens_k[1] = 7;
    const Vec q = rng.normal(q_size(p)), k = rng.normal(kv_size(p)), u = rng.normal(3);
    Vec v(kv_size(p));
    for (size_t x = 0; x < v.size(); ++x) v[x] = u[x % 3];
    const Out r = run(p, q, k, v);
    for (int64_t b = 0; b < 2; ++b) {
      const int64_t Lq = len_of(p.lens_q, b, 5), Lk = len_of(p.lens_k, b, 7);
      for (int64_t h = 0; h < 4; ++h)
        for (int64_t i = 0; i < 5; ++i) {
          const bool sees_any = i < Lq && Lk > 0 && (!causal || i + Lk - Lq >= 0);
          if (!sees_any) {
            expect_empty_row(p, r, b, i, h);
            continue;
          }
          for (int64_t d = 0; d < 3; ++d) EXPECT_NEAR(r.o[qi(p, b, i, h) + d], u[size_t(d)], 1e-12);
          ++rows_seen;
        }
    }
  }
  EXPECT_GT(rows_seen, 0) << "no row saw a key: the check checked nothing";
}

// (c) Lengths on padded tensors == the same problem cut to those lengths.
TEST(Reference, LengthsEqualTruncation) {
  Rng rng;
  SCOPED_TRACE(rng.trace());
  for (bool shared : {false, true})
    for (bool causal : {false, true}) {
      const int64_t B = 4, Sq = shared ? 7 : 6, Sk = shared ? 7 : 9, H = 2, D = 4;
      Problem p{B, Sq, Sk, H, 1, D, 0.6, causal, rng.lens(B, Sq), {}};
      p.lens_k = shared ? p.lens_q : rng.lens(B, Sk);
      p.lens_q[0] = std::numeric_limits<int32_t>::max();  // clamps to S
      if (!shared) p.lens_k[1] = std::numeric_limits<int32_t>::min();  // clamps to 0
      const Vec q = rng.normal(q_size(p)), k = rng.normal(kv_size(p)), v = rng.normal(kv_size(p));
      const Out r = run(p, q, k, v);
      for (int64_t b = 0; b < B; ++b) {
        const int64_t Lq = len_of(p.lens_q, b, Sq), Lk = len_of(p.lens_k, b, Sk);
        SCOPED_TRACE("b=" + std::to_string(b) + " Lq=" + std::to_string(Lq) + " Lk=" + std::to_string(Lk));
        for (int64_t h = 0; h < H; ++h)
          for (int64_t i = Lq; i < Sq; ++i) expect_empty_row(p, r, b, i, h);
        if (Lq == 0) continue;
        if (Lk == 0) {
          for (int64_t h = 0; h < H; ++h)
            for (int64_t i = 0; i < Lq; ++i) expect_empty_row(p, r, b, i, h);
          continue;
        }
        Problem t{1, Lq, Lk, H, 1, D, 0.6, causal, {}, {}};  // truncated, no lengths
        Vec tq(q_size(t)), tk(kv_size(t)), tv(kv_size(t));
        for (int64_t i = 0; i < Lq; ++i)
          for (int64_t h = 0; h < H; ++h)
            for (int64_t d = 0; d < D; ++d) tq[qi(t, 0, i, h) + d] = q[qi(p, b, i, h) + d];
        for (int64_t j = 0; j < Lk; ++j)
          for (int64_t d = 0; d < D; ++d) {
            tk[ki(t, 0, j, 0) + d] = k[ki(p, b, j, 0) + d];
            tv[ki(t, 0, j, 0) + d] = v[ki(p, b, j, 0) + d];
          }
        const Out tr = run(t, tq, tk, tv);
        for (int64_t i = 0; i < Lq; ++i)
          for (int64_t h = 0; h < H; ++h) {
            for (int64_t d = 0; d < D; ++d)
              EXPECT_DOUBLE_EQ(r.o[qi(p, b, i, h) + d], tr.o[qi(t, 0, i, h) + d]);
            EXPECT_DOUBLE_EQ(r.lse[li(p, b, h, i)], tr.lse[li(t, 0, h, i)]);
          }
      }
    }
}

// (d) NaN stored in padding (and in causally masked keys) must be skipped,
// not multiplied by zero: outputs stay bit-identical to clean inputs.
TEST(Reference, PaddingGarbageIsIgnored) {
  Rng rng;
  SCOPED_TRACE(rng.trace());
  for (bool causal : {false, true}) {
    Problem p{3, 6, 8, 2, 2, 4, 0.5, causal, {6, 3, 1}, {8, 5, 2}};
    const Vec q = rng.normal(q_size(p)), k = rng.normal(kv_size(p)), v = rng.normal(kv_size(p));
    Vec gq = q, gk = k, gv = v;
    for (int64_t b = 0; b < 3; ++b)
      for (int64_t h = 0; h < 2; ++h) {
        for (int64_t i = p.lens_q[size_t(b)]; i < 6; ++i)
          for (int64_t d = 0; d < 4; ++d) gq[qi(p, b, i, h) + d] = kNaN;
        for (int64_t j = p.lens_k[size_t(b)]; j < 8; ++j)
          for (int64_t d = 0; d < 4; ++d) gk[ki(p, b, j, h) + d] = gv[ki(p, b, j, h) + d] = kNaN;
      }
    const Out clean = run(p, q, k, v), dirty = run(p, gq, gk, gv);
    for (size_t x = 0; x < clean.o.size(); ++x) ASSERT_EQ(clean.o[x], dirty.o[x]) << x;
    for (size_t x = 0; x < clean.lse.size(); ++x) ASSERT_EQ(clean.lse[x], dirty.lse[x]) << x;
    for (int64_t b = 0; b < 3; ++b)
      for (int64_t h = 0; h < 2; ++h)
        for (int64_t i = 0; i < 6; ++i) {
          if (i >= p.lens_q[size_t(b)]) expect_empty_row(p, dirty, b, i, h);
          else EXPECT_TRUE(std::isfinite(dirty.lse[li(p, b, h, i)]));
        }

    // L_k = 0: nothing is visible, whatever K and V hold.
    p.lens_k = {0, 0, 0};
    const Vec all_nan(kv_size(p), kNaN);
    const Out none = run(p, q, all_nan, all_nan);
    for (int64_t b = 0; b < 3; ++b)
      for (int64_t h = 0; h < 2; ++h)
        for (int64_t i = 0; i < 6; ++i) expect_empty_row(p, none, b, i, h);
  }
  // A NaN key hidden by the causal mask only reaches rows that see it.
  Problem p{1, 4, 4, 1, 1, 2, 1.0, true, {}, {}};
  const Vec q = rng.normal(q_size(p)), k0 = rng.normal(kv_size(p)), v = rng.normal(kv_size(p));
  Vec k = k0;
  k[ki(p, 0, 3, 0)] = kNaN;  // key 3: visible to query 3 only
  const Out r = run(p, q, k, v), r0 = run(p, q, k0, v);
  for (int64_t i = 0; i < 3; ++i) EXPECT_EQ(r.lse[size_t(i)], r0.lse[size_t(i)]) << i;
  EXPECT_TRUE(std::isnan(r.lse[3]));
}

// (e) Causal is bottom-right aligned: query i sees key j iff j <= i + L_k - L_q.
// q = 0 makes the weights uniform over the visible keys, and v[j] = {j, 1},
// so o = {mean of visible j, 1} and lse = log(#visible) reveal the mask.
TEST(Reference, CausalBottomRight) {
  struct Case {
    int64_t Sq, Sk;
    std::vector<int32_t> lq, lk;
    std::vector<int> visible;  // per query row: keys 0..n-1 visible (n = 0: none)
  };
  const Case cases[] = {
      {2, 5, {}, {}, {4, 5}},                // query 0 sees keys 0..3
      {5, 2, {}, {}, {0, 0, 0, 1, 2}},       // queries 0..2 see nothing
      {6, 6, {2}, {5}, {4, 5, 0, 0, 0, 0}},  // the same with lengths
      {6, 6, {5}, {2}, {0, 0, 0, 1, 2, 0}},
      {6, 6, {3}, {3}, {1, 2, 3, 0, 0, 0}},  // shared lengths: top-left == bottom-right
      {3, 4, {3}, {-7}, {0, 0, 0}},          // negative length clamps to 0
  };
  for (const Case& c : cases) {
    SCOPED_TRACE("Sq=" + std::to_string(c.Sq) + " Sk=" + std::to_string(c.Sk));
    Problem p{1, c.Sq, c.Sk, 1, 1, 2, 0.5, true, c.lq, c.lk};
    Vec q(q_size(p), 0.0), k(kv_size(p), 1.0), v(kv_size(p));
    for (int64_t j = 0; j < c.Sk; ++j) v[size_t(2 * j)] = double(j), v[size_t(2 * j + 1)] = 1.0;
    const Out r = run(p, q, k, v);
    for (int64_t i = 0; i < c.Sq; ++i) {
      const int n = c.visible[size_t(i)];
      if (n == 0) {
        expect_empty_row(p, r, 0, i, 0);
        continue;
      }
      EXPECT_NEAR(r.o[size_t(2 * i)], (n - 1) / 2.0, 1e-12) << "i=" << i;
      EXPECT_NEAR(r.o[size_t(2 * i + 1)], 1.0, 1e-12) << "i=" << i;
      EXPECT_NEAR(r.lse[size_t(i)], std::log(double(n)), 1e-12) << "i=" << i;
    }
  }
}

// (f) GQA: q head h uses kv head h / (H_q / H_kv), i.e. equals plain MHA on
// K/V with each kv head replicated for its group of consecutive q heads.
TEST(Reference, GqaEqualsReplicatedHeads) {
  Rng rng;
  SCOPED_TRACE(rng.trace());
  for (int64_t Hkv : {1, 2})
    for (bool causal : {false, true}) {
      Problem p{2, 3, 5, 4, Hkv, 3, 0.8, causal, rng.lens(2, 3), rng.lens(2, 5)};
      p.lens_q[0] = 3;  // batch entry 0 full, so the comparison is never all zeros
      p.lens_k[0] = 5;
      Problem m = p;
      m.heads_kv = 4;
      const Vec q = rng.normal(q_size(p)), k = rng.normal(kv_size(p)), v = rng.normal(kv_size(p));
      Vec mk(kv_size(m)), mv(kv_size(m));
      for (int64_t b = 0; b < 2; ++b)
        for (int64_t j = 0; j < 5; ++j)
          for (int64_t h = 0; h < 4; ++h)
            for (int64_t d = 0; d < 3; ++d) {
              mk[ki(m, b, j, h) + d] = k[ki(p, b, j, h / (4 / Hkv)) + d];
              mv[ki(m, b, j, h) + d] = v[ki(p, b, j, h / (4 / Hkv)) + d];
            }
      const Out g = run(p, q, k, v), r = run(m, q, mk, mv);
      for (size_t x = 0; x < g.o.size(); ++x) EXPECT_EQ(g.o[x], r.o[x]) << x;
      for (size_t x = 0; x < g.lse.size(); ++x) EXPECT_EQ(g.lse[x], r.lse[x]) << x;
    }
}

// (g) lse and o against a direct sum of exp(scale * q.k) (no max shift; the
// scores are small here), plus large scores where a naive sum would overflow.
TEST(Reference, LseMatchesDirectSum) {
  Rng rng;
  SCOPED_TRACE(rng.trace());
  Problem p{2, 4, 6, 2, 1, 5, 0.3, true, {4, 3}, {6, 2}};
  const Vec q = rng.normal(q_size(p)), k = rng.normal(kv_size(p)), v = rng.normal(kv_size(p));
  const Out r = run(p, q, k, v);
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t h = 0; h < 2; ++h)
      for (int64_t i = 0; i < p.lens_q[size_t(b)]; ++i) {
        const int64_t Lk = p.lens_k[size_t(b)], last = i + Lk - p.lens_q[size_t(b)];
        if (last < 0) continue;  // sees nothing; covered elsewhere
        double sum = 0.0;
        Vec num(5, 0.0);
        for (int64_t j = 0; j <= last && j < Lk; ++j) {
          double dot = 0.0;
          for (int64_t d = 0; d < 5; ++d) dot += q[qi(p, b, i, h) + d] * k[ki(p, b, j, 0) + d];
          const double e = std::exp(0.3 * dot);
          sum += e;
          for (int64_t d = 0; d < 5; ++d) num[size_t(d)] += e * v[ki(p, b, j, 0) + d];
        }
        EXPECT_NEAR(r.lse[li(p, b, h, i)], std::log(sum), 1e-12);
        for (int64_t d = 0; d < 5; ++d) EXPECT_NEAR(r.o[qi(p, b, i, h) + d], num[size_t(d)] / sum, 1e-12);
      }
  // Scores of 1000 (exp overflows double): lse = 1000 + log 2 exactly-ish.
  Problem big{1, 1, 2, 1, 1, 1, 1.0, false, {}, {}};
  const Out rb = run(big, {1000.0}, {1.0, 1.0}, {2.0, 4.0});
  EXPECT_NEAR(rb.lse[0], 1000.0 + std::log(2.0), 1e-9);
  EXPECT_NEAR(rb.o[0], 3.0, 1e-12);
}

// (h) A NaN in a visible Q row poisons that row only.
TEST(Reference, NanInVisibleQueryPropagates) {
  Rng rng;
  SCOPED_TRACE(rng.trace());
  Problem p{1, 4, 4, 2, 1, 3, 0.5, false, {}, {}};
  Vec q = rng.normal(q_size(p));
  const Vec k = rng.normal(kv_size(p)), v = rng.normal(kv_size(p));
  q[qi(p, 0, 2, 1) + 1] = kNaN;
  const Out r = run(p, q, k, v);
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t h = 0; h < 2; ++h) {
      const bool poisoned = i == 2 && h == 1;
      EXPECT_EQ(std::isnan(r.lse[li(p, 0, h, i)]), poisoned) << "i=" << i << " h=" << h;
      for (int64_t d = 0; d < 3; ++d) {
        const double x = r.o[qi(p, 0, i, h) + d];
        if (poisoned) EXPECT_TRUE(std::isnan(x)) << d;
        else EXPECT_TRUE(std::isfinite(x)) << "i=" << i << " h=" << h << " d=" << d;
      }
    }
}

// (i) The clamp into [0, S] used for secret lengths.
TEST(Reference, ClampLength) {
  using dhp::ref::clamp_length;
  constexpr int64_t kMax = std::numeric_limits<int32_t>::max();
  constexpr int64_t kMin = std::numeric_limits<int32_t>::min();
  EXPECT_EQ(clamp_length(-1, 10), 0);
  EXPECT_EQ(clamp_length(kMin, 10), 0);
  EXPECT_EQ(clamp_length(0, 10), 0);
  EXPECT_EQ(clamp_length(1, 10), 1);
  EXPECT_EQ(clamp_length(7, 10), 7);
  EXPECT_EQ(clamp_length(10, 10), 10);
  EXPECT_EQ(clamp_length(11, 10), 10);
  EXPECT_EQ(clamp_length(kMax, 10), 10);
  EXPECT_EQ(clamp_length(kMax, int64_t{1} << 24), int64_t{1} << 24);
  EXPECT_EQ(clamp_length(kMin, int64_t{1} << 24), 0);
  EXPECT_EQ(clamp_length(5, 1), 1);
}

}  // namespace
