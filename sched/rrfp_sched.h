/* The configuration API of the rrfp and rrfp-fixed StarPU scheduling
 * policies (sched/rrfp_policy.cpp). C, like StarPU's own policy APIs.
 *
 * The policies keep their state on the scheduling context: allocated in
 * init_sched, freed in deinit_sched. A run attaches its configuration to
 * the context before submitting (RRFP_INITIAL_SCHED_CTX for the context
 * starpu_init creates, which tasks go to unless they name another) and detaches it after its last task; graph tasks are
 * recognised by their codelet and their cl_arg starts with a
 * struct rrfp_graph_task. With nothing attached, or for any other task,
 * the policies are a FIFO restricted by each task's workerids: any StarPU
 * program runs under them. */
#ifndef RRFP_SCHED_H
#define RRFP_SCHED_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

struct starpu_codelet;

/* What a graph task's cl_arg points to (it may hold more after this). */
struct rrfp_graph_task {
  int id;      /* graph task id */
  void *owner; /* the executor's run */
  int member;  /* tensor-parallel member, 0 = leader */
};

/* The scheduling context starpu_init creates (StarPU's internal global
 * context, id 0). */
#define RRFP_INITIAL_SCHED_CTX 0u

/* worker_of_slot entry of a slot whose worker lives in another process. */
#define RRFP_REMOTE_WORKER (-2)

struct rrfp_sched_config {
  /* rrfp::Arbiter* (sched/arbiter.hpp) in the policy's own mode:
   * ReadinessFirst for rrfp, Strict for rrfp-fixed. */
  void *arbiter;
  /* Per slot d * tp + t (member t of device d): its StarPU worker. */
  const int *worker_of_slot;
  int slots;
  const struct starpu_codelet *const *codelets; /* graph tasks use these */
  int ncodelets;
  int tasks; /* graph tasks (member tasks: tasks * tp) */
  int tp;    /* tensor-parallel members per device; a follower runs its leader's decisions in order */
  /* > 0: asynchronous training's per-stage updates (ExecOptions::epilogue_group,
     docs/async.md): after every update_group W/BW of a stage its device runs
     the update (a task of update_codelet) before its next pass. */
  int update_group;
  const struct starpu_codelet *update_codelet;
  /* Per model stage, 1 where its update is owed by counting: its W/BW and
     its update all run in this process. Elsewhere (AMDP across ranks: the
     update also waits for other ranks' sums) the update only jumps the
     queue once pushed. NULL: every stage. */
  const unsigned char *update_counted;
  /* Installs of a stage's updated weights on its other copies (AMDP across
     ranks): also run before the device's next pass once pushed, but never
     owed by counting. NULL: none. */
  const struct starpu_codelet *install_codelet;
};

/* 0, or -1 with the reason in `err` (the context's policy is not rrfp or
 * rrfp-fixed, the arbiter's mode is not the policy's, a run is attached,
 * too many slots). */
int rrfp_sched_attach(unsigned sched_ctx, const struct rrfp_sched_config *cfg, char *err, size_t err_len);
void rrfp_sched_detach(unsigned sched_ctx);
/* Arbitration events so far (ready, take, finish): a watchdog sees whether anything moved. */
long rrfp_sched_events(unsigned sched_ctx);
/* 1, with the arbiter's description in `why`, when no device can take a task and nothing runs. */
int rrfp_sched_stalled(unsigned sched_ctx, char *why, size_t why_len);
/* A leader's decision from another rank: member `member` of `device` runs `task` next. */
void rrfp_sched_follow(unsigned sched_ctx, int device, int member, int task);
/* Stop arbitrating: every ready task goes to its device at once (an aborted run drains). */
void rrfp_sched_drain(unsigned sched_ctx);

#ifdef __cplusplus
}
#endif

#endif
