// Statistics of the timing leakage test (dudect method: Reparaz, Balasch,
// Verbauwhede, "Dude, is my code constant time?", DATE 2017). Host-only, so
// that it is unit-tested without a GPU (`dhp_validate selftest`).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace dhp::gates {

// Welch's t statistic of two samples from running moments.
struct Moments {
  double n = 0, mean = 0, m2 = 0;  // Welford: numerically stable at 10^6 samples
  void add(double x) {
    n += 1;
    const double d = x - mean;
    mean += d / n;
    m2 += d * (x - mean);
  }
  double variance() const { return n > 1 ? m2 / (n - 1) : 0.0; }
};
// (mean0 - mean1) / sqrt(var0/n0 + var1/n1). 0 when both classes are empty
// or identical constants; +-inf when the means differ with zero variance (a
// deterministic difference is the clearest leak there is).
double welch_t(const Moments& a, const Moments& b);

// One timing sample: the class (0 = fixed, 1 = random) and device time.
struct Sample {
  uint8_t cls;
  float us;
};

// The dudect battery on a prefix of the samples: t on the raw data, on 100
// sets cropped at increasing percentiles (thresholds from a calibration set,
// as dudect does), and the second-order test (each sample centred on its
// class mean, squared).
struct TestResult {
  int64_t n = 0;            // samples used
  double t_raw = 0;
  double t_second = 0;
  double t_crop_max = 0;    // signed t of the crop with the largest |t|
  int crop_at_max = -1;     // which crop
  double max_abs_t = 0;     // over all 102 tests
  std::string worst;        // "raw", "second-order" or "crop NN"
};

// Crop thresholds: dudect's percentiles 1 - 0.5^(10 (i+1) / 100) of `calib`.
std::vector<double> crop_thresholds(std::vector<float> calib, int count = 100);

TestResult dudect_tests(const std::vector<Sample>& samples, int64_t n,
                        const std::vector<double>& thresholds);

// The deadline's jitter taken back out (dhp_validate dudect
// --deadline-jitter-ns): each sample's time minus its known jitter (ns),
// the class difference (fixed - random, ns) and Welch's t over all samples
// and per bin of the jitter ([0, jitter_ns) in `bins` equal bins). A
// residual that follows the budget's phase averages out over all samples
// and shows per bin.
struct JitterDiff {
  double diff_ns = 0, t = 0;
};
struct JitterAnalysis {
  JitterDiff all;
  std::vector<JitterDiff> bins;
};
JitterAnalysis jitter_taken_out(const std::vector<Sample>& samples, const std::vector<int32_t>& jitter_ns_of,
                                int64_t jitter_ns, int bins);
// The same class difference (jitter removed) in `bins` bins of each
// sample's phase_ns modulo period_ns: a residual periodic in, e.g., the
// time between the work's end and the deadline shows here, where bins of
// the jitter wider than its period would average it away.
std::vector<JitterDiff> phase_bins(const std::vector<Sample>& samples, const std::vector<int32_t>& jitter_ns_of,
                                   const std::vector<double>& phase_ns, int64_t period_ns, int bins);

// Quantile of a copy (linear interpolation), q in [0, 1].
double quantile(std::vector<float> x, double q);

// CPU self-test of the above on synthetic data; prints failures, returns
// the number of failed checks.
int stats_selftest();

}  // namespace dhp::gates
