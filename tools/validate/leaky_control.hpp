// The leaky control: a TEST-ONLY variant of the shipped sm80 kernel that
// bounds its key loop by the secret L_k (it skips key tiles beyond the
// secret length, as a conventional varlen kernel does). Its outputs are
// correct; its running time, instruction counts and memory traffic depend on
// the secret. It exists to prove that the gates can fail, and is compiled
// only into dhp_validate, only with -DDHP_BUILD_LEAKY_CONTROL=ON: it is never
// part of the library.
#pragma once
#include "dhp/attention.hpp"

namespace dhp::gates {

bool leaky_control_compiled();
// Validates like the public API, then launches the control (fp16/bf16, D=64).
Status forward_leaky_control(const Params& p);

}  // namespace dhp::gates
