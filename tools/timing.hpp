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

Timing time_case(const testing::Case& c, int warmup, int iters);

}  // namespace dhp::tools
