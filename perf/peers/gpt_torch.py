"""gpt-tiny in PyTorch, as rrfp's train/ builds it, trained either as a plain
one-process loop or with torch.distributed.pipelining (one process per
pipeline rank, gloo on 127.0.0.1).

What is the same as `rrfp train` (train/model.cpp, adamw.cpp, data.cpp):
  - the model: byte vocabulary 256, token + learned position embeddings,
    pre-norm blocks (LayerNorm, causal multi-head attention written with
    matmul / masked_fill / softmax, residual; LayerNorm, 4x GELU MLP,
    residual), final LayerNorm, linear head, mean cross-entropy on the next
    byte; the same parameter shapes, count and global order;
  - the initialisation: the same normal_ draws from one CPU generator seeded
    with --seed in the same order (LibTorch's and PyTorch's CPU generator are
    the same mt19937), ones / zeros elsewhere;
  - the optimizer: rrfp's AdamW (decoupled weight decay on matrices only,
    lr 3e-3, betas 0.9 / 0.95, eps 1e-8, decay 0.01), one per model stage,
    op for op;
  - the data (gpt_data.py): the generated 512 KiB corpus and the
    xoshiro256** window sampler of train/data.cpp, ported bit for bit, so a
    step sees the same M x b windows of seq_len + 1 bytes as rrfp's step;
  - the partition: contiguous runs of blocks, sizes differing by at most one,
    larger first; embeddings on the first model stage, final norm + head +
    loss on the last.

Run by bench_peers.py; by hand:
  python gpt_torch.py --mode plain --steps 5
  python gpt_torch.py --mode pipe --schedule 1f1b --stages 2 --steps 5   # spawns its ranks
"""
from __future__ import annotations

import argparse
import json
import math
import os
import socket
import subprocess
import sys
import time

# ---------------------------------------------------------------- data (gpt_data.py, train/data.cpp)
from gpt_data import Sampler, generate_corpus, load_corpus  # noqa: E402,F401  (async_reference.py uses them as g.*)


# ---------------------------------------------------------------- model (train/model.cpp)
def partition_blocks(layers: int, stages: int) -> list[tuple[int, int]]:
    """Contiguous, balanced, larger first (rrfp::train::partition_blocks)."""
    if stages > layers:
        raise SystemExit(f"{stages} model stages but the model has only {layers} blocks")
    base, extra = divmod(layers, stages)
    out, at = [], 0
    for s in range(stages):
        n = base + (1 if s < extra else 0)
        out.append((at, at + n))
        at += n
    return out


def build_params(torch, d: int, layers: int, seq_len: int, vocab: int, seed: int):
    """All parameters in rrfp's global order: (name, tensor) pairs, plus the
    index where each block starts."""
    g = torch.Generator().manual_seed(seed)

    def normal(shape, std):
        t = torch.empty(shape, dtype=torch.float32)
        t.normal_(0.0, std, generator=g)
        return t

    ones = lambda n: torch.ones(n, dtype=torch.float32)  # noqa: E731
    zeros = lambda n: torch.zeros(n, dtype=torch.float32)  # noqa: E731
    params = [("tok_emb", normal([vocab, d], 0.02)), ("pos_emb", normal([seq_len, d], 0.01))]
    block_begin = []
    proj_std = 0.02 / math.sqrt(2.0 * layers)
    for i in range(layers):
        block_begin.append(len(params))
        p = f"block{i}."
        params += [
            (p + "ln1.w", ones(d)), (p + "ln1.b", zeros(d)),
            (p + "qkv.w", normal([3 * d, d], 0.02)), (p + "qkv.b", zeros(3 * d)),
            (p + "proj.w", normal([d, d], proj_std)), (p + "proj.b", zeros(d)),
            (p + "ln2.w", ones(d)), (p + "ln2.b", zeros(d)),
            (p + "fc1.w", normal([4 * d, d], 0.02)), (p + "fc1.b", zeros(4 * d)),
            (p + "fc2.w", normal([d, 4 * d], proj_std)), (p + "fc2.b", zeros(d)),
        ]
    block_begin.append(len(params))
    params += [("lnf.w", ones(d)), ("lnf.b", zeros(d)), ("head.w", normal([vocab, d], 0.02)),
               ("head.b", zeros(vocab))]
    return params, block_begin


def make_stage_module(torch, cfg, params, block_begin, rng: tuple[int, int], first: bool, last: bool):
    nn, F = torch.nn, torch.nn.functional

    class GptStage(nn.Module):
        """Blocks [first, last) of gpt-tiny, with the embeddings on the first
        model stage and the final norm + head on the last."""

        def __init__(self):
            super().__init__()
            self.first, self.last = first, last
            self.heads, self.d = cfg.heads, cfg.d_model
            sel = []
            if first:
                sel += params[:2]
            sel += params[block_begin[rng[0]]:block_begin[rng[1]]]
            if last:
                sel += params[-4:]
            self.names = [n for n, _ in sel]
            self.p = nn.ParameterDict({n.replace(".", "_"): nn.Parameter(t.clone()) for n, t in sel})
            self.blocks = [f"block{i}_" for i in range(rng[0], rng[1])]
            T = cfg.seq_len
            self.register_buffer("causal", torch.ones(T, T, dtype=torch.bool).triu(1), persistent=False)

        def ordered_params(self):
            return [self.p[n.replace(".", "_")] for n in self.names]

        def block(self, b: str, x):
            p, H, d = self.p, self.heads, x.size(2)
            dh = d // H
            B, T = x.size(0), x.size(1)
            h = F.layer_norm(x, (d,), p[b + "ln1_w"], p[b + "ln1_b"])
            qkv = F.linear(h, p[b + "qkv_w"], p[b + "qkv_b"]).view(B, T, 3, H, dh).permute(2, 0, 3, 1, 4)
            q, k, v = qkv[0], qkv[1], qkv[2]
            att = torch.matmul(q, k.transpose(-2, -1)) * (1.0 / math.sqrt(dh))
            att = att.masked_fill(self.causal[:T, :T], float("-inf"))
            att = torch.softmax(att, -1)
            y = torch.matmul(att, v).transpose(1, 2).reshape(B, T, H * dh)
            x1 = x + F.linear(y, p[b + "proj_w"], p[b + "proj_b"])
            h2 = F.layer_norm(x1, (d,), p[b + "ln2_w"], p[b + "ln2_b"])
            return x1 + F.linear(F.gelu(F.linear(h2, p[b + "fc1_w"], p[b + "fc1_b"])), p[b + "fc2_w"],
                                 p[b + "fc2_b"])

        def forward(self, x):
            p = self.p
            if self.first:
                x = F.embedding(x, p["tok_emb"]) + p["pos_emb"][: x.size(1)]
            for b in self.blocks:
                x = self.block(b, x)
            if self.last:
                x = F.linear(F.layer_norm(x, (x.size(-1),), p["lnf_w"], p["lnf_b"]), p["head_w"], p["head_b"])
            return x

    return GptStage()


def loss_fn(logits, targets):
    import torch.nn.functional as F
    return F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1), ignore_index=-1)


# ---------------------------------------------------------------- optimizer (train/adamw.cpp)
def lr_schedule(peak, warmup=0, decay="constant", decay_steps=0, min_lr=None):
    """The rate of update t (1-based), as train/lr_schedule.cpp: linear warm-up
    over `warmup` updates, then constant, cosine or linear decay to min_lr
    (default peak / 10) at update decay_steps."""
    floor = peak / 10 if min_lr is None else min_lr
    if decay not in ("constant", "cosine", "linear") or not 0 <= floor <= peak or warmup < 0:
        raise SystemExit(f"bad schedule: decay {decay}, min_lr {floor}, warmup {warmup} (peak {peak})")
    if decay != "constant" and decay_steps <= warmup:
        raise SystemExit(f"--lr-decay {decay} needs --lr-decay-steps ({decay_steps}) beyond --lr-warmup ({warmup})")

    def at(t):
        if warmup > 0 and t <= warmup:
            return peak * (max(t, 1) / warmup)
        if decay == "constant":
            return peak
        if t >= decay_steps:
            return floor
        x = (t - warmup) / (decay_steps - warmup)
        keep = 0.5 * (1.0 + math.cos(math.pi * x)) if decay == "cosine" else 1.0 - x
        return floor + keep * (peak - floor)
    return at


class AdamW:
    """rrfp's AdamW, op for op: decoupled decay on matrices only; `lr` a rate
    or a function of the update count (lr_schedule)."""

    def __init__(self, torch, params, lr=3e-3, beta1=0.9, beta2=0.95, eps=1e-8, weight_decay=0.01):
        self.torch = torch
        self.params = params
        self.m = [torch.zeros_like(p).detach() for p in params]
        self.v = [torch.zeros_like(p).detach() for p in params]
        self.lr_at = lr if callable(lr) else (lambda t: lr)
        self.b1, self.b2, self.eps, self.wd = beta1, beta2, eps, weight_decay
        self.t = 0

    def step(self):
        torch = self.torch
        with torch.no_grad():
            self.t += 1
            bc1 = 1.0 - self.b1 ** self.t
            bc2 = 1.0 - self.b2 ** self.t
            lr = self.lr_at(self.t)
            for p, m, v in zip(self.params, self.m, self.v):
                g = p.grad
                if g is None:  # a parameter this step did not reach (none in gpt-tiny)
                    g = torch.zeros_like(p)
                # Through the data, as train/adamw.cpp: asynchronous training
                # (async_reference.py) updates a stage while backwards recorded
                # before it are pending, which a version bump would refuse.
                d = p.data
                if self.wd != 0 and d.dim() >= 2:
                    d.mul_(1.0 - lr * self.wd)
                m.mul_(self.b1).add_(g, alpha=1.0 - self.b1)
                v.mul_(self.b2).addcmul_(g, g, value=1.0 - self.b2)
                denom = (v / bc2).sqrt_().add_(self.eps)
                d.addcdiv_(m, denom, value=-lr / bc1)
                p.grad = None


# ---------------------------------------------------------------- the runs
def _f32(x: float) -> float:
    """The step's loss rounded to float, as rrfp reports it (StepRecord::loss)."""
    import struct
    return struct.unpack("f", struct.pack("f", x))[0]


def _batch(torch, sampler, n_seqs: int, T: int):
    w = T + 1
    raw = torch.frombuffer(bytearray(sampler.next(n_seqs)), dtype=torch.uint8).view(n_seqs, w).to(torch.int64)
    return raw[:, :T].contiguous(), raw[:, 1:].contiguous()


def run_plain(args, torch):
    """The plain loop, as rrfp's --executor plain (train/reference.cpp): every
    microbatch forward + backward of loss / M, then the optimizer."""
    params, bb = build_params(torch, args.d_model, args.layers, args.seq_len, 256, args.seed)
    model = make_stage_module(torch, args, params, bb, (0, args.layers), True, True)
    # rrfp --executor plain keeps one AdamW per model stage of --stages 1: one.
    opt = AdamW(torch, model.ordered_params(), lr=args.lr)
    sampler = Sampler(load_corpus(args), args.seq_len, args.seed ^ 0xDA7A)
    M, b, T = args.microbatches, args.micro_batch_size, args.seq_len
    steps = []
    for step in range(1, args.steps + 1):
        tok, tgt = _batch(torch, sampler, M * b, T)
        t0 = time.perf_counter()
        total = 0.0
        for m in range(M):
            loss = loss_fn(model(tok[m * b:(m + 1) * b]), tgt[m * b:(m + 1) * b])
            total += loss.item()
            (loss / M).backward()
        opt.step()
        dt = time.perf_counter() - t0
        steps.append({"step": step, "loss": _f32(total / M), "step_s": dt, "tokens_per_s": M * b * T / dt})
    return {"params": sum(p.numel() for _, p in params), "model_stages": 1, "steps": steps}


SCHEDULES = {
    # name: (class name, model stages per rank, placement)
    "gpipe": ("ScheduleGPipe", 1, "loop"),
    "1f1b": ("Schedule1F1B", 1, "loop"),
    # ZB1P of the zero-bubble paper; with one stage per rank it is ZB-H1's
    # shape (split backward, W filling the cool-down bubble).
    "zb-h1": ("ScheduleInterleavedZeroBubble", 1, "loop"),
    "zbv": ("ScheduleZBVZeroBubble", 2, "v"),
    # Any order from a compute-only CSV (--csv, e.g. `rrfp hints export`),
    # run by torch's runtime for such files (_PipelineScheduleRuntime._load_csv,
    # a private API), one model stage per rank.
    "csv": ("_PipelineScheduleRuntime", 1, "loop"),
}


def _skip_self_p2p(stage, rank: int):
    """Work around torch 2.11 + gloo for ZBV: before the first step every
    stage exchanges a dummy tensor with its neighbours
    (_get_init_p2p_neighbors_ops), also when the neighbour is on the same
    rank (model stages 1 and 2 of the V on rank 1), and gloo cannot send to
    its own rank ("Pair is not connected"). The schedule itself hands
    activations between stages of one rank locally, so dropping the self
    pairs of this warm-up exchange is all it takes."""
    orig = stage._get_init_p2p_neighbors_ops

    def ops():
        return [op for op in orig() if getattr(op, "group_peer", None) != rank]

    stage._get_init_p2p_neighbors_ops = ops


def run_pipe_rank(args, torch):
    import torch.distributed as dist
    from torch.distributed import pipelining as pp

    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    dist.init_process_group("gloo", rank=rank, world_size=world)
    cls_name, per_rank, placement = SCHEDULES[args.schedule]
    P = world * per_rank
    ranges = partition_blocks(args.layers, P)
    if placement == "v":  # rank r holds model stages r and 2W-1-r
        mine = [rank, 2 * world - 1 - rank]
    else:  # stage s on rank s mod W
        mine = [s for s in range(P) if s % world == rank]
    params, bb = build_params(torch, args.d_model, args.layers, args.seq_len, 256, args.seed)
    mods, stages = [], []
    for s in mine:
        mod = make_stage_module(torch, args, params, bb, ranges[s], s == 0, s == P - 1)
        mods.append(mod)
        st = pp.PipelineStage(mod, s, P, torch.device("cpu"))
        if placement == "v":
            _skip_self_p2p(st, rank)
        stages.append(st)
    from torch.distributed.pipelining import schedules as pp_sched
    cls = getattr(pp_sched, cls_name)
    M = args.microbatches
    if per_rank == 1 and cls_name in ("ScheduleGPipe", "Schedule1F1B"):
        sched = cls(stages[0], M, loss_fn=loss_fn)
    elif args.schedule == "csv":
        if not args.csv:
            raise SystemExit("--schedule csv needs --csv PATH")
        sched = cls(stages, M, loss_fn=loss_fn)
        sched._load_csv(args.csv)
    else:
        sched = cls(stages, M, loss_fn=loss_fn)
    opts = [AdamW(torch, m.ordered_params(), lr=args.lr) for m in mods]
    has_first, has_last = 0 in mine, (P - 1) in mine
    sampler = Sampler(load_corpus(args), args.seq_len, args.seed ^ 0xDA7A)
    b, T = args.micro_batch_size, args.seq_len
    steps = []
    for step in range(1, args.steps + 1):
        tok, tgt = _batch(torch, sampler, M * b, T)  # every rank draws, so all stay in step
        losses: list = []
        dist.barrier()
        t0 = time.perf_counter()
        sched.step(*([tok] if has_first else []), target=tgt if has_last else None,
                   losses=losses if has_last else None, return_outputs=False)
        for o in opts:
            o.step()
        dt = time.perf_counter() - t0
        red = torch.tensor([dt], dtype=torch.float64)
        dist.all_reduce(red, op=dist.ReduceOp.MAX)  # the step ends when its slowest rank does
        lo = torch.tensor([sum(float(x.detach()) for x in losses) / M if has_last else 0.0], dtype=torch.float64)
        dist.all_reduce(lo, op=dist.ReduceOp.SUM)
        st = float(red[0])
        steps.append({"step": step, "loss": _f32(float(lo[0])), "step_s": st, "tokens_per_s": M * b * T / st,
                      "rank_step_s": dt})
    dist.barrier()
    dist.destroy_process_group()
    return {"params": sum(p.numel() for _, p in params), "model_stages": P, "steps": steps,
            "schedule_class": cls_name, "stages_on_rank0": mine if rank == 0 else None}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch_pipe(args, argv) -> int:
    """Start one process per rank (this file with --rank), wait for all."""
    port = _free_port()
    procs = []
    for r in range(args.stages):
        env = dict(os.environ, RANK=str(r), WORLD_SIZE=str(args.stages), MASTER_ADDR="127.0.0.1",
                   MASTER_PORT=str(port), OMP_NUM_THREADS="1", GLOO_SOCKET_IFNAME="lo")
        procs.append(subprocess.Popen([sys.executable, __file__, *argv, "--rank-worker"], env=env))
    # A rank that fails leaves the others waiting on gloo: stop them.
    while True:
        codes = [p.poll() for p in procs]
        if any(c not in (None, 0) for c in codes):
            for p in procs:
                if p.poll() is None:
                    p.kill()
            for p in procs:
                p.wait()
            return next(c for c in codes if c not in (None, 0))
        if all(c == 0 for c in codes):
            return 0
        time.sleep(0.05)


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mode", choices=["plain", "pipe"], default="plain")
    ap.add_argument("--schedule", choices=sorted(SCHEDULES), default="1f1b")
    ap.add_argument("--stages", type=int, default=2, help="pipeline ranks (processes)")
    ap.add_argument("--microbatches", type=int, default=4)
    ap.add_argument("--micro-batch-size", type=int, default=4)
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--d-model", type=int, default=64)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--seq-len", type=int, default=64)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--corpus", default="", help="bytes to train on (default: rrfp's generated corpus)")
    ap.add_argument("--csv", default="", help="--schedule csv: the compute-only schedule file")
    ap.add_argument("--json", default="", help="write the run here (rank 0)")
    ap.add_argument("--quiet", action="store_true")
    ap.add_argument("--rank-worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.d_model % args.heads:
        raise SystemExit("--d-model must divide by --heads")
    if args.mode == "pipe" and not args.rank_worker:
        return launch_pipe(args, argv)

    os.environ.setdefault("OMP_NUM_THREADS", "1")
    import torch
    torch.set_num_threads(1)
    res = run_plain(args, torch) if args.mode == "plain" else run_pipe_rank(args, torch)
    if args.mode == "pipe" and int(os.environ["RANK"]) != 0:
        return 0
    res.update({"side": "torch", "torch": torch.__version__, "mode": args.mode,
                "schedule": args.schedule if args.mode == "pipe" else None,
                "stages": args.stages if args.mode == "pipe" else 0,
                "microbatches": args.microbatches, "micro_batch_size": args.micro_batch_size,
                "gpt": {"d_model": args.d_model, "heads": args.heads, "layers": args.layers,
                        "seq_len": args.seq_len}})
    if not args.quiet:
        for s in res["steps"]:
            print(f"step {s['step']:>4}  loss {s['loss']:.4f}  {s['tokens_per_s']:>8.0f} tok/s", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
