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

// How the wait runs. kStreamOrdered (shipped): one thread, launched in
// stream order after the call's last kernel. kEarly (Hopper; an experiment,
// DHP_DEADLINE_PDL=1 in forward.cpp): launched by programmatic dependent
// launch, so the GPU may launch it as soon as the call's last kernel has
// started (the Hopper kernels allow their dependents at their start) and it
// waits for that grid on the GPU (griddepcontrol.wait) -- the launch, and
// whatever the GPU's front end does from it until the call's end, no longer
// starts at the work's end (session 50: no separation). kBurn (an
// experiment, DHP_DEADLINE_BURN=1): a one-thread kernel keeps the state,
// then a grid on every SM runs FMAs on constants until the deadline, so the
// GPU draws the same power from the work's end to the deadline whatever the
// work drew -- does the small call's residual after the deadline (the
// work's power carried past an idle wait; docs/security-validation.md,
// session 51) outlive a full load? Its limits: it burns that power for the
// whole slack, and the slack is the budget less the work, so the call's
// energy still follows the work's duration (less than its share of the
// budget, as the work draws more than the burn); and from the work's end it
// takes every SM from kernels of other streams.
enum class WaitMode { kStreamOrdered, kEarly, kBurn };

// The wait's grid for `mode` on the current device: 1, or for kBurn two
// blocks per SM. Asked before the call's first launch, so that a failure
// leaves nothing on the stream.
cudaError_t deadline_wait_blocks(WaitMode mode, int* blocks);

// Launched last: waits for every kernel of the call to end, records the
// work's duration, counts an overrun where the work ended past start +
// budget_ns, then waits until the GPU clock reaches start + k * budget_ns,
// the smallest such k >= 1 not yet passed. `blocks`: deadline_wait_blocks'.
cudaError_t launch_deadline_wait(dhp_deadline_state* state, uint64_t budget_ns, cudaStream_t stream, WaitMode mode,
                                 int blocks);

}  // namespace dhp::kernels
