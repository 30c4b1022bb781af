// The optional deadline of a call (dhp_attention_params.time_budget_ns;
// threat model §8): two one-thread kernels around the attention's launches,
// so that the call ends on the GPU at its start + the budget, whatever the
// SM clock did in between.
//
// Why a clock and not a counted loop: on a power-limited GPU the SM clock
// runs faster while the tensor cores multiply zeros (short secret lengths,
// masked scores), so the same instruction stream takes less time. No choice
// of instructions removes that (docs/security-validation.md); waiting for a
// fixed point on the GPU's nanosecond clock (%globaltimer, which does not
// follow the SM clock) does, as long as the work ends before it.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "dhp/attention.h"

namespace dhp::kernels {

// Writes the GPU clock into state->start_ns. Launched first, in stream
// order, so that the attention's kernels start after it.
cudaError_t launch_deadline_start(dhp_deadline_state* state, cudaStream_t stream);

// Launched last, in stream order (no PDL: it must start after every kernel of
// the call has ended): records the work's duration, counts an overrun where
// the work ended past start + budget_ns, then waits until the GPU clock
// reaches start + k * budget_ns, the smallest such k >= 1 not yet passed.
cudaError_t launch_deadline_wait(dhp_deadline_state* state, uint64_t budget_ns, cudaStream_t stream);

}  // namespace dhp::kernels
