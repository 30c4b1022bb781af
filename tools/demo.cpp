// The README's main job: on a GPU, run attention on a default problem,
// check it against the float64 reference, print time and TFLOP/s.
#include <cstdio>

#include "harness.hpp"
#include "timing.hpp"

int main() {
  using namespace dhp;
  if (!testing::cuda_device_available()) {
    std::printf("No CUDA device (compute capability >= 8.0) found: nothing to run.\n"
                "The library built; run the tests with scripts/test.sh, or run this on an\n"
                "Ampere/Hopper GPU machine.\n");
    return 0;
  }
  std::printf("device: %s\n", testing::device_description().c_str());

  // 1. Correctness on a mid-size problem (the reference is a CPU float64 loop).
  testing::Case check;
  check.batch = 2; check.seqlen_q = check.seqlen_k = 1000; check.heads_q = 8; check.heads_kv = 2;
  check.head_dim = 128; check.causal = true; check.lengths = testing::Lengths::kShared;
  const testing::Errors e = testing::run_case(check);
  const bool ok = testing::passes(e, check.dtype);
  std::printf("check  %-60s %s (%s)\n", check.name().c_str(), ok ? "PASS" : "FAIL", e.describe().c_str());

  // 2. Time the default problem: fp16, B=4, H=16, S=4096, D=128, non-causal.
  testing::Case big;
  big.batch = 4; big.seqlen_q = big.seqlen_k = 4096; big.heads_q = big.heads_kv = 16; big.head_dim = 128;
  const tools::Timing t = tools::time_case(big, 10, 50);
  if (!t.error.empty()) {
    std::printf("time   %s: ERROR %s\n", big.name().c_str(), t.error.c_str());
    return 1;
  }
  std::printf("time   %-60s median %.3f ms  %.1f TFLOP/s\n", big.name().c_str(), t.median_ms, t.tflops);
  return ok ? 0 : 1;
}
