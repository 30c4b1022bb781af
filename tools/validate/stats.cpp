#include "stats.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>

namespace dhp::gates {

double welch_t(const Moments& a, const Moments& b) {
  if (a.n < 2 || b.n < 2) return 0.0;
  const double diff = a.mean - b.mean;
  const double se2 = a.variance() / a.n + b.variance() / b.n;
  if (se2 == 0.0) return diff == 0.0 ? 0.0 : std::copysign(std::numeric_limits<double>::infinity(), diff);
  return diff / std::sqrt(se2);
}

double quantile(std::vector<float> x, double q) {
  if (x.empty()) return 0.0;
  std::sort(x.begin(), x.end());
  const double pos = q * static_cast<double>(x.size() - 1);
  const size_t lo = static_cast<size_t>(pos);
  const size_t hi = std::min(lo + 1, x.size() - 1);
  return x[lo] + (pos - static_cast<double>(lo)) * (x[hi] - x[lo]);
}

std::vector<double> crop_thresholds(std::vector<float> calib, int count) {
  std::vector<double> th(static_cast<size_t>(count));
  std::sort(calib.begin(), calib.end());
  for (int i = 0; i < count; ++i) {
    const double p = 1.0 - std::pow(0.5, 10.0 * (i + 1) / count);
    const size_t k = std::min(calib.size() - 1, static_cast<size_t>(p * calib.size()));
    th[static_cast<size_t>(i)] = calib.empty() ? 0.0 : calib[k];
  }
  return th;
}

TestResult dudect_tests(const std::vector<Sample>& samples, int64_t n,
                        const std::vector<double>& thresholds) {
  TestResult r;
  n = std::min<int64_t>(n, static_cast<int64_t>(samples.size()));
  r.n = n;
  Moments raw[2];
  std::vector<Moments> crop(thresholds.size() * 2);
  for (int64_t i = 0; i < n; ++i) {
    const Sample& s = samples[static_cast<size_t>(i)];
    raw[s.cls].add(s.us);
    // Thresholds rise with i: once a sample exceeds one it is below none of
    // the smaller ones, so scan from the top and stop at the first miss.
    for (size_t c = thresholds.size(); c-- > 0;) {
      if (s.us >= thresholds[c]) break;
      crop[2 * c + s.cls].add(s.us);
    }
  }
  r.t_raw = welch_t(raw[0], raw[1]);
  // Second order: (x - class mean)^2 with the means of this prefix.
  Moments sec[2];
  for (int64_t i = 0; i < n; ++i) {
    const Sample& s = samples[static_cast<size_t>(i)];
    const double d = s.us - raw[s.cls].mean;
    sec[s.cls].add(d * d);
  }
  r.t_second = welch_t(sec[0], sec[1]);
  r.max_abs_t = std::fabs(r.t_raw);
  r.worst = "raw";
  if (std::fabs(r.t_second) > r.max_abs_t) { r.max_abs_t = std::fabs(r.t_second); r.worst = "second-order"; }
  for (size_t c = 0; c < thresholds.size(); ++c) {
    const double t = welch_t(crop[2 * c], crop[2 * c + 1]);
    if (r.crop_at_max < 0 || std::fabs(t) > std::fabs(r.t_crop_max)) {
      r.t_crop_max = t;
      r.crop_at_max = static_cast<int>(c);
    }
    if (std::fabs(t) > r.max_abs_t) {
      r.max_abs_t = std::fabs(t);
      r.worst = "crop " + std::to_string(c);
    }
  }
  return r;
}

std::vector<JitterDiff> phase_bins(const std::vector<Sample>& samples, const std::vector<int32_t>& jitter_ns_of,
                                   const std::vector<double>& phase_ns, int64_t period_ns, int bins) {
  std::vector<JitterDiff> r;
  if (period_ns <= 0 || bins <= 0 || samples.size() != jitter_ns_of.size() || samples.size() != phase_ns.size())
    return r;
  std::vector<Moments> mb(static_cast<size_t>(bins) * 2);
  const double p = static_cast<double>(period_ns);
  for (size_t i = 0; i < samples.size(); ++i) {
    const double phase = phase_ns[i] - std::floor(phase_ns[i] / p) * p;  // in [0, p)
    const int b = std::clamp(static_cast<int>(phase * bins / p), 0, bins - 1);
    mb[static_cast<size_t>(b) * 2 + samples[i].cls].add(samples[i].us * 1000.0 - jitter_ns_of[i]);
  }
  for (int b = 0; b < bins; ++b) {
    const Moments& f = mb[static_cast<size_t>(b) * 2];
    const Moments& g = mb[static_cast<size_t>(b) * 2 + 1];
    r.push_back({f.mean - g.mean, welch_t(f, g)});
  }
  return r;
}

JitterAnalysis jitter_taken_out(const std::vector<Sample>& samples, const std::vector<int32_t>& jitter_ns_of,
                                int64_t jitter_ns, int bins) {
  JitterAnalysis r;
  if (jitter_ns <= 0 || bins <= 0 || samples.size() != jitter_ns_of.size()) return r;
  Moments m[2];
  for (size_t i = 0; i < samples.size(); ++i) m[samples[i].cls].add(samples[i].us * 1000.0 - jitter_ns_of[i]);
  r.all = {m[0].mean - m[1].mean, welch_t(m[0], m[1])};
  // The jitter's own bins: its phase modulo its range (jitter in [0, J)).
  const std::vector<double> jitter(jitter_ns_of.begin(), jitter_ns_of.end());
  r.bins = phase_bins(samples, jitter_ns_of, jitter, jitter_ns, bins);
  return r;
}

int stats_selftest() {
  int failed = 0;
  auto check = [&](bool ok, const char* what) {
    std::printf("%s  %s\n", ok ? "ok  " : "FAIL", what);
    failed += ok ? 0 : 1;
  };
  std::mt19937_64 rng(12345);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::bernoulli_distribution coin(0.5);

  // Welch t against a hand-computed value: {1,2,3,4} vs {2,4,6,8}:
  // means 2.5 / 5, variances 5/3 / 20/3, t = -2.5 / sqrt(25/12) = -1.7320508.
  Moments a, b;
  for (double x : {1, 2, 3, 4}) a.add(x);
  for (double x : {2, 4, 6, 8}) b.add(x);
  check(std::fabs(welch_t(a, b) + std::sqrt(3.0)) < 1e-12, "welch_t matches the closed form");
  Moments c, d;
  for (int i = 0; i < 5; ++i) { c.add(3.0); d.add(4.0); }
  check(std::isinf(welch_t(c, d)), "constant but different classes give |t| = inf");
  check(welch_t(c, c) == 0.0, "identical constant classes give t = 0");

  // Same distribution: no test may reach 4.5 (false-positive check).
  std::vector<Sample> same;
  for (int i = 0; i < 200000; ++i)
    same.push_back({static_cast<uint8_t>(coin(rng)), static_cast<float>(20.0 + normal(rng))});
  std::vector<float> calib;
  for (int i = 0; i < 10000; ++i) calib.push_back(static_cast<float>(20.0 + normal(rng)));
  const auto th = crop_thresholds(calib);
  check(th.size() == 100 && th.front() <= th.back(), "100 rising crop thresholds");
  TestResult r = dudect_tests(same, static_cast<int64_t>(same.size()), th);
  check(r.max_abs_t < 4.5, "same distribution: max |t| < 4.5");

  // A 0.5% mean shift (a skipped tile would be tens of percent): detected.
  std::vector<Sample> shifted;
  for (int i = 0; i < 200000; ++i) {
    const uint8_t k = static_cast<uint8_t>(coin(rng));
    shifted.push_back({k, static_cast<float>(20.0 + normal(rng) + (k ? 0.1 : 0.0))});
  }
  r = dudect_tests(shifted, static_cast<int64_t>(shifted.size()), th);
  check(r.max_abs_t > 4.5 && r.worst != "second-order", "mean shift detected (first order)");

  // Same mean, different spread: only the second-order test sees it.
  std::vector<Sample> spread;
  for (int i = 0; i < 200000; ++i) {
    const uint8_t k = static_cast<uint8_t>(coin(rng));
    spread.push_back({k, static_cast<float>(20.0 + normal(rng) * (k ? 1.2 : 1.0))});
  }
  r = dudect_tests(spread, static_cast<int64_t>(spread.size()), th);
  check(std::fabs(r.t_raw) < 4.5 && std::fabs(r.t_second) > 4.5, "variance difference: second order only");
  check(std::fabs(quantile({1, 2, 3, 4, 5}, 0.5) - 3.0) < 1e-12, "median of 1..5 is 3");

  // The jitter taken out: a class difference of +5 ns in the lower half of
  // the jitter and -5 ns in the upper half averages to ~0 over all samples
  // and shows per bin; the jitter itself (0-4096 ns, 20x the noise) is
  // removed, not left as noise.
  std::vector<Sample> jittered;
  std::vector<int32_t> jit;
  std::uniform_int_distribution<int32_t> u(0, 4095);
  for (int i = 0; i < 400000; ++i) {
    const uint8_t k = static_cast<uint8_t>(coin(rng));
    const int32_t j = u(rng);
    const double bias = k == 0 ? (j < 2048 ? 5.0 : -5.0) : 0.0;
    jittered.push_back({k, static_cast<float>((20000.0 + j + bias + 20.0 * normal(rng)) / 1000.0)});
    jit.push_back(j);
  }
  const JitterAnalysis ja = jitter_taken_out(jittered, jit, 4096, 8);
  check(ja.bins.size() == 8 && std::fabs(ja.all.diff_ns) < 0.5 && std::fabs(ja.all.t) < 4.5,
        "jitter taken out: the phase-dependent difference averages out");
  bool per_bin = ja.bins.size() == 8;
  for (int b = 0; per_bin && b < 8; ++b)
    per_bin = std::fabs(ja.bins[b].diff_ns - (b < 4 ? 5.0 : -5.0)) < 1.5 && std::fabs(ja.bins[b].t) > 4.5;
  check(per_bin, "jitter taken out: each bin shows its own +-5 ns");

  // A difference periodic in the jitter with a 256 ns period: bins of the
  // jitter 512 ns wide see none of it, bins of its phase modulo 256 see it.
  std::vector<Sample> periodic;
  std::vector<double> phase;
  jit.clear();
  for (int i = 0; i < 400000; ++i) {
    const uint8_t k = static_cast<uint8_t>(coin(rng));
    const int32_t j = u(rng);
    const double bias = k == 0 ? (j % 256 < 128 ? 5.0 : -5.0) : 0.0;  // the fixed class only
    periodic.push_back({k, static_cast<float>((20000.0 + j + bias + 20.0 * normal(rng)) / 1000.0)});
    jit.push_back(j);
    phase.push_back(19200.0 + j);  // a budget of 19.2 us (75 periods) + the jitter
  }
  const JitterAnalysis wide = jitter_taken_out(periodic, jit, 4096, 8);
  bool flat = wide.bins.size() == 8;
  for (const JitterDiff& d : wide.bins) flat = flat && std::fabs(d.t) < 4.5;
  check(flat, "periodic difference: invisible in 512 ns bins of the jitter");
  const std::vector<JitterDiff> by_phase = phase_bins(periodic, jit, phase, 256, 8);
  bool seen = by_phase.size() == 8;  // bin b: jitter mod 256 in [32 b, 32 b + 32)
  for (int b = 0; seen && b < 8; ++b) seen = std::fabs(by_phase[b].diff_ns - (b < 4 ? 5.0 : -5.0)) < 1.5;
  check(seen, "periodic difference: visible in bins of its phase");
  std::printf("stats selftest: %d failed\n", failed);
  return failed;
}

}  // namespace dhp::gates
