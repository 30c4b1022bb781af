// Launch template shared by the Hopper instantiation units: tensor maps for
// Q, K, V and O (4-D: d, sequence, head, batch; 64-element boxes with the 128-byte
// swizzle), shared-memory size, grid.
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#include "kernels/sm90/decode.hpp"
#include "kernels/sm90/forward_kernel.cuh"
#include "kernels/sm90/launch.hpp"
#include "kernels/sm90/padding_scrub.hpp"
#include "kernels/sm90/schedule_cache.hpp"
#include "kernels/sm90/split_combine.hpp"
#include "kernels/sm90/tensor_map.hpp"
#include "kernels/sm90/tile_shape.hpp"

// DHP_SM90_HALF_ROWS=0 keeps D = 64 from the half-row tiles (A/B; launch_by_shape).
#ifndef DHP_SM90_HALF_ROWS
#define DHP_SM90_HALF_ROWS 1
#endif

namespace dhp::sm90 {

// A [B, S, H, D] tensor of element type T as a TMA tensor map with
// `rows`-row boxes (tensor_map.hpp, make_bshd_map).
template <typename T>
bool make_map(CUtensorMap& m, const void* base, int64_t S, int64_t H, int64_t B, int D, int64_t s_seq,
              int64_t s_head, int64_t s_batch, int rows, int l2_promotion = kL2PromotionDense) {
  return make_bshd_map(m, base, S, H, B, D, s_seq, s_head, s_batch, rows, !std::is_same_v<T, __half>, l2_promotion);
}

// An attribute of the current device (0 on error), cached per device.
template <cudaDeviceAttr kAttr>
int device_attribute() {
  static thread_local int device_cached = -1, value = 0;
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return 0;
  if (device != device_cached) {
    if (cudaDeviceGetAttribute(&value, kAttr, device) != cudaSuccess) return 0;
    device_cached = device;
  }
  return value;
}
// Streaming multiprocessors of the current device.
inline int sm_count() { return device_attribute<cudaDevAttrMultiProcessorCount>(); }
// The current device's opt-in shared memory per block.
inline int smem_optin() { return device_attribute<cudaDevAttrMaxSharedMemoryPerBlockOptin>(); }

// The shape the launcher plans by (tile_shape.hpp, planning_shape): a
// causal call with a secret diagonal is planned as a non-causal one.
// DHP_SM90_SECRET_DIAGONAL=causal plans it as causal (A/B).
inline kernels::ForwardArgs planned(const kernels::ForwardArgs& a) {
  static const char* env = std::getenv("DHP_SM90_SECRET_DIAGONAL");
  return planning_shape(a, env != nullptr && std::strcmp(env, "causal") == 0);
}

// V's zero-padded copy made before the attention (launch_padding_scrub,
// the whole GPU) into `scratch` (padded_v_bytes); `a` then reads V from it,
// packed [B, S_k, H_kv, D]. Public: shapes and pointers.
inline cudaError_t launch_v_copy_before(kernels::ForwardArgs& a, int head_dim, void* scratch, cudaStream_t stream) {
  if (const cudaError_t err = launch_padding_scrub(a, head_dim, scratch, stream); err != cudaSuccess) return err;
  a.v = scratch;
  a.v_stride_head = head_dim;
  a.v_stride_seq = static_cast<int64_t>(a.heads_kv) * head_dim;
  a.v_stride_batch = static_cast<int64_t>(a.seqlen_k) * a.heads_kv * head_dim;
  return cudaSuccess;
}

// V's zero-padded copy for secret key lengths (padding_scrub.hpp), made
// here once the grid and the tile order are known: beside the attention
// where plan_copy_beside takes it (the first round's pairs counted from the
// schedule: the highest pair a tile of round 0 reads), else before it. Sets
// a's V to the copy (and, beside, the counters). `plan_causal`: the causal
// flag of the plan (planned). DHP_SM90_V_COPY=before | beside forces one
// (A/B, tests).
template <typename Traits>
cudaError_t launch_v_copy(kernels::ForwardArgs& a, bool plan_causal, int grid, int sms, void* scratch,
                          cudaStream_t stream) {
  constexpr int D = Traits::kHeadDim;
  static const char* copy_env = std::getenv("DHP_SM90_V_COPY");
  const bool force_before = copy_env != nullptr && std::strcmp(copy_env, "before") == 0;
  const bool force_beside = copy_env != nullptr && std::strcmp(copy_env, "beside") == 0;
  // Beside only where the plan is non-causal (measured there; causal rounds
  // are uneven, and causal grids may take schedule lists) unless forced.
  const bool consider = force_beside || (!force_before && !plan_causal && a.schedule == nullptr);
  const int64_t first_pairs = consider && a.schedule == nullptr ? first_round_pairs<Traits::kBlockM>(a, grid) : 1;
  CopyBesidePlan plan = consider ? plan_copy_beside(a, D, grid, sms, first_pairs, force_beside) : CopyBesidePlan{};
  // Experiment knobs (public): DHP_SM90_V_COPY_CTAS=N CTAs beside (1-8);
  // DHP_SM90_V_COPY_FIRST=N pairs at least in the whole-grid first part.
  static const char* ctas_env = std::getenv("DHP_SM90_V_COPY_CTAS");
  static const char* first_env = std::getenv("DHP_SM90_V_COPY_FIRST");
  if (plan.beside_ctas > 0 && ctas_env != nullptr) plan.beside_ctas = std::clamp(std::atoi(ctas_env), 1, 8);
  if (plan.beside_ctas > 0 && first_env != nullptr)
    plan.first_pairs = static_cast<int32_t>(std::clamp<int64_t>(std::atoi(first_env), plan.first_pairs,
                                                                static_cast<int64_t>(a.batch) * a.heads_kv));
  const kernels::ForwardArgs original = a;
  auto* counters = reinterpret_cast<uint32_t*>(static_cast<char*>(scratch) + copy_beside_counters_offset(a, D));
  // Beside needs V as a TMA tensor map; where the driver refuses one
  // (nothing launched yet), the copy runs before.
  const cudaError_t beside =
      plan.beside_ctas > 0 ? launch_copy_beside(original, plan, scratch, counters, sms, stream) : cudaErrorNotSupported;
  if (beside != cudaSuccess && beside != cudaErrorNotSupported) return beside;
  if (beside == cudaSuccess) {
    a.v_ready = counters;
    a.v_ready_count = plan.chunks_per_pair;
    a.v_stride_seq = D;  // packed [B, H_kv, S_k, D]
    a.v_stride_head = static_cast<int64_t>(a.seqlen_k) * D;
    a.v_stride_batch = static_cast<int64_t>(a.seqlen_k) * a.heads_kv * D;
    a.v = scratch;
    return cudaSuccess;
  }
  return launch_v_copy_before(a, D, scratch, stream);
}

// `v_copy`: scratch for V's zero-padded copy (secret key lengths; made by
// launch_v_copy), or null (V read as given).
template <typename Traits>
cudaError_t launch_attention(const kernels::ForwardArgs& a, void* v_copy, cudaStream_t stream) {
  using T = typename Traits::T;
  constexpr int D = Traits::kHeadDim;
  CUtensorMap tq, tk, tv, to;
  auto* kernel = &attention_forward_sm90<Traits>;
  constexpr int kSmem = sizeof(SharedStorage<Traits>) + 1024;  // + alignment slack
  static thread_local int configured_device = -1;
  if (const cudaError_t err = kernels::ensure_smem_limit(kernel, kSmem, configured_device); err != cudaSuccess)
    return err;
  // Persistent: one CTA per SM at most (the register file allows no second).
  const int sms = sm_count();
  if (sms <= 0) return cudaErrorInvalidDevice;
  // The schedule counts tiles in int32 (public shape; checked here).
  const int64_t tiles = query_tiles(a, Traits::kBlockM);
  if (tiles > INT32_MAX - 1024) return cudaErrorNotSupported;  // + a round of grid in tile_of
  // Experiment knobs (public): DHP_SM90_GRID=tiles launches one CTA per tile
  // (not persistent); DHP_SM90_ORDER=0|1|2|3 picks the TileOrder.
  static const char* grid_env = std::getenv("DHP_SM90_GRID");
  static const char* order_env = std::getenv("DHP_SM90_ORDER");
  const bool one_per_tile = grid_env != nullptr && std::strcmp(grid_env, "tiles") == 0;
  kernels::ForwardArgs args = a;
  const kernels::ForwardArgs shape = planned(a);  // what grid, order and schedule are chosen by
  // CTAs: tile_shape.hpp, persistent_ctas. DHP_SM90_GRID=N (a number below
  // the SM count): at most N CTAs; =full: one per SM; =balanced: the fewest
  // that keep the number of rounds, whatever the head dim (A/B).
  const bool full = grid_env != nullptr && std::strcmp(grid_env, "full") == 0;
  const bool balanced = grid_env != nullptr && std::strcmp(grid_env, "balanced") == 0;
  const int grid_cap = full       ? sms
                       : balanced ? static_cast<int>(fewest_ctas_same_rounds(tiles, sms))
                       : grid_env != nullptr && !one_per_tile && std::atoi(grid_env) > 0
                           ? std::min(std::atoi(grid_env), sms)
                           : static_cast<int>(persistent_ctas(shape, tiles, sms, Traits::kHeadDim, v_copy != nullptr));
  const int grid = static_cast<int>(tiles < grid_cap || one_per_tile ? tiles : grid_cap);
  // tile_of(r + 1) reaches (r + 2) * grid: with one CTA per tile, 2 * tiles.
  if (one_per_tile && tiles > (INT32_MAX - 1024) / 2) return cudaErrorNotSupported;
  // Each CTA counts the key tiles it has consumed in 32 bits (the ring
  // position, kept below 2^31 where it meets int32 arithmetic): at most
  // rounds * key tiles per query tile. Public; past it, the portable kernel.
  const int64_t rounds = (tiles + grid - 1) / grid;
  const int64_t key_tiles = (static_cast<int64_t>(a.seqlen_k) + Traits::kBlockN - 1) / Traits::kBlockN;
  if (rounds * key_tiles > (int64_t{1} << 30)) return cudaErrorNotSupported;
  // The order model walks every tile; remember the last shape's answer.
  static thread_local int64_t order_key[7] = {-1};
  static thread_local int32_t order_cached = 0;
  const int64_t key[7] = {a.seqlen_q, a.seqlen_k, a.heads_q, a.batch, shape.causal, a.causal_diagonal_public * 1000000000LL + a.causal_offset, grid};
  if (!std::equal(key, key + 7, order_key)) {
    order_cached = choose_tile_order<Traits::kBlockM, Traits::kBlockN>(shape, grid);
    std::copy(key, key + 7, order_key);
  }
  const int order_forced = order_env != nullptr ? std::atoi(order_env) : -1;
  args.tile_order = order_forced >= 0 && order_forced <= 3 ? order_forced : order_cached;  // else ignored
  // Balanced static lists (scheduler.cuh, balanced_schedule; per-CTA lists
  // from the public shape, cached on the device) instead of the snake deal:
  // for causal tiles, which weigh unequally, and for non-causal 192-row
  // tiles whose partial last blocks, dealt last, re-read their heads' K/V
  // from memory (list_kind and take_lists say where; docs/perf-log.md,
  // sessions 15 and 29). Partial blocks are weighed by their live
  // warpgroups (PartialCost), in both kinds of lists (session 30).
  // DHP_SM90_SCHEDULE_TABLE=0 keeps the closed-form deal (A/B), =2 takes
  // the lists wherever considered (tests). DHP_SM90_PARTIAL_COST=ONE,TWO
  // (hundredths of a full block with one / two live warpgroups, 1-1000)
  // or =off (no partial-block lists; A/B).
  // DHP_SM90_CAUSAL_PARTIAL_COST=ONE,TWO sets the causal lists' own
  // (100,100: session 29's lists, partial blocks not modelled).
  // DHP_SM90_PARTIAL_LISTS_MAX_S=N moves the S_q bound of the non-causal
  // partial-block lists (A/B).
  static const char* table_env = std::getenv("DHP_SM90_SCHEDULE_TABLE");
  static const char* partial_env = std::getenv("DHP_SM90_PARTIAL_COST");
  static const char* causal_partial_env = std::getenv("DHP_SM90_CAUSAL_PARTIAL_COST");
  static const char* partial_max_env = std::getenv("DHP_SM90_PARTIAL_LISTS_MAX_S");
  // DHP_SM90_LIST_WINDOW=N (1-16): lists dealt in windows N times as wide (A/B).
  // DHP_SM90_LIST_LAYOUTS=1: the plain window layout only, not the best of
  // three (balanced_schedule, kListLayouts; A/B).
  static const char* window_env = std::getenv("DHP_SM90_LIST_WINDOW");
  static const char* layouts_env = std::getenv("DHP_SM90_LIST_LAYOUTS");
  static const int32_t list_layouts = layouts_env != nullptr && std::atoi(layouts_env) == 1 ? 1 : kListLayouts;
  const int table_mode = table_env != nullptr ? std::atoi(table_env) : 1;
  static const int32_t list_window = [] {  // parsed once, as read
    const int n = window_env != nullptr ? std::atoi(window_env) : 1;
    return n >= 1 && n <= 16 ? n : 1;
  }();
  const bool partial_off = partial_env != nullptr && std::strcmp(partial_env, "off") == 0;
  const int64_t partial_max_s =
      partial_max_env != nullptr && std::atoll(partial_max_env) > 0 ? std::atoll(partial_max_env) : kPartialListsMaxSq;
  const int32_t kind = list_kind(shape, args.tile_order, tiles, grid, key_tiles, order_env != nullptr, table_mode,
                                 partial_off, partial_max_s);
  const PartialCost partial_cost = list_partial_cost(kind, partial_env, causal_partial_env);
  args.schedule = nullptr;
  if (kind != kNoLists) {  // public
    // heads_kv and the head dim: take_lists weighs the snake's K/V bytes.
    const std::vector<int64_t> schedule_key = {a.seqlen_q, a.seqlen_k, a.heads_q, a.heads_kv, Traits::kHeadDim,
                                               a.batch, shape.causal,
                                               a.causal_diagonal_public * 1000000000LL + a.causal_offset, grid,
                                               Traits::kBlockM, Traits::kBlockN, table_mode,
                                               partial_cost.one_live, partial_cost.two_live, list_window,
                                               list_layouts};
    const int32_t order_now = args.tile_order;
    args.schedule = cached_schedule(
        schedule_key,
        [&] {
          double balanced = 1.0;
          std::vector<int32_t> lists = balanced_schedule<Traits::kBlockM, Traits::kBlockN>(
              shape, grid, &balanced, partial_cost, list_window, list_layouts);
          const double now = snake_balance<Traits::kBlockM, Traits::kBlockN>(shape, grid, order_now, partial_cost);
          return take_lists(kind, balanced, now, table_mode,
                            snake_round_kv_bytes<Traits::kBlockM>(shape, grid, order_now, Traits::kHeadDim))
                     ? lists
                     : std::vector<int32_t>{};
        });
    if (args.schedule != nullptr) args.tile_order = kHeadMajorHeavyFirst;  // the lists' tile numbering
  }
  if (v_copy != nullptr)  // public; args' V becomes the copy
    if (const cudaError_t err = launch_v_copy<Traits>(args, shape.causal != 0, grid, sms, v_copy, stream); err != cudaSuccess) return err;
  // Half-row tiles load Q and store O in 8-row boxes (kernel_traits.cuh).
  constexpr int kQBox = Traits::kHalfRows ? 8 : Traits::kBlockM, kOBox = Traits::kHalfRows ? 8 : 16;
  if (!make_map<T>(tq, a.q, a.seqlen_q, a.heads_q, a.batch, D, a.q_stride_seq, a.q_stride_head, a.q_stride_batch,
                   kQBox) ||
      !make_map<T>(tk, a.k, a.seqlen_k, a.heads_kv, a.batch, D, a.k_stride_seq, a.k_stride_head, a.k_stride_batch,
                   Traits::kBlockN) ||
      !make_map<T>(tv, args.v, a.seqlen_k, a.heads_kv, a.batch, D, args.v_stride_seq, args.v_stride_head,
                   args.v_stride_batch, Traits::kBlockN) ||
      // O: one warp's 16 rows per store (8 with half-row tiles; sm90/epilogue.cuh); rows >= S_q clipped.
      !make_map<T>(to, a.o, a.seqlen_q, a.heads_q, a.batch, D, a.o_stride_seq, a.o_stride_head, a.o_stride_batch,
                   kOBox))
    return cudaErrorNotSupported;
  // Programmatic dependent launch: this kernel's set-up (barriers, tensor
  // map prefetch) may overlap the end of the previous kernel in the stream;
  // the kernel waits (griddepcontrol.wait) before its first global access
  // (behind V's copy beside it, for the copy's counters instead: launch_v_copy).
  // DHP_SM90_PDL=0 launches without it (A/B).
  static const char* pdl_env = std::getenv("DHP_SM90_PDL");
  const bool pdl = pdl_env == nullptr || std::strcmp(pdl_env, "0") != 0;
  const cudaError_t err = kernels::launch_pdl(kernel, dim3(grid), dim3(Traits::kThreads), kSmem, stream, pdl, args,
                                              tq, tk, tv, to);
  timeline::after_launch(stream);  // TEST-ONLY probe builds; nothing otherwise
  return err;
}

template <typename Traits>
cudaError_t launch_forward(const kernels::ForwardArgs& a_in, cudaStream_t stream) {
  constexpr int D = Traits::kHeadDim;
  kernels::ForwardArgs a = a_in;
  // Secret key lengths: the kernel reads V rows past L_k, which must be
  // zero; they are zeroed once, in a copy of V (padding_scrub.hpp). Without
  // key lengths there is no such row. No scratch memory: nothing launched,
  // cudaErrorNotSupported, and the dispatcher runs the portable kernel
  // (which zeroes them in its own tiles).
  void* scratch = nullptr;
  // Causal with one shared length array (the diagonal public, offset 0):
  // V's padding can meet a valid row only in each query tile's band of key
  // tiles at or right of its first row (kernel_traits.cuh, v_band_tiles),
  // where the kernel zeroes it in shared memory: no copy of V
  // (docs/perf-log.md, session 20). DHP_SM90_V_BAND=0 keeps the copy (A/B).
  static const char* band_env = std::getenv("DHP_SM90_V_BAND");
  a.v_zero_band = Traits::kHasLengths && a.lens_k != nullptr && a.lens_q == a.lens_k && a.causal &&
                  a.causal_diagonal_public && a.causal_offset == 0 &&
                  (band_env == nullptr || std::strcmp(band_env, "0") != 0);
  if (Traits::kHasLengths && a.lens_k != nullptr && !a.v_zero_band) {
    // The copy kernel counts (batch, kv head) pairs in int32 (public).
    if (static_cast<int64_t>(a.batch) * a.heads_kv > INT32_MAX) return cudaErrorNotSupported;
    // The copy beside also counts chunks of all pairs in int32 (public).
    if (static_cast<int64_t>(a.batch) * a.heads_kv * (a.seqlen_k / copy_beside_chunk_rows(D) + 1) > INT32_MAX)
      return cudaErrorNotSupported;
    scratch = scratch_alloc(copy_beside_bytes(a, D), stream);  // room for either copy
    if (scratch == nullptr) return cudaErrorNotSupported;
  }
  const cudaError_t err = launch_attention<Traits>(a, scratch, stream);
  scratch_free(scratch, stream);  // stream-ordered: after the kernel has read it
  return err;
}

// The decode path (decode.hpp): the decode kernel over the plan's work
// units, writing fp32 partials into scratch memory, then the combine into
// the call's O and lse. Secret key lengths: V's zero-padded copy first
// (padding_scrub.hpp, before the attention; the copy beside follows the
// dense kernel's schedule). DHP_SM90_DECODE_CHUNK=N forces N key tiles per
// chunk (A/B, tests); DHP_SM90_DECODE_MIN_CHUNK=N makes chunks of at least
// N, DHP_SM90_DECODE_UNITS=N aims at N units per batch entry (A/B; the
// path's choice, takes_decode_path, still judges the default).
// GQA heads are packed as rows at S_q > 1 too (decode.hpp,
// kernel_traits.cuh) unless DHP_SM90_DECODE_PACK_SQ=0 (A/B) or the build
// has DHP_SM90_PACKED_ROWS=0.
template <typename Traits>
bool decode_packs_sq() {
  static const char* pack_env = std::getenv("DHP_SM90_DECODE_PACK_SQ");
  return Traits::kPackedRows && (pack_env == nullptr || std::atoi(pack_env) != 0);
}

template <typename Traits>
cudaError_t launch_decode(const kernels::ForwardArgs& call, cudaStream_t stream) {
  using T = typename Traits::T;
  constexpr int D = Traits::kHeadDim, BM = Traits::kBlockM, BN = Traits::kBlockN;
  static_assert(Traits::kDecode, "the decode kernel");
  // The combine's grid takes S_q and B as dimensions (split_combine.cu):
  // checked before anything is planned (S_q x q_pack rows in 32 bits) or
  // launched.
  if (call.seqlen_q > 65535 || call.batch > 65535) return cudaErrorNotSupported;
  static const char* chunk_env = std::getenv("DHP_SM90_DECODE_CHUNK");
  static const char* min_chunk_env = std::getenv("DHP_SM90_DECODE_MIN_CHUNK");
  static const char* units_env = std::getenv("DHP_SM90_DECODE_UNITS");
  const DecodePlan plan =
      decode_plan(call, BM, BN, chunk_env != nullptr ? std::atoi(chunk_env) : 0, decode_packs_sq<Traits>(),
                  min_chunk_env != nullptr ? std::atoi(min_chunk_env) : kDecodeMinChunkTiles,
                  units_env != nullptr ? std::max(1, std::atoi(units_env))
                                       : decode_units_target(D));
  kernels::ForwardArgs a = decode_args(call, plan);
  // The decode path copies V before the attention, never beside it; the
  // narrow kernel's producer has no wait on the copy's counters
  // (producer.cuh), so it must never be given them.
  if (Traits::kNarrow && a.v_ready != nullptr) return cudaErrorNotSupported;
  // The narrow kernel computes one 8-row tile from row 0 (decode_narrow.cuh):
  // takes_narrow_kernel's rule, checked again here.
  if (Traits::kNarrow && plan.rows > kNarrowRows) return cudaErrorNotSupported;
  const int sms = sm_count();
  if (sms <= 0) return cudaErrorInvalidDevice;
  auto* kernel = &attention_forward_sm90<Traits>;
  constexpr int kSmem = sizeof(SharedStorage<Traits>) + 1024;  // + alignment slack
  // The shared-memory cap, once per device: raised by the occupancy query
  // below (which needs it), otherwise just before the launch.
  static thread_local int configured_device = -1;
  // CTAs resident per SM: 1, or with two narrow CTAs per SM (the
  // narrow D = 64 kernel, DHP_SM90_NARROW_CTAS64) as many as the occupancy query finds
  // once the whole carveout is asked for as shared memory (a hint the
  // driver may round), at most two; once per device.
  int per_sm = 1;
  if constexpr (Traits::kCtasPerSm > 1) {
    static thread_local int queried_device = -1, resident = 1;
    int device = 0;
    cudaError_t e = cudaGetDevice(&device);
    if (e == cudaSuccess && device != queried_device) {
      e = kernels::ensure_smem_limit(kernel, kSmem, configured_device);
      if (e == cudaSuccess)
        e = kernels::set_function_attribute(reinterpret_cast<const void*>(kernel),
                                            kernels::FunctionAttribute::kPreferredSharedCarveout,
                                            cudaSharedmemCarveoutMaxShared);
      int n = 0;
      if (e == cudaSuccess) e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, kernel, Traits::kThreads, kSmem);
      if (e != cudaSuccess) return e;
      resident = std::clamp(n, 1, Traits::kCtasPerSm);
      queried_device = device;
    }
    if (e != cudaSuccess) return e;
    per_sm = resident;
  }
  // Merging units (decode_local.cuh; D <= 128) where merging_units_pay
  // (decode.hpp), split units elsewhere: the batch may decide, both give
  // the same bits. DHP_SM90_DECODE_LOCAL=0|1 forces one (A/B; read at every
  // call, so that a test can run both in one process).
  if constexpr (Traits::kMergeChunks || Traits::kNarrow) {
    const char* local_env = std::getenv("DHP_SM90_DECODE_LOCAL");
    // Rounds counted in SMs, not CTA slots: two co-resident narrow CTAs
    // share one SM's memory pipe, so 256 merging units on 132 SMs (two
    // each) already fill the GPU. (Counted in slots -- 264, more than the
    // 256 tiles -- B32 GQA 32/8 S_k 4096 and B8 MHA S_k 2048 D64 took split
    // units and the combine: 72.6 / 37.9 µs against 66.2 / 34.4 as merging
    // units; H200, docs/perf-log.md, session 41.)
    const bool local = local_env != nullptr ? std::atoi(local_env) != 0
                                            : merging_units_pay(query_tiles(a, BM), plan.splits, sms);
    a.decode_local = local && plan.splits > 1 ? 1 : 0;
    static_assert(sizeof(SharedStorage<Traits>) + 1024 <= Traits::kSmemLimit, "the merged O beside Q and the ring");
  }
  const int64_t units = query_tiles(a, BM) * (a.decode_local ? 1 : plan.splits);
  if (units > INT32_MAX - 1024) return cudaErrorNotSupported;  // + a round of grid in tile_of
  const int grid = static_cast<int>(std::min<int64_t>(units, static_cast<int64_t>(sms) * per_sm));
  // The ring position counts key tiles in 32 bits (as in launch_attention).
  const int64_t unit_key_tiles = static_cast<int64_t>(plan.split_key_tiles) * (a.decode_local ? plan.splits : 1);
  if ((units + grid - 1) / grid * unit_key_tiles > (int64_t{1} << 30)) return cudaErrorNotSupported;
  const bool v_copy = Traits::kHasLengths && a.lens_k != nullptr;
  if (v_copy && static_cast<int64_t>(a.batch) * a.heads_kv > INT32_MAX) return cudaErrorNotSupported;
  // Scratch: partial O, partial lse, then V's copy (256-byte aligned parts).
  const int64_t prows = a.decode_local ? 0 : decode_partial_rows(a, plan);  // merging units: no partials
  const size_t o_bytes = (static_cast<size_t>(prows) * D * 4 + 255) / 256 * 256;
  const size_t lse_bytes = (static_cast<size_t>(prows) * 4 + 255) / 256 * 256;
  const size_t copy_bytes = v_copy ? padded_v_bytes(a, D) : 0;
  const size_t scratch_bytes = o_bytes + lse_bytes + copy_bytes;  // 0: merging units without lengths
  char* scratch = scratch_bytes > 0 ? static_cast<char*>(scratch_alloc(scratch_bytes, stream)) : nullptr;
  if (scratch == nullptr && scratch_bytes > 0) return cudaErrorNotSupported;
  a.o_partial = o_bytes > 0 ? reinterpret_cast<float*>(scratch) : nullptr;
  a.lse_partial = o_bytes > 0 ? reinterpret_cast<float*>(scratch + o_bytes) : nullptr;
  CUtensorMap tq, tk, tv, to;
  cudaError_t err = cudaSuccess;
  constexpr int kL2 = kL2PromotionDecode;  // tensor_map.hpp
  // Half of the tensor maps describe the call's own tensors: made (and so
  // checked) before anything is launched.
  const bool q_made =
      plan.q_shift > 0  // S_q > 1 packed: the 5-D map over the call's own strides
          ? make_packed_rows_map(tq, call.q, call.seqlen_q, plan.q_pack, call.heads_kv, call.batch, D,
                                 call.q_stride_seq, call.q_stride_head, call.q_stride_batch, BM,
                                 !std::is_same_v<T, __half>, kL2)
          : make_map<T>(tq, a.q, a.seqlen_q, a.heads_q, a.batch, D, a.q_stride_seq, a.q_stride_head,
                        a.q_stride_batch, BM, kL2);
  if (!q_made ||
      !make_map<T>(tk, a.k, a.seqlen_k, a.heads_kv, a.batch, D, a.k_stride_seq, a.k_stride_head, a.k_stride_batch,
                   BN, kL2) ||
      // O: written by the combine, or by merging units with plain stores
      // (decode_local.cuh), never through this map; it checks the call's O
      // alignment as the dense path's does.
      !make_map<T>(to, call.o, call.seqlen_q, call.heads_q, call.batch, D, call.o_stride_seq, call.o_stride_head,
                   call.o_stride_batch, 16))
    err = cudaErrorNotSupported;
  if (err == cudaSuccess && v_copy) err = launch_v_copy_before(a, D, scratch + o_bytes + lse_bytes, stream);
  if (err == cudaSuccess && !make_map<T>(tv, a.v, a.seqlen_k, a.heads_kv, a.batch, D, a.v_stride_seq,
                                         a.v_stride_head, a.v_stride_batch, BN, kL2))
    err = cudaErrorNotSupported;
  if (err == cudaSuccess) {
    err = kernels::ensure_smem_limit(kernel, kSmem, configured_device);  // a no-op after the query
    if (err == cudaSuccess)
      err = kernels::launch_pdl(kernel, dim3(grid), dim3(Traits::kThreads), kSmem, stream, true, a, tq, tk, tv, to);
  }
  if (err == cudaSuccess && !a.decode_local) {  // merging units wrote O and lse themselves
    CombineArgs c{};
    c.o_partial = a.o_partial;
    c.lse_partial = a.lse_partial;
    c.o = call.o;
    c.lse = call.lse;
    c.o_stride_batch = call.o_stride_batch, c.o_stride_seq = call.o_stride_seq, c.o_stride_head = call.o_stride_head;
    c.splits = plan.splits, c.batch = call.batch, c.heads_q = call.heads_q, c.seqlen_q = call.seqlen_q;
    c.q_pack = plan.q_pack, c.part_heads = plan.heads, c.part_seqlen = plan.rows;
    // The combine with PDL only where the CTA slots the attention units
    // leave free hold its CTAs (combine_with_pdl, decode.hpp), in stream
    // order elsewhere. DHP_SM90_COMBINE_PDL=0|1 forces one mode (A/B; read
    // at every call, so that a test can run both in one process); the
    // kernel and its bits are the same either way.
    const char* pdl_env = std::getenv("DHP_SM90_COMBINE_PDL");
    const bool overlap =
        pdl_env != nullptr ? std::atoi(pdl_env) != 0 : combine_with_pdl(units, sms, per_sm, combine_ctas(c));
    // Where it has at most one CTA per SM, each reserves kCombineSpreadSmem
    // of shared memory (combine_spreads, decode.hpp) so that no two share
    // an SM; DHP_SM90_COMBINE_SMEM=N reserves N bytes instead (A/B knob,
    // read at every call).
    const char* smem_env = std::getenv("DHP_SM90_COMBINE_SMEM");
    const int wanted = smem_env != nullptr ? std::clamp(std::atoi(smem_env), 0, kCombineSpreadSmem)
                       : overlap && combine_spreads(combine_ctas(c), sms) ? kCombineSpreadSmem
                                                                           : 0;
    const int reserve = std::min(wanted, smem_optin());
    err = launch_split_combine(c, !std::is_same_v<T, __half>, D, overlap, stream, reserve);
  }
  scratch_free(scratch, stream);  // stream-ordered: after the kernels have used it
  return err;
}

// D = 64 has four tile heights, chosen from the public shape:
//  * 192 query rows (three consumer warpgroups: two warpgroups' GEMMs cover
//    one softmax) where S_q > 2048, and without causal masking from
//    S_q = 512 up (since the Q double buffer: +7 % at S512, +9 % at S1024);
//  * 128 rows for shorter sequences and causal S_q <= 2048 (192-row tiles
//    cost causal S512 / S1024 7-9 %: fewer, unevenly loaded tiles; causal
//    S2048 1.0-1.3 % since the session-13 producer, S3072 / S4096 gain 8 /
//    4 % from 192: docs/perf-log.md, session 14);
//  * 64 rows (one consumer warpgroup) below S_q = 2048 when 128-row tiles
//    would leave more than half the SMs idle: a short serial chain per CTA
//    matters more there than ping-pong. docs/perf-log.md has the
//    measurements.
//  * 32 rows (one consumer warpgroup, half-row tiles: kernel_traits.cuh)
//    where even those fit in one wave, without secret lengths: the chain's
//    softmax halves (the small configuration, B=1 H=8 S=512: 128 CTAs).
// Every height computes each row with the same instructions in the same
// order (m64 wgmma per warpgroup, the same key tiles), so the outputs are
// bitwise the same whichever is taken: batch invariance does not depend on
// the choice. DHP_SM90_D64_ROWS=32|64|128|192 forces one (tests, A/B; 32
// falls back to 64 with secret lengths).
template <typename T, int D, bool LENGTHS>
cudaError_t launch_by_shape(const kernels::ForwardArgs& a, cudaStream_t s) {
  // Decoding (S_q up to decode_max_seqlen_q: 64 with GQA packed or with
  // merging units, else 32; where takes_decode_path finds that the packing
  // or the split pays;
  // DHP_SM90_DECODE_MAX_SQ=N forces every S_q <= N onto it, 0: never): the
  // decode path (decode.hpp). Public shape only, never the batch. Every
  // head dim: D = 64 joined in session 38, when gate 1 passed on its decode
  // kernel (a hardware count, smsp__thread_inst_executed_pred_on, had
  // separated the nan-inf-rows class on session 32's kernel and no longer
  // does; docs/perf-log.md, session 38).
  static const char* decode_env = std::getenv("DHP_SM90_DECODE_MAX_SQ");
  using Decode = Sm90Traits<T, D, LENGTHS, 1, Sm90Config<D>::kBlockN, false, false, 1>;
  const bool decode_shape = decode_env != nullptr
                                ? a.seqlen_q <= std::atoi(decode_env)
                                : takes_decode_path(a, Decode::kBlockM, Decode::kBlockN, decode_packs_sq<Decode>(),
                                                    Decode::kMergeChunks, decode_units_target(D));
  if (decode_shape) {
    // At most 8 rows per tile (S_q = 1, or S_q > 1 with at most 8 rows):
    // the narrow decode kernel (decode_narrow.cuh; decode.hpp,
    // takes_narrow_kernel). DHP_SM90_NARROW=0 keeps the 64-row one (A/B;
    // read at every call). D = 256 (64-key tiles, kNarrowBlockN) since
    // session 46, after the gates and an A/B (docs/perf-log.md);
    // DHP_SM90_NARROW256=0 keeps the 64-row one at D = 256 alone (A/B knob,
    // read at every call).
    {
      using Narrow = Sm90Traits<T, D, LENGTHS, 1, kNarrowBlockN<D>, false, false, 2>;
      const char* narrow_env = std::getenv("DHP_SM90_NARROW");
      const char* narrow256_env = D == 256 ? std::getenv("DHP_SM90_NARROW256") : nullptr;
      const bool narrow_at_d = narrow256_env == nullptr || std::atoi(narrow256_env) != 0;
      if (narrow_at_d && (narrow_env == nullptr || std::atoi(narrow_env) != 0) &&
          takes_narrow_kernel(a, Narrow::kBlockM, Narrow::kBlockN, decode_packs_sq<Narrow>()))
        return launch_decode<Narrow>(a, s);
    }
    return launch_decode<Decode>(a, s);
  }
  const kernels::ForwardArgs shape = planned(a);  // what the tile shape is chosen by
#if DHP_SM90_DENSE_64ROWS
  // Dense 64-row tiles where S_q <= 64 (D = 128 / 256; kernel_traits.cuh):
  // S_q is public and batch-free. Half the tensor work of a 128-row tile
  // there, which is at least half padding: B8 GQA 32/8 S_q 64 S_k 1024
  // 23.6 against 29.3 us, B32 95.5 against 127.3 (docs/perf-log.md,
  // session 36).
  if constexpr (D != 64) {
    using Rows64 = Sm90Traits<T, D, LENGTHS, 1>;
    static const char* rows64_env = std::getenv("DHP_SM90_DENSE_64ROWS");
    if (a.seqlen_q <= Rows64::kBlockM && (rows64_env == nullptr || std::atoi(rows64_env) != 0))
      return launch_forward<Rows64>(a, s);
  }
#endif
  if constexpr (D == 64) {
    static const char* rows_env = std::getenv("DHP_SM90_D64_ROWS");
    int rows = d64_tile_rows(shape, LENGTHS, sm_count(), DHP_SM90_HALF_ROWS != 0);  // tile_shape.hpp
    if (rows_env != nullptr) rows = std::atoi(rows_env);
    if constexpr (!LENGTHS)
      if (rows == 32) return launch_forward<Sm90Traits<T, D, LENGTHS, 1, Sm90Config<D>::kBlockN, true>>(a, s);
    if (rows == 32) rows = 64;  // secret lengths: no half-row kernel
    if (rows == 192) return launch_forward<Sm90Traits<T, D, LENGTHS, 3>>(a, s);
    if (rows == 64) return launch_forward<Sm90Traits<T, D, LENGTHS, 1>>(a, s);
    return launch_forward<Sm90Traits<T, D, LENGTHS, 2>>(a, s);
  } else if constexpr (D == 128) {
    // D = 128, non-causal, S_k >= 2048: 160-key tiles (S 80 and P 40
    // registers per thread instead of 64 and 32; a K/V ring of 2 x 2 x 40 KB)
    // issue fewer, longer wgmmas per key and were 1-4.5 % faster at S_k
    // 2048-16384 in an interleaved A/B; shorter shapes lose 3-13 % to the
    // partial last tile, causal S1024 5 % (docs/perf-log.md). The choice
    // depends on public shapes only, never on the batch size.
    static const char* bn_env = std::getenv("DHP_SM90_D128_BN");
    int bn = !shape.causal && a.seqlen_k >= 2048 ? 160 : 128;
    if (bn_env != nullptr) bn = std::atoi(bn_env);
    if (bn == 160) return launch_forward<Sm90Traits<T, D, LENGTHS, 2, 160>>(a, s);
    return launch_forward<Sm90Traits<T, D, LENGTHS>>(a, s);
  } else {
    // D = 256: one GEMM in flight with 128-key tiles (Sm90Traits, ONE_GEMM_)
    // for causal S_k <= 1024 and any S_k <= 512 (tile_shape.hpp,
    // d256_one_gemm): +1 to +3 % there on the H100 and H200; on long
    // non-causal sequences it lost 2-8 % to the overlapped loop with 80-key
    // tiles and two K/V stages (likely the loads one stage cannot hide;
    // docs/perf-log.md, session 23). Secret lengths: the overlapped loop
    // always. DHP_SM90_D256_ONE_GEMM=0|1 forces one (tests, A/B).
    static const char* one_env = std::getenv("DHP_SM90_D256_ONE_GEMM");
    const bool one = one_env != nullptr ? std::atoi(one_env) != 0 : d256_one_gemm(shape, LENGTHS);
    if constexpr (!LENGTHS)
      if (one) return launch_forward<Sm90Traits<T, D, LENGTHS, 2, 128, false, true>>(a, s);
    return launch_forward<Sm90Traits<T, D, LENGTHS>>(a, s);
  }
}

}  // namespace dhp::sm90

#define DHP_SM90_DEFINE_LAUNCH(NAME, TYPE, D)                                                          \
  namespace dhp::sm90 {                                                                                \
  cudaError_t launch_forward_##NAME(const kernels::ForwardArgs& a, bool has_lengths, cudaStream_t s) { \
    return has_lengths ? launch_by_shape<TYPE, D, true>(a, s) : launch_by_shape<TYPE, D, false>(a, s); \
  }                                                                                                    \
  }
