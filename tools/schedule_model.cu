// Host-only model of the Hopper launcher's causal schedule for a shape, from
// the launcher's own code (sm90/scheduler.cuh, sm90/tile_shape.hpp): the
// tile order it picks, the modelled balance (busiest / mean CTA load) of the
// snake deal and of the balanced lists, which of the two it takes, and for
// each the K/V bytes that the tiles running at the same moment read -- to
// set against the L2 (50 MB on the H100, 60 MiB on the H200). Tiles run back to
// back on each CTA for their modelled weight (key tiles + 1, partial-block
// cost), so the "moments" are those of the load model, not of a GPU.
// Session 53: at the power cap, rows that run kHeavyFirst (many heads'
// K/V in flight) slowed more than their neighbours; this names such rows.
//   dhp_schedule_model B H S D [SMs [H_kv]]   (causal, S_q = S_k, fp16/bf16; SMs: 132; H_kv: H,
//   a divisor of H for grouped-query heads, which only the K/V bytes see)
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <vector>

#include "kernels/sm90/scheduler.cuh"
#include "kernels/sm90/tile_shape.hpp"

namespace {

using dhp::kernels::ForwardArgs;
namespace sm90 = dhp::sm90;

struct Run {
  int64_t start, end;
  int32_t pair, key_tiles;  // (batch, kv head) and the tile's key range [0, key_tiles)
};

// Median and largest K/V bytes of the pairs that running tiles read, at 400
// evenly spaced moments of the modelled makespan; a pair counts once, with
// its longest running key range.
template <int BM, int BN>
void working_set(const char* name, const ForwardArgs& a, const std::vector<std::vector<int32_t>>& per_cta,
                 const sm90::TileScheduler<BM>& sched, const sm90::PartialCost& pc, int D) {
  std::vector<Run> runs;
  int64_t makespan = 0;
  for (const auto& tiles : per_cta) {
    int64_t t = 0;
    for (int32_t id : tiles) {
      const sm90::Tile x = sched.decode(id);
      const int64_t w = sm90::block_weight<BM, BN>(a, x.m_block, pc);
      runs.push_back({t, t + w, x.batch * a.heads_kv + x.head / a.kv_group,
                      dhp::sm80::KeyTileRange<BM, BN>(a, x.m_block * BM).n_end});
      t += w;
    }
    makespan = std::max(makespan, t);
  }
  std::vector<double> mib;
  for (int k = 0; k < 400; ++k) {
    const int64_t at = makespan * (2 * k + 1) / 800;
    std::map<int32_t, int32_t> pairs;
    for (const Run& r : runs)
      if (r.start <= at && at < r.end) pairs[r.pair] = std::max(pairs[r.pair], r.key_tiles);
    double bytes = 0;
    for (const auto& [pair, tiles] : pairs) bytes += 2.0 * tiles * BN * D * 2;  // K and V, 16-bit
    mib.push_back(bytes / (1 << 20));
  }
  std::sort(mib.begin(), mib.end());
  std::printf("  %-6s makespan %lld (model units), K/V in flight: median %.1f MiB, max %.1f MiB\n", name,
              static_cast<long long>(makespan), mib[mib.size() / 2], mib.back());
}

template <int BM, int BN>
void model(ForwardArgs a, int sms, int D) {
  const sm90::PartialCost pc{sm90::kPartialCostOneLive, sm90::kPartialCostTwoLive};
  // One CTA per SM for causal calls (tile_shape.hpp, persistent_ctas), at
  // most one per tile (launch.cuh).
  const int grid = static_cast<int>(std::min<int64_t>(sms, sm90::query_tiles(a, BM)));
  a.tile_order = sm90::choose_tile_order<BM, BN>(a, grid);
  double lists_balance = 0;
  const std::vector<int32_t> lists = sm90::balanced_schedule<BM, BN>(a, grid, &lists_balance, pc);
  const double snake_balance = sm90::snake_balance<BM, BN>(a, grid, a.tile_order, pc);
  const sm90::TileScheduler<BM> snake_sched(a);
  const int64_t key_tiles = (a.seqlen_k + BN - 1) / BN;
  const int32_t kind = sm90::list_kind(a, a.tile_order, snake_sched.total, grid, key_tiles, false, 1, false);
  const int64_t snake_kv = sm90::snake_round_kv_bytes<BM>(a, grid, a.tile_order, D);
  const bool takes = sm90::take_lists(kind, lists_balance, snake_balance, 1, snake_kv);
  std::printf("%d-row tiles, %d-key tiles, %d tiles on %d CTAs; order %s (a round's K/V %.0f MiB); "
              "balance: snake %.4f, lists %.4f -> %s\n",
              BM, BN, snake_sched.total, grid,
              a.tile_order == sm90::kHeavyFirst ? "kHeavyFirst" : "kHeadMajorHeavyFirst", snake_kv / 1048576.0, snake_balance,
              lists_balance, takes ? "lists" : kind == sm90::kNoLists ? "snake (no lists considered)" : "snake");
  std::vector<std::vector<int32_t>> snake(grid), listed(grid);
  for (int32_t t = 0; t < snake_sched.total; ++t)
    snake[sm90::TileScheduler<BM>::snake(t / grid, t % grid, grid)].push_back(t);
  working_set<BM, BN>("snake", a, snake, snake_sched, pc, D);
  ForwardArgs in_lists = a;  // the lists number tiles in kHeadMajorHeavyFirst
  in_lists.tile_order = sm90::kHeadMajorHeavyFirst;
  const sm90::TileScheduler<BM> list_sched(in_lists);
  // One CTA's tiles per list, from the launcher's layout (starts, then tiles).
  auto show = [&](const char* name, const std::vector<int32_t>& l) {
    for (int c = 0; c < grid; ++c) listed[c].assign(l.begin() + grid + 1 + l[c], l.begin() + grid + 1 + l[c + 1]);
    working_set<BM, BN>(name, a, listed, list_sched, pc, D);
  };
  show("lists", lists);
  char name[48];
  double b = 0;
  // The plain window layout alone (DHP_SM90_LIST_LAYOUTS=1; the launcher
  // takes the best of three).
  const std::vector<int32_t> plain = sm90::balanced_schedule<BM, BN>(a, grid, &b, pc, 1, 1);
  std::snprintf(name, sizeof name, "lists, plain layout (balance %.4f)", b);
  show(name, plain);
  for (int sc : {2, 4, 8}) {  // wider windows (DHP_SM90_LIST_WINDOW): better balance, more K/V in flight
    const std::vector<int32_t> wide = sm90::balanced_schedule<BM, BN>(a, grid, &b, pc, sc);
    std::snprintf(name, sizeof name, "lists, windows x%d (balance %.4f)", sc, b);
    show(name, wide);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: dhp_schedule_model B H S D [SMs=132 [H_kv=H]]   (causal, S_q = S_k)\n");
    return 2;
  }
  ForwardArgs a{};
  a.batch = std::atoi(argv[1]);
  a.heads_q = a.heads_kv = std::atoi(argv[2]);
  a.seqlen_q = a.seqlen_k = std::atoi(argv[3]);
  const int D = std::atoi(argv[4]);
  const int sms = argc > 5 ? std::atoi(argv[5]) : 132;
  if (argc > 6) a.heads_kv = std::atoi(argv[6]);
  if (a.heads_kv < 1 || a.heads_q % a.heads_kv != 0) {
    std::fprintf(stderr, "H_kv must divide H\n");
    return 2;
  }
  a.kv_group = a.heads_q / a.heads_kv;
  a.causal = 1;
  a.causal_diagonal_public = 1;
  if (a.batch < 1 || a.heads_q < 1 || a.seqlen_q < 1 || sms < 1 || (D != 64 && D != 128 && D != 256)) {
    std::fprintf(stderr, "B, H, S and SMs must be positive, D 64, 128 or 256\n");
    return 2;
  }
  std::printf("B%d H%d/%d S%d D%d causal, %d SMs\n", a.batch, a.heads_q, a.heads_kv, a.seqlen_q, D, sms);
  if (D == 64) {
    const int rows = sm90::d64_tile_rows(a, false, sms);
    if (rows == 192) model<192, 128>(a, sms, D);
    else if (rows == 128) model<128, 128>(a, sms, D);
    else std::printf("%d-row tiles: fewer tiles than CTAs, no schedule to model\n", rows);
  } else if (D == 128) {
    model<128, 128>(a, sms, D);
  } else if (sm90::d256_one_gemm(a, false)) {
    model<128, 128>(a, sms, D);
  } else {
    model<128, 80>(a, sms, D);
  }
  return 0;
}
