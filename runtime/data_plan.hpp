// Which StarPU data handles a run registers and how every task accesses
// them. Pure C++ (no StarPU): the submitter turns it into registered handles
// and task buffers, and the tests check that the dependencies StarPU derives
// from these accesses are exactly the graph's edges (docs/runtime.md,
// "Data flow").
//
// Per (model stage s, microbatch m, tensor-parallel member t):
//   activation A(s,m)  written by F(s,m), read by F(s+1,m)        (message)
//   gradient   G(s,m)  written by B/BW(s,m), read by B/BW(s-1,m)  (message)
//   stash      X(s,m)  written by F(s,m), updated by B(s,m) and W(s,m) or
//                      by BW(s,m): the autograd state F leaves on its device
//                      (LibTorch holds it; StarPU orders by it, moves 8 bytes)
// Per (model stage, device holding it, member):
//   accumulator C(s,d) W and BW tasks add into it (RW|COMMUTE; plain RW
//                      under strict policies), the stage's epilogue (the
//                      optimizer step) reads and writes it after all of them.
//                      Not for tensor-parallel followers under COMMUTE: their
//                      epilogue reads the stashes X(s,m) instead.
// Per (model stage, j < gate_lag), grouped epilogues with a gate only:
//   version    V(s,j)  written by the epilogue of every group k with
//                      k mod gate_lag = j, read by the forwards of group
//                      k + gate_lag: at most gate_lag groups in flight (AMDP),
//                      and by the backwards (B or BW) of group k + 1
// Per (model stage s, pipeline, j < W_s), with a forward window W_s
// (PACI's admission rule, DataPlanOptions::forward_window) only; m counts
// the pipeline's own microbatches (one pipeline: all of them):
//   window     T(s,j)  written by the backward (B or BW) of every microbatch
//                      m with m mod W_s = j and, grouped, by the stage's
//                      update after it when m ends the pipeline's share of
//                      a group; read by F(s, m + W_s): at most W_s forwards
//                      of the stage's copy not yet matched by a backward,
//                      under every policy
// With state bytes and a gate, per epilogue and other accumulator of its stage:
//   install            reads the version the epilogue wrote, on the device
//                      of that accumulator: the copy there takes the new
//                      weights as soon as they arrive (AMDP across ranks)
// Per message crossing devices with a link delay:
//   arrival    L(e)    written by the edge's link task (which reads the
//                      message and holds it for the delay), read by the
//                      consumer: the emulated wire.
// Per message crossing ranks through ordered channels (channel_rank set):
//   received   R(c)    written by the channel's receive task on the
//                      consumer's rank, read by the consumer in place of
//                      the message; the send task on the producer's rank
//                      reads the message (docs/gpu.md, "Ordered channels").
#pragma once

#include <cstddef>
#include <functional>
#include <utility>
#include <vector>

#include "graph/task_graph.hpp"

namespace rrfp {

enum class HandleKind { Activation, Gradient, Stash, Accumulator, Version, Window, Arrival, Received };
enum class Access : unsigned char { R, W, RW, RWCommute };
const char* handle_kind_name(HandleKind k);

struct HandleSpec {
  HandleKind kind;
  int stage = 0, mb = -1, member = 0;
  int slot = 0;            // device * T + member of its owner (the first writer)
  std::size_t bytes = 8;   // messages: DataPlanOptions::message_bytes
  // Registered as a byte vector (messages; state handles with
  // DataPlanOptions::state_bytes), else as one 8-byte ordering token.
  bool vector = false;
};

struct AccessSpec {
  int handle;
  Access mode;
};

// A link task: reads the consumer's message, writes its arrival handle,
// runs in the consumer's slot.
struct LinkSpec {
  int consumer;  // member task (member * n + graph id)
  int k;         // index of the input among the consumer's graph predecessors
  double delay_s;
};

// A message crossing ranks through an ordered channel: a send task in the
// producer's slot (reads `message`), a receive task in the consumer's slot
// (writes `received`, which the consumer reads).
struct ChannelSpec {
  int message, received;
  int consumer;            // member task
  int src_rank, dst_rank;
};

struct DataPlanOptions {
  int tensor_parallel = 1;
  // false: accumulators in plain RW (strict policies). true: RW|COMMUTE
  // for member 0, none for followers. StarPU grants a commuting handle
  // when it pushes a task, and a follower's task that the policy holds
  // back (it runs its leader's order) would keep it from the task the
  // leader chose: a deadlock across the group's collectives. A follower
  // runs on one worker in the leader's order, so nothing needs ordering
  // but its epilogue, which reads every stash of its stage instead.
  bool commute = true;
  bool epilogues = false;  // one epilogue task per stage and member
  // 0: each stage's epilogue runs after all of its microbatches. g > 0
  // (asynchronous training, docs/async.md): one epilogue per stage and
  // group of g consecutive microbatches, after the group's W/BW and before
  // the next group's (the accumulator orders them). g must divide the
  // microbatches; tensor parallelism is not supported then.
  int epilogue_group = 0;
  // With epilogue_group: 0, or L > 0 for "a forward of group k on a stage
  // starts after that stage's epilogue of group k - L" (the version
  // handles above). Grouped epilogues alone never hold a forward back.
  int gate_lag = 0;
  // Per model stage, 0 or W > 0 for "F(s, m) starts after the backward of
  // m - W on that stage and, with grouped epilogues, after the stage's
  // update that follows it" (the window handles above: PACI's window as
  // data flow, so StarPU's own policies keep it too). With several
  // pipelines (data-parallel replicas), m - W counts the microbatches of
  // m's pipeline only, each copy of the stage its own window. Empty: none. The
  // submission order must put that backward before F(s, m):
  // g.topological_order(plan.window_edges) does; submission_nodes() checks.
  std::vector<int> forward_window;
  std::size_t message_bytes = 64;
  // Optional (AMDP across ranks, docs/async.md): the accumulators and
  // version handles of stage s carry state_bytes(s) bytes after an 8-byte
  // header (a count or a version) instead of being 8-byte ordering
  // tokens, so StarPU-MPI moves a copy's gradient sum to the epilogue and
  // the updated weights to the next group's forwards.
  std::function<std::size_t(int stage)> state_bytes;
  // Optional: the device whose accumulator the W/BW tasks of (stage,
  // device) add into (several copies of a stage on one rank share one);
  // empty = their own device's.
  std::function<int(int stage, int device)> accumulator_device;
  // Delay of the k-th input edge of graph task `task` when it crosses devices; empty = none.
  std::function<double(int task, int k)> link_delay_s;
  // Optional: the rank of a slot. Set, a message whose producer and
  // consumer are on different ranks crosses as a channel (ChannelSpec):
  // no task then reads data another rank owns.
  std::function<int(int slot)> channel_rank;
};

// The nodes of a run are its StarPU tasks: member tasks (member * n + id),
// then link tasks, then epilogues (group * tp * stages + member * stages + stage),
// then installs, then each channel's send and receive.
struct DataPlan {
  int n = 0, tp = 1, stages = 0;
  int group = 0;   // DataPlanOptions::epilogue_group
  // Grouped epilogues: per graph task, its microbatch's group; per member
  // task, the epilogue its accumulator write precedes (-1: none).
  std::vector<int> task_group, writer_epilogue;
  // Forward windows: (backward, forward) graph-id pairs the submission
  // order must keep in that order.
  std::vector<std::pair<int, int>> window_edges;
  std::vector<HandleSpec> handles;
  std::vector<LinkSpec> links;
  int epilogues = 0;
  // Per install: its epilogue and the device it installs on; per epilogue, its installs.
  std::vector<int> install_epilogue, install_device;
  std::vector<std::vector<int>> epilogue_installs;
  std::vector<ChannelSpec> channels;
  // Per node: its accesses in buffer order, and its slot (device * T + member).
  std::vector<std::vector<AccessSpec>> access;
  std::vector<int> slot;
  // Per member task: the message it reads / writes (-1: none; through a
  // channel, the received copy), the link and the channel feeding it (-1).
  std::vector<int> msg_in, msg_out, link_in, channel_in;

  int tasks() const { return n * tp; }
  int nodes() const { return static_cast<int>(access.size()); }
  int link_node(int l) const { return tasks() + l; }
  int epilogue_node(int e) const { return tasks() + static_cast<int>(links.size()) + e; }
  int installs() const { return static_cast<int>(install_epilogue.size()); }
  int install_node(int i) const { return epilogue_node(epilogues) + i; }
  int send_node(int c) const { return install_node(installs()) + 2 * c; }
  int receive_node(int c) const { return send_node(c) + 1; }
  bool is_channel_node(int node) const { return node >= send_node(0); }
};

DataPlan plan_data(const TaskGraph& g, const DataPlanOptions& opt);

// The order the submitter hands the nodes to StarPU, from an order of graph
// ids: every member of each id in turn, a task's channel (send, receive)
// and link just before it; the epilogues last, or (grouped) each right
// after the last accumulator write of its group, each followed by its
// installs, the ids sorted by group first (stable: within a group the
// given order stays, and every edge joins tasks of one microbatch).
// Throws SpecError when the order puts a window's forward before its
// backward (the forward would read an older token).
std::vector<int> submission_nodes(const DataPlan& plan, std::vector<int> order);

// The dependencies StarPU's sequential consistency derives from the plan
// when graph tasks are submitted in `order` (as submission_nodes). Per
// node (DataPlan's numbering), a sorted list.
std::vector<std::vector<int>> implied_dependencies(const DataPlan& plan, const std::vector<int>& order);

}  // namespace rrfp
