// Host side of TMA: encoding CUtensorMap descriptors for 16-bit tensors with
// the 128-byte swizzle the wgmma descriptors expect (wgmma.cuh). The driver
// entry point is looked up through the runtime, so the library does not
// link libcuda directly.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <string>

namespace dhp::sm90 {

struct TensorMapSpec {
  int rank = 2;                 // 1..5
  uint64_t dims[5] = {};        // elements, innermost first
  uint64_t strides_bytes[4] = {};  // byte strides of dims 1..rank-1 (multiples of 16)
  uint32_t box[5] = {};         // box extent per dim; box[0] * 2 bytes <= 128
  bool bf16 = false;            // element type: fp16 or bf16
};

// Encodes `spec` for `global` with SWIZZLE_128B and zero fill out of bounds.
// Returns an empty string on success, else a message naming the field.
std::string encode_tensor_map(CUtensorMap& out, const void* global, const TensorMapSpec& spec);

}  // namespace dhp::sm90
