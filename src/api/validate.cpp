// Validation of every public argument. Runs on the host before any launch;
// it never reads device memory, so secret values (tensor contents, lengths)
// are never inspected here: out-of-range lengths are clamped in the kernels.
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "api/limits.hpp"
#include "dhp/attention.hpp"

namespace dhp {
namespace {

Status fail(dhp_status code, std::string msg) { return Status{code, std::move(msg)}; }

std::string str(int64_t v) { return std::to_string(v); }

bool aligned(const void* ptr, int64_t bytes) {
  return (reinterpret_cast<uintptr_t>(ptr) % static_cast<uintptr_t>(bytes)) == 0;
}

// Checks one [B, S, H, D] tensor's pointer and strides; on success *bytes
// is the size of the address range it spans (largest element offset + 1,
// times 2 bytes).
Status check_tensor(const char* name, const void* ptr, int64_t B, int64_t S, int64_t H, int64_t D,
                    int64_t sb, int64_t ss, int64_t sh, int64_t* bytes) {
  using namespace limits;
  if (ptr == nullptr) return fail(DHP_ERROR_INVALID_ARGUMENT, std::string(name) + ": pointer is null");
  if (!aligned(ptr, kTensorAlignBytes))
    return fail(DHP_ERROR_INVALID_ARGUMENT,
                std::string(name) + ": pointer must be 16-byte aligned");
  const struct {
    const char* dim;
    int64_t stride, size;
  } dims[3] = {{"stride_batch", sb, B}, {"stride_seq", ss, S}, {"stride_head", sh, H}};
  // Largest element offset + D, computed in a way that cannot overflow:
  // each term is bounded by kMaxSpanBytes before it is added.
  int64_t span = D;
  for (const auto& d : dims) {
    if (d.size == 1) continue;  // never multiplied by a non-zero index
    if (d.stride < 0)
      return fail(DHP_ERROR_INVALID_ARGUMENT,
                  std::string(name) + "_" + d.dim + ": must be >= 0 (got " + str(d.stride) + ")");
    if (d.stride % kStrideMultiple != 0)
      return fail(DHP_ERROR_INVALID_ARGUMENT,
                  std::string(name) + "_" + d.dim + ": must be a multiple of 8 elements (got " +
                      str(d.stride) + ")");
    if (d.stride != 0 && (d.size - 1) > (kMaxSpanBytes / 2) / d.stride)
      return fail(DHP_ERROR_INVALID_ARGUMENT,
                  std::string(name) + "_" + d.dim + ": tensor spans more than 2^62 bytes");
    span += (d.size - 1) * d.stride;  // element count; the bound below is in elements too
    if (span > kMaxSpanBytes / 2)
      return fail(DHP_ERROR_INVALID_ARGUMENT, std::string(name) + ": tensor spans more than 2^62 bytes");
  }
  *bytes = span * 2;
  return {};
}

// An address range [begin, begin + bytes); `wraps` where it would run past
// the top of the address space (rejected: no allocation can end there).
struct Range {
  const char* name;
  uintptr_t begin, end;
  bool wraps;
};
Range range(const char* name, const void* ptr, int64_t bytes) {
  const uintptr_t b = reinterpret_cast<uintptr_t>(ptr), n = static_cast<uintptr_t>(bytes);
  const bool wraps = UINTPTR_MAX - b < n;
  return {name, b, wraps ? UINTPTR_MAX : b + n, wraps};
}

Status check_no_wrap(const std::vector<Range>& ranges) {
  for (const Range& r : ranges)
    if (r.wraps)
      return fail(DHP_ERROR_INVALID_ARGUMENT, std::string(r.name) +
                                                  ": the tensor's address range runs past the end of the address "
                                                  "space (pointer + extent overflows)");
  return {};
}

// Outputs share no memory with the inputs or with each other. Shared bytes
// would make results depend on the order in which CTAs of the persistent
// grid read and write them (a timing dependence the batch-invariance gate
// forbids) and let the kernel read what it has written. Checked on the
// address ranges the tensors span (public pointers and extents): views of
// one buffer whose ranges interleave are refused even where no element is
// shared. Inputs may share memory with each other (they are only read).
Status check_outputs_alias_nothing(const std::vector<Range>& outputs, const std::vector<Range>& inputs) {
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Range& o = outputs[i];
    auto clash = [&](const Range& x) { return o.begin < x.end && x.begin < o.end; };
    for (const Range& x : inputs)
      if (clash(x))
        return fail(DHP_ERROR_INVALID_ARGUMENT, std::string(o.name) + ": output memory overlaps " + x.name +
                                                    " (outputs must not share memory with any input)");
    for (size_t j = i + 1; j < outputs.size(); ++j)
      if (clash(outputs[j]))
        return fail(DHP_ERROR_INVALID_ARGUMENT,
                    std::string(o.name) + ": output memory overlaps " + outputs[j].name + " (outputs must not overlap)");
  }
  return {};
}

// The output must not have two elements at one address (threads would race
// on them and results would depend on timing). Sort the dimensions of size
// > 1 by stride; each stride must cover the full extent of those below it.
Status check_output_no_overlap(const Params& p) {
  struct Dim {
    int64_t stride, size;
    const char* name;
  } dims[3] = {{p.o_stride_batch, p.batch, "o_stride_batch"},
               {p.o_stride_seq, p.seqlen_q, "o_stride_seq"},
               {p.o_stride_head, p.heads_q, "o_stride_head"}};
  std::sort(std::begin(dims), std::end(dims),
            [](const Dim& a, const Dim& b) { return a.stride < b.stride; });
  int64_t extent = p.head_dim;  // elements covered by the dimensions so far
  for (const Dim& d : dims) {
    if (d.size == 1) continue;
    if (d.stride < extent)
      return fail(DHP_ERROR_INVALID_ARGUMENT,
                  std::string(d.name) + ": output rows overlap (stride " + str(d.stride) +
                      " is below the extent " + str(extent) + " of the smaller dimensions)");
    extent = d.stride * d.size;  // fits: spans were bounded by check_tensor
  }
  return {};
}

}  // namespace

Status validate(const Params& p_ref) {
  using namespace limits;
  const Params* p = &p_ref;
  if (p->dtype != DHP_FLOAT16 && p->dtype != DHP_BFLOAT16)
    return fail(DHP_ERROR_INVALID_ARGUMENT, "dtype: must be DHP_FLOAT16 or DHP_BFLOAT16 (got " +
                                           str(static_cast<int64_t>(p->dtype)) + ")");
  const struct {
    const char* name;
    int64_t value, max;
  } sizes[] = {{"batch", p->batch, kMaxBatch},         {"seqlen_q", p->seqlen_q, kMaxSeqlen},
               {"seqlen_k", p->seqlen_k, kMaxSeqlen},  {"heads_q", p->heads_q, kMaxHeads},
               {"heads_kv", p->heads_kv, kMaxHeads}};
  for (const auto& s : sizes) {
    if (s.value < 1)
      return fail(DHP_ERROR_INVALID_ARGUMENT,
                  std::string(s.name) + ": must be >= 1 (got " + str(s.value) + ")");
    if (s.value > s.max)
      return fail(DHP_ERROR_INVALID_ARGUMENT, std::string(s.name) + ": must be <= " + str(s.max) +
                                                  " (got " + str(s.value) + ")");
  }
  if (p->head_dim < 1)
    return fail(DHP_ERROR_INVALID_ARGUMENT, "head_dim: must be >= 1 (got " + str(p->head_dim) + ")");
  if (p->head_dim != 64 && p->head_dim != 128 && p->head_dim != 256)
    return fail(DHP_ERROR_UNSUPPORTED,
                "head_dim: must be 64, 128 or 256 (got " + str(p->head_dim) + ")");
  if (p->heads_q % p->heads_kv != 0)
    return fail(DHP_ERROR_INVALID_ARGUMENT, "heads_q: must be a multiple of heads_kv (got " +
                                                str(p->heads_q) + " and " + str(p->heads_kv) + ")");

  const int64_t B = p->batch, D = p->head_dim;
  Status s;
  int64_t q_bytes = 0, k_bytes = 0, v_bytes = 0, o_bytes = 0;
  if (!(s = check_tensor("q", p->q, B, p->seqlen_q, p->heads_q, D, p->q_stride_batch,
                         p->q_stride_seq, p->q_stride_head, &q_bytes)))
    return s;
  if (!(s = check_tensor("k", p->k, B, p->seqlen_k, p->heads_kv, D, p->k_stride_batch,
                         p->k_stride_seq, p->k_stride_head, &k_bytes)))
    return s;
  if (!(s = check_tensor("v", p->v, B, p->seqlen_k, p->heads_kv, D, p->v_stride_batch,
                         p->v_stride_seq, p->v_stride_head, &v_bytes)))
    return s;
  if (!(s = check_tensor("o", p->o, B, p->seqlen_q, p->heads_q, D, p->o_stride_batch,
                         p->o_stride_seq, p->o_stride_head, &o_bytes)))
    return s;

  if (!(s = check_output_no_overlap(*p))) return s;

  if (p->lse != nullptr && !aligned(p->lse, 4))
    return fail(DHP_ERROR_INVALID_ARGUMENT, "lse: pointer must be 4-byte aligned");

  if (p->has_softmax_scale && !(std::isfinite(p->softmax_scale) && p->softmax_scale > 0.0f))
    return fail(DHP_ERROR_INVALID_ARGUMENT, "softmax_scale: must be finite and > 0");
  // The kernels fold log2(e) into the scale in fp32: above FLT_MAX / log2(e)
  // that product is +inf and every output NaN.
  if (p->has_softmax_scale && static_cast<double>(p->softmax_scale) * limits::kLog2e > FLT_MAX)
    return fail(DHP_ERROR_INVALID_ARGUMENT,
                "softmax_scale: must be at most FLT_MAX / log2(e) = 2.3587e38 (softmax_scale * log2(e) must be a "
                "finite float)");

  if (p->seqlens != nullptr && (p->seqlens_q != nullptr || p->seqlens_k != nullptr))
    return fail(DHP_ERROR_INVALID_ARGUMENT,
                "seqlens: cannot be combined with seqlens_q or seqlens_k (give one shared array, or "
                "separate ones)");
  if (p->seqlens != nullptr && p->seqlen_q != p->seqlen_k)
    return fail(DHP_ERROR_INVALID_ARGUMENT,
                "seqlens: shared lengths (self-attention) require seqlen_q == seqlen_k (got " +
                    str(p->seqlen_q) + " and " + str(p->seqlen_k) + "); use seqlens_q/seqlens_k");
  const struct {
    const char* name;
    const int32_t* ptr;
  } lens[] = {{"seqlens", p->seqlens}, {"seqlens_q", p->seqlens_q}, {"seqlens_k", p->seqlens_k}};
  for (const auto& l : lens)
    if (l.ptr != nullptr && !aligned(l.ptr, 4))
      return fail(DHP_ERROR_INVALID_ARGUMENT, std::string(l.name) + ": pointer must be 4-byte aligned");

  if (p->time_budget_ns < 0 || p->time_budget_ns > limits::kMaxTimeBudgetNs)
    return fail(DHP_ERROR_INVALID_ARGUMENT, "time_budget_ns: must be 0 (no deadline) or 1 .. " +
                                                str(limits::kMaxTimeBudgetNs) + " ns (got " +
                                                str(p->time_budget_ns) + ")");
  if (p->time_budget_ns > 0 && p->deadline_state == nullptr)
    return fail(DHP_ERROR_INVALID_ARGUMENT, "deadline_state: required when time_budget_ns > 0 (device memory "
                                            "for the call's start time and overrun count)");
  if (p->time_budget_ns == 0 && p->deadline_state != nullptr)
    return fail(DHP_ERROR_INVALID_ARGUMENT, "deadline_state: given without a deadline (time_budget_ns is 0)");
  if (p->deadline_state != nullptr && !aligned(p->deadline_state, 8))
    return fail(DHP_ERROR_INVALID_ARGUMENT, "deadline_state: pointer must be 8-byte aligned");

  std::vector<Range> inputs = {range("q", p->q, q_bytes), range("k", p->k, k_bytes), range("v", p->v, v_bytes)};
  for (const auto& l : lens)
    if (l.ptr != nullptr) inputs.push_back(range(l.name, l.ptr, B * 4));
  std::vector<Range> outputs = {range("o", p->o, o_bytes)};
  if (p->lse != nullptr) outputs.push_back(range("lse", p->lse, B * p->heads_q * p->seqlen_q * 4));  // [B, H_q, S_q]
  if (p->deadline_state != nullptr)
    outputs.push_back(range("deadline_state", p->deadline_state, sizeof(dhp_deadline_state)));
  if (!(s = check_no_wrap(inputs)) || !(s = check_no_wrap(outputs))) return s;
  return check_outputs_alias_nothing(outputs, inputs);
}

}  // namespace dhp
