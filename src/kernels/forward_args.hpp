// The kernel-side view of one forward call. Built by the host dispatcher
// (src/api/forward.cpp) from validated public parameters; every field is
// public. The *contents* of what the pointers point to are secret.
#pragma once
#include <cstdint>

namespace dhp::kernels {

struct ForwardArgs {
  const void* q;
  const void* k;
  const void* v;
  void* o;
  float* lse;  // [B, H_q, S_q] or null
  int64_t q_stride_batch, q_stride_seq, q_stride_head;  // elements
  int64_t k_stride_batch, k_stride_seq, k_stride_head;
  int64_t v_stride_batch, v_stride_seq, v_stride_head;
  int64_t o_stride_batch, o_stride_seq, o_stride_head;
  int32_t batch, seqlen_q, seqlen_k, heads_q, heads_kv;
  int32_t kv_group;    // heads_q / heads_kv
  float scale_log2;    // softmax scale * log2(e): scores live in the exp2 domain
  int32_t causal;      // bottom-right aligned
  // Secret lengths (device int32[B]); null = the full padded length. Only
  // read by kernels instantiated with length masking.
  const int32_t* lens_q;
  const int32_t* lens_k;
  // Public: the causal diagonal is j <= i + (public offset) for every
  // sequence, so key tiles entirely above it may be skipped. True with no
  // lengths (offset S_k - S_q) or one shared length array (offset 0); false
  // with separate lengths (the offset L_k - L_q is secret).
  int32_t causal_diagonal_public;
  int32_t causal_offset;  // the public offset when causal_diagonal_public
  // Hopper persistent kernel only: the static tile order (sm90/scheduler.cuh,
  // TileOrder); set by its launcher, public.
  int32_t tile_order;
  // Hopper persistent kernel only: per-CTA tile lists computed on the host
  // from the public shape (sm90/scheduler.cuh, balanced_schedule), or null
  // for the closed-form deal. Public data: declared so for dhp-audit
  // (src/kernels/public_pointers.audit, byte offset 200).
  const int32_t* schedule;
  // Hopper kernel, secret lengths with causal masking and one shared length
  // array (the diagonal public, offset 0): V's padding can meet a valid
  // query row only in the key tiles that hold keys at or past the query
  // tile's first row (sm90/producer.cuh, zero_v_padding). Set: the kernel
  // zeroes V rows >= L_k in shared memory in those tiles, and V is read as
  // given (no zero-padded copy). Public (the launcher's choice).
  int32_t v_zero_band;
  // Hopper kernel, secret key lengths, V's zero-padded copy made beside the
  // attention (sm90/padding_scrub.hpp, CopyBeside): per (batch, kv head)
  // pair, the number of its chunks copied so far, counted up by the copy
  // kernel; the producer waits until a pair's count reaches v_ready_count
  // before the first V load of a tile in that pair. Null: the copy (if any)
  // completed before this kernel (griddepcontrol.wait). The counts depend on
  // progress alone, never on data: public (public_pointers.audit, byte
  // offset 216).
  const uint32_t* v_ready;
  int32_t v_ready_count;
  // Hopper decode kernel only (sm90/decode.hpp; Sm90Traits' DECODE_): the
  // key range of every query tile is cut into `kv_splits` chunks of
  // `split_key_tiles` key tiles (public: from S_k alone), each chunk a work
  // unit that writes its normalised O (fp32) and lse into
  // o_partial [kv_splits, B, H_q, S_q, D] and lse_partial [kv_splits, B,
  // H_q, S_q]; a combine kernel merges them (sm90/split_combine.cu).
  // q_pack > 1: the call's H_q / H_kv query heads of one position were
  // packed as rows of one head, position-major (row = s * q_pack + g): a
  // secret L_q then covers L_q * q_pack rows (kernels/common/lengths.cuh,
  // load_lengths_packed). q_shift: log2(q_pack) where S_q > 1 was packed
  // (q_pack a power of two; Q then loads through a 5-D tensor map and the
  // causal mask takes row >> q_shift as the row's position); 0 otherwise
  // (S_q = 1 packs any q_pack and drops the causal mask, which is exact).
  // Addresses written are public (pointers and tile indices).
  int32_t kv_splits;
  int32_t split_key_tiles;
  int32_t q_pack;
  int32_t q_shift;
  float* o_partial;
  float* lse_partial;
  // 1: each decode work unit is a whole query tile that merges its chunks
  // itself, in the combine's order and arithmetic (sm90/decode_local.cuh),
  // and writes O and lse; no partials, no combine. The launcher's choice
  // (public: it may follow the batch size, since the bits are the same).
  int32_t decode_local;
};
static_assert(__builtin_offsetof(ForwardArgs, schedule) == 200, "public_pointers.audit names this offset");
static_assert(__builtin_offsetof(ForwardArgs, v_ready) == 216, "public_pointers.audit names this offset");

}  // namespace dhp::kernels
