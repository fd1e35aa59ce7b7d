// Statistics derived from the recorded start/end times of a run.
#pragma once

#include "runtime/executor.hpp"

namespace rrfp {

// Fills makespan_s, busy_s and peak_inflight from start_s/end_s.
void fill_run_stats(const TaskGraph& g, ExecResult& r);

// Per device, the largest number of microbatch-stages whose forward had
// started and whose backward had not ended, at any moment.
std::vector<int> measured_peak_inflight(const TaskGraph& g, const std::vector<double>& start,
                                        const std::vector<double>& end);

}  // namespace rrfp
