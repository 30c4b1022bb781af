// The zero-padded copy of V for secret key lengths (padding_scrub.hpp), and
// the library's scratch pool.
#include "kernels/sm90/padding_scrub.hpp"

#include <mutex>
#include <vector>

#include "kernels/common/ct.cuh"
#include "kernels/common/lengths.cuh"
#include "kernels/common/launch_util.hpp"
#include "kernels/sm90/tensor_map.hpp"
#include "kernels/sm90/tma.cuh"

// TEST-ONLY (scripts/length-timing-diag.sh): a public pattern in V's
// padding instead of zeros; never set in a shipped build.
#ifndef DHP_SCRUB_FILL
#define DHP_SCRUB_FILL 0
#endif
// TEST-ONLY builds must say so (scripts/length-timing-diag.sh,
// scripts/timeline-run.sh): a shipped build cannot carry this by accident.
#if DHP_SCRUB_FILL && !defined(DHP_TEST_ONLY_BUILD)
#error "DHP_SCRUB_FILL is a TEST-ONLY diagnostic (a fill pattern in V's padding); define DHP_TEST_ONLY_BUILD to build it"
#endif

namespace dhp::sm90 {
namespace {

constexpr int kThreads = 256;

// One 16-byte chunk (8 elements) per thread and step: block (x, y) copies
// rows_per_block rows of sequence positions for (batch, kv head) pairs
// y, y + gridDim.y, ...  Every bound is public; the row's visibility only
// masks the value stored.
__global__ void __launch_bounds__(kThreads) scrub_v_padding(const __grid_constant__ kernels::ForwardArgs args,
                                                            int32_t chunks_per_row, uint4* __restrict__ dst) {
  const int32_t rows_per_block = kThreads / chunks_per_row;
  const int32_t c = static_cast<int32_t>(threadIdx.x) % chunks_per_row;
  const int32_t s = static_cast<int32_t>(blockIdx.x) * rows_per_block + static_cast<int32_t>(threadIdx.x) / chunks_per_row;
  if (s >= args.seqlen_k) return;  // public: past the padded length
  const int32_t pairs = args.batch * args.heads_kv;
  for (int32_t bh = blockIdx.y; bh < pairs; bh += gridDim.y) {  // public trip count
    const int32_t b = bh / args.heads_kv, h = bh % args.heads_kv;
    int32_t L_q = 0, L_k = 0;
    kernels::load_lengths(args, b, L_q, L_k);
    const uint16_t* src = static_cast<const uint16_t*>(args.v) + b * args.v_stride_batch +
                          static_cast<int64_t>(s) * args.v_stride_seq + h * args.v_stride_head + c * 8;
    uint4 x;
    asm volatile("ld.global.nc.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(x.x), "=r"(x.y), "=r"(x.z), "=r"(x.w)
                 : "l"(src));
    const ct::Mask keep = ct::ct_mask_lt(s, L_k);
#if DHP_SCRUB_FILL  // TEST-ONLY timing diagnostic: padding gets a finite public pattern, not zeros
    uint32_t hs = static_cast<uint32_t>(s) * 0x9E3779B1u + static_cast<uint32_t>(c) * 0x85EBCA77u;
    uint32_t pat[4];
    for (int i = 0; i < 4; ++i) {
      hs ^= hs >> 15, hs *= 0x2C1B3C6Du, hs ^= hs >> 12;
      pat[i] = hs & 0xBBFFBBFFu;  // clears an exponent bit in each 16-bit half: finite, |x| < 1
    }
    x.x = (x.x & keep) | (pat[0] & ~keep), x.y = (x.y & keep) | (pat[1] & ~keep);
    x.z = (x.z & keep) | (pat[2] & ~keep), x.w = (x.w & keep) | (pat[3] & ~keep);
#else
    x.x &= keep, x.y &= keep, x.z &= keep, x.w &= keep;
#endif
    const int64_t row = (static_cast<int64_t>(b) * args.seqlen_k + s) * args.heads_kv + h;
    dst[row * chunks_per_row + c] = x;
  }
}

// The copy beside the attention (padding_scrub.hpp, CopyBesidePlan), by the
// copy engine: item i is chunk i % chunks_per_pair of pair i /
// chunks_per_pair, rows chunk * chunk_rows .. + chunk_rows of that pair (64
// KB; rows past S_k zero-filled by the load and clipped by the store). A CTA
// takes items [0, first_pairs * chunks) dealt over the whole grid, then, if
// it is one of the first beside_ctas, the rest dealt over those. Per CTA a
// ring of kCopyBuffers chunk buffers: thread 0 keeps kCopyBuffers - 1 chunk
// loads (TMA, 128-byte swizzle) in flight; all threads zero the rows at or
// past L_k of the landed chunk in shared memory (a select per 16-byte piece:
// the swizzle moves pieces within a row only), then thread 0 stores the
// chunk (TMA) and, once an item's store group is complete, orders it before
// a release add of 1 to the pair's counter. Every trip count, coordinate
// and counter is public; L_k selects values only.
// Why the copy engine: with 64 KB per SM in registers (ld/st through the
// SM) four CTAs copied ≈ 19 GB/s each, too slow to stay ahead of the
// attention (docs/perf-log.md, session 28).
constexpr int kCopyThreads = 512, kCopyBuffers = 3;
constexpr int kCopySmem = kCopyBuffers * kCopyBesideChunkBytes + 1024;  // + alignment slack
constexpr int kCopyPieces = kCopyBesideChunkBytes / 16 / kCopyThreads;
static_assert(kCopyPieces * 16 * kCopyThreads == kCopyBesideChunkBytes, "a chunk is whole 16-byte pieces per thread");

__global__ void __launch_bounds__(kCopyThreads) copy_v_beside(const __grid_constant__ kernels::ForwardArgs args,
                                                              const CopyBesidePlan plan,
                                                              const __grid_constant__ CUtensorMap src,
                                                              const __grid_constant__ CUtensorMap dst,
                                                              uint32_t* __restrict__ counters) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  // Every CTA lets the attention launch as soon as it runs: the attention's
  // CTAs then start only once all of these have started, so none of its
  // waits can be on a CTA that is not running.
  pdl::allow_next_grid();
  extern __shared__ uint8_t smem_raw[];
  __shared__ uint64_t full[kCopyBuffers];
  uint8_t* const ring = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t{1023});
  const int t = static_cast<int>(threadIdx.x);
  if (t == 0) {
    for (int b = 0; b < kCopyBuffers; ++b) tma::barrier_init(&full[b], 1);
    tma::barrier_init_fence();
    tma::prefetch_map(&src);
    tma::prefetch_map(&dst);
  }
  __syncthreads();
  const int32_t cta = static_cast<int32_t>(blockIdx.x), grid = static_cast<int32_t>(gridDim.x);
  const int32_t cpp = plan.chunks_per_pair, first_items = plan.first_pairs * cpp;
  const int32_t items = args.batch * args.heads_kv * cpp;
  const CopyDeal deal(cta, grid, first_items, plan.beside_ctas, items);
  const int32_t n = deal.count();
  auto item_of = [&](int32_t k) { return deal.item(k); };
  // A chunk is row_boxes x col_boxes TMA boxes of box_rows x 64 columns.
  const int32_t col_boxes = plan.head_dim / 64, row_boxes = plan.chunk_rows / plan.box_rows;
  auto copy_boxes = [&](int32_t k, bool load) {  // thread 0; public coordinates
    const int32_t item = item_of(k), pair = item / cpp, row0 = (item % cpp) * plan.chunk_rows;
    const int32_t b = pair / args.heads_kv, h = pair % args.heads_kv;
    uint8_t* buf = ring + (k % kCopyBuffers) * kCopyBesideChunkBytes;
    for (int32_t rb = 0; rb < row_boxes; ++rb)
      for (int32_t cb = 0; cb < col_boxes; ++cb) {
        uint8_t* box = buf + (rb * col_boxes + cb) * plan.box_rows * 128;
        if (load)
          tma::load_4d(box, &src, cb * 64, row0 + rb * plan.box_rows, h, b, &full[k % kCopyBuffers]);
        else
          tma::store_4d(&dst, box, cb * 64, row0 + rb * plan.box_rows, h, b);
      }
  };
  auto issue_load = [&](int32_t k) {
    tma::arrive_expect_bytes(&full[k % kCopyBuffers], kCopyBesideChunkBytes);
    copy_boxes(k, true);
  };
  auto release = [&](int32_t k) {  // item k's store group is complete
    tma::fence_proxy_global();
    uint32_t* c = counters + item_of(k) / cpp;
    asm volatile("red.release.gpu.global.add.u32 [%0], 1;" ::"l"(c) : "memory");
  };
  if (t == 0)
    for (int32_t k = 0; k < kCopyBuffers - 1 && k < n; ++k) issue_load(k);  // public trip count
  for (int32_t k = 0; k < n; ++k) {  // public trip count
    tma::wait<true>(&full[k % kCopyBuffers], (k / kCopyBuffers) & 1);
    const int32_t item = item_of(k), pair = item / cpp, row0 = (item % cpp) * plan.chunk_rows;
    int32_t L_q = 0, L_k = 0;
    kernels::load_lengths(args, pair / args.heads_kv, L_q, L_k);
    const uint32_t base =
        static_cast<uint32_t>(__cvta_generic_to_shared(ring + (k % kCopyBuffers) * kCopyBesideChunkBytes));
#pragma unroll
    for (int j = 0; j < kCopyPieces; ++j) {
      const int32_t i = t + j * kCopyThreads;              // 16-byte piece of the chunk
      const int32_t box = i / (plan.box_rows * 8), in_box = i % (plan.box_rows * 8);
      const int32_t row = row0 + (box / col_boxes) * plan.box_rows + in_box / 8;
      uint32_t x0, x1, x2, x3;
      asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(x0), "=r"(x1), "=r"(x2), "=r"(x3) : "r"(base + 16 * i));
      const ct::Mask keep = ct::ct_mask_lt(row, L_k);  // secret L_k: a select
      asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};" ::"r"(base + 16 * i), "r"(ct::ct_and_mask(keep, x0)),
                   "r"(ct::ct_and_mask(keep, x1)), "r"(ct::ct_and_mask(keep, x2)), "r"(ct::ct_and_mask(keep, x3))
                   : "memory");
    }
    tma::fence_generic_to_async();  // the store reads these bytes through the async proxy
    __syncthreads();
    if (t == 0) {
      copy_boxes(k, false);
      tma::store_commit();
      // The next load goes to the buffer of item k - 1, whose store must
      // have read it (at most one group, item k's, still reading).
      if (k + kCopyBuffers - 1 < n) {  // public
        tma::store_wait_read<1>();
        issue_load(k + kCopyBuffers - 1);
      }
      if (k >= 2) {  // public: item k - 2's writes complete
        tma::store_wait_complete<2>();
        release(k - 2);
      }
    }
  }
  if (t == 0) {
    tma::store_wait_complete<0>();
    for (int32_t k = n - 2 < 0 ? 0 : n - 2; k < n; ++k) release(k);  // public trip count
  }
#endif
}

}  // namespace

cudaError_t launch_copy_beside(const kernels::ForwardArgs& a, const CopyBesidePlan& plan, void* dst,
                               uint32_t* counters, int sms, cudaStream_t stream) {
  const int64_t pairs = static_cast<int64_t>(a.batch) * a.heads_kv;
  const int D = plan.head_dim;
  // Source: V as given; destination: the packed copy [B, H_kv, S_k, D]
  // (each pair's rows contiguous). A bitwise copy: the maps' fp16 element
  // type serves bf16 V alike.
  const int64_t S = a.seqlen_k, H = a.heads_kv;
  CUtensorMap m_src, m_dst;
  if (!make_bshd_map(m_src, a.v, S, H, a.batch, D, a.v_stride_seq, a.v_stride_head, a.v_stride_batch, plan.box_rows,
                     false) ||
      !make_bshd_map(m_dst, dst, S, H, a.batch, D, D, S * D, H * S * D, plan.box_rows, false))
    return cudaErrorNotSupported;
  static thread_local int configured_device = -1;
  // ensure_smem_limit clears its own failure from the record (and a driver
  // failure never enters it), so nothing is cleared here.
  if (kernels::ensure_smem_limit(&copy_v_beside, kCopySmem, configured_device) != cudaSuccess)
    return cudaErrorNotSupported;  // nothing enqueued: the copy runs before instead
  // Every item must have a CTA: the beside CTAs are CTAs of this grid.
  if (plan.beside_ctas < 1 || plan.beside_ctas > sms) return cudaErrorNotSupported;
  if (const cudaError_t err = cudaMemsetAsync(counters, 0, 4 * pairs, stream); err != cudaSuccess) return err;
  const int64_t grid = copy_beside_grid(plan, sms);
  // Through launch_pdl (without PDL) for the launch's own status.
  return kernels::launch_pdl(copy_v_beside, dim3(static_cast<unsigned>(grid)), dim3(kCopyThreads), kCopySmem, stream,
                             false, a, plan, m_src, m_dst, counters);
}

cudaError_t launch_padding_scrub(const kernels::ForwardArgs& a, int head_dim, void* dst, cudaStream_t stream) {
  const int32_t chunks_per_row = head_dim / 8;
  const int32_t rows_per_block = kThreads / chunks_per_row;
  const int64_t pairs = static_cast<int64_t>(a.batch) * a.heads_kv;
  const dim3 grid(static_cast<unsigned>((a.seqlen_k + rows_per_block - 1) / rows_per_block),
                  static_cast<unsigned>(pairs < 65535 ? pairs : 65535));
  return kernels::launch_pdl(scrub_v_padding, grid, dim3(kThreads), 0, stream, false, a, chunks_per_row,
                             static_cast<uint4*>(dst));  // its own status (launch_pdl)
}

void* scratch_alloc(size_t bytes, cudaStream_t stream) {
  static std::mutex mutex;
  static std::vector<cudaMemPool_t> pools;  // per device; created on first use
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return nullptr;
  cudaMemPool_t pool = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (pools.size() <= static_cast<size_t>(device)) pools.resize(device + 1, nullptr);
    if (pools[device] == nullptr) {
      cudaMemPoolProps props = {};
      props.allocType = cudaMemAllocationTypePinned;
      props.handleTypes = cudaMemHandleTypeNone;
      props.location.type = cudaMemLocationTypeDevice;
      props.location.id = device;
      if (cudaMemPoolCreate(&pools[device], &props) != cudaSuccess) {
        (void)cudaGetLastError();
        pools[device] = nullptr;
        return nullptr;
      }
      // Keep freed memory in the pool: a steady workload allocates once.
      uint64_t keep = UINT64_MAX;
      (void)cudaMemPoolSetAttribute(pools[device], cudaMemPoolAttrReleaseThreshold, &keep);
    }
    pool = pools[device];
  }
  void* p = nullptr;
  if (cudaMallocFromPoolAsync(&p, bytes, pool, stream) != cudaSuccess) {
    (void)cudaGetLastError();
    return nullptr;
  }
  return p;
}

void scratch_free(void* p, cudaStream_t stream) {
  if (p != nullptr) (void)cudaFreeAsync(p, stream);
}

}  // namespace dhp::sm90
