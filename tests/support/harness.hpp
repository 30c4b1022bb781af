// Test and tool support: random problems, device upload in BSHD or BHSD,
// poisoned outputs, one forward call, and comparison with the float64
// reference. Shared by the GPU tests, the demo and the benchmark.
#pragma once
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "dhp/attention.hpp"

namespace dhp::ref {
struct Problem;  // src/reference/reference.hpp
}  // namespace dhp::ref

namespace dhp::testing {

// True when a CUDA device of compute capability >= 8.0 is usable.
bool cuda_device_available();
// "NVIDIA H100 80GB HBM3, cc 9.0, driver 13000" or "none".
std::string device_description();

enum class Lengths { kNone, kShared, kSeparate, kOnlyQ, kOnlyK };
// kPadded: BSHD with gaps (8 elements after each head's D, after each
// sequence row and after each batch entry) that the kernel must neither
// read (Q/K/V gaps hold NaN) nor write (O gaps are poisoned and checked).
enum class Layout { kBSHD, kBHSD, kPadded };

struct Case {
  DType dtype = DType::kFloat16;
  int64_t batch = 1, seqlen_q = 128, seqlen_k = 128, heads_q = 4, heads_kv = 4, head_dim = 128;
  bool causal = false;
  Lengths lengths = Lengths::kNone;
  Layout layout = Layout::kBSHD;
  bool with_lse = true;
  double scale = 0;              // softmax scale; 0: the default 1/sqrt(D)
  bool broadcast_kv_heads = false;  // K and V stored once, head stride 0 (every kv head the same)
  bool poison_padding = false;  // NaN in Q/K/V beyond the secret lengths
  int64_t nan_query_row = -1;   // >= 0: put a NaN in this visible Q row of (b 0, h 0)
  // Checks of the harness itself (the comparison must be able to fail):
  // after the kernel ran, scale O's row (b 0, s, h 0) by 1.1 / write one
  // element just past o's end, as a kernel bug would.
  int64_t corrupt_row = -1;
  bool corrupt_past_end = false;
  // Explicit lengths (else random per batch entry, with 0, 1 and S present
  // when the batch is large enough).
  std::vector<int32_t> lens_q, lens_k;
  std::string name() const;
};

struct Errors {
  double o_rel_l2 = 0;        // ||o - ref|| / ||ref|| over elements whose ref is finite
  // The worst row (b, s, h): ||o_row - ref_row|| / ||ref_row||, or
  // ||o_row|| / 1e-30 for a row whose reference is exactly zero (an empty
  // row must be written as exact zeros).
  double o_row_max_rel = 0;
  double lse_max_rel = 0;     // max |lse - ref| / max(1, |ref|) over finite ref
  int64_t nan_mismatch = 0;   // elements where exactly one of o / ref is NaN (or lse)
  int64_t inf_mismatch = 0;   // lse where -inf is expected and not given, or vice versa
  int64_t unwritten = 0;      // elements still holding the poison bit pattern
  int64_t out_of_bounds = 0;  // bytes changed outside o / lse (guard bands, O's stride gaps)
  uint64_t seed = 0;
  std::string status;         // non-empty: the library call failed with this message
  std::string describe() const;
};

// Tolerances of the test suite against the largest errors measured over the
// GPU suite on both kernels (H100, scripts/suite-errors.sh, session 24):
//   relative L2 of the whole output: fp16 2e-3 (measured 3.3e-4), bf16 1e-2 (2.2e-3);
//   the worst row's relative L2:     fp16 2e-3 (4.3e-4),        bf16 1.5e-2 (3.5e-3);
//   lse, relative to max(1, |lse|):  1e-5 (1.9e-6).
double o_tolerance(DType d);
double o_row_tolerance(DType d);
inline constexpr double kLseTolerance = 1e-5;
bool passes(const Errors& e, DType d);

// Runs the case once on the GPU with fresh random inputs (seeded from
// std::random_device unless seed != 0) and compares with the reference. If
// `wrong_reference` is set the reference is computed with the causal flag
// flipped, to show that the comparison can fail. DHP_TEST_VERBOSE=1 prints
// every case's errors (to calibrate the tolerances).
Errors run_case(const Case& c, uint64_t seed = 0, bool wrong_reference = false);

// 16-bit conversions (round to nearest even).
uint16_t to_bits(float x, DType d);
float from_bits(uint16_t b, DType d);

// A fresh 64-bit seed from std::random_device (print it: SCOPED_TRACE).
uint64_t fresh_seed();

// Relative L2 error of o (16-bit, BSHD contiguous) against the float64
// reference of q, k, v (16-bit, BSHD contiguous) for `rp`; *nan counts the
// NaNs in o (the poison is one). For tests that build their own calls
// (graph replays, deadlines) rather than a Case.
double reference_o_rel_l2(const ref::Problem& rp, const std::vector<uint16_t>& q, const std::vector<uint16_t>& k,
                          const std::vector<uint16_t>& v, const std::vector<uint16_t>& o, DType d, int64_t* nan);

}  // namespace dhp::testing

#include <ostream>
namespace dhp::testing {
// GoogleTest prints parameters with this instead of a byte dump.
inline void PrintTo(const Case& c, std::ostream* os) { *os << c.name(); }
}  // namespace dhp::testing
