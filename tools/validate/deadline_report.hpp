// dhp_validate dudect's diagnostics of the deadline (threat model §8;
// docs/security-validation.md): the probe's per-class summary and the
// jitter's. Each prints its lines and returns its JSON.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "stats.hpp"

namespace dhp::gates {

// --deadline-probe: `rec` holds 4 floats per launch (workload.cu's
// deadline_probe_kernel: work_ns, post_ns, sm_mhz, overruns so far). Also
// fills the per-class overrun counts (it replaces the tally's).
std::string deadline_probe_summary(const std::vector<float>& rec, const std::vector<Sample>& all, int64_t first,
                                   uint64_t overruns_before, uint64_t overruns_by[2]);

// --deadline-jitter-ns: `jit_all` is each launch's jitter; `probe_rec` the
// probe's records, or empty.
std::string jitter_summary(const std::vector<Sample>& all, const std::vector<int32_t>& jit_all, int64_t first,
                           int64_t jitter_ns, int64_t budget_ns, const std::vector<float>& probe_rec);

}  // namespace dhp::gates
