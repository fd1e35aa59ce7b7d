// How one run spans several processes. The submitter (runtime/graph_run.cpp)
// is the same for one process and for many ranks; what differs, it asks of
// a RankTransport: registering each handle with its owner rank, building a
// task on the rank that runs it (elsewhere: the sends its data implies),
// and waiting for the sends to leave. One process passes none. The
// StarPU-MPI transport lives in mpi/ (library RRFP::mpi), so the StarPU
// runtime itself does not link MPI.
#pragma once

#include <starpu.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "hints/hint.hpp"

namespace rrfp {

// Tensor parallelism across ranks: the leader of a device group tells its
// followers on other ranks which task it starts (mpi/tp_decisions.hpp).
class DecisionChannel {
 public:
  virtual ~DecisionChannel() = default;
  virtual bool active() const = 0;
  virtual int expected() const = 0;  // decision messages this rank waits for
  virtual int received() const = 0;
  virtual void post_receives() = 0;
  // The leader (member 0) of `device` starts graph task `task`: "" or why sending failed.
  virtual std::string announce(int device, int task) = 0;
};

// Messages between ranks in one agreed order per directed rank pair, as
// NCCL needs (docs/gpu.md, "Ordered channels"): the k-th send to a rank is
// the k-th message whose producer finished, the peer's k-th receive is
// released only when the sender has announced what it carries. The
// submitter's send and receive tasks call these from their bodies and end
// when `done` is called (from the channels' own thread).
class MessageChannels {
 public:
  virtual ~MessageChannels() = default;
  // Before any send or receive of a run: how many messages this rank sends
  // to and receives from each rank; a peer that does not join the wire's
  // set-up within timeout_s (the run's stall timeout) fails the run.
  virtual void start(const std::vector<int>& sends_to, const std::vector<int>& receives_from, double timeout_s) = 0;
  // `bytes` at `ptr` (kept valid until done) are message `msg` for rank `dst`.
  virtual void send(int dst, std::int64_t msg, const void* ptr, std::size_t bytes, std::function<void()> done) = 0;
  // Message `msg` from rank `src` goes to `ptr` (exactly `bytes`) when its turn comes.
  virtual void receive(int src, std::int64_t msg, void* ptr, std::size_t bytes, std::function<void()> done) = 0;
  // After the run's tasks ended: every send and receive is done; stops the thread.
  virtual void finish() = 0;
  // A transfer failed (a size that differs from the announced one, a wire error): why, else "".
  virtual std::string error() const = 0;
};

class RankTransport {
 public:
  virtual ~RankTransport() = default;
  // `h` (a handle this rank touches) is owned by rank `owner`; `tag` is the
  // same on every rank.
  virtual void register_handle(starpu_data_handle_t h, std::int64_t tag, int owner) = 0;
  // The task rank `where` runs for these accesses: a task to submit on
  // that rank, nullptr on the others (which post the sends it needs).
  virtual starpu_task* build(starpu_codelet* cl, starpu_data_descr* descr, int nb, int where) = 0;
  // After the task was submitted (or not built): the receives' cleanup.
  virtual void post_build(starpu_codelet* cl, starpu_data_descr* descr, int nb, int where) = 0;
  // Blocks until this rank's sends have left.
  virtual void wait_sends() = 0;
  // Decisions of tensor-parallel groups spread over ranks; slot s on rank s / K.
  virtual std::unique_ptr<DecisionChannel> decisions(const Hint& hint, int T, int K, int me) = 0;
  // Ordered channels for the messages between ranks, or null: StarPU-MPI
  // infers the transfers from the tasks' data (the default).
  virtual MessageChannels* channels() { return nullptr; }
};

}  // namespace rrfp
