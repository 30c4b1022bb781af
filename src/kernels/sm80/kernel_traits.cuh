// Tile shapes of the portable (mma.sync) kernel per head dim. Each warp owns
// kRowsPerWarp query rows for the whole key loop, so the softmax statistics
// of a row never leave its quad of lanes.
#pragma once

namespace dhp::sm80 {

template <int D, bool HAS_LENGTHS>
struct Sm80Config;

// Br x Bc tiles and warps, chosen so that no register spills at 255
// registers per thread with kMinBlocksPerSM CTAs resident (2 CTAs = 8 warps
// per SM for D <= 128). Masking every tile (secret lengths) keeps two more
// length registers and the mask arithmetic live through the key loop; at
// D = 128 that needs a narrower key tile (ptxas -v, docs/perf-log.md). One
// exception, kept knowingly: the sm_80 code of D = 128 with secret lengths
// spills 40 bytes (its sm_90a code does not); the shapes that spill nothing
// there (8 warps of 16 rows, or 64 x 32) ran 13-27 % slower (H100,
// docs/perf-log.md, session 19).
template <bool L>
struct Sm80Config<64, L> {
  static constexpr int kBlockM = 128, kBlockN = 64, kWarps = 4, kMinBlocksPerSM = 2;
};
template <bool L>
struct Sm80Config<128, L> {
  static constexpr int kBlockM = 128, kBlockN = 32, kWarps = 4, kMinBlocksPerSM = 2;
};
template <bool L>
struct Sm80Config<256, L> {
  static constexpr int kBlockM = 128, kBlockN = 64, kWarps = 8, kMinBlocksPerSM = 1;
};

template <typename T_, int D, bool HAS_LENGTHS_>
struct Sm80Traits : Sm80Config<D, HAS_LENGTHS_> {
  using T = T_;
  using Config = Sm80Config<D, HAS_LENGTHS_>;
  static constexpr int kHeadDim = D;
  static constexpr bool kHasLengths = HAS_LENGTHS_;
  static constexpr int kThreads = Config::kWarps * 32;
  static constexpr int kRowsPerWarp = Config::kBlockM / Config::kWarps;
  static constexpr int kMTiles = kRowsPerWarp / 16;        // m16 tiles per warp
  static constexpr int kNTilesS = Config::kBlockN / 8;     // n8 tiles of S per row block
  static constexpr int kNTilesO = D / 8;                   // n8 tiles of O
  static constexpr int kSmemBytes = (Config::kBlockM + 2 * Config::kBlockN) * D * 2;
  // Test-only: true only in tools/validate's leaky control (a derived traits
  // type built with DHP_BUILD_LEAKY_CONTROL), never in a shipped kernel.
  static constexpr bool kLeakyControl = false;
  static_assert(kRowsPerWarp % 16 == 0, "warps own whole m16 tiles");
};

}  // namespace dhp::sm80
