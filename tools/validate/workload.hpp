// The workload of the GPU gates: one public configuration, its device
// buffers (allocated once, so every class and every launch uses the same
// addresses: addresses are public, and moving them would blur a
// comparison), the input classes of the counter differential, device-side
// generators for the timing test, and the kernel under test (the shipped
// one through the public API, or the test-only leaky control).
#pragma once
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include "captured_graph.hpp"
#include "dhp/attention.hpp"

namespace dhp::gates {

enum class LengthMode { kNone, kShared, kSeparate };
enum class Kernel { kShipped, kLeaky };

struct Problem {
  DType dtype = DType::kFloat16;
  int64_t batch = 1, heads_q = 8, heads_kv = 8, seqlen_q = 512, seqlen_k = 512, head_dim = 64;
  bool causal = false, with_lse = true;
  LengthMode lengths = LengthMode::kNone;
  Kernel kernel = Kernel::kShipped;
  std::string describe() const;
  int64_t q_elems() const { return batch * seqlen_q * heads_q * head_dim; }
  int64_t k_elems() const { return batch * seqlen_k * heads_kv * head_dim; }
  int64_t lse_elems() const { return batch * heads_q * seqlen_q; }
};

// Parses the configuration flags (see `dhp_validate --help`) out of argv;
// unknown flags are left for the caller. Returns an error message or "".
std::string parse_problem(std::vector<std::string>& args, Problem& p);

// Host-side inputs in BSHD order (16-bit patterns) and lengths.
struct HostInputs {
  std::vector<uint16_t> q, k, v;
  std::vector<int32_t> lens_q, lens_k;  // empty without lengths; shared mode uses lens_q
};

// The input classes of gate 1. Value classes keep the base lengths; length
// classes keep the `normal` values.
std::vector<std::string> class_names(const Problem& p);
HostInputs make_class(const Problem& p, const std::string& name, uint64_t seed);

// True when the leaky control was compiled in (DHP_BUILD_LEAKY_CONTROL).
bool leaky_available();

class StreamHold;

// Workspace::calibrate_deadline_work's result: slowest_ns > 0 on success,
// else error says why; starved_batches counts holds that ran out (those
// batches' work may hold host time: the budget errs high, not low).
struct DeadlineCalibration {
  int64_t slowest_ns = 0, calls = 0;
  int starved_batches = 0;
  std::string error;
};

// Device buffers of one problem.
class Workspace {
 public:
  explicit Workspace(const Problem& p);
  ~Workspace();
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;
  const std::string& error() const { return error_; }

  void upload(const HostInputs& in);  // Q/K/V/lengths; errors land in error()
  void poison_outputs();              // 0xFF..: a NaN pattern no kernel writes
  Status forward(cudaStream_t stream = nullptr);  // one launch of the kernel under test
  // forward() captured once into a CUDA graph (with the deadline set now, if
  // any), and its replay: the call as a graph user makes it.
  Status capture_forward(cudaStream_t stream);
  Status replay_forward(cudaStream_t stream);
  // Outputs as raw bits (o in BSHD, lse [B, H, S]).
  void download(std::vector<uint16_t>& o, std::vector<uint32_t>& lse);
  // Timing-test preparation, enqueued on `stream` (all device-side, so the
  // host stages nothing that a later launch could overwrite):
  // Q/K/V from a counter-based normal generator with this seed (or all
  // zeros, in the same launch) ...
  void generate_values(uint64_t seed, cudaStream_t stream, bool zeros = false);
  // ... and lengths set from values passed by value (B <= 64).
  void set_lengths(const std::vector<int32_t>& lq, const std::vector<int32_t>& lk, cudaStream_t stream);

  // The deadline (threat model §8) for later forward() calls: budget_ns > 0
  // gives every call that budget and this workspace's state; 0 turns it off.
  void set_deadline(int64_t budget_ns);
  int64_t deadline() const { return budget_ns_; }
  uint64_t deadline_overruns();  // synchronises; 0 without a deadline
  // Per-class overrun tally (timing test): enqueued after a timed launch,
  // outside its events, adds the overruns since the last tally to class
  // `cls` (cls < 0: only takes the current count as the base).
  void tally_overruns(int cls, cudaStream_t stream);
  void overruns_by_class(uint64_t out[2]);  // synchronises
  // --deadline auto's calibration on the quantity a budget must cover: the
  // slowest work (start stamp to the wait's arrival, the state's
  // last_work_ns) over `calls` deadline calls with lengths lq/lk and fresh
  // values, `batch` at a time behind `hold` (both slots, double-buffered),
  // after one untimed call. Synchronises; the budget set before is restored.
  DeadlineCalibration calibrate_deadline_work(StreamHold& hold, int64_t calls, int batch,
                                              const std::vector<int32_t>& lq, const std::vector<int32_t>& lk,
                                              uint64_t& fresh, cudaStream_t stream);
  // Diagnostic (--deadline-probe): after timed launch i of `count`, record
  // {work ns, ns from the deadline to the probe, SM clock MHz, overruns so
  // far} (deadline_probe_kernel); probe_records reads all back (synchronises).
  void prepare_probe(int64_t count);  // the records' buffer, zeroed (call outside any hold)
  void probe_deadline(int64_t i, int64_t count, cudaStream_t stream);
  std::vector<float> probe_records(int64_t count);

  const Problem& problem() const { return p_; }

 private:
  Problem p_;
  void *q_ = nullptr, *k_ = nullptr, *v_ = nullptr, *o_ = nullptr;
  float* lse_ = nullptr;
  int32_t *lens_q_ = nullptr, *lens_k_ = nullptr;
  dhp_deadline_state* deadline_state_ = nullptr;
  uint64_t* tally_ = nullptr;  // [0] overruns at the last tally, [1 + class] overruns per class,
                               // [3] the calibration's largest work (ns)
  float* probe_ = nullptr;     // 4 floats per timed launch (--deadline-probe)
  std::unique_ptr<testing::CapturedGraph> graph_;  // capture_forward
  int64_t budget_ns_ = 0;
  std::string error_;
  Params params() const;
};

// Holds a stream until the host has enqueued a whole batch of timed
// launches, so that they run back to back on the GPU: a launch that waited
// for the host would count the host's delay in its device time. Two slots:
// the host fills one batch while the GPU runs the other.
class StreamHold {
 public:
  StreamHold();
  ~StreamHold();
  void hold(int slot, cudaStream_t stream);  // a kernel that spins until release(slot), or 200 ms
  void release(int slot);
  int timeouts() const;  // holds that ran out: those batches may have waited for the host
 private:
  volatile int* host_ = nullptr;  // mapped: [0..1] release flags, [2] timeout seen
  int* dev_ = nullptr;
};

// The update period of the GPU's nanosecond clock (%globaltimer), which the
// deadline waits on: mean and smallest step over 1000 changes.
struct TimerTick {
  double mean_ns = 0, min_ns = 0;
};
TimerTick measure_timer_tick();

// Random lengths in [0, S], with out-of-range values (negative, > S) mixed
// in, as the API clamps them.
std::vector<int32_t> random_lengths(int64_t B, int64_t S, std::mt19937_64& rng);

}  // namespace dhp::gates
