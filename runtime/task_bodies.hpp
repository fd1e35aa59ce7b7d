// What the submitter (runtime/graph_run.cpp) hands the link and epilogue
// codelets as cl_arg; their bodies, with the graph tasks', are in
// runtime/task_bodies.cpp (declared in runtime/codelets.hpp).
#pragma once

#include <starpu.h>

#include "runtime/data_plan.hpp"
#include "runtime/run_state.hpp"

namespace rrfp {

struct LinkArg {
  RunState* run;
  starpu_task* task;
  double delay_s;
};

// An epilogue (a stage's update), or an install of its weights elsewhere.
struct EpilogueArg {
  int index;  // member * stages + stage; first, for the performance model's footprint
  RunState* run;
  const DataPlan* plan = nullptr;
  int node = -1;
  int install_of = -1, device = -1;  // an install: its epilogue and device
};

}  // namespace rrfp
