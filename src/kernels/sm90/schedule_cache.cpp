// The cache of balanced schedules (schedule_cache.hpp).
#include "kernels/sm90/schedule_cache.hpp"

#include <mutex>

namespace dhp::sm90 {
namespace {

struct Entry {
  int device;
  std::vector<int64_t> key;
  const int32_t* table;  // device memory (cudaMalloc, complete when stored); null: no schedule for this shape
};

}  // namespace

const int32_t* cached_schedule(const std::vector<int64_t>& key, const std::function<std::vector<int32_t>()>& build) {
  static std::mutex mutex;
  static std::vector<Entry> entries;
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return nullptr;
  std::lock_guard<std::mutex> lock(mutex);
  for (const Entry& e : entries)
    if (e.device == device && e.key == key) return e.table;
  if (entries.size() >= kMaxScheduleEntries) return nullptr;
  // Also while the call's stream is being captured into a CUDA graph: the upload
  // below is on a stream of its own, so it is not captured, and it completes
  // before the table is remembered; its cudaMalloc and synchronisation are
  // allowed because attention_forward runs with the thread's capture mode
  // relaxed (forward.cpp, RelaxedCaptureMode). The graph's kernel then reads
  // a table that outlives it.
  const std::vector<int32_t> lists = build();
  const int32_t* table = nullptr;
  if (!lists.empty() && lists.size() <= kMaxScheduleInts) {
    // Uploaded to memory of its own and complete before the table is
    // remembered: later calls may come on any stream, and a stream-ordered
    // copy would be ordered only on this one (another stream's kernel could
    // read the table before it lands -- or, in memory from the scratch pool,
    // an earlier call's V bytes as tile numbers). Once per shape; never freed.
    void* dev = nullptr;
    cudaStream_t upload = nullptr;
    const bool ok = cudaMalloc(&dev, lists.size() * sizeof(int32_t)) == cudaSuccess &&
                    cudaStreamCreateWithFlags(&upload, cudaStreamNonBlocking) == cudaSuccess &&
                    cudaMemcpyAsync(dev, lists.data(), lists.size() * sizeof(int32_t), cudaMemcpyHostToDevice,
                                    upload) == cudaSuccess &&
                    cudaStreamSynchronize(upload) == cudaSuccess;
    if (upload != nullptr) (void)cudaStreamDestroy(upload);
    if (!ok) {
      (void)cudaGetLastError();
      if (dev != nullptr) (void)cudaFree(dev);
      return nullptr;
    }
    table = static_cast<const int32_t*>(dev);
  }
  entries.push_back({device, key, table});
  return table;
}

}  // namespace dhp::sm90
