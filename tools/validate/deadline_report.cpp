// dhp_validate dudect's deadline diagnostics (deadline_report.hpp).
#include "deadline_report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "json_text.hpp"

namespace dhp::gates {

// --deadline-probe's summary: per class, the mean of each record field over
// the tested launches (from `first`), and Welch's t between the classes.
// The post-deadline time counts launches without an overrun of their own
// only. Printed, and returned as JSON.
// It also replaces the tally's per-class overrun counts.
std::string deadline_probe_summary(const std::vector<float>& rec, const std::vector<Sample>& all, int64_t first,
                                   uint64_t overruns_before, uint64_t overruns_by[2]) {
  if (rec.size() < all.size() * 4) {
    std::printf("deadline probe: %zu records for %zu launches -- no summary\n", rec.size() / 4, all.size());
    return "null";
  }
  for (size_t i = 0; i < all.size(); ++i) {
    const float before = i > 0 ? rec[4 * (i - 1) + 3] : static_cast<float>(overruns_before);
    overruns_by[all[i].cls] += rec[4 * i + 3] != before ? 1 : 0;
  }
  static const char* const kNames[3] = {"work_ns", "post_ns", "sm_mhz"};
  Moments m[3][2];
  for (size_t i = static_cast<size_t>(first); i < all.size(); ++i) {
    const float* r = &rec[4 * i];
    const bool overran = i > 0 && r[3] != rec[4 * (i - 1) + 3];
    const int c = all[i].cls;
    m[0][c].add(r[0]);
    if (!overran) m[1][c].add(r[1]);
    m[2][c].add(r[2]);
  }
  std::ostringstream js;
  js << "{";
  for (int k = 0; k < 3; ++k) {
    const double t = welch_t(m[k][0], m[k][1]);
    std::printf("deadline probe: %-7s fixed %.3f  random %.3f  (n %.0f / %.0f)  t %.2f\n", kNames[k], m[k][0].mean,
                m[k][1].mean, m[k][0].n, m[k][1].n, t);
    js << (k ? "," : "") << jstr(kNames[k]) << ":{\"fixed\":" << jnum(m[k][0].mean) << ",\"random\":"
       << jnum(m[k][1].mean) << ",\"t\":" << jnum(t) << "}";
  }
  js << "}";
  return js.str();
}

// --deadline-jitter-ns's summary (a diagnostic; an observer does not know
// the jitter): the class means' difference with each launch's known jitter
// taken out, overall, per bin of the jitter, and per bin of a phase modulo
// several periods. Printed, and returned as JSON.
std::string jitter_summary(const std::vector<Sample>& all, const std::vector<int32_t>& jit_all, int64_t first,
                           int64_t jitter_ns, int64_t budget_ns, const std::vector<float>& probe_rec) {
  if (jit_all.size() != all.size()) return "null";
  std::string jitter_json;
  const std::vector<Sample> tested(all.begin() + first, all.end());
  const std::vector<int32_t> tested_jit(jit_all.begin() + first, jit_all.end());
  const JitterAnalysis ja = jitter_taken_out(tested, tested_jit, jitter_ns, 8);
  std::printf("deadline jitter %lld ns taken out: mean fixed - random %+.3f ns, t %.2f\n  per budget bin:",
              static_cast<long long>(jitter_ns), ja.all.diff_ns, ja.all.t);
  jitter_json = "{\"diff_ns\":" + jnum(ja.all.diff_ns) + ",\"t\":" + jnum(ja.all.t) + ",\"bins\":[";
  for (size_t b = 0; b < ja.bins.size(); ++b) {
    std::printf(" %+.2f (%.1f)", ja.bins[b].diff_ns, ja.bins[b].t);
    jitter_json += std::string(b ? "," : "") + "{\"diff_ns\":" + jnum(ja.bins[b].diff_ns) + ",\"t\":" +
                   jnum(ja.bins[b].t) + "}";
  }
  std::printf("\n");
  jitter_json += "]";
  // Periodic in what? With the probe, each call's slack (its deadline
  // minus its work's end: budget + jitter - work); without, its budget.
  const bool slack = probe_rec.size() == all.size() * 4;
  std::vector<double> phase;
  for (size_t i = static_cast<size_t>(first); i < all.size(); ++i)
    phase.push_back(static_cast<double>(budget_ns + jit_all[i]) - (slack ? probe_rec[4 * i] : 0.0));
  jitter_json += ",\"phase_of\":" + jstr(slack ? "slack" : "budget") + ",\"periods\":[";
  int k = 0;
  for (const int64_t period : {128, 256, 512, 1024, 2048}) {
    const std::vector<JitterDiff> pb = phase_bins(tested, tested_jit, phase, period, 8);
    double worst = 0;
    std::printf("  %s mod %lld ns:", slack ? "slack" : "budget", static_cast<long long>(period));
    jitter_json += std::string(k++ ? "," : "") + "{\"period_ns\":" + std::to_string(period) + ",\"bins\":[";
    for (size_t b = 0; b < pb.size(); ++b) {
      std::printf(" %+.2f", pb[b].diff_ns);
      worst = std::max(worst, std::fabs(pb[b].t));
      jitter_json += std::string(b ? "," : "") + "{\"diff_ns\":" + jnum(pb[b].diff_ns) + ",\"t\":" + jnum(pb[b].t) + "}";
    }
    std::printf("  (max |t| %.1f)\n", worst);
    jitter_json += "],\"max_abs_t\":" + jnum(worst) + "}";
  }
  return jitter_json + "]}";
}

}  // namespace dhp::gates
