// TEST-ONLY leaky control (see leaky_control.hpp). Built only with
// -DDHP_BUILD_LEAKY_CONTROL=ON, into dhp_validate alone.
//
// It instantiates the shipped kernel template with traits whose
// kLeakyControl flag is set; that flag enables one hook in
// src/kernels/sm80/forward_kernel.cuh that bounds the key loop by the secret
// L_k. Everything else (masking, softmax, epilogue) is the shipped code, so
// a gate that passes the shipped kernel and fails this one is measuring the
// skipped work, not some unrelated difference.

#include "api/make_forward_args.hpp"
#include "kernels/sm80/launch.cuh"
#include "leaky_control.hpp"

namespace dhp::gates {
namespace {

template <typename T, int D>
struct LeakyTraits : sm80::Sm80Traits<T, D, /*HAS_LENGTHS=*/true> {
  static constexpr bool kLeakyControl = true;
};

}  // namespace

bool leaky_control_compiled() { return true; }

Status forward_leaky_control(const Params& p) {
  if (Status s = validate(p); !s) return s;
  if (p.head_dim != 64)
    return Status{DHP_ERROR_UNSUPPORTED, "the leaky control is built for head_dim 64 only"};
  const kernels::ForwardArgs a = make_forward_args(p);
  const auto stream = static_cast<cudaStream_t>(p.stream);
  const cudaError_t err = p.dtype == DHP_BFLOAT16
                              ? sm80::launch_forward<LeakyTraits<__nv_bfloat16, 64>>(a, stream)
                              : sm80::launch_forward<LeakyTraits<__half, 64>>(a, stream);
  if (err != cudaSuccess) return Status{DHP_ERROR_CUDA, std::string("leaky control launch: ") + cudaGetErrorString(err)};
  return {};
}

}  // namespace dhp::gates
