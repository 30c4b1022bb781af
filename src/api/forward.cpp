// Host dispatch: validate the public arguments, check the device, build the
// kernel arguments and pick the instantiation. Nothing here reads device
// memory, so no secret is ever inspected on the host.
#include <cuda_runtime.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <string>

#include "dhp/attention.hpp"
#include "api/make_forward_args.hpp"
#include "kernels/common/deadline.hpp"
#include "kernels/forward_args.hpp"
#include "kernels/sm80/launch.hpp"
#include "kernels/sm90/launch.hpp"

namespace dhp {
namespace {

Status cuda_failure(const char* what, cudaError_t err) {
  return Status{DHP_ERROR_CUDA, std::string(what) + ": " + cudaGetErrorString(err)};
}

// Kernel choice on cc 9.0 (a public setting): DHP_KERNEL unset or "hopper":
// the wgmma + TMA kernel (src/kernels/sm90); "portable": the mma.sync kernel.
// The test scripts run the GPU suite against both.
enum class KernelChoice { Hopper, Portable };
KernelChoice kernel_choice() {
  static const KernelChoice choice = [] {
    const char* v = std::getenv("DHP_KERNEL");
    const std::string s = v != nullptr ? v : "";
    if (s == "portable") return KernelChoice::Portable;
    return KernelChoice::Hopper;
  }();
  return choice;
}

// Whether this build has machine code for `major`.`minor`, or the error.
Status check_supported(int device, int major, int minor) {
  if (major < 8)
    return Status{DHP_ERROR_NO_DEVICE, "device " + std::to_string(device) + " has compute capability " +
                                           std::to_string(major) + ".x; 8.0 or newer is required"};
  // Machine code only (no PTX): code compiled at run time for another
  // architecture would not be the code dhp-audit checked. So a device this
  // build has no machine code for is refused here, before any launch.
#if defined(DHP_HAVE_CC8)
  const bool cc8 = major == 8;  // sm_80 code runs on every 8.x
#else
  const bool cc8 = false;
#endif
#if defined(DHP_HAVE_SM90)
  const bool cc90 = major == 9 && minor == 0;  // sm_90a code: 9.0 only
#else
  const bool cc90 = false;
#endif
  if (!cc8 && !cc90)
    return Status{DHP_ERROR_UNSUPPORTED,
                  "device " + std::to_string(device) + " has compute capability " + std::to_string(major) + "." +
                      std::to_string(minor) +
                      "; this build has machine code (no PTX) for 8.x (sm_80) and 9.0 (sm_90a) as configured by "
                      "DHP_CUDA_ARCHS, and runs nowhere else"};
  return {};
}

// Compute capability major of the current device, or an error status.
// Every call asks the runtime for the current device (cheap: thread state);
// the capability of devices 0..kCachedDevices-1 is queried once and kept
// (major * 16 + minor + 1; 0 = not yet asked), since the attribute queries
// cost a measurable part of a small call's host time. Errors are not kept.
constexpr int kCachedDevices = 64;
std::atomic<int> cached_cc[kCachedDevices];

// The status for a failed device query: "no device" when there is none
// (without a GPU, cudaGetDevice may succeed and the attribute query fail).
Status device_query_failure(const char* what, cudaError_t err) {
  int count = 0;
  const cudaError_t count_err = cudaGetDeviceCount(&count);
  (void)cudaGetLastError();  // clear the sticky "no device" error
  if (count_err != cudaSuccess || count == 0)
    return Status{DHP_ERROR_NO_DEVICE, std::string("no CUDA device: ") +
                                           (count_err != cudaSuccess ? cudaGetErrorString(count_err) : "0 devices")};
  return cuda_failure(what, err);
}

Status current_device_cc(int* major, int* device_out) {
  int& device = *device_out;
  device = 0;
  if (const cudaError_t err = cudaGetDevice(&device); err != cudaSuccess)
    return device_query_failure("cudaGetDevice", err);
  int minor = 0;
  const bool cacheable = device >= 0 && device < kCachedDevices;
  const int kept = cacheable ? cached_cc[device].load(std::memory_order_relaxed) : 0;
  if (kept != 0) {
    *major = (kept - 1) / 16, minor = (kept - 1) % 16;
  } else {
    cudaError_t err = cudaDeviceGetAttribute(major, cudaDevAttrComputeCapabilityMajor, device);
    if (err == cudaSuccess) err = cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device);
    if (err != cudaSuccess) return device_query_failure("cudaDeviceGetAttribute", err);
    if (cacheable && *major >= 0 && *major < 64 && minor >= 0 && minor < 16)
      cached_cc[device].store(*major * 16 + minor + 1, std::memory_order_relaxed);
  }
  return check_supported(device, *major, minor);
}

// Every tensor and length array must be memory the current device reads
// and writes as global memory (plain loads and TMA): its own device memory,
// or managed memory. Host memory -- unregistered, or pinned and mapped --
// and another device's memory are refused by name here, instead of a fault
// inside the kernel that would take the CUDA context down with it. Public:
// the pointers' attributes, never the memory's contents.
Status check_memory(const char* name, const void* ptr, int device) {
  if (ptr == nullptr) return {};  // optional arrays; required ones were checked by validate
  cudaPointerAttributes attr{};
  const cudaError_t err = cudaPointerGetAttributes(&attr, ptr);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();  // an unknown pointer must not leave a sticky error behind
    return Status{DHP_ERROR_INVALID_ARGUMENT, std::string(name) + ": pointer is not CUDA memory (" +
                                                  cudaGetErrorString(err) + ")"};
  }
  if (attr.type == cudaMemoryTypeManaged || (attr.type == cudaMemoryTypeDevice && attr.device == device)) return {};
  const std::string what = attr.type == cudaMemoryTypeDevice ? "memory of device " + std::to_string(attr.device)
                           : attr.type == cudaMemoryTypeHost ? std::string("pinned host memory")
                                                             : std::string("host memory not known to CUDA");
  return Status{DHP_ERROR_INVALID_ARGUMENT, std::string(name) + ": must point to device memory of the current device " +
                                                std::to_string(device) + " or to managed memory (got " + what + ")"};
}

Status check_memory(const Params& p, int device) {
  const struct {
    const char* name;
    const void* ptr;
  } all[] = {{"q", p.q},     {"k", p.k},       {"v", p.v},         {"o", p.o},
             {"lse", p.lse}, {"seqlens", p.seqlens}, {"seqlens_q", p.seqlens_q}, {"seqlens_k", p.seqlens_k},
             {"deadline_state", p.deadline_state}};
  for (const auto& a : all)
    if (Status s = check_memory(a.name, a.ptr, device); !s) return s;
  return {};
}

// The call's kernels on a validated call: the Hopper kernels on cc 9.0, the
// portable ones elsewhere (and where the Hopper kernels refuse a call).
Status launch_attention(const Params& p, int major) {
  (void)major;  // read only where the build has the Hopper kernels
  const kernels::ForwardArgs a = make_forward_args(p);
  const bool has_lengths = a.lens_q != nullptr || a.lens_k != nullptr;
  const auto stream = static_cast<cudaStream_t>(p.stream);
  using Launch = cudaError_t (*)(const kernels::ForwardArgs&, bool, cudaStream_t);
  static constexpr Launch kTable[2][3] = {
      {sm80::launch_forward_fp16_d64, sm80::launch_forward_fp16_d128, sm80::launch_forward_fp16_d256},
      {sm80::launch_forward_bf16_d64, sm80::launch_forward_bf16_d128, sm80::launch_forward_bf16_d256}};
  const int dtype_index = p.dtype == DHP_BFLOAT16 ? 1 : 0;
  const int dim_index = p.head_dim == 64 ? 0 : (p.head_dim == 128 ? 1 : 2);
#if defined(DHP_HAVE_SM90)
  static constexpr Launch kSm90Table[2][3] = {
      {sm90::launch_forward_fp16_d64, sm90::launch_forward_fp16_d128, sm90::launch_forward_fp16_d256},
      {sm90::launch_forward_bf16_d64, sm90::launch_forward_bf16_d128, sm90::launch_forward_bf16_d256}};
  if (major == 9 && kernel_choice() != KernelChoice::Portable) {
    // cudaErrorNotSupported: not expressible as TMA tensor maps (validation
    // already requires 16-byte bases and strides; left are the encoder's own
    // limits, e.g. strides of 2^40 bytes), counts past the Hopper kernel's
    // 32-bit schedule and ring counters (sm90/launch.cuh), or no scratch
    // memory for the zero-padded copy of V (secret key lengths). The
    // attention kernel was not launched (the V copy may have been written
    // into scratch that is freed unused): use the portable kernel. Every
    // reason is a public one.
    const cudaError_t e = kSm90Table[dtype_index][dim_index](a, has_lengths, stream);
    if (e == cudaSuccess) return {};
    if (e != cudaErrorNotSupported) return cuda_failure("kernel launch", e);
    // Test setting: the GPU scripts forbid the fallback, so that a call the
    // Hopper kernel should take cannot pass its test on the portable one.
    static const bool no_fallback = std::getenv("DHP_NO_PORTABLE_FALLBACK") != nullptr;
    if (no_fallback)
      return Status{DHP_ERROR_UNSUPPORTED,
                    "the Hopper kernel does not take this call (a public limit: tensor map, 32-bit counters or "
                    "scratch memory), and DHP_NO_PORTABLE_FALLBACK is set"};
  }
#endif
  const cudaError_t err = kTable[dtype_index][dim_index](a, has_lengths, stream);
  if (err != cudaSuccess) return cuda_failure("kernel launch", err);
  return {};
}

// For the length of one call, this thread's stream-capture mode is relaxed
// (restored on exit). A shape's first call does one-time host work that
// CUDA counts as "potentially unsafe" during a capture in the global or
// thread-local mode (a scratch pool's creation, kernel attributes): without
// this, a CUDA graph captured around a shape's first call was invalidated
// (session 52). The work itself is not stream-ordered and is not recorded;
// everything enqueued on the call's stream is captured as before.
class RelaxedCaptureMode {
 public:
  RelaxedCaptureMode() {
    ok_ = cudaThreadExchangeStreamCaptureMode(&mode_) == cudaSuccess;
    if (!ok_) (void)cudaGetLastError();  // our own failure's record; the call goes on in the caller's mode
  }
  ~RelaxedCaptureMode() {
    if (ok_) (void)cudaThreadExchangeStreamCaptureMode(&mode_);
  }
  RelaxedCaptureMode(const RelaxedCaptureMode&) = delete;
  RelaxedCaptureMode& operator=(const RelaxedCaptureMode&) = delete;

 private:
  cudaStreamCaptureMode mode_ = cudaStreamCaptureModeRelaxed;  // swapped in; holds the caller's while relaxed
  bool ok_ = false;
};

}  // namespace

Status attention_forward(const Params& p) {
  Status s = validate(p);
  if (!s) return s;
  const RelaxedCaptureMode relaxed;
  int major = 0, device = 0;
  if (!(s = current_device_cc(&major, &device))) return s;
  if (!(s = check_memory(p, device))) return s;
  if (p.time_budget_ns == 0) return launch_attention(p, major);

  // A deadline call (kernels/common/deadline.hpp): the start stamped before
  // the call's first kernel, the wait after its last (in stream order unless
  // DHP_DEADLINE_PDL, below).
  const auto stream = static_cast<cudaStream_t>(p.stream);
  if (const cudaError_t e = kernels::launch_deadline_start(p.deadline_state, stream); e != cudaSuccess)
    return cuda_failure("deadline start launch", e);
  if (!(s = launch_attention(p, major))) return s;
  // DHP_DEADLINE_PDL=1: the wait launched early (deadline.hpp; an A/B
  // experiment, Hopper only, read at every call so that a test can run both).
  const char* early_env = std::getenv("DHP_DEADLINE_PDL");
  const bool early = major == 9 && early_env != nullptr && std::atoi(early_env) != 0;
  if (const cudaError_t e =
          kernels::launch_deadline_wait(p.deadline_state, static_cast<uint64_t>(p.time_budget_ns), stream, early);
      e != cudaSuccess)
    return cuda_failure("deadline wait launch", e);
  return {};
}

}  // namespace dhp
