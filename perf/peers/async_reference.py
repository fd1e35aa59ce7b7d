"""PACI's and reproducible AMDP's semantics in plain PyTorch, one process,
no runtime: a cross-check of `rrfp train --async paci` and of
`rrfp train --async amdp --deterministic` (docs/async.md).

gpt-tiny, its data, initialisation and AdamW come from gpt_torch.py (the same
as rrfp's, op for op). The P stages run one after another in this process;
a small event simulation (F = 1, BW = 2 time units a stage) decides the
order, with PACI's rules:
  - a stage runs a backward whose gradient has arrived before any forward;
  - it admits a forward only while fewer than P - s of its forwards wait
    for their backward (1F1B's warm-up window), and never flushes;
  - after every A of its backwards it alone applies AdamW to the sum of
    their gradients (the last stage scales each loss by 1/A);
  - no weight stashing: a backward runs against the stage's weights as they
    are then, which may be newer than the forward's (the update writes the
    parameters' data, so autograd does not refuse the stale graph).
`--method amdp` follows reproducible AMDP instead ("Reproducible AMDP"):
one weight set per stage, updated once a step; in every step but the
first of a window each forward runs on the weights before the previous
step's update and its backward on the weights after it (the order of
passes does not matter then, so none is simulated). `--stash` (PACI,
not rrfp) runs each backward on its forward's weights instead, as
PipeDream's weight stashing does; `--method delay` (not in rrfp) runs
forward and backward on the weights before the previous update, a
consistent one-step delay as in PipeDream-2BW. `--method sync` runs
the same steps flushed (every stage updates after all A microbatches of a
step), as rrfp's synchronous schedules do.

Prints one line per step (the mean loss of its A microbatches, in step
order) and, for PACI, the drift each stage's backwards saw.
  python3 async_reference.py --stages 8 --layers 8 --microbatches 4 --lr 1e-3 --steps 300
      [--method paci|amdp|delay|sync] [--stash] [--window K] [--json F]
      [--lr-warmup K --lr-decay cosine|linear --lr-decay-steps N --min-lr X] [--clip-grad X]   (as rrfp train's)
"""
from __future__ import annotations

import argparse
import heapq
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpt_torch as g  # noqa: E402


def build(args, torch):
    params, bb = g.build_params(torch, args.d_model, args.layers, args.seq_len, 256, args.seed)
    parts = g.partition_blocks(args.layers, args.stages)
    P = args.stages
    stages = [g.make_stage_module(torch, args, params, bb, parts[s], s == 0, s == P - 1) for s in range(P)]
    # Each stage's k-th update at rate k, as rrfp's per-stage AdamW count.
    lr = g.lr_schedule(args.lr, args.lr_warmup, args.lr_decay, args.lr_decay_steps or args.steps, args.min_lr)
    opts = [g.AdamW(torch, st.ordered_params(), lr=lr) for st in stages]
    return stages, opts


def run(args, torch):
    stages, opts = build(args, torch)
    P, A, b, T = args.stages, args.microbatches, args.micro_batch_size, args.seq_len
    sampler = g.Sampler(g.load_corpus(args), T, args.seed ^ 0xDA7A)
    total = A * args.steps
    data = []
    for _ in range(args.steps):  # step k's A microbatches, as rrfp draws them
        tok, tgt = g._batch(torch, sampler, A * b, T)
        data += [(tok[m * b:(m + 1) * b], tgt[m * b:(m + 1) * b]) for m in range(A)]
    losses = [0.0] * total
    version = [0] * P
    drift = [[] for _ in range(P)]
    saved = {}  # (s, m): (input that requires grad or None, output, version at F, stashed weights or None)
    grad_in = {}  # (s, m): the gradient stage s's backward of m receives

    clipped = [0]

    def clip(ps):  # --clip-grad, as rrfp's: torch's own clip_grad_norm_
        if float(torch.nn.utils.clip_grad_norm_(ps, args.clip_grad)) > args.clip_grad:
            clipped[0] += 1

    def weights(s):
        return [p.data.clone() for p in stages[s].ordered_params()]

    def put(s, ws):
        for p, w in zip(stages[s].ordered_params(), ws):
            p.data.copy_(w)

    def forward(s, m, behind=0):  # behind: runs on the weights that many updates old
        x = data[m][0] if s == 0 else saved[(s - 1, m)][1].detach().requires_grad_()
        y = stages[s](x)
        saved[(s, m)] = (x if s > 0 else None, y, version[s] - behind, weights(s) if args.stash else None)

    def backward(s, m, behind=0):
        x, y, v, stashed = saved.pop((s, m))
        if stashed is not None:  # --stash: the backward on its forward's weights
            current = weights(s)
            put(s, stashed)
        if s == P - 1:
            loss = g.loss_fn(y, data[m][1])
            losses[m] = loss.item()
            (loss / A).backward()
        else:
            y.backward(grad_in.pop((s, m)))
        if stashed is not None:
            put(s, current)
        if x is not None:
            grad_in[(s - 1, m)] = x.grad
        drift[s].append(version[s] - behind - v)

    if args.method != "paci":
        params = [p for st in stages for p in st.ordered_params()]
        older = None  # the weights before the last update (AMDP)
        for k in range(args.steps):
            stale = args.method in ("amdp", "delay") and k % args.window != 0
            for m in range(k * A, (k + 1) * A):
                if stale:  # forwards on the older weights, through the data as rrfp's copies are
                    current = [p.data.clone() for p in params]
                    for p, o in zip(params, older):
                        p.data.copy_(o)
                for s in range(P):
                    forward(s, m, 1 if stale else 0)
                if stale and args.method == "amdp":
                    for p, c in zip(params, current):
                        p.data.copy_(c)
                for s in reversed(range(P)):
                    backward(s, m, 1 if stale and args.method == "delay" else 0)
                if stale and args.method == "delay":
                    for p, c in zip(params, current):
                        p.data.copy_(c)
            older = [p.data.clone() for p in params]
            if args.clip_grad > 0 and args.method == "sync":  # the whole model's norm
                clip(params)
            for s, o in enumerate(opts):
                if args.clip_grad > 0 and args.method != "sync":  # each stage's own, as rrfp's --async
                    clip(stages[s].ordered_params())
                o.step()
            version = [v + 1 for v in version]
        return losses, drift, clipped[0]

    # PACI: an event simulation picks each stage's next pass.
    nf, nb = [0] * P, [0] * P  # forwards and backwards run by each stage
    f_done = [[False] * total for _ in range(P)]
    b_done = [[False] * total for _ in range(P)]
    busy, now, events = [False] * P, 0, []  # busy until its end event is taken

    def pick(s):
        m = nb[s]
        if m < nf[s] and (s == P - 1 and f_done[s][m] or s < P - 1 and b_done[s + 1][m]):
            return "B", m
        m = nf[s]
        # A window's first forward waits for the previous window to drain (rrfp's --window).
        drained = m % (args.window * A) != 0 or min(nb) >= m
        if m < total and nf[s] - nb[s] < P - s and (s == 0 or f_done[s - 1][m]) and drained:
            return "F", m
        return None

    while min(nb) < total:
        for s in range(P):  # every idle stage starts what it can
            if not busy[s] and (p := pick(s)):
                kind, m = p
                if kind == "F":
                    forward(s, m)
                    nf[s] += 1
                else:
                    backward(s, m)
                    nb[s] += 1
                busy[s] = True
                heapq.heappush(events, (now + (1 if kind == "F" else 2), s, kind, m))
        t, s, kind, m = heapq.heappop(events)
        now, busy[s] = t, False
        (f_done if kind == "F" else b_done)[s][m] = True
        if kind == "B" and nb[s] % A == 0:  # the group's last backward: update before the next pass
            if args.clip_grad > 0:
                clip(stages[s].ordered_params())
            opts[s].step()
            version[s] += 1
    return losses, drift, clipped[0]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--stages", type=int, default=8)
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--microbatches", type=int, default=4, help="A: microbatches a step and an update")
    ap.add_argument("--micro-batch-size", type=int, default=4)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--d-model", type=int, default=64)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--seq-len", type=int, default=64)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--lr-warmup", type=int, default=0, help="as rrfp train's")
    ap.add_argument("--lr-decay", choices=["constant", "cosine", "linear"], default="constant")
    ap.add_argument("--lr-decay-steps", type=int, default=0, help="0: --steps")
    ap.add_argument("--min-lr", type=float, default=None, help="default --lr / 10")
    ap.add_argument("--corpus", default="")
    ap.add_argument("--clip-grad", type=float, default=0.0,
                    help="as rrfp train's: clip_grad_norm_ before each update, the whole model's (sync) or each "
                         "stage's (paci, amdp, delay)")
    ap.add_argument("--method", choices=["paci", "amdp", "delay", "sync"], default="paci")
    ap.add_argument("--window", type=int, default=8, help="steps a window, drained at its end (rrfp's --window)")
    ap.add_argument("--stash", action="store_true",
                    help="paci: each backward on its forward's weights (PipeDream's stashing; not PACI, "
                         "not in rrfp), to tell the delay from the inconsistency")
    ap.add_argument("--json", default="")
    args = ap.parse_args(argv)
    if args.stash and args.method != "paci":
        raise SystemExit("--stash is for --method paci")
    if not 1 <= args.stages <= args.layers:
        raise SystemExit(f"--stages must be between 1 and --layers ({args.layers}), not {args.stages}")
    if min(args.microbatches, args.micro_batch_size, args.steps, args.window, args.seq_len, args.heads) < 1:
        raise SystemExit("--microbatches, --micro-batch-size, --steps, --window, --seq-len and --heads must be >= 1")
    if args.d_model % args.heads:
        raise SystemExit(f"--d-model ({args.d_model}) must divide by --heads ({args.heads})")
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    import torch
    torch.set_num_threads(1)
    losses, drift, clipped = run(args, torch)
    A = args.microbatches
    steps = [sum(losses[k * A:(k + 1) * A]) / A for k in range(args.steps)]
    for k, l in enumerate(steps):
        print(f"step {k + 1:>4}  loss {l:.4f}")
    if args.method != "sync":
        print("drift mean per stage:", " ".join(f"{sum(d) / len(d):.2f}" for d in drift))
        print("drift max per stage: ", " ".join(str(max(d)) for d in drift))
    if args.clip_grad > 0:
        print(f"updates clipped: {clipped}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"losses": steps, "method": args.method, "lr": args.lr, "lr_warmup": args.lr_warmup,
                       "lr_decay": args.lr_decay, "stages": args.stages,
                       "drift_mean": [sum(d) / len(d) if d else 0 for d in drift], "clipped": clipped}, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
