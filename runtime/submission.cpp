#include "runtime/submission.hpp"

namespace rrfp {

void input_arrived(void* arg) {
  auto* a = static_cast<ArrivalArg*>(arg);
  a->fired.store(true);
  a->run->arrived.fetch_add(1);
}

void register_handles(Submission& sub, const RankLayout& L, const std::vector<unsigned char>& touched) {
  const auto& hs = sub.plan.handles;
  sub.handle.assign(hs.size(), nullptr);
  sub.bytes.resize(hs.size());
  sub.words.assign(hs.size(), 0);
  for (size_t i = 0; i < hs.size(); ++i) {
    if (!touched[i]) continue;
    const bool mine = L.rank_of_slot(hs[i].slot) == L.rank;
    const bool message = hs[i].vector;  // a message, or state bytes (DataPlanOptions::state_bytes)
    uintptr_t ptr = 0;
    if (mine && message) {
      sub.bytes[i].assign(hs[i].bytes, 0);
      ptr = reinterpret_cast<uintptr_t>(sub.bytes[i].data());
    } else if (mine) {
      ptr = reinterpret_cast<uintptr_t>(&sub.words[i]);
    }
    const int home = mine ? STARPU_MAIN_RAM : -1;
    if (message)
      starpu_vector_data_register(&sub.handle[i], home, ptr, static_cast<uint32_t>(hs[i].bytes), 1);
    else
      starpu_variable_data_register(&sub.handle[i], home, ptr, sizeof(std::uint64_t));
    if (L.transport) L.transport->register_handle(sub.handle[i], static_cast<std::int64_t>(i) + 1, L.rank_of_slot(hs[i].slot));
  }
}

}  // namespace rrfp
