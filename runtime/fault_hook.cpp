#include "runtime/fault_hook.hpp"

#include <chrono>
#include <csignal>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>

namespace rrfp {

bool task_matches(const TaskGraph& g, int id, const std::string& label) {
  if (label.empty()) return false;
  const Task& t = g.task(id);
  return g.label(id) == label || fmt::format("{}{}{}", t.stage, kind_name(t.kind), t.mb) == label;
}

std::function<void(int)> make_fault_hook(const TaskGraph& g, const std::string& task, FaultAction action,
                                         const std::string& why) {
  if (task.empty()) return {};
  return [&g, task, action, why](int call) {
    if (!task_matches(g, call % g.size(), task)) return;
    switch (action) {
      case FaultAction::Throw: throw std::runtime_error(fmt::format("injected failure ({})", why));
      case FaultAction::Kill: std::raise(SIGKILL); break;
      case FaultAction::Hang:
        for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
    }
  };
}

}  // namespace rrfp
