/* DHP-Safe FlashAttention: plain C ABI.
 *
 * Every function returns a dhp_status; no C++ exception ever crosses this
 * boundary. On failure a human-readable message naming the offending argument
 * and the rule it broke is written to `message` (NUL-terminated, truncated to
 * `message_size`), and nothing is launched on the GPU. (A CUDA error raised by
 * one of a call's launches, DHP_ERROR_CUDA, may leave the call's earlier
 * kernels enqueued: V's padded copy, a deadline's start stamp.)
 *
 * Tensor layout (element strides, last dimension contiguous):
 *   q [B, S_q, H_q, D]   k, v [B, S_k, H_kv, D]   o like q
 *   lse (optional) float32 [B, H_q, S_q], contiguous
 * Public vs secret: see docs/threat-model.md. Every value read from the
 * tensors and from the length arrays is secret; everything in this struct
 * itself is public.
 */
#ifndef DHP_ATTENTION_H
#define DHP_ATTENTION_H

#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32)
#define DHP_API
#else
#define DHP_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef enum dhp_status {
  DHP_OK = 0,
  DHP_ERROR_INVALID_ARGUMENT = 1, /* a public argument breaks a documented rule */
  DHP_ERROR_UNSUPPORTED = 2,      /* valid in principle but not built/supported (a head dim other than
                                     64/128/256, or a device architecture this build has no machine code
                                     for, e.g. cc 10.x); an unknown dtype value is INVALID_ARGUMENT */
  DHP_ERROR_NO_DEVICE = 3,        /* no CUDA device, or compute capability < 8.0 */
  DHP_ERROR_CUDA = 4,             /* a CUDA runtime call failed */
  DHP_ERROR_INTERNAL = 5          /* an unexpected host-side failure (e.g. out of host memory) */
} dhp_status;

typedef enum dhp_dtype {
  DHP_FLOAT16 = 0,
  DHP_BFLOAT16 = 1
} dhp_dtype;

/* Device memory a deadline call writes (dhp_attention_params.time_budget_ns); one per stream in
 * flight, since calls on one state are ordered by their stream. Zero it once before the first
 * call; the library never resets `overruns`. */
typedef struct dhp_deadline_state {
  uint64_t start_ns;     /* the GPU clock (%globaltimer, ns) when the last call began */
  uint64_t overruns;     /* calls whose work ended past their deadline (incremented) */
  uint64_t last_work_ns; /* the last call's work, start to end, before the wait (for calibration:
                            it follows the inputs' timing, so it is as secret as they are) */
} dhp_deadline_state;

typedef struct dhp_attention_params {
  int32_t dtype;     /* a dhp_dtype value (a plain integer so that any value a C caller stores is
                        well defined to read and is rejected by validation if unknown) */
  int64_t batch;     /* B >= 1 */
  int64_t seqlen_q;  /* S_q >= 1: padded (maximum) query length, public */
  int64_t seqlen_k;  /* S_k >= 1: padded (maximum) key length, public */
  int64_t heads_q;   /* H_q >= 1, a multiple of heads_kv */
  int64_t heads_kv;  /* H_kv >= 1 */
  int64_t head_dim;  /* D in {64, 128, 256} */

  /* Tensors and length arrays: device memory of the current device, or managed memory
     (dhp_attention_forward refuses host memory, pinned or not, and other devices' memory
     by name, launching nothing; dhp_attention_validate, which needs no device, does not
     check this). */
  const void* q; /* 16-byte aligned */
  const void* k;
  const void* v;
  void* o;
  /* Element strides, >= 0 and a multiple of 8 elements (16 bytes); the stride
   * of a dimension of size 1 is ignored. The output's (dimension, stride)
   * pairs must not overlap: sorted by stride, each stride >= the extent of
   * the dimensions below it (D for the smallest). Outputs (o, lse) must
   * share no memory with the inputs (q, k, v, lengths) or with each other:
   * checked on the address ranges the tensors span, so views of one buffer
   * whose ranges interleave are refused. Inputs may share memory. */
  int64_t q_stride_batch, q_stride_seq, q_stride_head;
  int64_t k_stride_batch, k_stride_seq, k_stride_head;
  int64_t v_stride_batch, v_stride_seq, v_stride_head;
  int64_t o_stride_batch, o_stride_seq, o_stride_head;

  float* lse; /* optional (NULL): float32 [B, H_q, S_q], natural-log base, 4-byte aligned */

  int has_softmax_scale; /* 0: use 1/sqrt(D) */
  float softmax_scale;   /* finite, > 0 and <= FLT_MAX / log2(e) when has_softmax_scale */
  int causal;            /* bottom-right aligned: key j visible to query i iff j <= i + L_k - L_q */

  /* Optional secret lengths (device int32[B], 4-byte aligned), clamped into
   * [0, S] arithmetically. Either `seqlens` alone (self-attention: requires
   * S_q == S_k, shared by queries and keys) or any of seqlens_q / seqlens_k
   * (NULL ones mean "the full padded length"). With key lengths on an sm_90
   * GPU the call also writes a copy of V with its padding rows zeroed, in
   * scratch memory the library keeps in its own stream-ordered pool (the size
   * of V, reused by later calls); without it the portable kernel runs. Not
   * for causal calls with `seqlens` (one shared array): those zero V's
   * padding in shared memory, in the diagonal band of key tiles where it
   * can meet a valid row, and need no copy. */
  const int32_t* seqlens;
  const int32_t* seqlens_q;
  const int32_t* seqlens_k;

  void* stream; /* cudaStream_t; NULL = legacy default stream */

  /* Optional deadline (threat model §8, the power/clock channel). With time_budget_ns > 0 the
   * call ends on the GPU no earlier than time_budget_ns after it began there: a one-thread kernel
   * stamps the start before the attention, and another waits after it until start + budget on
   * the GPU's nanosecond clock, which does not follow the SM clock (a power-limited GPU raises the
   * SM clock for zero-heavy, e.g. short, inputs). Where the work ends before the deadline, the
   * call's duration is the budget's, up to the GPU's completion of the call after the wait
   * (measured on an H200: a few ns of a 20 µs call, either sign; docs/security-validation.md,
   * sessions 48-49). Calibrate the budget on the slowest public inputs (full lengths, random
   * values), under the load the calls will run in (seconds of back-to-back full-length calls
   * hold a power-capped GPU at its slowest clock: a budget calibrated with pauses overran on 15 %
   * of them, session 56) and launched as they will be (a budget measured on calls replayed from
   * CUDA graphs is smaller -- 12.1 against 21.1 µs for the small call, which takes 8.7 µs per
   * call from graphs, session 57 -- and calls launched from the stream may overrun it), and keep
   * `overruns` at 0: a call whose work ends past the deadline is counted and ends at a later
   * multiple of the budget, so it shows how many budgets its work took, not the work's time --
   * but slower inputs overrun more
   * often, so overruns are what a short budget leaks. The stamp is enqueued before the call's
   * host-side planning (its first call of a shape plans the most): on an idle stream that host
   * time falls inside the budget. 0: no deadline (deadline_state must be NULL).
   * Added in 0.2.0 (the struct grew: callers built against 0.1 must be rebuilt). */
  int64_t time_budget_ns;              /* 0, or 1 .. 10 000 000 000 (10 s) */
  dhp_deadline_state* deadline_state;  /* required with a budget: device memory, 8-byte aligned */
} dhp_attention_params;

/* Fills a params struct for contiguous BSHD tensors with no lengths, no lse,
 * default scale, non-causal. */
DHP_API void dhp_attention_params_init_bshd(dhp_attention_params* p, dhp_dtype dtype, int64_t batch,
                                    int64_t seqlen_q, int64_t seqlen_k, int64_t heads_q,
                                    int64_t heads_kv, int64_t head_dim, const void* q,
                                    const void* k, const void* v, void* o);

/* Checks every public argument; launches nothing. On success the message is
 * the empty string. */
DHP_API dhp_status dhp_attention_validate(const dhp_attention_params* p, char* message, size_t message_size);

/* Validates, then enqueues the forward pass on p->stream. May be captured
 * into a CUDA graph (any capture mode), a shape's first call included: its
 * one-time host work (scratch pool, kernel attributes, plans) runs with the
 * calling thread's capture mode relaxed for the call's length, outside the
 * graph. An error the caller left pending (cudaGetLastError) is not
 * reported as this call's failure, and a call that succeeds leaves it
 * pending -- unless the call recovered from a CUDA failure of its own
 * (e.g. scratch memory refused, where it takes a slower path), whose record
 * replaced it. A call that fails may replace or clear it. */
DHP_API dhp_status dhp_attention_forward(const dhp_attention_params* p, char* message, size_t message_size);

/* A short static description of a status code. */
DHP_API const char* dhp_status_string(dhp_status s);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* DHP_ATTENTION_H */
