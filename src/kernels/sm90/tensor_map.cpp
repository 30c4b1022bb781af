// cuTensorMapEncodeTiled through cudaGetDriverEntryPointByVersion.
#include "kernels/sm90/tensor_map.hpp"

#include <cuda_runtime.h>
#include <cudaTypedefs.h>

namespace dhp::sm90 {
namespace {

PFN_cuTensorMapEncodeTiled_v12000 encoder() {
  static PFN_cuTensorMapEncodeTiled_v12000 fn = [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult q{};
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &q) !=
            cudaSuccess ||
        q != cudaDriverEntryPointSuccess)
      p = nullptr;
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(p);
  }();
  return fn;
}

}  // namespace

std::string encode_tensor_map(CUtensorMap& out, const void* global, const TensorMapSpec& s) {
  if (s.rank < 1 || s.rank > 5) return "tensor map: rank must be 1..5";
  if (reinterpret_cast<uintptr_t>(global) % 16) return "tensor map: base address must be 16-byte aligned";
  for (int i = 0; i + 1 < s.rank; ++i)
    if (s.strides_bytes[i] % 16) return "tensor map: strides must be multiples of 16 bytes";
  if (s.box[0] * 2 > 128) return "tensor map: box[0] must span at most 128 bytes for the 128-byte swizzle";
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
                  CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                  CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) return "tensor map: cuTensorMapEncodeTiled failed (error " + std::to_string(r) + ")";
  return {};
}

}  // namespace dhp::sm90
