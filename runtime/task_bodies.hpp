// What the submitter (runtime/graph_run.cpp) hands the link and epilogue
// codelets as cl_arg; their bodies, with the graph tasks', are in
// runtime/task_bodies.cpp (declared in runtime/codelets.hpp).
#pragma once

#include <starpu.h>

#include <cstdint>

#include "runtime/data_plan.hpp"
#include "runtime/rank_transport.hpp"
#include "runtime/run_state.hpp"

namespace rrfp {

struct LinkArg {
  RunState* run;
  starpu_task* task;
  double delay_s;
};

// A send or receive task of an ordered channel (DataPlan::channels): its
// body takes a hold of its own on the buffer (read for a send, write for a
// receive) and hands it to the channels; when they call back, the hold is
// released and the task ends; a receive then calls arrived(arrival) for
// the watchdog.
struct ChannelArg {
  MessageChannels* channels = nullptr;
  starpu_task* task = nullptr;
  int peer = -1;         // the rank sent to / received from
  std::int64_t msg = 0;  // the message's id on both ranks (its handle's tag)
  bool send = true;
  void (*arrived)(void*) = nullptr;
  void* arrival = nullptr;
  std::size_t bytes = 0;  // set by the body: the message's size,
  int node = -1;          // and the memory node of the worker that ran it
};

// An epilogue (a stage's update), or an install of its weights elsewhere.
struct EpilogueArg {
  int index;  // member * stages + stage, for the performance model's footprint
  RunState* run;
  const DataPlan* plan = nullptr;
  int node = -1;
  int install_of = -1, device = -1;  // an install: its epilogue and device
};

}  // namespace rrfp
