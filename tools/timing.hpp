// Timing of one forward configuration with CUDA events: warm-up, then the
// median (and spread) over many launches on random (never zero) inputs.
#pragma once
#include <string>

#include "harness.hpp"

namespace dhp::tools {

struct Timing {
  double median_ms = 0, min_ms = 0, max_ms = 0;
  double tflops = 0;  // 4*B*H*Sq*Sk*D (halved for causal when Sq == Sk) / median
  std::string error;  // non-empty on failure
};

// FLOPs counted the way FlashAttention papers count them.
double attention_flops(const testing::Case& c);

// c.lengths != kNone: random secret lengths in [1, S] (FLOPs still counted
// over S: the kernel's work is S_max by design). graph_launches > 0: that
// many calls captured in one CUDA graph, per-call time of a replay.
Timing time_case(const testing::Case& c, int warmup, int iters, int graph_launches = 0);

}  // namespace dhp::tools
