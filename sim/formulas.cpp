#include "sim/formulas.hpp"

namespace rrfp {

std::optional<Formula> formula_for(const std::string& hint, const HintParams& hp) {
  const double p = hp.stages, m = hp.microbatches;
  const double v = hp.chunks > 0 ? hp.chunks : 2;
  const double w = hp.waves > 0 ? hp.waves : 1;
  if (hint == "gpipe") return Formula{(p - 1) / (m + p - 1), m, 1, "(p-1)/(m+p-1), act m"};
  if (hint == "1f1b" || hint == "bf") return Formula{(p - 1) / (m + p - 1), p, 1, "(p-1)/(m+p-1), act p"};
  if (hint == "interleaved-1f1b")
    return Formula{(p - 1) / (v * m + p - 1), p, 1, "(p-1)/(v m+p-1), act p"};
  // ZB-H1: a third of 1F1B's bubble time with F=B=W.
  if (hint == "zb-h1" || hint == "bfw") return Formula{(p - 1) / (3 * m + p - 1), p, 1, "(p-1)/(3m+p-1), act p"};
  if (hint == "zb-h2") return Formula{0, 2 * p - 1, 1, "0, act 2p-1"};
  if (hint == "zbv") return Formula{0, p, 1, "0, act p"};
  if (hint == "chimera") return Formula{(p - 2) / (2 * m + p - 2), p, 2, "(p-2)/(2m+p-2), act <= p, 2 weight copies"};
  if (hint == "hanayo")
    // As interleaving with 2W chunks (our reading of the wave analysis).
    return Formula{(p - 1) / (2 * w * m + p - 1), p, 1, "(p-1)/(2Wm+p-1), act p"};
  if (hint == "dualpipev") {
    // DeepSeek: bubble (PP/2-1)(F&B+B-3W) with PP = 2p stages; with F=B=W=1
    // and F&B run back to back (3), that is p-1 per device over 6m of work.
    double bubble = p - 1;
    return Formula{bubble / (6 * m + bubble), (2 * p + 1) / 2.0, 1, "(PP/2-1)(F&B+B-3W), act PP+1 chunks"};
  }
  return std::nullopt;
}

}  // namespace rrfp
