// Dispatch overhead per task: the same graph of ~100k empty tasks (1F1B,
// 2 devices) under rrfp, prio and eager, interleaved in one process so the
// ratios are measured side by side. Target: rrfp <= 1.15x prio and eager.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "hints/generators.hpp"
#include "runtime/executor.hpp"

using namespace rrfp;

int main(int argc, char** argv) {
  int tasks = argc > 1 ? std::atoi(argv[1]) : 100000;
  int reps = argc > 2 ? std::atoi(argv[2]) : 5;
  const int S = 2, M = std::max(1, tasks / (2 * S));
  Hint h = make_hint(argc > 3 ? argv[3] : "gpipe", {S, M, 0, 0, 0});
  std::vector<std::string> policies = {"rrfp", "prio", "eager"};
  for (int i = 4; i < argc; ++i) policies.push_back(argv[i]);  // extra policies to compare
  std::map<std::string, std::vector<double>> us;  // per-task microseconds
  for (int r = 0; r < reps; ++r)
    for (const std::string& p : policies) {
      ExecOptions o;
      o.policy = p;
      ExecResult res = execute(h, [](int) {}, o);
      us[p].push_back(res.wall_s / res.tasks * 1e6);
    }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  fmt::print("graph: {}, {} devices, {} microbatches, {} tasks + {} transfers, empty bodies, {} reps\n", h.name, S, M,
             h.graph->size(), 2 * (S - 1) * M, reps);
  fmt::print("{:<8} {:>12} {:>12} {:>12}\n", "policy", "median us", "min us", "rrfp/this");
  double rr = median(us["rrfp"]);
  for (const std::string& p : policies)
    fmt::print("{:<8} {:>12.3f} {:>12.3f} {:>12.3f}\n", p, median(us[p]), *std::min_element(us[p].begin(), us[p].end()),
               rr / median(us[p]));
  return 0;
}
