// The cache of balanced schedules (schedule_cache.hpp).
#include "kernels/sm90/schedule_cache.hpp"

#include <mutex>

#include "kernels/sm90/padding_scrub.hpp"

namespace dhp::sm90 {
namespace {

struct Entry {
  int device;
  std::vector<int64_t> key;
  const int32_t* table;  // device memory from the library's pool; null: no schedule for this shape
};

}  // namespace

const int32_t* cached_schedule(const std::vector<int64_t>& key, const std::function<std::vector<int32_t>()>& build,
                               cudaStream_t stream) {
  static std::mutex mutex;
  static std::vector<Entry> entries;
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return nullptr;
  std::lock_guard<std::mutex> lock(mutex);
  for (const Entry& e : entries)
    if (e.device == device && e.key == key) return e.table;
  if (entries.size() >= kMaxScheduleEntries) return nullptr;
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(stream, &capture) != cudaSuccess || capture != cudaStreamCaptureStatusNone) {
    (void)cudaGetLastError();
    return nullptr;  // not remembered: an uncaptured call may still make it
  }
  const std::vector<int32_t> lists = build();
  const int32_t* table = nullptr;
  if (!lists.empty() && lists.size() <= kMaxScheduleInts) {
    const size_t bytes = lists.size() * sizeof(int32_t);
    void* dev = scratch_alloc(bytes, stream);  // never freed: the cache keeps it
    // From pageable memory the copy is staged before it returns, so `lists`
    // may go; the kernel that reads it comes later in the same stream.
    if (dev != nullptr && cudaMemcpyAsync(dev, lists.data(), bytes, cudaMemcpyHostToDevice, stream) == cudaSuccess) {
      table = static_cast<const int32_t*>(dev);
    } else {
      (void)cudaGetLastError();
      if (dev != nullptr) scratch_free(dev, stream);
      return nullptr;
    }
  }
  entries.push_back({device, key, table});
  return table;
}

}  // namespace dhp::sm90
