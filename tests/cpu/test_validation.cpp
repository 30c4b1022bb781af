// Tests of dhp::validate (src/api/validate.cpp): one broken rule per case,
// checking both the status code and that the message names the argument.
// Pointers are fake (validation never dereferences them) but 16-byte aligned.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <ostream>
#include <string>
#include <vector>

#include "dhp/attention.hpp"

namespace {

const void* fake(uintptr_t addr) { return reinterpret_cast<const void*>(addr); }
void* fake_mut(uintptr_t addr) { return reinterpret_cast<void*>(addr); }
const int32_t* fake_lens(uintptr_t addr) { return reinterpret_cast<const int32_t*>(addr); }
dhp_deadline_state* fake_state(uintptr_t addr) { return reinterpret_cast<dhp_deadline_state*>(addr); }
void set_deadline(dhp::Params& p, int64_t budget_ns, uintptr_t state) {
  p.time_budget_ns = budget_ns;
  p.deadline_state = fake_state(state);
}

// Fake tensor bases 2^40 bytes apart: no tensor of any case below spans
// that much, so the baseline's outputs overlap nothing (validation checks).
constexpr uintptr_t kQ = uintptr_t{1} << 40, kK = uintptr_t{2} << 40, kV = uintptr_t{3} << 40,
                    kO = uintptr_t{4} << 40;

// Baseline: fp16, B=2, S_q=S_k=128, H_q=8, H_kv=2 (GQA), D=128, BSHD.
dhp::Params valid_params(int64_t seqlen_q = 128, int64_t seqlen_k = 128) {
  return dhp::make_params(dhp::DType::kFloat16, 2, seqlen_q, seqlen_k, 8, 2, 128, fake(kQ), fake(kK), fake(kV),
                          fake_mut(kO));
}

// Re-derives contiguous BSHD strides after a test changes sizes, so that the
// "valid" cases really describe non-overlapping tensors.
void contiguous(dhp::Params& p) {
  const int64_t D = p.head_dim;
  dhp::set_q_strides(p, dhp::bshd_strides(p.seqlen_q, p.heads_q, D));
  dhp::set_o_strides(p, dhp::bshd_strides(p.seqlen_q, p.heads_q, D));
  dhp::set_k_strides(p, dhp::bshd_strides(p.seqlen_k, p.heads_kv, D));
  dhp::set_v_strides(p, dhp::bshd_strides(p.seqlen_k, p.heads_kv, D));
}

TEST(Validation, BaselineIsValid) {
  const dhp::Status s = dhp::validate(valid_params());
  EXPECT_TRUE(s.ok()) << s.message;
  EXPECT_EQ(s.code, DHP_OK);
  EXPECT_TRUE(s.message.empty());
}

struct BadCase {
  const char* name;
  std::function<void(dhp::Params&)> mutate;
  dhp_status code;
  std::vector<std::string> needles;  // substrings the message must contain
  int64_t seqlen_k = 128;            // for the S_q != S_k cases
};

constexpr dhp_status kInvalid = DHP_ERROR_INVALID_ARGUMENT;
constexpr dhp_status kUnsupported = DHP_ERROR_UNSUPPORTED;
constexpr int64_t kHuge = int64_t{1} << 61;
const float kNaN = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();

// An out-of-range enum value written the way a C caller would (C++ forbids
// static_cast to a value outside dhp_dtype's range: that would be UB here).
void set_raw_dtype(dhp::Params& p, int value) {
  static_assert(sizeof(p.dtype) == sizeof(int));
  std::memcpy(&p.dtype, &value, sizeof(value));
}

void set_scale(dhp::Params& p, float s) {
  p.has_softmax_scale = 1;
  p.softmax_scale = s;
}

const BadCase kBadCases[] = {
    {"dtype_unknown", [](auto& p) { set_raw_dtype(p, 7); }, kInvalid, {"dtype", "DHP_FLOAT16", "got 7"}},
    {"dtype_negative", [](auto& p) { set_raw_dtype(p, -1); }, kInvalid, {"dtype", "got -1"}},
    {"batch_zero", [](auto& p) { p.batch = 0; }, kInvalid, {"batch", ">= 1"}},
    {"batch_negative", [](auto& p) { p.batch = -3; }, kInvalid, {"batch", ">= 1"}},
    {"seqlen_q_zero", [](auto& p) { p.seqlen_q = 0; }, kInvalid, {"seqlen_q", ">= 1"}},
    {"seqlen_q_negative", [](auto& p) { p.seqlen_q = -1; }, kInvalid, {"seqlen_q"}},
    {"seqlen_k_zero", [](auto& p) { p.seqlen_k = 0; }, kInvalid, {"seqlen_k", ">= 1"}},
    {"seqlen_k_negative", [](auto& p) { p.seqlen_k = -128; }, kInvalid, {"seqlen_k"}},
    {"heads_q_zero", [](auto& p) { p.heads_q = 0; }, kInvalid, {"heads_q", ">= 1"}},
    {"heads_q_negative", [](auto& p) { p.heads_q = -8; }, kInvalid, {"heads_q"}},
    {"heads_kv_zero", [](auto& p) { p.heads_kv = 0; }, kInvalid, {"heads_kv", ">= 1"}},
    {"heads_kv_negative", [](auto& p) { p.heads_kv = -2; }, kInvalid, {"heads_kv"}},
    {"head_dim_zero", [](auto& p) { p.head_dim = 0; }, kInvalid, {"head_dim"}},
    {"head_dim_negative", [](auto& p) { p.head_dim = -128; }, kInvalid, {"head_dim"}},
    {"head_dim_32", [](auto& p) { p.head_dim = 32; }, kUnsupported, {"head_dim", "32"}},
    {"head_dim_96", [](auto& p) { p.head_dim = 96; }, kUnsupported, {"head_dim", "96"}},
    {"head_dim_512", [](auto& p) { p.head_dim = 512; }, kUnsupported, {"head_dim", "512"}},
    {"batch_above_limit", [](auto& p) { p.batch = 65536; }, kInvalid, {"batch", "65535"}},
    {"heads_q_above_limit", [](auto& p) { p.heads_q = 65536; }, kInvalid, {"heads_q", "65535"}},
    {"heads_kv_above_limit", [](auto& p) { p.heads_kv = 65536; }, kInvalid, {"heads_kv", "65535"}},
    {"seqlen_q_above_limit", [](auto& p) { p.seqlen_q = (int64_t{1} << 24) + 1; }, kInvalid, {"seqlen_q", "16777216"}},
    {"seqlen_k_above_limit", [](auto& p) { p.seqlen_k = (int64_t{1} << 24) + 1; }, kInvalid, {"seqlen_k", "16777216"}},
    {"heads_not_multiple", [](auto& p) { p.heads_q = 6; p.heads_kv = 4; }, kInvalid, {"heads_q", "multiple", "heads_kv"}},
    {"heads_kv_above_heads_q", [](auto& p) { p.heads_q = 2; p.heads_kv = 4; }, kInvalid, {"heads_q", "multiple"}},
    {"q_null", [](auto& p) { p.q = nullptr; }, kInvalid, {"q: pointer", "null"}},
    {"k_null", [](auto& p) { p.k = nullptr; }, kInvalid, {"k: pointer", "null"}},
    {"v_null", [](auto& p) { p.v = nullptr; }, kInvalid, {"v: pointer", "null"}},
    {"o_null", [](auto& p) { p.o = nullptr; }, kInvalid, {"o: pointer", "null"}},
    {"q_misaligned", [](auto& p) { p.q = fake(kQ + 2); }, kInvalid, {"q: pointer", "16-byte"}},
    {"k_misaligned", [](auto& p) { p.k = fake(kK + 2); }, kInvalid, {"k: pointer", "16-byte"}},
    {"v_misaligned", [](auto& p) { p.v = fake(kV + 8); }, kInvalid, {"v: pointer", "16-byte"}},
    {"o_misaligned", [](auto& p) { p.o = fake_mut(kO + 2); }, kInvalid, {"o: pointer", "16-byte"}},
    {"q_stride_seq_not_multiple_of_8", [](auto& p) { p.q_stride_seq = 1020; }, kInvalid, {"q_stride_seq", "multiple of 8"}},
    {"k_stride_head_not_multiple_of_8", [](auto& p) { p.k_stride_head = 130; }, kInvalid, {"k_stride_head", "multiple of 8"}},
    {"v_stride_batch_not_multiple_of_8", [](auto& p) { p.v_stride_batch += 1; }, kInvalid, {"v_stride_batch", "multiple of 8"}},
    {"o_stride_seq_not_multiple_of_8", [](auto& p) { p.o_stride_seq = 1028; }, kInvalid, {"o_stride_seq", "multiple of 8"}},
    {"q_stride_batch_negative", [](auto& p) { p.q_stride_batch = -p.q_stride_batch; }, kInvalid, {"q_stride_batch", ">= 0"}},
    {"k_stride_seq_negative", [](auto& p) { p.k_stride_seq = -256; }, kInvalid, {"k_stride_seq", ">= 0"}},
    {"o_stride_head_negative", [](auto& p) { p.o_stride_head = -128; }, kInvalid, {"o_stride_head", ">= 0"}},
    {"v_stride_head_negative", [](auto& p) { p.v_stride_head = -128; }, kInvalid, {"v_stride_head", ">= 0"}},
    // One stride alone too large: (B - 1) * stride > 2^61 elements.
    {"q_span_single_stride", [](auto& p) { p.q_stride_batch = kHuge + 8; }, kInvalid, {"q_stride_batch", "2^62"}},
    {"v_span_single_stride", [](auto& p) { p.v_stride_seq = int64_t{1} << 56; }, kInvalid, {"v_stride_seq", "2^62"}},
    // Each stride fine on its own, but the sum of the terms exceeds the span.
    {"k_span_sum", [](auto& p) { p.k_stride_batch = int64_t{1} << 60; p.k_stride_seq = int64_t{1} << 54; },
     kInvalid, {"k: tensor spans", "2^62"}},
    // Every size at its limit at once: contiguous, but ~2^64 elements.
    {"all_limits_together",
     [](auto& p) {
       p.batch = 65535; p.heads_q = p.heads_kv = 65535; p.head_dim = 256;
       p.seqlen_q = p.seqlen_k = int64_t{1} << 24;
       contiguous(p);
     },
     kInvalid, {"q_stride_batch", "2^62"}},
    {"lse_misaligned", [](auto& p) { p.lse = reinterpret_cast<float*>(0x50002); }, kInvalid, {"lse", "4-byte"}},
    {"scale_zero", [](auto& p) { set_scale(p, 0.0f); }, kInvalid, {"softmax_scale"}},
    {"scale_negative_zero", [](auto& p) { set_scale(p, -0.0f); }, kInvalid, {"softmax_scale"}},
    {"scale_negative", [](auto& p) { set_scale(p, -0.125f); }, kInvalid, {"softmax_scale"}},
    {"scale_nan", [](auto& p) { set_scale(p, kNaN); }, kInvalid, {"softmax_scale"}},
    {"scale_inf", [](auto& p) { set_scale(p, kInf); }, kInvalid, {"softmax_scale"}},
    {"scale_minus_inf", [](auto& p) { set_scale(p, -kInf); }, kInvalid, {"softmax_scale"}},
    // Finite, but times log2(e) it is +inf in fp32 (every output would be NaN).
    {"scale_huge", [](auto& p) { set_scale(p, 3.0e38f); }, kInvalid, {"softmax_scale", "log2(e)"}},
    // O's own rows overlapping each other (check_output_no_overlap): a
    // zero sequence stride, and a head stride below the head dimension.
    {"o_rows_share_memory", [](auto& p) { p.o_stride_seq = 0; }, kInvalid, {"o_stride_seq", "output rows overlap"}},
    {"o_heads_overlap", [](auto& p) { p.o_stride_head = 8; }, kInvalid, {"o_stride_head", "output rows overlap"}},
    // Sequences of the batch overlapping: the batch stride below S * H * D.
    {"o_batches_overlap", [](auto& p) { p.o_stride_batch = 128 * 8 * 128 / 2; }, kInvalid,
     {"o_stride_batch", "output rows overlap"}},
    // Outputs sharing memory with an input or with each other.
    {"o_is_q", [](auto& p) { p.o = fake_mut(kQ); }, kInvalid, {"o:", "overlaps q"}},
    {"o_inside_v", [](auto& p) { p.o = fake_mut(kV + 4096); }, kInvalid, {"o:", "overlaps v"}},
    {"o_ends_inside_k", [](auto& p) { p.o = fake_mut(kK - 4096); }, kInvalid, {"o:", "overlaps k"}},
    {"o_over_seqlens_k", [](auto& p) { p.seqlens_k = fake_lens(kO + 64); }, kInvalid, {"o:", "overlaps seqlens_k"}},
    {"lse_inside_o", [](auto& p) { p.lse = reinterpret_cast<float*>(kO + 256); }, kInvalid, {"o:", "overlaps lse"}},
    {"lse_inside_q", [](auto& p) { p.lse = reinterpret_cast<float*>(kQ + 256); }, kInvalid, {"lse:", "overlaps q"}},
    {"lse_inside_k", [](auto& p) { p.lse = reinterpret_cast<float*>(kK + 256); }, kInvalid, {"lse:", "overlaps k"}},
    {"lse_inside_v", [](auto& p) { p.lse = reinterpret_cast<float*>(kV + 4); }, kInvalid, {"lse:", "overlaps v"}},
    // Address ranges past the top of the address space (pointer + extent
    // overflows): no allocation ends there, and a saturated range would
    // hide overlaps.
    {"o_wraps_address_space", [](auto& p) { p.o = fake_mut(UINTPTR_MAX - 15); }, kInvalid, {"o:", "address space"}},
    {"k_wraps_address_space", [](auto& p) { p.k = fake(UINTPTR_MAX - 4095); }, kInvalid, {"k:", "address space"}},
    {"lse_wraps_address_space", [](auto& p) { p.lse = reinterpret_cast<float*>(UINTPTR_MAX - 63); }, kInvalid,
     {"lse:", "address space"}},
    {"seqlens_wraps_address_space", [](auto& p) { p.seqlens_k = fake_lens(UINTPTR_MAX - 3); }, kInvalid,
     {"seqlens_k:", "address space"}},
    {"lse_over_seqlens", [](auto& p) { p.seqlens = fake_lens(0x50100); p.lse = reinterpret_cast<float*>(0x50000); },
     kInvalid, {"lse:", "overlaps seqlens"}},
    {"lse_over_seqlens_q", [](auto& p) { p.seqlens_q = fake_lens(0x50100); p.lse = reinterpret_cast<float*>(0x50000); },
     kInvalid, {"lse:", "overlaps seqlens_q"}},
    {"lse_over_seqlens_k", [](auto& p) { p.seqlens_k = fake_lens(0x50100); p.lse = reinterpret_cast<float*>(0x50000); },
     kInvalid, {"lse:", "overlaps seqlens_k"}},
    {"o_over_seqlens", [](auto& p) { p.seqlens = fake_lens(kO + 64); }, kInvalid, {"o:", "overlaps seqlens"}},
    {"o_over_seqlens_q", [](auto& p) { p.seqlens_q = fake_lens(kO + 64); }, kInvalid, {"o:", "overlaps seqlens_q"}},
    {"seqlens_with_seqlens_q", [](auto& p) { p.seqlens = fake_lens(0x60000); p.seqlens_q = fake_lens(0x60100); },
     kInvalid, {"seqlens", "seqlens_q"}},
    {"seqlens_with_seqlens_k", [](auto& p) { p.seqlens = fake_lens(0x60000); p.seqlens_k = fake_lens(0x60100); },
     kInvalid, {"seqlens", "seqlens_k"}},
    {"seqlens_requires_equal_seqlen", [](auto& p) { p.seqlens = fake_lens(0x60000); }, kInvalid,
     {"seqlens", "seqlen_q == seqlen_k"}, 256},
    {"seqlens_misaligned", [](auto& p) { p.seqlens = fake_lens(0x60002); }, kInvalid, {"seqlens: pointer", "4-byte"}},
    {"seqlens_q_misaligned", [](auto& p) { p.seqlens_q = fake_lens(0x60001); }, kInvalid, {"seqlens_q: pointer", "4-byte"}},
    {"seqlens_k_misaligned", [](auto& p) { p.seqlens_k = fake_lens(0x60003); }, kInvalid, {"seqlens_k: pointer", "4-byte"}},
    // The deadline (threat model §8): a budget in range, with a state, and
    // the state like any other output.
    {"time_budget_negative", [](auto& p) { set_deadline(p, -1, 0x70000); }, kInvalid, {"time_budget_ns", "got -1"}},
    {"time_budget_above_10s", [](auto& p) { set_deadline(p, 10'000'000'001, 0x70000); }, kInvalid,
     {"time_budget_ns", "10000000000", "got 10000000001"}},
    {"time_budget_without_state", [](auto& p) { set_deadline(p, 100'000, 0); }, kInvalid,
     {"deadline_state", "required", "time_budget_ns > 0"}},
    {"state_without_time_budget", [](auto& p) { set_deadline(p, 0, 0x70000); }, kInvalid,
     {"deadline_state", "time_budget_ns is 0"}},
    {"state_misaligned", [](auto& p) { set_deadline(p, 100'000, 0x70004); }, kInvalid,
     {"deadline_state: pointer", "8-byte"}},
    {"state_inside_o", [](auto& p) { set_deadline(p, 100'000, kO + 4096); }, kInvalid, {"overlaps deadline_state"}},
    {"state_inside_k", [](auto& p) { set_deadline(p, 100'000, kK + 8); }, kInvalid, {"deadline_state:", "overlaps k"}},
    {"state_over_seqlens", [](auto& p) { p.seqlens = fake_lens(0x70010); set_deadline(p, 100'000, 0x70000); },
     kInvalid, {"deadline_state:", "overlaps seqlens"}},
};

// gtest prints the case name instead of the struct's bytes.
void PrintTo(const BadCase& c, std::ostream* os) { *os << c.name; }

class BadParams : public ::testing::TestWithParam<BadCase> {};

TEST_P(BadParams, RejectedWithNamedArgument) {
  const BadCase& c = GetParam();
  dhp::Params p = valid_params(128, c.seqlen_k);
  ASSERT_TRUE(dhp::validate(p).ok()) << "baseline must be valid before breaking one rule";
  c.mutate(p);
  const dhp::Status s = dhp::validate(p);
  EXPECT_EQ(s.code, c.code) << s.message;
  EXPECT_FALSE(s.ok());
  for (const std::string& n : c.needles)
    EXPECT_NE(s.message.find(n), std::string::npos) << "message '" << s.message << "' lacks '" << n << "'";
}

INSTANTIATE_TEST_SUITE_P(Validation, BadParams, ::testing::ValuesIn(kBadCases),
                         [](const auto& info) { return std::string(info.param.name); });

struct GoodCase {
  const char* name;
  std::function<void(dhp::Params&)> mutate;
  int64_t seqlen_k = 128;
};

const GoodCase kGoodCases[] = {
    {"bshd_default", [](auto&) {}},
    {"bhsd_strides",
     [](auto& p) {
       dhp::set_q_strides(p, dhp::bhsd_strides(128, 8, 128));
       dhp::set_o_strides(p, dhp::bhsd_strides(128, 8, 128));
       dhp::set_k_strides(p, dhp::bhsd_strides(128, 2, 128));
       dhp::set_v_strides(p, dhp::bhsd_strides(128, 2, 128));
     }},
    {"mha", [](auto& p) { p.heads_kv = 8; contiguous(p); }},
    {"mqa", [](auto& p) { p.heads_kv = 1; contiguous(p); }},
    {"bfloat16", [](auto& p) { p.dtype = DHP_BFLOAT16; }},
    {"head_dim_64", [](auto& p) { p.head_dim = 64; contiguous(p); }},
    {"head_dim_256", [](auto& p) { p.head_dim = 256; contiguous(p); }},
    {"causal", [](auto& p) { p.causal = 1; }},
    {"explicit_scale", [](auto& p) { set_scale(p, 0.5f); }},
    {"scale_just_below_limit", [](auto& p) { set_scale(p, 2.35e38f); }},
    // Inputs may share memory (they are only read); an output just past one is fine.
    {"q_k_v_one_buffer", [](auto& p) { p.k = p.q; p.v = p.q; p.heads_kv = 8; contiguous(p); }},
    {"o_right_after_q", [](auto& p) { p.o = fake_mut(kQ + 2 * 128 * 8 * 128 * 2); }},
    {"lse_right_before_o", [](auto& p) { p.lse = reinterpret_cast<float*>(kO - 2 * 8 * 128 * 4); }},
    {"scale_ignored_without_flag", [](auto& p) { p.has_softmax_scale = 0; p.softmax_scale = kNaN; }},
    {"lse_4_byte_aligned", [](auto& p) { p.lse = reinterpret_cast<float*>(0x50004); }},
    {"shared_seqlens", [](auto& p) { p.seqlens = fake_lens(0x60004); p.causal = 1; }},
    {"separate_seqlens", [](auto& p) { p.seqlens_q = fake_lens(0x60004); p.seqlens_k = fake_lens(0x60104); }, 256},
    {"only_seqlens_q", [](auto& p) { p.seqlens_q = fake_lens(0x60004); }, 64},
    {"only_seqlens_k", [](auto& p) { p.seqlens_k = fake_lens(0x60004); p.causal = 1; }, 512},
    // A dimension of size 1: its stride is never used, so any value passes
    // (documented in attention.h), negative or not a multiple of 8 alike.
    {"size_one_batch_stride_ignored", [](auto& p) { p.batch = 1; p.q_stride_batch = -7; p.o_stride_batch = 3; }},
    {"size_one_kv_head_stride_ignored", [](auto& p) { p.heads_kv = 1; contiguous(p); p.k_stride_head = -1; p.v_stride_head = 5; }},
    // Inputs broadcast by a zero stride (K/V shared by all kv heads).
    {"kv_head_stride_zero", [](auto& p) { p.k_stride_head = 0; p.v_stride_head = 0; }},
    {"batch_at_limit", [](auto& p) { p.batch = 65535; }},
    {"heads_at_limit", [](auto& p) { p.heads_q = p.heads_kv = 65535; contiguous(p); }},
    {"seqlen_at_limit", [](auto& p) { p.seqlen_q = p.seqlen_k = int64_t{1} << 24; contiguous(p); }},
    {"deadline", [](auto& p) { set_deadline(p, 250'000, 0x70000); }},
    {"deadline_at_limit", [](auto& p) { set_deadline(p, 10'000'000'000, 0x70008); }},
    {"deadline_state_right_after_lse", [](auto& p) {
       p.lse = reinterpret_cast<float*>(0x80000);
       set_deadline(p, 1, 0x80000 + 2 * 8 * 128 * 4);
     }},
};

void PrintTo(const GoodCase& c, std::ostream* os) { *os << c.name; }

class GoodParams : public ::testing::TestWithParam<GoodCase> {};

TEST_P(GoodParams, Accepted) {
  const GoodCase& c = GetParam();
  dhp::Params p = valid_params(128, c.seqlen_k);
  c.mutate(p);
  const dhp::Status s = dhp::validate(p);
  EXPECT_EQ(s.code, DHP_OK) << s.message;
  EXPECT_TRUE(s.message.empty()) << s.message;
}

INSTANTIATE_TEST_SUITE_P(Validation, GoodParams, ::testing::ValuesIn(kGoodCases),
                         [](const auto& info) { return std::string(info.param.name); });

// The tiny single-row problem at the lower size limits is valid too.
TEST(Validation, MinimalProblem) {
  const dhp::Params p = dhp::make_params(dhp::DType::kBFloat16, 1, 1, 1, 1, 1, 64, fake(0x1000),
                                         fake(0x2000), fake(0x3000), fake_mut(0x4000));
  EXPECT_TRUE(dhp::validate(p).ok()) << dhp::validate(p).message;
}

TEST(Validation, DefaultScaleIsInverseSqrt) {
  EXPECT_FLOAT_EQ(dhp::default_softmax_scale(64), 0.125f);
  EXPECT_FLOAT_EQ(dhp::default_softmax_scale(256), 0.0625f);
  EXPECT_FLOAT_EQ(dhp::default_softmax_scale(128), 0.0883883476f);  // 1/sqrt(128), a literal
}

}  // namespace
