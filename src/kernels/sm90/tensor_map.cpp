// cuTensorMapEncodeTiled through cudaGetDriverEntryPointByVersion (common/driver_entry.hpp).
#include "kernels/sm90/tensor_map.hpp"

#include <cuda_runtime.h>
#include <cudaTypedefs.h>

#include <cstdlib>
#include <string>

#include "kernels/common/driver_entry.hpp"

namespace dhp::sm90 {
namespace {

PFN_cuTensorMapEncodeTiled_v12000 encoder() {
  static const PFN_cuTensorMapEncodeTiled_v12000 fn = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(
      kernels::driver_entry_point("cuTensorMapEncodeTiled", 12000));
  return fn;
}

// The L2 promotion of a map's copies: the spec's, unless
// DHP_SM90_L2_PROMOTION = none | 64 | 128 | 256 (an A/B knob, read once)
// overrides every map's. Public.
CUtensorMapL2promotion l2_promotion(int spec_bytes) {
  static const int forced = [] {
    const char* e = std::getenv("DHP_SM90_L2_PROMOTION");
    if (e == nullptr) return -1;
    const std::string v = e;
    return v == "none" ? 0 : v == "64" ? 64 : v == "128" ? 128 : 256;
  }();
  const int bytes = forced >= 0 ? forced : spec_bytes;
  return bytes == 0     ? CU_TENSOR_MAP_L2_PROMOTION_NONE
         : bytes == 64  ? CU_TENSOR_MAP_L2_PROMOTION_L2_64B
         : bytes == 128 ? CU_TENSOR_MAP_L2_PROMOTION_L2_128B
                        : CU_TENSOR_MAP_L2_PROMOTION_L2_256B;
}

}  // namespace

std::string encode_tensor_map(CUtensorMap& out, const void* global, const TensorMapSpec& s) {
  if (s.rank < 1 || s.rank > 5) return "tensor map: rank must be 1..5";
  if (reinterpret_cast<uintptr_t>(global) % 16) return "tensor map: base address must be 16-byte aligned";
  for (int i = 0; i + 1 < s.rank; ++i)
    if (s.strides_bytes[i] % 16) return "tensor map: strides must be multiples of 16 bytes";
  if (s.box[0] * 2 > 128) return "tensor map: box[0] must span at most 128 bytes for the 128-byte swizzle";
  if (s.l2_promotion != 0 && s.l2_promotion != 64 && s.l2_promotion != 128 && s.l2_promotion != 256)
    return "tensor map: l2_promotion must be 0, 64, 128 or 256 bytes";
  auto fn = encoder();
  if (!fn) return "tensor map: cuTensorMapEncodeTiled is not available from the driver";
  cuuint64_t dims[5];
  cuuint64_t strides[4];
  cuuint32_t box[5], elem_strides[5];
  for (int i = 0; i < s.rank; ++i) {
    dims[i] = s.dims[i];
    box[i] = s.box[i];
    elem_strides[i] = 1;
  }
  for (int i = 0; i + 1 < s.rank; ++i) strides[i] = s.strides_bytes[i];
  CUresult r = fn(&out, s.bf16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
                  static_cast<cuuint32_t>(s.rank), const_cast<void*>(global), dims, strides, box, elem_strides,
                  CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, l2_promotion(s.l2_promotion),
                  CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) return "tensor map: cuTensorMapEncodeTiled failed (error " + std::to_string(r) + ")";
  return {};
}

TensorMapSpec bshd_spec(int64_t S, int64_t H, int64_t B, int D, int64_t s_seq, int64_t s_head, int64_t s_batch,
                        int rows, bool bf16) {
  TensorMapSpec spec;
  spec.rank = 4;
  spec.bf16 = bf16;
  spec.dims[0] = D, spec.dims[1] = S, spec.dims[2] = H, spec.dims[3] = B;
  const uint64_t seq = S > 1 ? s_seq * 2 : static_cast<uint64_t>(D) * 2;
  const uint64_t head = H > 1 ? s_head * 2 : seq * S;
  const uint64_t batch = B > 1 ? s_batch * 2 : head * H;
  spec.strides_bytes[0] = seq, spec.strides_bytes[1] = head, spec.strides_bytes[2] = batch;
  spec.box[0] = 64, spec.box[1] = rows, spec.box[2] = 1, spec.box[3] = 1;
  return spec;
}

bool make_bshd_map(CUtensorMap& m, const void* base, int64_t S, int64_t H, int64_t B, int D, int64_t s_seq,
                   int64_t s_head, int64_t s_batch, int rows, bool bf16, int l2_promotion) {
  TensorMapSpec spec = bshd_spec(S, H, B, D, s_seq, s_head, s_batch, rows, bf16);
  spec.l2_promotion = l2_promotion;
  return encode_tensor_map(m, base, spec).empty();
}

TensorMapSpec packed_rows_spec(int64_t S, int64_t G, int64_t H_kv, int64_t B, int D, int64_t s_seq, int64_t s_head,
                               int64_t s_batch, int rows, bool bf16) {
  TensorMapSpec spec;
  spec.rank = 5;
  spec.bf16 = bf16;
  spec.dims[0] = D, spec.dims[1] = G, spec.dims[2] = S, spec.dims[3] = H_kv, spec.dims[4] = B;
  // As bshd_spec: the strides of size-1 dimensions are never used by a
  // copy, and packed ones replace them (a zero or unaligned stride there
  // would be refused).
  const uint64_t head = G > 1 ? s_head * 2 : static_cast<uint64_t>(D) * 2;
  const uint64_t seq = S > 1 ? s_seq * 2 : head * G;
  const uint64_t group = H_kv > 1 ? s_head * 2 * G : seq * S;
  const uint64_t batch = B > 1 ? s_batch * 2 : group * H_kv;
  spec.strides_bytes[0] = head, spec.strides_bytes[1] = seq, spec.strides_bytes[2] = group,
  spec.strides_bytes[3] = batch;
  spec.box[0] = 64, spec.box[1] = static_cast<uint32_t>(G), spec.box[2] = static_cast<uint32_t>(rows / G);
  spec.box[3] = 1, spec.box[4] = 1;
  return spec;
}

bool make_packed_rows_map(CUtensorMap& m, const void* base, int64_t S, int64_t G, int64_t H_kv, int64_t B, int D,
                          int64_t s_seq, int64_t s_head, int64_t s_batch, int rows, bool bf16, int l2_promotion) {
  if (G < 1 || rows % G != 0) return false;
  TensorMapSpec spec = packed_rows_spec(S, G, H_kv, B, D, s_seq, s_head, s_batch, rows, bf16);
  spec.l2_promotion = l2_promotion;
  return encode_tensor_map(m, base, spec).empty();
}

}  // namespace dhp::sm90
