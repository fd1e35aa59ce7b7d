// Does the simulator decide what the StarPU policy decided? The arbiter of
// an rrfp policy notes its clock when a task becomes ready, when its device
// starts asking for work after the task before it, when the task is taken
// and when it finishes (Arbiter::ready_times() and friends). The simulator
// replays the same hint under the same mode, slack and wait ratio with
// those times pinned: every pass ends at its recorded finish, every
// message crossing devices arrives when its consumer became ready, every
// device starts asking when its worker did. Its device orders are then
// compared with the recorded ones.
//
// A real run is not a discrete-event system. A worker may ask late: on a
// machine with more workers than cores, an idle worker sometimes does not
// run for milliseconds. Where the replay's device decides earlier than the
// run's worker did, by more than noise_s, and the run's arbiter had not
// decided to wait there, the worker was late: the replay holds that device
// until the recorded take (SimOptions::hold_until) and replays again; such
// decisions are counted (late_workers), and every other one must be equal.
// And within microseconds, when one event frees a device and readies a task
// for another, the two workers race: the check also replays `draws`
// perturbed copies, each finish later by a uniform draw in [0, noise_s] and
// devices that can start work at one instant asked in a shuffled order
// (SimOptions::tie_shuffle_seed). The run agrees when the replay, or one of
// the perturbed ones, makes exactly the recorded decisions. A policy that
// decides anything else than the shared arbiter would (another mode, other
// caps, other ranks) differs in every replay. The pinned replay goes one
// step further: each device takes each task at its recorded instant, so
// only the choices are left to compare. docs/simulator.md,
// "Simulator against StarPU".
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hints/hint.hpp"
#include "sched/arbiter.hpp"

namespace rrfp {

// What the arbiter saw of a run, per task: its clock (seconds, one origin)
// at on_ready, at its device's first ask after the task before, at take and
// at on_finish.
struct ArbiterTimes {
  std::vector<double> ready, ask, take, finish;
  // When its device decided a bounded wait before taking it (-1: none;
  // empty: no waits).
  std::vector<double> wait;
};

struct DecisionCheckOptions {
  Mode mode = Mode::ReadinessFirst;
  int inflight_slack = 0;
  WaitRule wait{};  // Mode::BoundedWait
  double noise_s = -1;  // < 0: the run's own dispatch delay (dispatch_delay_s)
  int draws = 32;
  std::uint64_t seed = 1;
};

struct DecisionCheck {
  int decisions = 0;           // tasks, over all devices
  bool exact = false;          // the unperturbed replay decided as recorded
  int draws = 0, draws_matching = 0;
  double noise_s = 0;          // the perturbation used
  // Decisions the run's worker took more than noise_s after the replay's
  // device would have, without having decided to wait: the replay holds
  // that device until the recorded take and goes on.
  int late_workers = 0;
  // The replay with every take at its recorded instant (after a bounded
  // wait: the wait decided at its recorded instant, and decided again)
  // decided as recorded: given the same events at the same times, the
  // simulator's arbiter chose what the policy chose.
  bool pinned = false;
  // The unperturbed replay's first difference (device -1: none): position
  // in the device's order, and the task each side ran there.
  int device = -1, position = -1, recorded = -1, simulated = -1;
  // The replay, or a perturbed one, decided as recorded.
  bool agrees() const { return exact || draws_matching > 0; }
  std::string describe(const TaskGraph& g) const;
};

// How long after it could have (its device asking and itself ready) each
// task was taken, as the `quantile` over the run's tasks: the size of the
// noise a replay must allow for.
double dispatch_delay_s(const Hint& hint, const ArbiterTimes& t, const std::vector<std::vector<int>>& order,
                        double quantile = 0.9);

// order: per device, task ids in the order they ran. Throws SpecError when
// the sizes do not fit the hint or a time is missing.
DecisionCheck check_decisions(const Hint& hint, const ArbiterTimes& t, const std::vector<std::vector<int>>& order,
                              const DecisionCheckOptions& opt);

}  // namespace rrfp
