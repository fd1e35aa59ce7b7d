#include "runtime/data_plan.hpp"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "graph/pipeline_spec.hpp"

namespace rrfp {

const char* handle_kind_name(HandleKind k) {
  switch (k) {
    case HandleKind::Activation: return "activation";
    case HandleKind::Gradient: return "gradient";
    case HandleKind::Stash: return "stash";
    case HandleKind::Accumulator: return "accumulator";
    case HandleKind::Version: return "version";
    case HandleKind::Window: return "window";
    case HandleKind::Arrival: return "arrival";
    case HandleKind::Received: return "received";
  }
  return "?";
}

DataPlan plan_data(const TaskGraph& g, const DataPlanOptions& o) {
  const PipelineSpec& spec = g.spec();
  const int n = g.size(), T = o.tensor_parallel, S = spec.stages, M = spec.microbatches;
  DataPlan p;
  p.n = n;
  p.tp = T;
  p.stages = S;
  auto add = [&](HandleKind k, int s, int m, int member, int device, std::size_t bytes) {
    const bool message = k == HandleKind::Activation || k == HandleKind::Gradient || k == HandleKind::Received;
    const bool state = (k == HandleKind::Accumulator || k == HandleKind::Version) && o.state_bytes;
    if (state) bytes = 8 + o.state_bytes(s);  // a count or version, then the bytes
    p.handles.push_back({k, s, m, member, device * T + member, bytes, message || state});
    return static_cast<int>(p.handles.size()) - 1;
  };
  // Handles per (stage, microbatch, member): index ((member * S + s) * M + m).
  auto at = [&](int member, int s, int m) { return (static_cast<size_t>(member) * S + s) * M + m; };
  std::vector<int> act(static_cast<size_t>(T) * S * M, -1), grad(act.size(), -1), stash(act.size(), -1);
  std::map<std::tuple<int, int, int>, int> acc;  // (member, stage, device) -> handle
  // A follower (member > 0) runs its leader's order, not one StarPU picks:
  // no commuting accumulator for it (see DataPlanOptions::commute).
  auto has_acc = [&](int member) { return member == 0 || !o.commute; };
  auto acc_dev = [&](int s, int d) { return o.accumulator_device ? o.accumulator_device(s, d) : d; };
  if (T > 1 && (o.state_bytes || o.accumulator_device))
    throw SpecError("state bytes and shared accumulators do not support tensor parallelism");
  for (int t = 0; t < T; ++t)
    for (int s = 0; s < S; ++s)
      for (int m = 0; m < M; ++m) {
        const int d = spec.device_of(s, m);
        stash[at(t, s, m)] = add(HandleKind::Stash, s, m, t, d, 8);
        if (s + 1 < S) act[at(t, s, m)] = add(HandleKind::Activation, s, m, t, d, o.message_bytes);
        if (s > 0) grad[at(t, s, m)] = add(HandleKind::Gradient, s, m, t, d, o.message_bytes);
        if (const int ad = acc_dev(s, d); has_acc(t) && !acc.count({t, s, ad}))
          acc[{t, s, ad}] = add(HandleKind::Accumulator, s, -1, t, ad, 8);
      }
  if (o.epilogue_group > 0) {
    if (!o.epilogues) throw SpecError("epilogue groups need epilogues");
    if (T > 1) throw SpecError("grouped epilogues (asynchronous training) do not support tensor parallelism");
    if (M % o.epilogue_group != 0)
      throw SpecError(fmt::format("{} microbatches do not split into groups of {}", M, o.epilogue_group));
    p.group = o.epilogue_group;
  }
  if (o.gate_lag < 0 || (o.gate_lag > 0 && p.group == 0))
    throw SpecError(fmt::format("a forward gate (lag {}) needs grouped epilogues", o.gate_lag));
  std::vector<int> version;  // [s * gate_lag + j], owned by the stage's epilogue device
  for (int s = 0; s < S && p.group > 0; ++s)
    for (int j = 0; j < o.gate_lag; ++j) version.push_back(add(HandleKind::Version, s, -1, 0, spec.device_of(s, 0), 8));
  // Forward windows: per stage and pipeline, W tokens owned by the stage's
  // device in that pipeline (PACI: the stage's one device, or each
  // replica's copy's).
  if (!o.forward_window.empty() && static_cast<int>(o.forward_window.size()) != S)
    throw SpecError(fmt::format("a forward window per stage needed: {} given for {} stages", o.forward_window.size(), S));
  if (!o.forward_window.empty() && T > 1) throw SpecError("forward windows do not support tensor parallelism");
  // With a split backward the next group's B does not wait for the update,
  // so a window token would not order the update before the forward.
  if (!o.forward_window.empty() && spec.split_backward)
    throw SpecError("forward windows need the fused backward (PACI's)");
  // Windows count each pipeline's microbatches apart (data-parallel
  // replicas under PACI): per pipeline its microbatches in order, and each
  // microbatch's place among them.
  const int Pn = spec.pipelines();
  const std::vector<int> place = spec.pipeline_places();
  std::vector<std::vector<int>> pipe_mbs(Pn);
  for (int m = 0; m < M; ++m) pipe_mbs[spec.pipeline_of(m)].push_back(m);
  // A window of a pipeline's microbatches or more holds no forward back:
  // no tokens then.
  auto window_of = [&](int s, int m) {
    const int w = o.forward_window.empty() ? 0 : o.forward_window[s];
    return w >= static_cast<int>(pipe_mbs[spec.pipeline_of(m)].size()) ? 0 : w;
  };
  for (int w : o.forward_window)
    if (w < 0) throw SpecError(fmt::format("a forward window is negative ({})", w));
  // Per (stage, pipeline): W tokens owned by the stage's device in it.
  std::vector<int> window_base(static_cast<size_t>(S) * Pn, -1);
  for (int s = 0; s < S; ++s)
    for (int q = 0; q < Pn; ++q) {
      if (pipe_mbs[q].empty()) continue;
      for (int j = 0; j < window_of(s, pipe_mbs[q][0]); ++j) {
        const int h = add(HandleKind::Window, s, -1, 0, spec.placement[q][s], 8);
        if (j == 0) window_base[static_cast<size_t>(s) * Pn + q] = h;
      }
    }
  auto window_token = [&](int s, int m) {
    return window_base[static_cast<size_t>(s) * Pn + spec.pipeline_of(m)] + place[m] % window_of(s, m);
  };
  const Access acc_mode = o.commute ? Access::RWCommute : Access::RW;
  // The backward of group k >= 1 (the B, or the fused BW) reads the version
  // its stage's epilogue of group k - 1 wrote: in one process the
  // accumulator already orders it after that update; across ranks this
  // read does (an away copy's backward then runs on exactly the weights
  // of version k, docs/async.md, "AMDP under mpirun").
  auto read_last_version = [&](std::vector<AccessSpec>& a, int s, int m) {
    if (o.gate_lag > 0 && m / p.group >= 1)
      a.push_back({version[s * o.gate_lag + (m / p.group - 1) % o.gate_lag], Access::R});
  };
  p.access.resize(static_cast<size_t>(n) * T);
  p.slot.resize(p.access.size());
  p.msg_in.assign(p.access.size(), -1);
  p.msg_out.assign(p.access.size(), -1);
  p.link_in.assign(p.access.size(), -1);
  p.channel_in.assign(p.access.size(), -1);
  std::vector<std::vector<AccessSpec>> link_access;
  std::vector<int> link_slot;
  for (int t = 0; t < T; ++t)
    for (int id = 0; id < n; ++id) {
      const Task& k = g.task(id);
      const int mt = t * n + id, s = k.stage, m = k.mb;
      auto& a = p.access[mt];
      p.slot[mt] = k.device * T + t;
      // The message input: F reads the previous stage's activation, a
      // backward the next stage's gradient; its index among the graph preds.
      int in = -1, in_k = -1, producer = -1;
      if (k.kind == Kind::F && s > 0) in = act[at(t, s - 1, m)], in_k = 0, producer = g.find(Kind::F, s - 1, m);
      if ((k.kind == Kind::B || k.kind == Kind::BW) && s + 1 < S)
        in = grad[at(t, s + 1, m)], in_k = 1, producer = g.backward_of(s + 1, m);
      switch (k.kind) {
        case Kind::F:
          a.push_back({stash[at(t, s, m)], Access::W});
          if (s + 1 < S) p.msg_out[mt] = act[at(t, s, m)];
          if (o.gate_lag > 0 && m / p.group >= o.gate_lag)
            a.push_back({version[s * o.gate_lag + (m / p.group) % o.gate_lag], Access::R});
          if (const int w = window_of(s, m); w > 0 && place[m] >= w) {
            a.push_back({window_token(s, m), Access::R});
            const int earlier = pipe_mbs[spec.pipeline_of(m)][place[m] - w];  // w before it in its pipeline
            if (t == 0) p.window_edges.push_back({g.backward_of(s, earlier), id});
          }
          break;
        case Kind::B:
          a.push_back({stash[at(t, s, m)], Access::RW});
          if (s > 0) p.msg_out[mt] = grad[at(t, s, m)];
          read_last_version(a, s, m);
          if (window_of(s, m) > 0) a.push_back({window_token(s, m), Access::W});
          break;
        case Kind::W:
          a.push_back({stash[at(t, s, m)], Access::RW});
          if (has_acc(t)) a.push_back({acc[{t, s, acc_dev(s, k.device)}], acc_mode});
          break;
        case Kind::BW:
          a.push_back({stash[at(t, s, m)], Access::RW});
          if (has_acc(t)) a.push_back({acc[{t, s, acc_dev(s, k.device)}], acc_mode});
          if (s > 0) p.msg_out[mt] = grad[at(t, s, m)];
          read_last_version(a, s, m);
          if (window_of(s, m) > 0) a.push_back({window_token(s, m), Access::W});
          break;
      }
      if (p.msg_out[mt] >= 0) a.push_back({p.msg_out[mt], Access::W});
      if (in >= 0 && o.channel_rank) {
        const int src = o.channel_rank(p.handles[in].slot), dst = o.channel_rank(p.slot[mt]);
        if (src != dst) {
          const int received = add(HandleKind::Received, s, m, t, k.device, p.handles[in].bytes);
          p.channel_in[mt] = static_cast<int>(p.channels.size());
          p.channels.push_back({in, received, mt, src, dst});
          in = received;
        }
      }
      if (in >= 0) {
        p.msg_in[mt] = in;
        a.push_back({in, Access::R});
        const double delay =
            g.task(producer).device != k.device && o.link_delay_s ? o.link_delay_s(id, in_k) : 0.0;
        if (delay > 0) {
          const int arrival = add(HandleKind::Arrival, s, m, t, k.device, 8);
          p.link_in[mt] = static_cast<int>(p.links.size());
          p.links.push_back({mt, in_k, delay});
          link_access.push_back({{in, Access::R}, {arrival, Access::W}});
          link_slot.push_back(p.slot[mt]);
          a.push_back({arrival, Access::R});
        }
      }
    }
  p.access.insert(p.access.end(), link_access.begin(), link_access.end());
  p.slot.insert(p.slot.end(), link_slot.begin(), link_slot.end());
  const int groups = p.group > 0 ? M / p.group : 1;
  // Per (group, pipeline): the pipeline's last microbatch in the group (-1: none).
  std::vector<int> group_last(static_cast<size_t>(groups) * Pn, -1);
  for (int m = 0; m < M && p.group > 0; ++m) group_last[static_cast<size_t>(m / p.group) * Pn + spec.pipeline_of(m)] = m;
  if (o.epilogues)
    for (int k = 0; k < groups; ++k)
      for (int t = 0; t < T; ++t)
        for (int s = 0; s < S; ++s) {
          // It writes the accumulator of its own device and reads the others
          // (replicated stages): a rank writes only data it owns.
          const int home = spec.device_of(s, 0);
          std::vector<AccessSpec> a;
          for (const auto& [key, h] : acc)
            if (std::get<0>(key) == t && std::get<1>(key) == s)
              a.push_back({h, std::get<2>(key) == home ? Access::RW : Access::R});
          if (o.gate_lag > 0) a.push_back({version[s * o.gate_lag + k % o.gate_lag], Access::W});
          // The forward that the group's last backward admits waits for
          // this update too: a stage updates before its next forward (in
          // every pipeline: each one's last microbatch of the group).
          if (p.group > 0)
            for (int q = 0; q < Pn; ++q)
              if (const int last = group_last[static_cast<size_t>(k) * Pn + q];
                  last >= 0 && window_of(s, last) > 0)
                a.push_back({window_token(s, last), Access::W});
          if (!has_acc(t))  // a follower's: after the last pass of each microbatch (its stash's last writer)
            for (int m = 0; m < M; ++m) a.push_back({stash[at(t, s, m)], Access::R});
          p.access.push_back(std::move(a));
          p.slot.push_back(home * T + t);
          ++p.epilogues;
        }
  p.epilogue_installs.assign(p.epilogues, {});
  for (int e = 0; e < p.epilogues && o.state_bytes && o.gate_lag > 0; ++e) {
    const int s = e % S, home = spec.device_of(s, 0);
    for (const auto& [key, h] : acc)
      if (std::get<1>(key) == s && std::get<2>(key) != home) {
        p.epilogue_installs[e].push_back(p.installs());
        p.install_epilogue.push_back(e);
        p.install_device.push_back(std::get<2>(key));
        p.access.push_back({{version[s * o.gate_lag + (e / S) % o.gate_lag], Access::R}});
        p.slot.push_back(std::get<2>(key));
      }
  }
  for (const ChannelSpec& c : p.channels) {
    p.access.push_back({{c.message, Access::R}});
    p.slot.push_back(p.handles[c.message].slot);
    p.access.push_back({{c.received, Access::W}});
    p.slot.push_back(p.slot[c.consumer]);
  }
  if (p.group > 0) {
    p.task_group.resize(n);
    p.writer_epilogue.assign(n, -1);
    for (int id = 0; id < n; ++id) {
      const Task& k = g.task(id);
      p.task_group[id] = k.mb / p.group;
      if (k.kind == Kind::W || k.kind == Kind::BW) p.writer_epilogue[id] = p.task_group[id] * S + k.stage;
    }
  }
  return p;
}

std::vector<int> submission_nodes(const DataPlan& p, std::vector<int> order) {
  std::vector<int> out;
  out.reserve(p.nodes());
  std::vector<int> left(p.epilogues, 0);  // grouped: accumulator writes before each epilogue
  std::vector<unsigned char> done(p.epilogues, 0);
  if (p.group > 0) {
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return p.task_group[a] < p.task_group[b]; });
    for (int id = 0; id < p.n; ++id)
      if (p.writer_epilogue[id] >= 0) ++left[p.writer_epilogue[id]];
  }
  if (!p.window_edges.empty()) {
    std::vector<int> pos(p.n, -1);
    for (size_t i = 0; i < order.size(); ++i) pos[order[i]] = static_cast<int>(i);
    for (auto [b, f] : p.window_edges)
      if (pos[b] < 0 || pos[f] < 0 || pos[b] > pos[f])
        throw SpecError(fmt::format("submission order puts forward {} before the backward {} its window waits for", f, b));
  }
  for (int id : order) {
    for (int t = 0; t < p.tp; ++t) {
      const int mt = t * p.n + id;
      if (int c = p.channel_in[mt]; c >= 0) out.push_back(p.send_node(c)), out.push_back(p.receive_node(c));
      if (int l = p.link_in[mt]; l >= 0) out.push_back(p.link_node(l));
      out.push_back(mt);
    }
    if (p.group > 0 && p.writer_epilogue[id] >= 0 && --left[p.writer_epilogue[id]] == 0) {
      const int e = p.writer_epilogue[id];
      out.push_back(p.epilogue_node(e));
      for (int i : p.epilogue_installs[e]) out.push_back(p.install_node(i));
      done[e] = 1;
    }
  }
  for (int e = 0; e < p.epilogues; ++e)
    if (!done[e]) {
      out.push_back(p.epilogue_node(e));
      for (int i : p.epilogue_installs[e]) out.push_back(p.install_node(i));
    }
  return out;
}

std::vector<std::vector<int>> implied_dependencies(const DataPlan& p, const std::vector<int>& order) {
  std::vector<std::vector<int>> deps(p.nodes());
  // Per handle: the last writers (one, or a group of commuting writers),
  // the readers since, and what a commuting group waited for.
  struct State {
    std::vector<int> writers, readers, before;
    bool commuting = false;
  };
  std::vector<State> st(p.handles.size());
  auto access = [&](int node, const AccessSpec& a) {
    State& h = st[a.handle];
    auto wait_for = [&](const std::vector<int>& v) { deps[node].insert(deps[node].end(), v.begin(), v.end()); };
    if (a.mode == Access::R) {
      wait_for(h.writers);
      h.readers.push_back(node);
      return;
    }
    if (a.mode == Access::RWCommute && h.commuting && h.readers.empty()) {
      wait_for(h.before);  // joins the group: no order among its members
      h.writers.push_back(node);
      return;
    }
    const std::vector<int>& prev = h.readers.empty() ? h.writers : h.readers;
    wait_for(prev);
    h.before = prev;
    h.commuting = a.mode == Access::RWCommute;
    h.writers = {node};
    h.readers.clear();
  };
  auto submit = [&](int node) {
    for (const AccessSpec& a : p.access[node]) access(node, a);
  };
  for (int node : submission_nodes(p, order)) submit(node);
  for (auto& d : deps) {
    std::sort(d.begin(), d.end());
    d.erase(std::unique(d.begin(), d.end()), d.end());
  }
  return deps;
}

}  // namespace rrfp
