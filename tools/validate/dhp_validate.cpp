// dhp_validate: the GPU side of the security gates (issue 5). Each mode does
// the launches of one gate for one public configuration and writes a JSON
// record; scripts/dhp-validate runs the modes (under ncu and
// compute-sanitizer where needed), judges them and writes the report.
//
//   dhp_validate classes  [config] --out F   gate 1: one launch per input class (run under ncu)
//   dhp_validate dudect   [config] --test values|lengths --measurements N --out F
//                         [--deadline auto|NS [--deadline-margin PCT] [--deadline-slack-ns NS]
//                          [--deadline-calib work|events] [--deadline-calib-calls N]
//                          [--deadline-probe 1] [--deadline-jitter-ns J]]  (threat model §8; diagnostics)
//                         [--graph 1]   the timed call as a CUDA graph replay
//                         [--null 1]    A/A control: both classes get the fixed inputs
//                         [--fixed-length L] [--second-length L2]  lengths test: the fixed class's
//                                       lengths (default 0); the second class fixed at L2, not random
//   dhp_validate repro    [config] --launches N --out F    gate 3
//   dhp_validate sanitize                    small launches for compute-sanitizer
//   dhp_validate profile  [config]           warm-up + one launch (scripts/ncu-profile)
//   dhp_validate selftest                    CPU checks of the statistics and classes
// config: --kernel shipped|leaky --dtype fp16|bf16 --batch B --heads H [--heads-kv H]
//         --seqlen S [--seqlen-k S] --head-dim D [--causal] [--lengths none|shared|separate] [--no-lse]
// Exit: 0 pass, 1 a gate failed, 2 usage or runtime error. Without a GPU the
// GPU modes print "skipped: no CUDA device" and exit 0.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "deadline_report.hpp"
#include "harness.hpp"
#include "json_text.hpp"
#include "stats.hpp"
#include "workload.hpp"

namespace dhp::gates {
namespace {

constexpr double kThreshold = 4.5;  // dudect's |t| limit

int fail_usage(const std::string& msg) {
  std::fprintf(stderr, "dhp_validate: %s (see the header of tools/validate/dhp_validate.cpp)\n", msg.c_str());
  return 2;
}

// Flags of a mode after the configuration is parsed: --name value pairs.
struct Flags {
  std::vector<std::string> args;
  std::string get(const std::string& name, const std::string& def) const {
    for (size_t i = 0; i + 1 < args.size(); ++i)
      if (args[i] == name) return args[i + 1];
    return def;
  }
  int64_t num(const std::string& name, int64_t def) const { return std::stoll(get(name, std::to_string(def))); }
};

bool write_file(const std::string& path, const std::string& text) {
  if (path.empty()) return true;
  std::ofstream f(path);
  f << text;
  return static_cast<bool>(f);
}

int64_t count_unwritten(const std::vector<uint16_t>& o, const std::vector<uint32_t>& lse, bool with_lse) {
  int64_t n = std::count(o.begin(), o.end(), uint16_t{0xFFFF});
  if (with_lse) n += std::count(lse.begin(), lse.end(), 0xFFFFFFFFu);
  return n;
}

// ---------------------------------------------------------------------------
// Gate 1: one launch per class, in class_names order (ncu reports launches
// in that order).
int run_classes(const Problem& p, const Flags& f) {
  Workspace ws(p);
  std::ostringstream js;
  js << "{\"mode\":\"classes\",\"problem\":" << jstr(p.describe()) << ",\"classes\":[";
  const uint64_t seed = static_cast<uint64_t>(f.num("--seed", 20261121));
  int rc = 0;
  // R rounds over all classes: repeats of identical inputs show which
  // counters are not repeatable (they depend on timing, not on inputs).
  std::vector<std::string> names;
  for (int64_t r = 0, rounds = f.num("--repeats", 1); r < rounds; ++r)
    for (const auto& n : class_names(p)) names.push_back(n);
  for (size_t i = 0; i < names.size(); ++i) {
    ws.upload(make_class(p, names[i], seed));
    ws.poison_outputs();
    const Status st = ws.forward();
    if (!st || cudaDeviceSynchronize() != cudaSuccess || !ws.error().empty()) {
      std::fprintf(stderr, "class %s: %s %s\n", names[i].c_str(), st.message.c_str(), ws.error().c_str());
      return 2;
    }
    std::vector<uint16_t> o;
    std::vector<uint32_t> lse;
    ws.download(o, lse);
    const int64_t unwritten = count_unwritten(o, lse, p.with_lse);
    if (unwritten) rc = 1;  // G4: every output element written, whatever the class
    std::printf("class %2zu %-18s unwritten outputs: %lld\n", i, names[i].c_str(), static_cast<long long>(unwritten));
    js << (i ? "," : "") << "{\"name\":" << jstr(names[i]) << ",\"unwritten\":" << unwritten << "}";
  }
  js << "]}\n";
  return write_file(f.get("--out", ""), js.str()) ? rc : 2;
}

// One batch of the deadline's calibration (run_dudect, --deadline auto):
// n launches with full lengths and fresh random values, back to back behind
// a hold, each between two events; their times appended to `out`.
bool ok_calibrate(Workspace& ws, StreamHold& hold, int n, std::vector<cudaEvent_t>& ev, cudaStream_t stream,
                  const std::vector<int32_t>& lq, const std::vector<int32_t>& lk, uint64_t& fresh,
                  std::vector<float>& out) {
  hold.hold(0, stream);
  for (int j = 0; j < n; ++j) {
    ws.generate_values(++fresh, stream);
    ws.set_lengths(lq, lk, stream);
    cudaEventRecord(ev[2 * j], stream);
    const Status st = ws.forward(stream);
    cudaEventRecord(ev[2 * j + 1], stream);
    if (!st) {
      hold.release(0);
      return false;
    }
  }
  hold.release(0);
  if (cudaEventSynchronize(ev[2 * n - 1]) != cudaSuccess) return false;
  for (int j = 0; j < n; ++j) {
    float ms = 0;
    cudaEventElapsedTime(&ms, ev[2 * j], ev[2 * j + 1]);
    out.push_back(ms * 1000.0f);
  }
  return true;
}

// ---------------------------------------------------------------------------
// Timing leakage test. Class 0 = fixed, 1 = random, drawn per launch. Both
// classes run the same preparation (the value generator and the length
// setter, with class-dependent arguments) before the timed launch, so the
// only difference between them is the secret data.
int run_dudect(const Problem& p, const Flags& f) {
  const std::string test = f.get("--test", "values");
  if (test != "values" && test != "lengths") return fail_usage("--test values|lengths");
  if (test == "lengths" && p.lengths == LengthMode::kNone) return fail_usage("--test lengths needs --lengths shared|separate");
  const int64_t n_meas = f.num("--measurements", 100000), warmup = f.num("--warmup", 5000),
                calib = f.num("--calib", 10000);
  const int64_t total = warmup + calib + n_meas;
  const uint64_t seed = static_cast<uint64_t>(f.num("--seed", static_cast<int64_t>(std::random_device{}())));
  std::mt19937_64 rng(seed);
  std::bernoulli_distribution coin(0.5);
  const uint64_t fixed_seed = 0xF1;  // names one input set; regenerated bit for bit
  const int64_t fixed_len = f.num("--fixed-length", 0);
  // --second-length L2: the second class's lengths are L2 every call instead of
  // uniform random draws -- a two-point test (can an observer tell length L
  // from L2?) next to the fixed-vs-random one. The draws are still made and
  // dropped, so the host path is the random class's.
  const int64_t second_len = f.num("--second-length", -1);
  // A length past one side's S_max is that side's S_max (e.g. a decode
  // step's S_q = 1 with --fixed-length S_k: both sides full).
  const int64_t s_max = std::max(p.seqlen_q, p.seqlen_k);
  if (fixed_len < 0 || fixed_len > s_max) return fail_usage("--fixed-length: 0 .. S_max (the longer of seqlen and seqlen-k)");
  if (second_len < -1 || second_len > s_max) return fail_usage("--second-length: 0 .. S_max, or -1 for random lengths");
  if (second_len >= 0 && test != "lengths") return fail_usage("--second-length: the lengths test only");
  const bool fixed_zeros = f.get("--fixed-values", "normal") == "zeros";  // else one fixed normal draw
  const std::vector<int32_t> fixed_lq(p.batch, static_cast<int32_t>(std::min(fixed_len, p.seqlen_q))),
      fixed_lk(p.batch, static_cast<int32_t>(std::min(fixed_len, p.seqlen_k)));
  const std::vector<int32_t> second_lq(p.batch, static_cast<int32_t>(std::min(second_len, p.seqlen_q))),
      second_lk(p.batch, static_cast<int32_t>(std::min(second_len, p.seqlen_k)));
  // The values test holds the lengths at S_max so that every value is visible.
  const std::vector<int32_t> full_lq(p.batch, static_cast<int32_t>(p.seqlen_q)),
      full_lk(p.batch, static_cast<int32_t>(p.seqlen_k));

  Workspace ws(p);
  cudaStream_t stream;
  cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  // Batches of launches, double-buffered: the host enqueues one batch behind
  // a hold while the GPU runs the other, so the timed launches run back to
  // back. 64 launches x 5 commands x 2 batches stays inside the launch queue.
  constexpr int kBatch = 64;
  StreamHold hold;
  std::vector<cudaEvent_t> ev[2] = {std::vector<cudaEvent_t>(2 * kBatch), std::vector<cudaEvent_t>(2 * kBatch)};
  for (auto& v : ev)
    for (auto& e : v) cudaEventCreate(&e);
  std::vector<uint8_t> cls[2] = {std::vector<uint8_t>(kBatch), std::vector<uint8_t>(kBatch)};
  // Per timed launch: the budget's jitter in ns (--deadline-jitter-ns), so
  // that a diagnostic can take it back out; 0 without.
  std::vector<int32_t> jit[2] = {std::vector<int32_t>(kBatch), std::vector<int32_t>(kBatch)};
  std::vector<int32_t> jit_all;
  int pending[2] = {0, 0};
  std::vector<Sample> all;
  all.reserve(static_cast<size_t>(total));
  uint64_t fresh = seed * 1000003ull + 17;
  auto harvest = [&](int slot) {
    if (pending[slot] == 0) return true;
    if (cudaEventSynchronize(ev[slot][2 * pending[slot] - 1]) != cudaSuccess) return false;
    for (int j = 0; j < pending[slot]; ++j) {
      float ms = 0;
      cudaEventElapsedTime(&ms, ev[slot][2 * j], ev[slot][2 * j + 1]);
      all.push_back({cls[slot][j], ms * 1000.0f});
      jit_all.push_back(jit[slot][j]);
    }
    pending[slot] = 0;
    return true;
  };
  // One untimed round first: lazy module loading happens at a kernel's
  // first launch, on the host, and must not run inside a hold.
  ws.generate_values(fixed_seed, stream);
  ws.set_lengths(full_lq, full_lk, stream);
  if (!ws.forward(stream) || cudaStreamSynchronize(stream) != cudaSuccess) return fail_usage("first launch failed");
  // The deadline (threat model §8): --deadline N gives every timed launch a
  // budget of N ns; --deadline auto calibrates it as a user would, from
  // public inputs only: the slowest of --deadline-calib-calls back-to-back
  // launches of the slowest class -- full lengths, fresh random values, so
  // the most nonzero operands and the lowest power-limited clock -- times 1 +
  // --deadline-margin percent (default 5). --deadline-calib work (default)
  // times what the budget covers, each call's work under the deadline on the
  // GPU clock, start stamp to the wait (Workspace::calibrate_deadline_work);
  // events (sessions 48-50, 2048 calls) timed calls without the deadline's
  // kernels between two events: 1 call in 4 400 of 10^6 overran its budget
  // in session 50.
  const std::string deadline = f.get("--deadline", "");
  if (!deadline.empty() && p.kernel != Kernel::kShipped) return fail_usage("--deadline: the shipped kernel only");
  const std::string calib_mode = f.get("--deadline-calib", "work");
  const int64_t calib_calls = f.num("--deadline-calib-calls", 16384);
  if (calib_mode != "work" && calib_mode != "events") return fail_usage("--deadline-calib: work|events");
  if (calib_calls < 1 || calib_calls > 1'000'000) return fail_usage("--deadline-calib-calls: 1 .. 10^6");
  double deadline_calib_max_us = 0;
  int64_t budget_ns = 0, calib_done = 0;
  int calib_starved = 0;
  if (deadline == "auto" && calib_mode == "work") {
    const DeadlineCalibration c =
        ws.calibrate_deadline_work(hold, calib_calls, kBatch / 2, full_lq, full_lk, fresh, stream);
    if (c.slowest_ns <= 0) return fail_usage("deadline calibration failed: " + c.error);
    deadline_calib_max_us = static_cast<double>(c.slowest_ns) / 1000.0;
    calib_done = c.calls, calib_starved = c.starved_batches;
  } else if (deadline == "auto") {
    std::vector<float> calib_times;
    bool calibrated = true;
    while (calibrated && static_cast<int64_t>(calib_times.size()) < calib_calls)
      calibrated = ok_calibrate(ws, hold, kBatch / 2, ev[0], stream, full_lq, full_lk, fresh, calib_times);
    if (!calibrated) return fail_usage("deadline calibration failed");
    deadline_calib_max_us = *std::max_element(calib_times.begin(), calib_times.end());
    calib_done = static_cast<int64_t>(calib_times.size());
  }
  if (deadline == "auto") {
    // The slack: an allowance for launch jitter beyond the calibration's
    // slowest call, and for the GPU clock's tick (32 ns on the H200).
    budget_ns = static_cast<int64_t>(deadline_calib_max_us * 1000.0 * (1.0 + f.num("--deadline-margin", 5) / 100.0)) +
                f.num("--deadline-slack-ns", 2000);
  } else if (!deadline.empty()) {
    char* end = nullptr;
    budget_ns = std::strtoll(deadline.c_str(), &end, 10);
    if (end == deadline.c_str() || *end != '\0' || budget_ns <= 0)
      return fail_usage("--deadline: auto or a budget in ns (> 0), got '" + deadline + "'");
  }
  ws.set_deadline(budget_ns);
  // Diagnostic, not a gate: --deadline-probe 1 records, after each timed
  // launch, its work and its end on the GPU clock and the SM clock.
  const bool probe = budget_ns > 0 && f.num("--deadline-probe", 0) != 0;
  // One untimed deadline call: the deadline kernels' lazy loading must not
  // run inside a hold either (session 48: it starved the first batch, whose
  // calls then waited for the host past their deadline).
  if (budget_ns > 0) {
    const bool first = static_cast<bool>(ws.forward(stream));
    ws.tally_overruns(-1, stream);  // the tally's base: overruns so far
    if (!first || cudaStreamSynchronize(stream) != cudaSuccess) return fail_usage("first deadline launch failed");
  }
  // --graph 1: the timed launch replays forward() captured in a CUDA graph
  // (after the untimed launches above, so lazy loading is done).
  const bool graph = f.num("--graph", 0) != 0;
  // --null 1: an A/A control of the harness itself -- both classes get the
  // fixed inputs, so any |t| above the threshold is the harness's, not the
  // kernel's.
  const bool null_run = f.num("--null", 0) != 0;
  if (null_run && second_len >= 0)
    return fail_usage("--second-length: not with --null 1 (the A/A run gives both classes the fixed lengths)");
  // --deadline-jitter-ns J: each timed call's budget is the calibrated one
  // + a public uniform draw in [0, J) ns, independent of the class (does a
  // residual that changes sign with the budget average out over budgets?).
  const int64_t jitter_ns = budget_ns > 0 ? f.num("--deadline-jitter-ns", 0) : 0;
  if (jitter_ns < 0 || jitter_ns > 100'000'000 || budget_ns + jitter_ns > 10'000'000'000)
    return fail_usage("--deadline-jitter-ns: 0 .. 10^8 ns, with the budget within the library's 10 s");
  std::mt19937_64 jitter_rng(seed ^ 0x717E4);
  if (graph && jitter_ns > 0) return fail_usage("--deadline-jitter-ns: not with --graph (a graph holds one budget)");
  if (graph) {
    const Status cap = ws.capture_forward(stream);
    if (!cap) return fail_usage("graph capture failed: " + cap.message);
    const Status replay = ws.replay_forward(stream);
    const cudaError_t sync = cudaStreamSynchronize(stream);
    if (!replay || sync != cudaSuccess)
      return fail_usage("graph replay failed: " + (replay ? std::string(cudaGetErrorString(sync)) : replay.message));
  }
  const uint64_t overruns_before = ws.deadline_overruns();
  if (probe) ws.prepare_probe(total);  // outside the holds
  // A deadline call adds two launches (three with the tally): half the batch
  // keeps both batches' commands inside the launch queue (session 48: at 64, one batch per run
  // outgrew it, the hold timed out and the GPU waited for the host inside
  // a call, past its deadline).
  const int batch = budget_ns > 0 ? kBatch / 2 : kBatch;
  const int timeouts_before = hold.timeouts();  // the calibration's are its own

  int64_t enqueued = 0;
  int slot = 0;
  bool ok = true;
  while (ok && enqueued < total) {
    ok = harvest(slot);  // the batch enqueued two rounds ago: frees this slot's events
    const int n = static_cast<int>(std::min<int64_t>(batch, total - enqueued));
    hold.hold(slot, stream);
    for (int j = 0; ok && j < n; ++j) {
      const uint8_t c = coin(rng) ? 1 : 0;
      cls[slot][j] = c;
      // A null run gives the random class the fixed class's inputs, through
      // the same host path (the random draws are made and dropped).
      if (test == "values") {
        const uint64_t drawn = ++fresh;
        ws.generate_values(c && !null_run ? drawn : fixed_seed, stream, (!c || null_run) && fixed_zeros);
        ws.set_lengths(full_lq, full_lk, stream);
      } else {
        ws.generate_values(fixed_seed, stream);
        if (c) {
          const auto lq = random_lengths(p.batch, p.seqlen_q, rng), lk = random_lengths(p.batch, p.seqlen_k, rng);
          if (null_run) ws.set_lengths(fixed_lq, fixed_lk, stream);
          else if (second_len >= 0) ws.set_lengths(second_lq, second_lk, stream);
          else ws.set_lengths(lq, lk, stream);
        } else {
          ws.set_lengths(fixed_lq, fixed_lk, stream);
        }
      }
      jit[slot][j] = jitter_ns > 0 ? static_cast<int32_t>(jitter_rng() % jitter_ns) : 0;
      if (jitter_ns > 0) ws.set_deadline(budget_ns + jit[slot][j]);
      cudaEventRecord(ev[slot][2 * j], stream);
      const Status st = graph ? ws.replay_forward(stream) : ws.forward(stream);
      cudaEventRecord(ev[slot][2 * j + 1], stream);
      // After the end event, outside the timed span. The probe records the
      // overrun count itself, so it replaces the tally (a shorter path after
      // the call, which tells whether the residual scales with it).
      if (probe) ws.probe_deadline(enqueued + j, total, stream);
      else if (budget_ns > 0) ws.tally_overruns(c, stream);
      if (!st) { std::fprintf(stderr, "launch: %s\n", st.message.c_str()); ok = false; }
    }
    hold.release(slot);
    pending[slot] = n;
    enqueued += n;
    slot ^= 1;
  }
  ok = ok && harvest(slot) && harvest(slot ^ 1);  // older batch first: samples stay in launch order
  if (!ok || !ws.error().empty()) {
    hold.release(0);
    hold.release(1);
    std::fprintf(stderr, "timing failed: %s %s\n", cudaGetErrorString(cudaGetLastError()), ws.error().c_str());
    return 2;
  }
  for (auto& v : ev)
    for (auto& e : v) cudaEventDestroy(e);
  cudaStreamDestroy(stream);
  const int host_starved = hold.timeouts() - timeouts_before;
  const uint64_t overruns = ws.deadline_overruns() - overruns_before;
  uint64_t overruns_by[2] = {0, 0};
  ws.overruns_by_class(overruns_by);
  const TimerTick tick = budget_ns > 0 ? measure_timer_tick() : TimerTick{};
  const std::vector<float> probe_rec = probe ? ws.probe_records(total) : std::vector<float>{};
  const std::string jitter_json =
      jitter_ns > 0 ? jitter_summary(all, jit_all, warmup + calib, jitter_ns, budget_ns, probe_rec) : "null";
  const std::string probe_json =
      probe ? deadline_probe_summary(probe_rec, all, warmup + calib, overruns_before, overruns_by)
            : "null";

  // Warm-up discarded; the calibration set fixes the crop thresholds (and is
  // not tested, as in dudect); the rest is tested at doubling checkpoints.
  std::vector<float> calib_us;
  for (int64_t i = warmup; i < warmup + calib; ++i) calib_us.push_back(all[i].us);
  const std::vector<Sample> s(all.begin() + warmup + calib, all.end());
  const auto th = crop_thresholds(calib_us);
  std::vector<TestResult> curve;
  for (int64_t n = 1000; n < n_meas; n *= 2) curve.push_back(dudect_tests(s, n, th));
  curve.push_back(dudect_tests(s, n_meas, th));
  const TestResult& fin = curve.back();

  // Per-class summary and histograms (bins over the pooled 0.1-99.9 % range).
  std::vector<float> by[2];
  for (const auto& x : s) by[x.cls].push_back(x.us);
  std::vector<float> pooled;
  for (const auto& x : s) pooled.push_back(x.us);
  const double lo = quantile(pooled, 0.001), hi = std::max(quantile(pooled, 0.999), lo + 1e-3);
  constexpr int kBins = 120;
  std::vector<int64_t> hist[2] = {std::vector<int64_t>(kBins), std::vector<int64_t>(kBins)};
  for (const auto& x : s) {
    const int b = static_cast<int>((x.us - lo) / (hi - lo) * kBins);
    if (b >= 0 && b < kBins) ++hist[x.cls][b];
  }
  const bool pass = fin.max_abs_t < kThreshold;
  std::ostringstream js;
  js << "{\"mode\":\"dudect\",\"test\":" << jstr(test) << ",\"problem\":" << jstr(p.describe())
     << ",\"seed\":" << seed << ",\"warmup\":" << warmup << ",\"calibration\":" << calib
     << ",\"measurements\":" << n_meas << ",\"fixed_length\":" << fixed_len << ",\"second_length\":" << second_len
     << ",\"threshold\":" << kThreshold << ",\"host_starved\":" << host_starved
     << ",\"fixed_values\":" << jstr(fixed_zeros ? "zeros" : "normal") << ",\"graph\":" << (graph ? "true" : "false")
     << ",\"null_run\":" << (null_run ? "true" : "false") << ",\"deadline_jitter_ns\":" << jitter_ns
     << ",\"jitter_out\":" << jitter_json << ",\"deadline_ns\":" << budget_ns
     << ",\"deadline_calib_max_us\":" << jnum(deadline_calib_max_us) << ",\"deadline_calib\":"
     << jstr(deadline == "auto" ? calib_mode : "none") << ",\"deadline_calib_calls\":" << calib_done
     << ",\"deadline_calib_starved\":" << calib_starved
     << ",\"deadline_overruns\":" << overruns << ",\"deadline_overruns_by_class\":[" << overruns_by[0] << ","
     << overruns_by[1] << "],\"timer_tick_ns\":" << jnum(tick.mean_ns) << ",\"deadline_probe\":" << probe_json
     << ",\"pass\":" << (pass ? "true" : "false") << ",\"classes\":[";
  for (int c = 0; c < 2; ++c) {
    Moments m;
    for (float x : by[c]) m.add(x);
    js << (c ? "," : "") << "{\"name\":" << jstr(c ? "random" : "fixed") << ",\"n\":" << by[c].size()
       << ",\"mean_us\":" << jnum(m.mean) << ",\"sd_us\":" << jnum(std::sqrt(m.variance()))
       << ",\"median_us\":" << jnum(quantile(by[c], 0.5)) << ",\"p01_us\":" << jnum(quantile(by[c], 0.01))
       << ",\"p99_us\":" << jnum(quantile(by[c], 0.99)) << ",\"hist\":[";
    for (int b = 0; b < kBins; ++b) js << (b ? "," : "") << hist[c][b];
    js << "]}";
  }
  js << "],\"hist_range_us\":[" << jnum(lo) << "," << jnum(hi) << "],\"curve\":[";
  for (size_t i = 0; i < curve.size(); ++i) {
    const auto& r = curve[i];
    js << (i ? "," : "") << "{\"n\":" << r.n << ",\"t_raw\":" << jnum(r.t_raw) << ",\"t_second\":"
       << jnum(r.t_second) << ",\"t_crop\":" << jnum(r.t_crop_max) << ",\"crop\":" << r.crop_at_max
       << ",\"max_abs_t\":" << jnum(r.max_abs_t) << ",\"worst\":" << jstr(r.worst) << "}";
  }
  js << "]}\n";
  std::printf("dudect %-7s %s: n=%lld  t_raw=%.2f  t_2nd=%.2f  max|t|=%.2f (%s)  means fixed/random %.3f/%.3f us  -> %s\n",
              test.c_str(), p.describe().c_str(), static_cast<long long>(fin.n), fin.t_raw, fin.t_second,
              fin.max_abs_t, fin.worst.c_str(), by[0].empty() ? 0.0 : quantile(by[0], 0.5),
              by[1].empty() ? 0.0 : quantile(by[1], 0.5), pass ? "PASS" : "FAIL");
  if (test == "lengths")
    std::printf("classes: fixed = lengths %lld, random = %s\n", static_cast<long long>(fixed_len),
                null_run           ? "the fixed lengths (A/A)"
                : second_len >= 0 ? ("lengths " + std::to_string(second_len) + " (two fixed lengths)").c_str()
                                   : "uniform random lengths");
  if (budget_ns > 0) {
    std::printf("deadline: overruns fixed / random class %llu / %llu\n", static_cast<unsigned long long>(overruns_by[0]),
                static_cast<unsigned long long>(overruns_by[1]));
    std::printf("deadline: %lld ns (calibration: slowest %.2f us, %s of %lld calls, %d starved batches), overruns "
                "%llu of %lld launches; GPU clock tick %.0f ns mean, %.0f ns smallest\n",
                static_cast<long long>(budget_ns), deadline_calib_max_us,
                deadline == "auto" ? (calib_mode == "work" ? "work" : "event-timed") : "none",
                static_cast<long long>(calib_done), calib_starved, static_cast<unsigned long long>(overruns),
                static_cast<long long>(total), tick.mean_ns, tick.min_ns);
  }
  return write_file(f.get("--out", ""), js.str()) ? (pass ? 0 : 1) : 2;
}

// ---------------------------------------------------------------------------
// Gate 3: bitwise reproducibility and batch invariance.

// One batch entry of a BSHD tensor (S*H*D contiguous elements).
template <typename V>
void copy_entry(const std::vector<V>& from, int64_t fb, std::vector<V>& to, int64_t tb, int64_t n) {
  std::copy_n(from.begin() + fb * n, n, to.begin() + tb * n);
}

struct Outputs {
  std::vector<uint16_t> o;
  std::vector<uint32_t> lse;
};

std::string run_once(const Problem& p, const HostInputs& in, Outputs& out, int64_t budget_ns = 0,
                     uint64_t* overruns = nullptr) {
  Workspace ws(p);
  ws.set_deadline(budget_ns);
  ws.upload(in);
  ws.poison_outputs();
  const Status st = ws.forward();
  if (!st) return st.message;
  if (cudaDeviceSynchronize() != cudaSuccess) return "kernel failed";
  ws.download(out.o, out.lse);
  if (overruns != nullptr) *overruns = ws.deadline_overruns();
  return ws.error();
}

int run_repro(const Problem& p, const Flags& f) {
  const int64_t launches = f.num("--launches", 1000);
  const uint64_t seed = static_cast<uint64_t>(f.num("--seed", 7));
  // Normal values, random (partly out of range) lengths; entry 0, the
  // target of the batch-invariance runs, gets lengths inside (0, S).
  HostInputs in = make_class(p, "len-random", seed);
  if (p.lengths != LengthMode::kNone) {
    in.lens_q[0] = static_cast<int32_t>(p.seqlen_q * 7 / 10 + 1);
    in.lens_k[0] = p.lengths == LengthMode::kShared ? in.lens_q[0] : static_cast<int32_t>(p.seqlen_k * 6 / 10 + 1);
  }
  std::ostringstream js;
  js << "{\"mode\":\"repro\",\"problem\":" << jstr(p.describe()) << ",\"launches\":" << launches;

  // 1. Repeated launches on the same inputs, outputs poisoned before each.
  Workspace ws(p);
  ws.upload(in);
  Outputs first, now;
  int64_t mismatched = 0, first_bad = -1;
  for (int64_t i = 0; i < launches; ++i) {
    ws.poison_outputs();
    const Status st = ws.forward();
    if (!st || cudaDeviceSynchronize() != cudaSuccess) { std::fprintf(stderr, "launch %lld failed: %s\n", static_cast<long long>(i), st.message.c_str()); return 2; }
    ws.download(i == 0 ? first.o : now.o, i == 0 ? first.lse : now.lse);
    if (i > 0 && (now.o != first.o || (p.with_lse && now.lse != first.lse))) {
      ++mismatched;
      if (first_bad < 0) first_bad = i;
    }
  }
  if (!ws.error().empty()) { std::fprintf(stderr, "%s\n", ws.error().c_str()); return 2; }
  js << ",\"mismatched_launches\":" << mismatched << ",\"first_mismatch\":" << first_bad;
  std::printf("repro %s: %lld launches, %lld differ from the first\n", p.describe().c_str(),
              static_cast<long long>(launches), static_cast<long long>(mismatched));

  // 2. Batch invariance: the target sequence (entry 0 of `in`) alone, then
  // at other positions of other batch sizes among other content and lengths.
  const int64_t nq = p.seqlen_q * p.heads_q * p.head_dim, nk = p.seqlen_k * p.heads_kv * p.head_dim,
                nl = p.heads_q * p.seqlen_q;
  auto with_target = [&](int64_t B, int64_t pos, const std::string& neighbours, uint64_t nseed) {
    Problem pb = p;
    pb.batch = B;
    HostInputs x = make_class(pb, neighbours, nseed);
    if (p.lengths != LengthMode::kNone) {
      std::mt19937_64 lrng(nseed);
      x.lens_q = random_lengths(B, p.seqlen_q, lrng);
      x.lens_k = p.lengths == LengthMode::kShared ? x.lens_q : random_lengths(B, p.seqlen_k, lrng);
      x.lens_q[pos] = in.lens_q[0];
      x.lens_k[pos] = in.lens_k[0];
    }
    copy_entry(in.q, 0, x.q, pos, nq);
    copy_entry(in.k, 0, x.k, pos, nk);
    copy_entry(in.v, 0, x.v, pos, nk);
    return std::make_pair(pb, x);
  };
  Outputs alone;
  {
    auto [pb, x] = with_target(1, 0, "normal", seed);
    const std::string err = run_once(pb, x, alone);
    if (!err.empty()) { std::fprintf(stderr, "alone: %s\n", err.c_str()); return 2; }
  }
  struct Placement { int64_t B, pos; const char* neighbours; uint64_t seed; };
  const Placement cases[] = {{4, 0, "normal", 101}, {4, 2, "normal", 202}, {7, 6, "nan-padding", 303},
                             {3, 1, "huge", 404},   {5, 3, "zeros", 505}};
  js << ",\"batch_cases\":[";
  int64_t bad_cases = 0;
  for (size_t c = 0; c < std::size(cases); ++c) {
    auto [pb, x] = with_target(cases[c].B, cases[c].pos, cases[c].neighbours, cases[c].seed);
    Outputs out;
    const std::string err = run_once(pb, x, out);
    if (!err.empty()) { std::fprintf(stderr, "batch case: %s\n", err.c_str()); return 2; }
    int64_t diff_o = 0, diff_lse = 0;
    for (int64_t i = 0; i < nq; ++i) diff_o += out.o[cases[c].pos * nq + i] != alone.o[i];
    for (int64_t i = 0; p.with_lse && i < nl; ++i) diff_lse += out.lse[cases[c].pos * nl + i] != alone.lse[i];
    bad_cases += (diff_o || diff_lse) ? 1 : 0;
    std::printf("  batch invariance: B=%lld position %lld, neighbours %-11s: %lld o / %lld lse elements differ\n",
                static_cast<long long>(cases[c].B), static_cast<long long>(cases[c].pos), cases[c].neighbours,
                static_cast<long long>(diff_o), static_cast<long long>(diff_lse));
    js << (c ? "," : "") << "{\"batch\":" << cases[c].B << ",\"position\":" << cases[c].pos
       << ",\"neighbours\":" << jstr(cases[c].neighbours) << ",\"differing_o\":" << diff_o
       << ",\"differing_lse\":" << diff_lse << "}";
  }
  const bool pass = mismatched == 0 && bad_cases == 0;
  js << "],\"pass\":" << (pass ? "true" : "false") << "}\n";
  return write_file(f.get("--out", ""), js.str()) ? (pass ? 0 : 1) : 2;
}

// ---------------------------------------------------------------------------
// Small launches for compute-sanitizer: every length mode, causal and not,
// each head dim, GQA, S_q != S_k, sizes that are not tile multiples, NaN in
// the padding. Buffers are exactly sized, so an overrun is reported.
int run_sanitize() {
  struct Cfg { DType dt; int64_t B, Hq, Hkv, Sq, Sk, D; bool causal; LengthMode lm; bool lse; };
  const Cfg cfgs[] = {
      {DType::kFloat16, 2, 4, 2, 77, 77, 64, true, LengthMode::kSeparate, true},
      {DType::kBFloat16, 2, 2, 2, 100, 100, 128, false, LengthMode::kShared, true},
      {DType::kFloat16, 1, 2, 2, 65, 130, 256, true, LengthMode::kNone, true},
      {DType::kBFloat16, 3, 4, 1, 40, 33, 64, false, LengthMode::kSeparate, false},
      {DType::kFloat16, 2, 2, 1, 150, 150, 128, true, LengthMode::kShared, true},
      // D256 with more tiles than SMs: O staged in ring slots that later
      // tiles' K/V reuse (kernel_traits.cuh, kStageOInRing).
      {DType::kBFloat16, 6, 8, 4, 300, 250, 256, false, LengthMode::kNone, true},
      // The two-consumer D64 kernel (128-row tiles) with 576 tiles: its O
      // staging buffer, Q buffers released at the last S GEMM and four
      // lengths slots, each reused (kernel_traits.cuh, kOBuffer).
      {DType::kFloat16, 12, 16, 4, 300, 300, 64, true, LengthMode::kSeparate, true},
      // The half-row D64 kernel (32-row tiles: Q loaded and O stored in
      // 8-row boxes, half of each Q buffer never loaded), 90 tiles.
      {DType::kBFloat16, 1, 6, 3, 470, 500, 64, true, LengthMode::kNone, true},
      // Causal shared lengths at D = 256: V's padding zeroed in shared
      // memory in two-key-tile bands (80-key tiles), no copy of V.
      {DType::kFloat16, 2, 2, 1, 300, 300, 256, true, LengthMode::kShared, true},
      // The decode path (sm90/decode.hpp, S_q = 1): chunks of the key range
      // as work units, fp32 partials, the combine; GQA packed (66 heads on
      // one kv head: two query blocks), V's copy before it; MHA unpacked;
      // every head dim (D = 64 since session 38). All but the 66 heads
      // (the 64-row kernel) run the narrow decode kernel (at most 8 rows,
      // decode_narrow.cuh; D = 256 since session 46, 64-key tiles: MHA one
      // row, GQA 12/3 four, secret lengths, V's copy before it).
      {DType::kFloat16, 2, 8, 2, 1, 700, 128, true, LengthMode::kSeparate, true},
      {DType::kBFloat16, 2, 66, 1, 1, 1000, 128, false, LengthMode::kSeparate, false},
      {DType::kBFloat16, 3, 4, 4, 1, 333, 256, false, LengthMode::kNone, true},
      {DType::kFloat16, 2, 12, 3, 1, 1500, 256, false, LengthMode::kSeparate, true},
      {DType::kFloat16, 2, 16, 4, 1, 1100, 64, false, LengthMode::kSeparate, true},
      // S_q > 1 on the decode path (decode.hpp, decode_max_seqlen_q), the
      // causal mask kept: GQA packed as rows s q_pack + g (28 rows; 160
      // rows in three tiles, the last one partial) and MHA unpacked, these
      // two from S_k 4096 only (takes_decode_path).
      {DType::kFloat16, 2, 8, 2, 7, 900, 128, true, LengthMode::kSeparate, true},
      {DType::kFloat16, 2, 8, 2, 40, 4200, 128, true, LengthMode::kSeparate, true},
      {DType::kBFloat16, 1, 4, 4, 16, 4200, 256, true, LengthMode::kNone, true},
      // Dense 64-row tiles (S_q <= 64 at D128 / D256, launch.cuh), MHA so
      // that the decode path does not take them: more tiles than SMs at D128.
      {DType::kBFloat16, 3, 50, 50, 50, 300, 128, true, LengthMode::kSeparate, true},
      {DType::kFloat16, 2, 2, 2, 64, 200, 256, false, LengthMode::kSeparate, true},
      // V's copy beside the attention (sm90 padding_scrub.hpp): 136 tiles on
      // 68 CTAs, the copy engine's ring, the counters and their waits.
      {DType::kFloat16, 4, 34, 34, 128, 700, 128, false, LengthMode::kSeparate, true},
      // The same causal (secret diagonal: planned as non-causal, tile_shape.hpp
      // planning_shape): the copy beside under the causal mask's row limits.
      {DType::kFloat16, 4, 34, 34, 128, 700, 128, true, LengthMode::kSeparate, true}};
  for (const Cfg& c : cfgs) {
    Problem p;
    p.dtype = c.dt; p.batch = c.B; p.heads_q = c.Hq; p.heads_kv = c.Hkv; p.seqlen_q = c.Sq;
    p.seqlen_k = c.Sk; p.head_dim = c.D; p.causal = c.causal; p.lengths = c.lm; p.with_lse = c.lse;
    Outputs out;
    const std::string err = run_once(p, make_class(p, c.lm == LengthMode::kNone ? "normal" : "nan-padding", 11), out);
    std::printf("sanitize %s: %s\n", p.describe().c_str(), err.empty() ? "ran" : err.c_str());
    if (!err.empty()) return 2;
  }
  // The deadline kernels (threat model §8; kernels/common/deadline.cu)
  // around the first configuration's call (its kernels loaded above): a
  // budget of 20 us, which a call under a sanitizer cannot meet (the overrun
  // path; it also loads the deadline kernels), then one of 1 s, which it
  // meets (the wait). Each must have taken its path.
  for (const int64_t budget_ns : {int64_t{20'000}, int64_t{1'000'000'000}}) {
    Problem p;
    p.dtype = DType::kFloat16; p.batch = 2; p.heads_q = 4; p.heads_kv = 2; p.seqlen_q = 77;
    p.seqlen_k = 77; p.head_dim = 64; p.causal = true; p.lengths = LengthMode::kSeparate; p.with_lse = true;
    Outputs out;
    uint64_t overruns = 0;
    std::string err = run_once(p, make_class(p, "nan-padding", 11), out, budget_ns, &overruns);
    const bool overrun_path = budget_ns < 1'000'000;
    if (err.empty() && (overruns == 1) != overrun_path)
      err = "took the wrong path: " + std::to_string(overruns) + " overruns";
    std::printf("sanitize %s, deadline %lld ns (%s path): %s\n", p.describe().c_str(),
                static_cast<long long>(budget_ns), overrun_path ? "overrun" : "wait", err.empty() ? "ran" : err.c_str());
    if (!err.empty()) return 2;
  }
  return 0;
}

int run_profile(const Problem& p) {
  Workspace ws(p);
  ws.upload(make_class(p, "len-random", 3));
  for (int i = 0; i < 2; ++i) {  // the first launch is the warm-up; ncu-profile skips it
    const Status st = ws.forward();
    if (!st || cudaDeviceSynchronize() != cudaSuccess) { std::fprintf(stderr, "%s\n", st.message.c_str()); return 2; }
  }
  std::printf("profile %s: 2 launches\n", p.describe().c_str());
  return ws.error().empty() ? 0 : 2;
}

int run_selftest() {
  int failed = stats_selftest();
  // Every class must differ from `normal` in its inputs (except the repeat).
  Problem p;
  p.batch = 2; p.heads_q = p.heads_kv = 2; p.seqlen_q = p.seqlen_k = 96; p.lengths = LengthMode::kSeparate;
  const auto names = class_names(p);
  const HostInputs base = make_class(p, "normal", 1);
  for (const auto& n : names) {
    const HostInputs x = make_class(p, n, 1);
    const bool same = x.q == base.q && x.k == base.k && x.v == base.v && x.lens_q == base.lens_q && x.lens_k == base.lens_k;
    const bool ok = (n == "normal" || n == "normal-repeat") == same;
    std::printf("%s  class %s %s\n", ok ? "ok  " : "FAIL", n.c_str(), same ? "equals normal" : "differs from normal");
    failed += ok ? 0 : 1;
  }
  const bool count_ok = names.size() >= 11;
  std::printf("%s  %zu classes in separate-length mode (>= 10 required)\n", count_ok ? "ok  " : "FAIL", names.size() - 1);
  failed += count_ok ? 0 : 1;
  std::printf("selftest: %s\n", failed ? "FAIL" : "PASS");
  return failed ? 1 : 0;
}

}  // namespace
}  // namespace dhp::gates

int main(int argc, char** argv) {
  using namespace dhp::gates;
  if (argc < 2 || !std::strcmp(argv[1], "--help")) return fail_usage("usage: dhp_validate MODE [flags]");
  const std::string mode = argv[1];
  std::vector<std::string> args(argv + 2, argv + argc);
  Problem p;
  const std::string err = parse_problem(args, p);
  if (!err.empty()) return fail_usage(err);
  Flags f{args};
  if (mode == "selftest") return run_selftest();
  if (!dhp::testing::cuda_device_available()) {
    std::printf("skipped: no CUDA device\n");
    return 0;
  }
  std::printf("device: %s\n", dhp::testing::device_description().c_str());
  if (p.kernel == Kernel::kLeaky && !leaky_available())
    return fail_usage("--kernel leaky: not built (configure with -DDHP_BUILD_LEAKY_CONTROL=ON)");
  try {
    if (mode == "classes") return run_classes(p, f);
    if (mode == "dudect") return run_dudect(p, f);
    if (mode == "repro") return run_repro(p, f);
    if (mode == "sanitize") return run_sanitize();
    if (mode == "profile") return run_profile(p);
  } catch (const std::exception& e) {
    return fail_usage(e.what());
  }
  return fail_usage("unknown mode " + mode);
}
