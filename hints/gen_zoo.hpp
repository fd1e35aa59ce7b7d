// Bidirectional and wave schedules: Chimera, Hanayo, DualPipeV.
#pragma once

#include "hints/generators.hpp"

namespace rrfp {

Hint gen_chimera(const HintParams& p);
Hint gen_chimera_asym(const HintParams& p);
Hint gen_hanayo(const HintParams& p);
Hint gen_dualpipev(const HintParams& p);

}  // namespace rrfp
