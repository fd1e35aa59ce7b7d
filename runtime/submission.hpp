// What a graph run hands StarPU: its tasks' arguments, its data handles
// and their bytes, in one heap object (runtime/graph_run.cpp).
#pragma once

#include <starpu.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "runtime/codelets.hpp"
#include "runtime/data_plan.hpp"
#include "runtime/graph_run.hpp"
#include "runtime/link_thread.hpp"
#include "runtime/starpu_tasks.hpp"
#include "runtime/task_bodies.hpp"

namespace rrfp {

// A task that reads a message from another rank: its prologue (all of its
// inputs are here) counts the arrival for the watchdog, and says which one
// when a message never comes.
struct ArrivalArg {
  RunState* run = nullptr;
  int handle = -1;  // the message it receives from another rank; -1: none
  std::atomic<bool> fired{false};
};

// Its prologue callback.
void input_arrived(void* arg);

// Everything StarPU's tasks point to, on the heap: when a run cannot be
// drained it is left to StarPU (never freed) instead of dangling.
struct Submission {
  DataPlan plan;
  std::unique_ptr<RunState> run = std::make_unique<RunState>();
  LinkThread link{[](starpu_task* t) { end_on_a_worker(t); }};
  std::unique_ptr<DecisionChannel> decisions;
  std::vector<std::vector<unsigned char>> bytes;  // per handle owned here
  std::vector<std::uint64_t> words;               // per ordering handle owned here
  std::vector<starpu_data_handle_t> handle;       // per handle; null where not registered
  std::vector<TaskArg> args;                      // per member task
  std::vector<LinkArg> link_args;
  std::vector<ChannelArg> channel_args;  // per channel node (send, receive)
  std::vector<std::uint32_t> channel_mask;  // their workers (GraphRunSpec::channel_workers), a bit each
  std::vector<EpilogueArg> epi_args;
  std::unique_ptr<ArrivalArg[]> arrival_args;  // per node
  std::vector<starpu_task*> tasks;  // member tasks, then links, then epilogues; null: not run here
  std::vector<WorkerPlacement> place;  // per slot (entries of other ranks unused)
};

// Registers the handles this rank touches: owned ones on its memory,
// others (StarPU-MPI) with no home, filled by a receive.
void register_handles(Submission& sub, const RankLayout& L, const std::vector<unsigned char>& touched);

}  // namespace rrfp
