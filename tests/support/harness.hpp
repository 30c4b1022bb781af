// Test and tool support: random problems, device upload in BSHD or BHSD,
// poisoned outputs, one forward call, and comparison with the float64
// reference. Shared by the GPU tests, the demo and the benchmark.
#pragma once
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "dhp/attention.hpp"

namespace dhp::testing {

// True when a CUDA device of compute capability >= 8.0 is usable.
bool cuda_device_available();
// "NVIDIA H100 80GB HBM3, cc 9.0, driver 13000" or "none".
std::string device_description();

enum class Lengths { kNone, kShared, kSeparate, kOnlyQ, kOnlyK };
enum class Layout { kBSHD, kBHSD };

struct Case {
  DType dtype = DType::kFloat16;
  int64_t batch = 1, seqlen_q = 128, seqlen_k = 128, heads_q = 4, heads_kv = 4, head_dim = 128;
  bool causal = false;
  Lengths lengths = Lengths::kNone;
  Layout layout = Layout::kBSHD;
  bool with_lse = true;
  bool poison_padding = false;  // NaN in Q/K/V beyond the secret lengths
  int64_t nan_query_row = -1;   // >= 0: put a NaN in this visible Q row of (b 0, h 0)
  // Explicit lengths (else random per batch entry, with 0, 1 and S present
  // when the batch is large enough).
  std::vector<int32_t> lens_q, lens_k;
  std::string name() const;
};

struct Errors {
  double o_rel_l2 = 0;        // ||o - ref|| / ||ref|| over elements whose ref is finite
  double lse_max_rel = 0;     // max |lse - ref| / max(1, |ref|) over finite ref
  int64_t nan_mismatch = 0;   // elements where exactly one of o / ref is NaN (or lse)
  int64_t inf_mismatch = 0;   // lse where -inf is expected and not given, or vice versa
  int64_t unwritten = 0;      // elements still holding the poison bit pattern
  uint64_t seed = 0;
  std::string status;         // non-empty: the library call failed with this message
  std::string describe() const;
};

// Tolerances of the test suite: fp16 2e-3, bf16 1e-2 (relative L2), lse 1e-3.
double o_tolerance(DType d);
inline constexpr double kLseTolerance = 1e-3;
bool passes(const Errors& e, DType d);

// Runs the case once on the GPU with fresh random inputs (seeded from
// std::random_device unless seed != 0) and compares with the reference. If
// `wrong_reference` is set the reference is computed with the causal flag
// flipped, to show that the comparison can fail.
Errors run_case(const Case& c, uint64_t seed = 0, bool wrong_reference = false);

// 16-bit conversions (round to nearest even).
uint16_t to_bits(float x, DType d);
float from_bits(uint16_t b, DType d);

}  // namespace dhp::testing

#include <ostream>
namespace dhp::testing {
// GoogleTest prints parameters with this instead of a byte dump.
inline void PrintTo(const Case& c, std::ostream* os) { *os << c.name(); }
}  // namespace dhp::testing
