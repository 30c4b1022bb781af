"""The security gates' configurations and counter lists (tools/validate/gates.py
runs and judges them): gate 1's input-class configurations, the dudect timing
rows with their expected verdicts, the diagnostics, gate 3's reproducibility
configurations, the sanitizers and the ncu metrics gate 1 compares."""

# Public configurations. Gate 1 covers every length mode, both dtypes, every
# head dim, GQA, S_q != S_k and sizes that are not tile multiples.
GATE1 = [
    ("fp16 D64 causal separate GQA", "--dtype fp16 --batch 2 --heads 4 --heads-kv 2 --seqlen 200 --head-dim 64 --causal --lengths separate"),
    # Causal with shared lengths: V read as given, its padding zeroed in
    # shared memory in each query tile's band of key tiles (producer warps
    # 1-3, kernel_traits.cuh v_band_tiles): D128 (band of one key tile) and
    # D256 (80-key tiles: bands of two), several query tiles per sequence.
    ("bf16 D128 causal shared, V band", "--dtype bf16 --batch 2 --heads 4 --seqlen 700 --head-dim 128 --causal --lengths shared"),
    ("fp16 D256 causal shared, V band", "--dtype fp16 --batch 2 --heads 2 --seqlen 500 --head-dim 256 --causal --lengths shared"),
    ("bf16 D128 shared", "--dtype bf16 --batch 2 --heads 2 --seqlen 300 --head-dim 128 --lengths shared"),
    ("fp16 D256 causal none Sq<Sk", "--dtype fp16 --batch 1 --heads 2 --seqlen 100 --seqlen-k 300 --head-dim 256 --causal"),
    # The D64 tile height follows the grid (launch.cuh): the configuration
    # above takes 64-row tiles (one consumer warpgroup); these two take the
    # 128-row (two consumers, the turn around the exp2 stream) and the
    # 192-row (three consumers) kernels.
    # 512 tiles on 132 CTAs: each of the two Q buffers, the O staging buffer
    # (kernel_traits.cuh, kOBuffer) and the four lengths slots reused.
    ("fp16 D64 causal separate, 128-row tiles", "--dtype fp16 --batch 8 --heads 16 --heads-kv 4 --seqlen 400 --head-dim 64 --causal --lengths separate"),
    ("bf16 D64 shared, 192-row tiles", "--dtype bf16 --batch 4 --heads 8 --heads-kv 4 --seqlen 600 --head-dim 64 --lengths shared"),
    # Without secret lengths a grid that fits in one wave at 32 rows takes
    # the half-row kernel (kernel_traits.cuh, kHalfRows): value classes.
    ("fp16 D64 causal none Sq<Sk, 32-row tiles", "--dtype fp16 --batch 1 --heads 4 --heads-kv 2 --seqlen 300 --seqlen-k 400 --head-dim 64 --causal"),
    # D128 non-causal from S_k = 2048 takes 160-key tiles (a kernel of its
    # own); 2100 keys leave a partial last tile.
    ("bf16 D128 shared, 160-key tiles", "--dtype bf16 --batch 1 --heads 2 --seqlen 2100 --head-dim 128 --lengths shared"),
    # V's copy beside the attention (padding_scrub.hpp): non-causal D128,
    # 136 tiles on 68 CTAs, the second round's pairs copied by 4 CTAs while
    # the first runs; the producers wait on the copy's counters.
    ("fp16 D128 separate, V copy beside", "--dtype fp16 --batch 4 --heads 34 --seqlen 128 --seqlen-k 700 --head-dim 128 --lengths separate"),
    # Causal with separate lengths (secret diagonal) is planned as non-causal
    # (tile_shape.hpp, planning_shape): the same grid and copy beside, with
    # the causal mask's per-row limits.
    ("fp16 D128 causal separate, V copy beside", "--dtype fp16 --batch 4 --heads 34 --seqlen 128 --seqlen-k 700 --head-dim 128 --causal --lengths separate"),
    # Non-causal 192-row D64 tiles with S_q <= 1024 and a partial last
    # block: the balanced lists (scheduler.cuh, PartialCost), 384 tiles.
    ("bf16 D64 separate, 192-row tiles in lists", "--dtype bf16 --batch 2 --heads 32 --heads-kv 8 --seqlen 1000 --head-dim 64 --lengths separate"),
    # The 128-key D128 kernels hold Q in registers (kernel_traits.cuh,
    # kQRegCols): the dense one with value classes (the lengths ones above).
    ("fp16 D128 causal none, Q in registers", "--dtype fp16 --batch 2 --heads 4 --heads-kv 2 --seqlen 700 --head-dim 128 --causal"),
    # The decode path (sm90/decode.hpp, S_q = 1): key-range chunks as work
    # units (fp32 partials, then the combine kernel), GQA heads packed as
    # rows; V's copy before it with secret key lengths.
    ("fp16 D128 decode separate GQA", "--dtype fp16 --batch 2 --heads 32 --heads-kv 8 --seqlen 1 --seqlen-k 3000 --head-dim 128 --lengths separate"),
    # D = 64 on the decode path since session 38: the first configuration
    # is the one whose nan-inf-rows class session 32's D64 decode kernel
    # failed (a hardware count, smsp__thread_inst_executed_pred_on; it no
    # longer separates it), the second has length classes.
    ("bf16 D64 decode causal none GQA", "--dtype bf16 --batch 1 --heads 8 --heads-kv 2 --seqlen 1 --seqlen-k 2100 --head-dim 64 --causal"),
    ("fp16 D64 decode separate GQA", "--dtype fp16 --batch 2 --heads 16 --heads-kv 4 --seqlen 1 --seqlen-k 3000 --head-dim 64 --lengths separate"),
    # Since session 39 every S_q = 1 configuration above with a group of at
    # most 8 runs the narrow decode kernel (decode_narrow.cuh); the 64-row
    # D64 decode kernel of session 32's finding keeps S_q > 1: 3 positions x
    # 4 heads packed as 12 rows, causal.
    ("bf16 D64 decode causal none GQA S_q 3", "--dtype bf16 --batch 1 --heads 8 --heads-kv 2 --seqlen 3 --seqlen-k 2100 --head-dim 64 --causal"),
    ("fp16 D256 decode separate", "--dtype fp16 --batch 3 --heads 4 --seqlen 1 --seqlen-k 1000 --head-dim 256 --lengths separate"),
    # S_q > 1 (speculative decoding) on the decode path: GQA packed as rows
    # s * 4 + g (28 rows), the causal mask on row >> 2 per row half.
    ("fp16 D128 decode causal separate GQA S_q 7", "--dtype fp16 --batch 2 --heads 32 --heads-kv 8 --seqlen 7 --seqlen-k 3000 --head-dim 128 --causal --lengths separate"),
    # Two drafted tokens x a group of 4: 8 packed rows, causal -- the narrow
    # decode kernel (decode.hpp, DHP_SM90_NARROW_MULTI_SQ), whose per-row
    # causal key limit is its one secret site beyond S_q = 1's.
    ("fp16 D128 decode causal separate GQA S_q 2", "--dtype fp16 --batch 2 --heads 16 --heads-kv 4 --seqlen 2 --seqlen-k 3000 --head-dim 128 --causal --lengths separate"),
    # MHA S_q 4: the narrow D64 kernel (two CTAs per SM) at S_q > 1, causal.
    ("bf16 D64 decode causal separate MHA S_q 4", "--dtype bf16 --batch 2 --heads 8 --seqlen 4 --seqlen-k 4500 --head-dim 64 --causal --lengths separate"),
    # Dense 64-row tiles at S_q <= 64, D128 / D256 (one consumer warpgroup,
    # launch.cuh): each head dim without and with lengths (MHA below S_k
    # 4096, which takes_decode_path leaves to the dense kernels).
    ("fp16 D128 causal separate S_q 48, 64-row tiles", "--dtype fp16 --batch 2 --heads 4 --seqlen 48 --seqlen-k 700 --head-dim 128 --causal --lengths separate"),
    ("bf16 D128 none S_q 40, 64-row tiles", "--dtype bf16 --batch 2 --heads 4 --seqlen 40 --seqlen-k 300 --head-dim 128"),
    ("bf16 D256 none S_q 64, 64-row tiles", "--dtype bf16 --batch 2 --heads 4 --seqlen 64 --seqlen-k 500 --head-dim 256"),
    ("fp16 D256 causal separate S_q 50, 64-row tiles", "--dtype fp16 --batch 2 --heads 2 --seqlen 50 --seqlen-k 400 --head-dim 256 --causal --lengths separate"),
]
CONTROL_GATE1 = "LEAKY CONTROL fp16 D64 causal separate"  # GATE1[0]'s configuration, control kernel
SMALL = "--dtype fp16 --batch 1 --heads 8 --seqlen 512 --head-dim 64 --causal --lengths separate"
LARGE = "--dtype bf16 --batch 2 --heads 16 --seqlen 2048 --head-dim 128 --lengths shared"
# name, config, test, measurements, warm-up, expected verdict, extra flags.
# Fixed classes: one fixed normal draw of Q/K/V; lengths 0 (q and k).
# The small call itself (no lengths: the half-row kernel, 32-row tiles,
# on GPUs with at least 128 SMs -- the H100 SXM and the H200 have 132; the
# launcher's rule, launch.cuh, counts tiles against SMs). Likewise the
# "32-row tiles" configurations of gates 1 and 3 and the sanitizers.
SMALL_DENSE = "--dtype fp16 --batch 1 --heads 8 --seqlen 512 --head-dim 64"
DECODE = "--dtype fp16 --batch 2 --heads 32 --heads-kv 8 --seqlen 1 --seqlen-k 8192 --head-dim 128 --lengths separate"
DECODE_D64 = DECODE.replace("--head-dim 128", "--head-dim 64")  # the D64 decode kernel (session 38)
# D256: 4 rows per tile, so the narrow decode kernel with 64-key tiles
# (the default since session 46; DHP_SM90_NARROW256=0: the 64-row one).
DECODE_D256 = DECODE.replace("--head-dim 128", "--head-dim 256")
# Checking 8 drafted tokens: GQA packed as 32 rows, the causal mask on row >> 2.
DRAFTED = "--dtype fp16 --batch 2 --heads 32 --heads-kv 8 --seqlen 8 --seqlen-k 8192 --head-dim 128 --causal --lengths separate"
# The dense 64-row D128 kernel (S_q <= 64): MHA below S_k 4096, which the
# decode path takes from S_q 33 too since session 37 (decode.hpp,
# takes_decode_path); session 36-37's runs of these rows had S_k 4096.
DENSE_64ROWS = "--dtype fp16 --batch 2 --heads 32 --seqlen 48 --seqlen-k 4000 --head-dim 128 --causal --lengths separate"
DUDECT = [
    ("small values", SMALL, "values", 1_000_000, 20_000, "PASS", ""),
    ("small lengths", SMALL, "lengths", 1_000_000, 20_000, "PASS", ""),
    ("small dense values, 32-row tiles", SMALL_DENSE, "values", 1_000_000, 20_000, "PASS", ""),
    ("large values", LARGE, "values", 100_000, 2_000, "PASS", ""),
    ("large lengths", LARGE, "lengths", 100_000, 2_000, "PASS", ""),
    # The 128-key D128 kernel, which holds Q in registers (kernel_traits.cuh,
    # kQRegCols); LARGE takes the 160-key one.
    ("large values, Q in registers", "--dtype fp16 --batch 4 --heads 16 --seqlen 1024 --head-dim 128 --causal",
     "values", 100_000, 2_000, "PASS", ""),
    # The decode path: one LLM step (GQA 32 / 8, S_k 8192, 64 chunks).
    ("decode values", DECODE, "values", 100_000, 2_000, "PASS", ""),
    ("decode lengths", DECODE, "lengths", 100_000, 2_000, "PASS", ""),
    ("D64 decode values", DECODE_D64, "values", 100_000, 2_000, "PASS", ""),
    ("D64 decode lengths", DECODE_D64, "lengths", 100_000, 2_000, "PASS", ""),
    ("D256 decode values", DECODE_D256, "values", 100_000, 2_000, "PASS", ""),
    ("D256 decode lengths", DECODE_D256, "lengths", 100_000, 2_000, "PASS", ""),
    ("drafted tokens values", DRAFTED, "values", 100_000, 2_000, "PASS", ""),
    ("drafted tokens lengths", DRAFTED, "lengths", 100_000, 2_000, "PASS", ""),
    ("dense 64-row values", DENSE_64ROWS, "values", 100_000, 2_000, "PASS", ""),
    ("dense 64-row lengths", DENSE_64ROWS, "lengths", 100_000, 2_000, "PASS", ""),
    # The deadline (threat model §8; common/deadline.hpp): the length tests
    # with every call padded to a budget calibrated on public inputs (the
    # slowest of 2048 full-length random-value calls, + 5 % + 2 µs). The
    # power/clock channel of the rows above must be gone; overruns <= 1e-4.
    ("large lengths, deadline", LARGE, "lengths", 100_000, 2_000, "PASS", "--deadline auto"),
    ("decode lengths, deadline", DECODE, "lengths", 100_000, 2_000, "PASS", "--deadline auto"),
    ("small lengths, deadline", SMALL, "lengths", 1_000_000, 20_000, "PASS", "--deadline auto"),
    # The harness's own A/A control on the same path: both classes get the
    # fixed lengths (the random draws made and dropped). It must pass, or a
    # failure of the row above could be the harness's (session 49: 1.36).
    ("small lengths, deadline, A/A", SMALL, "lengths", 1_000_000, 20_000, "PASS", "--deadline auto --null 1"),
]
CONTROL_DUDECT = [("CONTROL small lengths", "--kernel leaky " + SMALL, "lengths", 100_000, 20_000, "FAIL", ""),
                  ("CONTROL small values", "--kernel leaky " + SMALL, "values", 100_000, 20_000, "PASS", "")]
# Diagnostics (step `extra`, no expected verdict): is a timing difference a
# property of the operand values (all-zero tensor-core operands) rather than
# of the kernel's control flow? Fixed class all zeros; fixed lengths S_max.
EXTRA = [
    ("large values, fixed all-zero", LARGE, "values", 100_000, 2_000, "info", "--fixed-values zeros"),
    ("large lengths, fixed L=S_max", LARGE, "lengths", 100_000, 2_000, "info", "--fixed-length 2048"),
    ("small values, fixed all-zero", SMALL, "values", 1_000_000, 20_000, "info", "--fixed-values zeros"),
    ("large values, fixed all-zero, deadline", LARGE, "values", 100_000, 2_000, "info",
     "--fixed-values zeros --deadline auto"),
    # Where the small call's residual under the deadline lives (session 49):
    # per class, the work and the time past the deadline on the GPU clock,
    # the SM clock after the call; and the call as a CUDA graph replay.
    ("small lengths, deadline, probe", SMALL, "lengths", 1_000_000, 20_000, "info",
     "--deadline auto --deadline-probe 1"),
    ("small lengths, deadline, graph", SMALL, "lengths", 1_000_000, 20_000, "info", "--deadline auto --graph 1"),
    # Each call's budget + a uniform draw in [0, 1024) ns (public, independent
    # of the class): the small call's residual follows the budget's phase
    # and its mean averages out (session 49: 5 of 6 runs under 4.5 at
    # 512-4096 ns); but a call's duration shows its jitter, so an observer
    # can condition on it (the one failure: the fastest calls). With the
    # probe, the class difference per bin of the slack modulo 128-2048 ns.
    ("small lengths, deadline, jitter 1 us, probe", SMALL, "lengths", 1_000_000, 20_000, "info",
     "--deadline auto --deadline-jitter-ns 1024 --deadline-probe 1"),
]
REPRO = [
    ("fp16 D64 causal separate GQA", "--dtype fp16 --batch 4 --heads 8 --heads-kv 2 --seqlen 512 --head-dim 64 --causal --lengths separate"),
    ("bf16 D128 shared", "--dtype bf16 --batch 4 --heads 4 --seqlen 384 --head-dim 128 --lengths shared"),
    ("fp16 D256 causal none Sq<Sk", "--dtype fp16 --batch 3 --heads 4 --seqlen 300 --seqlen-k 400 --head-dim 256 --causal"),
    # Causal shared lengths: V's padding zeroed in each query tile's band.
    ("bf16 D256 causal shared, V band", "--dtype bf16 --batch 4 --heads 4 --seqlen 600 --head-dim 256 --causal --lengths shared"),
    # Several tiles per CTA at D256 (192 tiles of 128 rows; O staged in the
    # ring slot that the next tile's K/V reuse), one per CTA alone (B = 1).
    ("bf16 D256 none, several tiles per CTA", "--dtype bf16 --batch 4 --heads 8 --seqlen 700 --seqlen-k 250 --head-dim 256"),
    ("fp16 D128 separate, 160-key tiles", "--dtype fp16 --batch 3 --heads 4 --seqlen 2100 --head-dim 128 --lengths separate"),
    # The two-consumer D64 kernel (128-row tiles, O staging buffer), 512 tiles.
    ("fp16 D64 causal separate, 128-row tiles", "--dtype fp16 --batch 8 --heads 16 --heads-kv 4 --seqlen 400 --head-dim 64 --causal --lengths separate"),
    # The half-row kernel alone (B = 1: 32-row tiles); on 132 SMs the batch
    # placements take 32 (B = 3), 64 (B = 4, 5) and 192 rows (B = 7).
    ("bf16 D64 none, 32-row tiles", "--dtype bf16 --batch 1 --heads 2 --seqlen 600 --head-dim 64"),
    # V's copy beside the attention (two rounds of 68 CTAs at B = 4; the batch
    # placements take it or the copy before, bitwise alike).
    ("fp16 D128 separate, V copy beside", "--dtype fp16 --batch 4 --heads 34 --seqlen 128 --seqlen-k 700 --head-dim 128 --lengths separate"),
    # Causal with separate lengths (secret diagonal) is planned as non-causal
    # (tile_shape.hpp, planning_shape): the same grid and copy beside, with
    # the causal mask's per-row limits.
    ("fp16 D128 causal separate, V copy beside", "--dtype fp16 --batch 4 --heads 34 --seqlen 128 --seqlen-k 700 --head-dim 128 --causal --lengths separate"),
    # The balanced lists of non-causal 192-row tiles: each batch placement
    # gets lists of its own (B = 1: 192 tiles on 132 CTAs).
    ("bf16 D64 none, 192-row tiles in lists", "--dtype bf16 --batch 4 --heads 32 --heads-kv 8 --seqlen 1000 --head-dim 64"),
    # Causal 192-row tiles from S_q = 2048 in balanced lists whose partial
    # last blocks (64 live rows at S4096) are weighed by their live
    # warpgroups (scheduler.cuh, PartialCost). On 132 SMs B = 5 and 7 take
    # the lists, the placements' B = 1, 3 and 4 the snake deal.
    ("fp16 D64 causal shared, 192-row tiles in causal lists", "--dtype fp16 --batch 5 --heads 16 --seqlen 4096 --head-dim 64 --causal --lengths shared"),
    # Q in registers (the 128-key D128 kernel), several tiles per CTA.
    ("bf16 D128 causal none, Q in registers", "--dtype bf16 --batch 4 --heads 16 --seqlen 900 --head-dim 128 --causal"),
    # The decode path: chunks by S_k and heads alone, merged in a fixed order.
    ("fp16 D128 decode separate GQA", "--dtype fp16 --batch 4 --heads 32 --heads-kv 8 --seqlen 1 --seqlen-k 5000 --head-dim 128 --lengths separate"),
    ("bf16 D256 decode none", "--dtype bf16 --batch 3 --heads 8 --heads-kv 2 --seqlen 1 --seqlen-k 3000 --head-dim 256"),
    ("fp16 D64 decode separate GQA", "--dtype fp16 --batch 4 --heads 16 --heads-kv 4 --seqlen 1 --seqlen-k 5000 --head-dim 64 --lengths separate"),
    ("bf16 D256 decode causal separate S_q 16", "--dtype bf16 --batch 3 --heads 8 --heads-kv 2 --seqlen 16 --seqlen-k 3000 --head-dim 256 --causal --lengths separate"),
    # Packed over three 64-row tiles, the last partial (S_q 40, group 4).
    ("fp16 D128 decode causal separate S_q 40", "--dtype fp16 --batch 3 --heads 32 --heads-kv 8 --seqlen 40 --seqlen-k 4200 --head-dim 128 --causal --lengths separate"),
    # The narrow decode kernel at S_q > 1 (drafted tokens, at most 8 rows):
    # D128 with two packed positions of a group of 4, and MHA S_q 4 at D64 on
    # two CTAs per SM (kernel_traits.cuh, DHP_SM90_NARROW_CTAS64).
    ("fp16 D128 decode causal separate GQA S_q 2", "--dtype fp16 --batch 3 --heads 16 --heads-kv 4 --seqlen 2 --seqlen-k 3000 --head-dim 128 --causal --lengths separate"),
    ("bf16 D64 decode causal separate MHA S_q 4", "--dtype bf16 --batch 3 --heads 8 --seqlen 4 --seqlen-k 4500 --head-dim 64 --causal --lengths separate"),
    # Dense 64-row tiles (S_q <= 64, D128 / D256), several tiles per CTA.
    ("fp16 D128 causal separate S_q 48, 64-row tiles", "--dtype fp16 --batch 4 --heads 40 --seqlen 48 --seqlen-k 900 --head-dim 128 --causal --lengths separate"),
    ("bf16 D256 none S_q 64, 64-row tiles", "--dtype bf16 --batch 3 --heads 50 --seqlen 64 --seqlen-k 500 --head-dim 256"),
]
SANITIZERS = ["memcheck", "racecheck", "synccheck", "initcheck"]

# Gated: must be identical across classes (alias, ncu metric).
GATED = [
    ("inst", "smsp__sass_inst_executed.sum"),
    ("thread_inst", "smsp__sass_thread_inst_executed.sum"),
    ("thread_inst_pred_on", "smsp__sass_thread_inst_executed_pred_on.sum"),
    ("hw_inst", "smsp__inst_executed.sum"),
    ("hw_thread_inst_pred_on", "smsp__thread_inst_executed_pred_on.sum"),
    ("branch_inst", "smsp__sass_inst_executed_op_branch.sum"),
    ("branch_targets", "smsp__sass_branch_targets.sum"),
    ("branch_uniform", "smsp__sass_branch_targets_threads_uniform.sum"),
    ("branch_divergent", "smsp__sass_branch_targets_threads_divergent.sum"),
    ("gld_inst", "smsp__sass_inst_executed_op_global_ld.sum"),
    ("gst_inst", "smsp__sass_inst_executed_op_global_st.sum"),
    ("lld_inst", "smsp__sass_inst_executed_op_local_ld.sum"),
    ("lst_inst", "smsp__sass_inst_executed_op_local_st.sum"),
    ("sld_inst", "smsp__sass_inst_executed_op_shared_ld.sum"),
    ("sst_inst", "smsp__sass_inst_executed_op_shared_st.sum"),
    ("ldsm_inst", "smsp__sass_inst_executed_op_ldsm.sum"),
    ("ldgsts_inst", "smsp__sass_inst_executed_op_ldgsts.sum"),
    ("l1_gld_req", "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"),
    ("l1_gld_sec", "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"),
    ("l1_gst_req", "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum"),
    ("l1_gst_sec", "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"),
    ("l1_ldgsts_req", "l1tex__t_requests_pipe_lsu_mem_global_op_ldgsts.sum"),
    ("l1_ldgsts_sec", "l1tex__t_sectors_pipe_lsu_mem_global_op_ldgsts.sum"),
    ("l1_lld_req", "l1tex__t_requests_pipe_lsu_mem_local_op_ld.sum"),
    ("l1_lld_sec", "l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum"),
    ("l1_lst_req", "l1tex__t_requests_pipe_lsu_mem_local_op_st.sum"),
    ("l1_lst_sec", "l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum"),
    ("smem_ld_wavefronts", "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"),
    ("smem_st_wavefronts", "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum"),
    ("smem_ld_conflicts", "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"),
    ("smem_st_conflicts", "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum"),
    ("l2_rd_req", "lts__t_requests_srcunit_tex_op_read.sum"),
    ("l2_rd_sec", "lts__t_sectors_srcunit_tex_op_read.sum"),
    ("l2_wr_req", "lts__t_requests_srcunit_tex_op_write.sum"),
    ("l2_wr_sec", "lts__t_sectors_srcunit_tex_op_write.sum"),
    ("tma_ld_inst", "smsp__inst_executed_op_tma_ld.sum"),
    ("tma_ld_bytes", "l1tex__m_xbar2l1tex_read_bytes_mem_global_op_tma_ld.sum"),
    ("grid", "launch__grid_size"),
    ("block", "launch__block_size"),
    ("regs", "launch__registers_per_thread"),
    ("smem_dyn", "launch__shared_mem_per_block_dynamic"),
]
# Reported, not gated: they depend on cache and DRAM state shared with others.
REPORTED = [("duration_ns", "gpu__time_duration.sum"), ("dram_rd_bytes", "dram__bytes_read.sum"),
            ("dram_wr_bytes", "dram__bytes_write.sum"), ("l2_hit_pct", "lts__t_sector_hit_rate.pct")]

