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

// Launched last: waits for every kernel of the call to end, records the
// work's duration, counts an overrun where the work ended past start +
// budget_ns, then waits until the GPU clock reaches start + k * budget_ns,
// the smallest such k >= 1 not yet passed. In stream order, or with `early`
// (Hopper; an experiment, DHP_DEADLINE_PDL=1 in forward.cpp) by
// programmatic dependent launch: the GPU may then launch it as soon as the
// call's last kernel has started (the Hopper kernels allow their dependents
// at their start) and it waits for that grid on the GPU (griddepcontrol.wait)
// -- so that the launch, and whatever the GPU's front end does from it
// until the call's end, no longer starts at the work's end. The question it
// tests (docs/perf-log.md, session 49): whether the small call's residual
// under the deadline comes from that.
cudaError_t launch_deadline_wait(dhp_deadline_state* state, uint64_t budget_ns, cudaStream_t stream, bool early);

}  // namespace dhp::kernels
