#include "comm/edge_order.hpp"

#include <algorithm>
#include <functional>
#include <stdexcept>
#include <tuple>

#include <fmt/format.h>

namespace rrfp {

int EdgeIndex::edge(int src, int dst) {
  if (src < 0 || dst < 0 || src >= ranks_ || dst >= ranks_ || src == dst)
    throw std::logic_error(fmt::format("EdgeIndex: no edge {} -> {} among {} ranks", src, dst, ranks_));
  int& e = id_[static_cast<size_t>(src) * ranks_ + dst];
  if (e < 0) {
    e = size();
    pairs_.emplace_back(src, dst);
  }
  return e;
}

std::int64_t EdgeSendOrder::next(std::int64_t) { return next_++; }

void EdgeRecvOrder::announce(std::int64_t seq, std::int64_t msg) {
  if (seq < issued_) throw std::logic_error(fmt::format("EdgeRecvOrder: send {} announced after it was received", seq));
  for (const auto& p : pending_)
    if (p.first == seq)
      throw std::logic_error(fmt::format("EdgeRecvOrder: send {} announced twice (messages {} and {})", seq, p.second, msg));
  pending_.emplace_back(seq, msg);
  std::push_heap(pending_.begin(), pending_.end(), std::greater<>());
}

std::vector<std::pair<std::int64_t, std::int64_t>> EdgeRecvOrder::releasable() {
  std::vector<std::pair<std::int64_t, std::int64_t>> out;
  while (!pending_.empty() && pending_.front().first == issued_) {
    std::pop_heap(pending_.begin(), pending_.end(), std::greater<>());
    out.push_back(pending_.back());
    pending_.pop_back();
    ++issued_;
  }
  return out;
}

std::vector<std::pair<int, int>> connection_order(int me, const std::vector<int>& sends_to,
                                                  const std::vector<int>& receives_from,
                                                  const std::function<bool(int, int)>& has) {
  if (sends_to.size() != receives_from.size() || me < 0 || me >= static_cast<int>(sends_to.size()))
    throw std::logic_error("connection_order: one count per rank, and `me` among them");
  std::vector<std::tuple<int, int, int>> keyed;  // (lower, higher, sender)
  for (int r = 0; r < static_cast<int>(sends_to.size()); ++r) {
    if (r == me) continue;
    if (sends_to[r] > 0 && !has(me, r)) keyed.emplace_back(std::min(me, r), std::max(me, r), me);
    if (receives_from[r] > 0 && !has(r, me)) keyed.emplace_back(std::min(me, r), std::max(me, r), r);
  }
  std::sort(keyed.begin(), keyed.end());
  std::vector<std::pair<int, int>> out;
  for (const auto& [lo, hi, src] : keyed) out.emplace_back(src, src == lo ? hi : lo);
  return out;
}

}  // namespace rrfp
