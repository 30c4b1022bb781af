// TMA primitives (src/kernels/sm90/tma.cuh, tensor_map.cpp) on an sm_90 GPU:
// a 2-D tensor map with the 128-byte swizzle must land a 64 x 128 fp16 tile
// in shared memory exactly where sw128_offset() -- the layout the wgmma
// descriptors read -- says, and rows past the tensor's extent must arrive as
// zeros (the kernel relies on this instead of bounds branches).
#include <gtest/gtest.h>

#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <random>
#include <vector>

#include "kernels/sm90/tensor_map.hpp"
#include "kernels/sm90/tma.cuh"
#include "kernels/sm90/wgmma.cuh"
#include "support/harness.hpp"
#include "support/require_gpu.hpp"

namespace {

constexpr int kCols = 128, kTileRows = 64;

__global__ void tma_tile_roundtrip(const __grid_constant__ CUtensorMap tmap, int row0, uint16_t* out) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  __shared__ __align__(1024) uint8_t tile[kTileRows * kCols * 2];
  __shared__ __align__(8) uint64_t bar;
  if (threadIdx.x == 0) {
    dhp::sm90::tma::barrier_init(&bar, 1);
    dhp::sm90::tma::barrier_init_fence();
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    dhp::sm90::tma::arrive_expect_bytes(&bar, sizeof(tile));  // full boxes, zero fill included
    dhp::sm90::tma::load_2d(tile, &tmap, 0, row0, &bar);
    dhp::sm90::tma::load_2d(tile + kTileRows * 128, &tmap, 64, row0, &bar);
  }
  dhp::sm90::tma::wait(&bar, 0);
  for (int i = threadIdx.x; i < kTileRows * kCols; i += blockDim.x)
    out[i] = *reinterpret_cast<const uint16_t*>(tile + dhp::sm90::sw128_offset(i / kCols, i % kCols, kTileRows));
#endif
}

TEST(TensorMap, RejectsBadArgumentsByName) {
  CUtensorMap m;
  dhp::sm90::TensorMapSpec s;
  s.rank = 2;
  s.dims[0] = 128, s.dims[1] = 10;
  s.strides_bytes[0] = 250;  // not a multiple of 16
  s.box[0] = 64, s.box[1] = 64;
  alignas(16) static uint16_t buf[8];
  EXPECT_NE(dhp::sm90::encode_tensor_map(m, buf, s).find("strides"), std::string::npos);
  s.strides_bytes[0] = 256;
  s.box[0] = 128;  // 256 bytes: too wide for the 128-byte swizzle
  EXPECT_NE(dhp::sm90::encode_tensor_map(m, buf, s).find("box[0]"), std::string::npos);
}

// The [B, S, H, D] spec the attention's maps and V's copy beside use
// (tensor_map.hpp, bshd_spec): byte strides from element strides, packed
// ones for size-1 dimensions; the packed copy [B, H_kv, S_k, D] in the
// copy's own element strides (padding_scrub.cu) gets D*2, S*D*2, H*S*D*2.
TEST(TensorMap, BshdSpecStrides) {
  using dhp::sm90::bshd_spec;
  const auto copy = bshd_spec(700, 34, 4, 128, 128, 700 * 128, 34 * 700 * 128, 256, false);
  EXPECT_EQ(copy.rank, 4);
  EXPECT_EQ(copy.dims[0], 128u);
  EXPECT_EQ(copy.dims[1], 700u);
  EXPECT_EQ(copy.dims[2], 34u);
  EXPECT_EQ(copy.dims[3], 4u);
  EXPECT_EQ(copy.strides_bytes[0], 256u);
  EXPECT_EQ(copy.strides_bytes[1], 256u * 700);
  EXPECT_EQ(copy.strides_bytes[2], 256u * 700 * 34);
  EXPECT_EQ(copy.box[0], 64u);
  EXPECT_EQ(copy.box[1], 256u);
  // BSHD with padded rows; one head and one batch entry: packed strides there.
  const auto one = bshd_spec(300, 1, 1, 64, 3 * 64, 0, 0, 128, true);
  EXPECT_TRUE(one.bf16);
  EXPECT_EQ(one.strides_bytes[0], 3u * 64 * 2);
  EXPECT_EQ(one.strides_bytes[1], 3u * 64 * 2 * 300);
  EXPECT_EQ(one.strides_bytes[2], 3u * 64 * 2 * 300);
  // One key: the sequence stride is the packed row.
  EXPECT_EQ(bshd_spec(1, 2, 2, 64, 999, 64, 128, 64, false).strides_bytes[0], 128u);
}

TEST(TmaGpu, SwizzledTileMatchesTheWgmmaLayoutAndZeroFills) {
  DHP_REQUIRE_GPU();
  cudaDeviceProp p{};
  cudaGetDeviceProperties(&p, 0);
  if (p.major != 9) GTEST_SKIP() << "skipped: needs an sm_90 GPU";
  const int rows = 300;  // not a multiple of the tile: the last tile is partly out of bounds
  std::vector<uint16_t> host(rows * kCols);
  std::mt19937 rng(std::random_device{}());
  for (auto& x : host) x = static_cast<uint16_t>(0x3c00 | (rng() & 0x3ff));  // finite fp16 in [1, 2)
  uint16_t *g, *out;
  ASSERT_EQ(cudaMalloc(&g, host.size() * 2), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&out, kTileRows * kCols * 2), cudaSuccess);
  cudaMemcpy(g, host.data(), host.size() * 2, cudaMemcpyHostToDevice);
  CUtensorMap m;
  dhp::sm90::TensorMapSpec s;
  s.rank = 2;
  s.dims[0] = kCols, s.dims[1] = rows;
  s.strides_bytes[0] = kCols * 2;
  s.box[0] = 64, s.box[1] = kTileRows;
  ASSERT_EQ(dhp::sm90::encode_tensor_map(m, g, s), "");
  for (int row0 : {0, 128, 256}) {
    cudaMemset(out, 0xFF, kTileRows * kCols * 2);  // poison
    tma_tile_roundtrip<<<1, 128>>>(m, row0, out);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    std::vector<uint16_t> got(kTileRows * kCols);
    cudaMemcpy(got.data(), out, got.size() * 2, cudaMemcpyDeviceToHost);
    int bad = 0;
    for (int r = 0; r < kTileRows; ++r)
      for (int c = 0; c < kCols; ++c) {
        const int gr = row0 + r;
        const uint16_t want = gr < rows ? host[gr * kCols + c] : 0;
        bad += got[r * kCols + c] != want;
      }
    EXPECT_EQ(bad, 0) << "row0 " << row0;
  }
  cudaFree(g);
  cudaFree(out);
}

}  // namespace
