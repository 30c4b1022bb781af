// TMA primitives (src/kernels/sm90/tma.cuh, tensor_map.cpp) on an sm_90 GPU:
// a 2-D tensor map with the 128-byte swizzle must land a 64 x 128 fp16 tile
// in shared memory exactly where sw128_offset() -- the layout the wgmma
// descriptors read -- says, and rows past the tensor's extent must arrive as
// zeros (the kernel relies on this instead of bounds branches). The decode
// kernel's 5-D packed-rows map (S_q > 1, GQA heads as rows) likewise.
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

// One 64-row tile (two 64-column boxes) through `load`, which issues the
// copy of one box (LoadRows: a 2-D map's rows; LoadPacked: the 5-D packed
// map's positions), then read back through sw128_offset, row-major.
struct LoadRows {
  int row0;
  __device__ void operator()(void* dst, const CUtensorMap* m, int col, uint64_t* bar) const {
    dhp::sm90::tma::load_2d(dst, m, col, row0, bar);
  }
};
struct LoadPacked {
  int s0, h, b;
  __device__ void operator()(void* dst, const CUtensorMap* m, int col, uint64_t* bar) const {
    dhp::sm90::tma::load_5d(dst, m, col, 0, s0, h, b, bar);
  }
};

template <typename Load>
__global__ void tma_tile_roundtrip(const __grid_constant__ CUtensorMap tmap, Load load, uint16_t* out) {
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
    load(tile, &tmap, 0, &bar);
    load(tile + kTileRows * 128, &tmap, 64, &bar);
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
  s.box[0] = 64;
  s.l2_promotion = 96;  // not one of the driver's promotions
  EXPECT_NE(dhp::sm90::encode_tensor_map(m, buf, s).find("l2_promotion"), std::string::npos);
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

// The decode kernel's packed Q at S_q > 1 (tensor_map.hpp, packed_rows_spec):
// element (d, g, s, h', b) of the 5-D view must be Q[b, s, h' G + g, d] of
// the call, in BSHD and BHSD memory, padded strides included; the box is
// 64 columns x G heads x rows / G positions.
TEST(TensorMap, PackedRowsSpecAddressesTheCallsHeads) {
  using dhp::sm90::packed_rows_spec;
  struct Layout { int64_t s_seq, s_head, s_batch; };
  const int64_t S = 7, H = 32, G = 4, Hkv = H / G, B = 3, D = 128;
  const Layout layouts[] = {{H * D, D, S * H * D},                     // BSHD
                            {D, S * D, H * S * D},                     // BHSD
                            {H * D + 64, D + 8, S * (H * D + 64) + 8}};  // padded
  for (const Layout& l : layouts) {
    const auto sp = packed_rows_spec(S, G, Hkv, B, D, l.s_seq, l.s_head, l.s_batch, 64, true);
    ASSERT_EQ(sp.rank, 5);
    EXPECT_TRUE(sp.bf16);
    EXPECT_EQ(sp.dims[0], uint64_t(D));
    EXPECT_EQ(sp.dims[1], uint64_t(G));
    EXPECT_EQ(sp.dims[2], uint64_t(S));
    EXPECT_EQ(sp.dims[3], uint64_t(Hkv));
    EXPECT_EQ(sp.dims[4], uint64_t(B));
    EXPECT_EQ(sp.box[0], 64u);
    EXPECT_EQ(sp.box[1], uint32_t(G));
    EXPECT_EQ(sp.box[2], uint32_t(64 / G));
    EXPECT_EQ(sp.box[3], 1u);
    EXPECT_EQ(sp.box[4], 1u);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t s = 0; s < S; ++s)
        for (int64_t h = 0; h < H; ++h) {
          const uint64_t view = (h % G) * sp.strides_bytes[0] + s * sp.strides_bytes[1] +
                                (h / G) * sp.strides_bytes[2] + b * sp.strides_bytes[3];
          EXPECT_EQ(view, uint64_t(2 * (b * l.s_batch + s * l.s_seq + h * l.s_head))) << b << " " << s << " " << h;
        }
  }
  // One kv head and one batch entry: packed strides where a dimension has size 1.
  const auto one = packed_rows_spec(5, 8, 1, 1, 64, 8 * 64, 64, 0, 64, false);
  EXPECT_EQ(one.strides_bytes[2] % 16, 0u);
  EXPECT_EQ(one.strides_bytes[3] % 16, 0u);
  EXPECT_GT(one.strides_bytes[2], 0u);
}

// The same through the 5-D packed map: tile row r must hold query head
// h' G + r % G at position s0 + r / G (the decode kernel's rows, whose
// wgmma descriptors read the same 128-byte swizzle), zeros past S_q. Groups
// of 2, 8 and 64 (32, 8 and 1 positions per tile), BSHD, BHSD and padded
// strides.
TEST(TmaGpu, PackedRowsTileHoldsPositionMajorRowsAndZeroFills) {
  DHP_REQUIRE_GPU();
  cudaDeviceProp p{};
  cudaGetDeviceProperties(&p, 0);
  if (p.major != 9) GTEST_SKIP() << "skipped: needs an sm_90 GPU";
  const int S = 37, B = 2;  // D = kCols
  struct Layout { int G; int64_t s_seq, s_head, s_batch; };  // element strides for H = 2 G heads
  auto bshd = [&](int G, int64_t pad) { return Layout{G, 2 * G * kCols + pad, kCols, S * (2 * G * kCols + pad)}; };
  const Layout layouts[] = {bshd(8, 0), Layout{2, kCols, S * kCols, 4 * S * kCols}, bshd(64, 64)};
  std::mt19937 rng(std::random_device{}());
  for (const Layout& l : layouts) {
    const int G = l.G, H = 2 * G, per_tile = kTileRows / G;
    std::vector<uint16_t> host(static_cast<size_t>(B * l.s_batch));
    for (auto& x : host) x = static_cast<uint16_t>(0x3c00 | (rng() & 0x3ff));
    uint16_t *g, *out;
    ASSERT_EQ(cudaMalloc(&g, host.size() * 2), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&out, kTileRows * kCols * 2), cudaSuccess);
    cudaMemcpy(g, host.data(), host.size() * 2, cudaMemcpyHostToDevice);
    CUtensorMap m;
    ASSERT_TRUE(dhp::sm90::make_packed_rows_map(m, g, S, G, H / G, B, kCols, l.s_seq, l.s_head, l.s_batch, kTileRows,
                                                false));
    for (int b : {0, 1})
      for (int hp : {0, 1})
        for (int s0 : {0, per_tile, (S - 1) / per_tile * per_tile}) {  // the last tile: partly past S_q
          cudaMemset(out, 0xFF, kTileRows * kCols * 2);  // poison
          tma_tile_roundtrip<<<1, 128>>>(m, LoadPacked{s0, hp, b}, out);
          ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
          std::vector<uint16_t> got(kTileRows * kCols);
          cudaMemcpy(got.data(), out, got.size() * 2, cudaMemcpyDeviceToHost);
          int bad = 0;
          for (int r = 0; r < kTileRows; ++r)
            for (int c = 0; c < kCols; ++c) {
              const int s = s0 + r / G, h = hp * G + r % G;
              const uint16_t want = s < S ? host[b * l.s_batch + s * l.s_seq + h * l.s_head + c] : 0;
              bad += got[r * kCols + c] != want;
            }
          EXPECT_EQ(bad, 0) << "G " << G << " b " << b << " h' " << hp << " s0 " << s0;
        }
    cudaFree(g);
    cudaFree(out);
  }
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
    tma_tile_roundtrip<<<1, 128>>>(m, LoadRows{row0}, out);
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
