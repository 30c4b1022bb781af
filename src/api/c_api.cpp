// The plain C ABI: converts dhp::Status into a code + message buffer and
// guarantees that no exception escapes (std::string can throw bad_alloc).
#include <cstring>
#include <exception>

#include "dhp/attention.h"
#include "dhp/attention.hpp"

namespace {

void copy_message(const std::string& msg, char* out, size_t size) {
  if (out == nullptr || size == 0) return;
  const size_t n = msg.size() < size - 1 ? msg.size() : size - 1;
  std::memcpy(out, msg.data(), n);
  out[n] = '\0';
}

template <typename F>
dhp_status guarded(const dhp_attention_params* p, char* message, size_t message_size, F&& f) {
  try {
    if (p == nullptr) {
      copy_message("params: pointer is null", message, message_size);
      return DHP_ERROR_INVALID_ARGUMENT;
    }
    const dhp::Status s = f(*p);
    copy_message(s.message, message, message_size);
    return s.code;
  } catch (const std::exception& e) {
    copy_message(std::string("internal error: ") + e.what(), message, message_size);
  } catch (...) {
    copy_message("internal error", message, message_size);
  }
  return DHP_ERROR_INTERNAL;
}

}  // namespace

extern "C" {

void dhp_attention_params_init_bshd(dhp_attention_params* p, dhp_dtype dtype, int64_t batch,
                                    int64_t seqlen_q, int64_t seqlen_k, int64_t heads_q,
                                    int64_t heads_kv, int64_t head_dim, const void* q,
                                    const void* k, const void* v, void* o) {
  if (p == nullptr) return;
  std::memset(p, 0, sizeof(*p));
  p->dtype = static_cast<int32_t>(dtype);
  p->batch = batch;
  p->seqlen_q = seqlen_q;
  p->seqlen_k = seqlen_k;
  p->heads_q = heads_q;
  p->heads_kv = heads_kv;
  p->head_dim = head_dim;
  p->q = q;
  p->k = k;
  p->v = v;
  p->o = o;
  // Saturating products (attention.hpp): sizes past the limits must reach
  // validation as a named error, not as signed-overflow undefined behaviour.
  using dhp::detail::mul_saturating;
  p->q_stride_batch = mul_saturating(seqlen_q, heads_q, head_dim);
  p->q_stride_seq = mul_saturating(heads_q, head_dim);
  p->q_stride_head = head_dim;
  p->o_stride_batch = p->q_stride_batch;
  p->o_stride_seq = p->q_stride_seq;
  p->o_stride_head = p->q_stride_head;
  p->k_stride_batch = mul_saturating(seqlen_k, heads_kv, head_dim);
  p->k_stride_seq = mul_saturating(heads_kv, head_dim);
  p->k_stride_head = head_dim;
  p->v_stride_batch = p->k_stride_batch;
  p->v_stride_seq = p->k_stride_seq;
  p->v_stride_head = p->k_stride_head;
}

dhp_status dhp_attention_validate(const dhp_attention_params* p, char* message, size_t message_size) {
  return guarded(p, message, message_size, [](const dhp_attention_params& q) { return dhp::validate(q); });
}

dhp_status dhp_attention_forward(const dhp_attention_params* p, char* message, size_t message_size) {
  return guarded(p, message, message_size,
                 [](const dhp_attention_params& q) { return dhp::attention_forward(q); });
}

const char* dhp_status_string(dhp_status s) {
  switch (s) {
    case DHP_OK: return "ok";
    case DHP_ERROR_INVALID_ARGUMENT: return "invalid argument";
    case DHP_ERROR_UNSUPPORTED: return "unsupported";
    case DHP_ERROR_NO_DEVICE: return "no suitable CUDA device";
    case DHP_ERROR_CUDA: return "CUDA error";
    case DHP_ERROR_INTERNAL: return "internal error";
  }
  return "unknown status";
}

}  // extern "C"
