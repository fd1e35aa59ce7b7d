// How one run spans several processes. The submitter (runtime/graph_run.cpp)
// is the same for one process and for many ranks; what differs, it asks of
// a RankTransport: registering each handle with its owner rank, building a
// task on the rank that runs it (elsewhere: the sends its data implies),
// and waiting for the sends to leave. One process passes none. The
// StarPU-MPI transport lives in mpi/ (library RRFP::mpi), so the StarPU
// runtime itself does not link MPI.
#pragma once

#include <starpu.h>

#include <cstdint>
#include <memory>
#include <string>

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
};

}  // namespace rrfp
