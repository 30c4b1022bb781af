// Public limits of the library, shared by validation, kernels and tests.
#pragma once
#include <cstdint>

namespace dhp::limits {

// Grid dimensions y/z carry heads and batch: CUDA caps them at 65535.
inline constexpr int64_t kMaxBatch = 65535;
inline constexpr int64_t kMaxHeads = 65535;
// Row indices inside a sequence are 32-bit in the kernels; 2^24 keeps every
// intermediate (i + L_k - L_q, tile products) far from overflow.
inline constexpr int64_t kMaxSeqlen = int64_t{1} << 24;
// Largest element offset any tensor may span: 2^62 bytes keeps every 64-bit
// address computation in the kernels free of overflow.
inline constexpr int64_t kMaxSpanBytes = int64_t{1} << 62;
// Tensor base pointers and 16-byte chunks: cp.async / TMA move 16 bytes.
inline constexpr int64_t kTensorAlignBytes = 16;
inline constexpr int64_t kStrideMultiple = 8;  // elements (16 bytes of 16-bit data)
// The kernels take the softmax scale times log2(e) as one fp32 value (the
// exp2 domain), so a scale is valid only while that product is finite.
inline constexpr double kLog2e = 1.4426950408889634;
// A deadline call holds its stream until start + budget: 10 s is far above
// any attention call, and a budget given in the wrong unit (µs or ms read as
// ns the other way round) is refused instead of stalling the GPU for hours.
inline constexpr int64_t kMaxTimeBudgetNs = int64_t{10} * 1000 * 1000 * 1000;

}  // namespace dhp::limits
