// AMDP (asynchronous multi-directional pipelines, docs/async.md): several
// pipelines in different directions over the same P devices, one model
// replica each, for training without a flush. Not a zoo hint: its order
// depends on the update groups, which the zoo's hints do not have.
#pragma once

#include "hints/hint.hpp"

namespace rrfp {

// Pipeline p's map stage -> device for `directions` = 2 (P even) or 4
// (P divisible by 4): down s -> s, up s -> P-1-s, and for four directions
// the two turned by half the ring, s -> s+P/2 and s -> 3P/2-1-s (mod P).
// Every device then holds `directions` distinct stages. Throws SpecError
// naming the problem otherwise.
std::vector<std::vector<int>> amdp_placement(int stages, int directions);

// The graph of `groups` iterations of `group` microbatches each (microbatch
// m in pipeline m mod directions, fused backward) and its order: the list
// scheduler with AMDP's rules: a stage updates after each iteration's
// backwards, the next iteration's backwards follow the update, and a
// forward of iteration k waits for the update of iteration k-2 (at most two
// iterations in flight per stage, so a microbatch crosses at most one
// update). `group` must be a multiple of `directions`.
Hint amdp_hint(int stages, int directions, int group, int groups);

}  // namespace rrfp
