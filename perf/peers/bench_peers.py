"""rrfp train against torch.distributed.pipelining on gpt-tiny, same machine.

Every configuration (plain loop, S=1, S=2 with gpipe / 1f1b / zb-h1 / zbv,
M microbatches) is run once per round by each side, `rrfp train` and
gpt_torch.py (PyTorch), in an order that rotates from round to round; each
run trains --steps steps and the first --warmup are left out. Reports
steady-state tokens/s per configuration (median and min over rounds), the
rrfp / torch ratio, each side's S=2 / S=1, and both sides' first and last
losses. A benchmark, not a test: nothing about timing is asserted.

Usage: perf/peers/run.sh [options]     (makes the venv on first use)
"""
from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

SIZES = {
    "default": {"d_model": 64, "heads": 4, "layers": 4, "seq_len": 64},
    "large": {"d_model": 256, "heads": 4, "layers": 8, "seq_len": 128},
}
# name -> (stages, rrfp arguments, torch arguments, label)
CONFIGS = {
    "plain": (0, ["--executor", "plain", "--stages", "1"], ["--mode", "plain"], "plain loop"),
    "s1": (1, ["--stages", "1", "--hint", "1f1b"], ["--mode", "pipe", "--stages", "1", "--schedule", "1f1b"],
           "S=1 (1f1b)"),
    "gpipe": (2, ["--stages", "2", "--hint", "gpipe"], ["--mode", "pipe", "--stages", "2", "--schedule", "gpipe"],
              "S=2 gpipe"),
    "1f1b": (2, ["--stages", "2", "--hint", "1f1b"], ["--mode", "pipe", "--stages", "2", "--schedule", "1f1b"],
             "S=2 1f1b"),
    "zb-h1": (2, ["--stages", "2", "--hint", "zb-h1"], ["--mode", "pipe", "--stages", "2", "--schedule", "zb-h1"],
              "S=2 zb-h1"),
    "zbv": (2, ["--stages", "2", "--hint", "zbv"], ["--mode", "pipe", "--stages", "2", "--schedule", "zbv"],
            "S=2 zbv"),
    # Optional: torch runs rrfp's own ZB-H1 order (rrfp hints export) through
    # its CSV runtime, a private API; rrfp runs zb-h1 as in the zb-h1 row.
    "zb-h1-csv": (2, ["--stages", "2", "--hint", "zb-h1"], ["--mode", "pipe", "--stages", "2", "--schedule", "csv"],
                  "S=2 zb-h1, torch on rrfp's order"),
}
DEFAULT_CONFIGS = ["plain", "s1", "gpipe", "1f1b", "zb-h1", "zbv"]
SIDES = ("rrfp", "rrfp-mpi", "torch")
TORCH_CLASS = {"plain": "(plain loop)", "s1": "Schedule1F1B, 1 rank", "gpipe": "ScheduleGPipe",
               "1f1b": "Schedule1F1B", "zb-h1": "ScheduleInterleavedZeroBubble, 1 stage/rank",
               "zbv": "ScheduleZBVZeroBubble, 2 stages/rank (V)",
               "zb-h1-csv": "_PipelineScheduleRuntime + rrfp's CSV"}


def parse_args(argv):
    ap = argparse.ArgumentParser(
        description="Compare `rrfp train` with torch.distributed.pipelining on gpt-tiny (perf/peers/README.md).",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3, help="rounds; a round runs every configuration on each side")
    ap.add_argument("--steps", type=int, default=12, help="steps per run")
    ap.add_argument("--warmup", type=int, default=2, help="first steps of each run left out of tokens/s")
    ap.add_argument("--sizes", default="default", help="comma list of: " + ", ".join(SIZES))
    ap.add_argument("--configs", default=",".join(DEFAULT_CONFIGS), help="comma list of: " + ", ".join(CONFIGS))
    ap.add_argument("--microbatches", default="4,8", help="comma list of M (microbatches per step)")
    ap.add_argument("--micro-batch-size", type=int, default=4, help="sequences per microbatch")
    ap.add_argument("--sides", default="rrfp,torch",
                    help="comma list of: rrfp (one process, a StarPU worker per stage), rrfp-mpi (mpirun, one rank "
                         "per device, as torch's side runs), torch")
    ap.add_argument("--mpirun", default="mpirun", help="the launcher of the rrfp-mpi side")
    ap.add_argument("--quick", action="store_true",
                    help="one short round for a smoke test: --rounds 1 --steps 3 --warmup 1 --microbatches 4, "
                         "default size (options given explicitly override these)")
    ap.add_argument("--rrfp", default=os.path.join(ROOT, "build", "rrfp"), help="the rrfp binary")
    ap.add_argument("--rrfp-policy", default="",
                    help="STARPU_SCHED for rrfp's runs (empty: the environment's, else rrfp's default, rrfp)")
    ap.add_argument("--python", default=sys.executable, help="Python with torch for gpt_torch.py")
    ap.add_argument("--out", default=os.path.join(HERE, "out"), help="directory for the table, the JSON and the runs")
    ap.add_argument("--timeout", type=float, default=900, help="seconds before a run is killed")
    ap.add_argument("--check", action="store_true",
                    help="exit 1 unless every run succeeded and its losses are finite and fall (smoke test)")
    ap.add_argument("--quiet", action="store_true", help="no line per run")
    if "--quick" in argv:  # quick sets defaults; explicit options still win
        ap.set_defaults(rounds=1, steps=3, warmup=1, microbatches="4", sizes="default")
    a = ap.parse_args(argv)
    a.sizes = [s for s in a.sizes.split(",") if s]
    a.configs = [c for c in a.configs.split(",") if c]
    a.ms = [int(m) for m in a.microbatches.split(",") if m]
    a.sides = [s for s in a.sides.split(",") if s]
    for s in a.sizes:
        if s not in SIZES:
            ap.error(f"unknown size '{s}' (known: {', '.join(SIZES)})")
    for c in a.configs:
        if c not in CONFIGS:
            ap.error(f"unknown config '{c}' (known: {', '.join(CONFIGS)})")
    for s in a.sides:
        if s not in SIDES:
            ap.error(f"unknown side '{s}'")
    if a.rounds < 1 or a.steps < 1 or a.warmup < 0 or a.warmup >= a.steps:
        ap.error("need --rounds >= 1 and 0 <= --warmup < --steps")
    if any(m < 1 for m in a.ms) or a.micro_batch_size < 1:
        ap.error("--microbatches and --micro-batch-size must be positive")
    return a


def size_args(size: dict) -> list[str]:
    return ["--d-model", str(size["d_model"]), "--heads", str(size["heads"]), "--layers", str(size["layers"]),
            "--seq-len", str(size["seq_len"])]


def run_cmd(cmd, env, timeout, log_path):
    """Run in its own process group (torch's ranks are children); kill the
    group on a timeout. Returns (rc, wall seconds)."""
    t0 = time.perf_counter()
    with open(log_path, "w") as log:
        try:
            p = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        except OSError as e:
            log.write(f"cannot start {cmd[0]}: {e}\n")
            return "not started", time.perf_counter() - t0
        try:
            rc = p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            rc = "timeout"
    return rc, time.perf_counter() - t0


def one_run(a, side, size_name, cfg, M, rnd, csv_paths):
    size = SIZES[size_name]
    tag = f"{size_name}-{cfg}-M{M}-{side}-r{rnd}"
    jpath = os.path.join(a.out, "runs", tag + ".json")
    lpath = os.path.join(a.out, "runs", tag + ".log")
    if os.path.exists(jpath):
        os.remove(jpath)
    common = ["--microbatches", str(M), "--micro-batch-size", str(a.micro_batch_size), "--steps", str(a.steps)]
    common += size_args(size)
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    _, rr_args, t_args, _ = CONFIGS[cfg]
    if side in ("rrfp", "rrfp-mpi"):
        cmd = [a.rrfp, "train", *rr_args, *common, "--quiet", "--json", jpath]
        env.update(STARPU_WORKERS_NOBIND="1", STARPU_SILENT="1")
        if side == "rrfp-mpi":  # one rank per device, StarPU-MPI between them (rank 0 writes the JSON)
            cmd = [a.mpirun, "--oversubscribe", "-np", str(CONFIGS[cfg][0]), *cmd]
            env.update(OMPI_MCA_btl_vader_single_copy_mechanism="none", OMPI_ALLOW_RUN_AS_ROOT="1",
                       OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        if a.rrfp_policy:
            env["STARPU_SCHED"] = a.rrfp_policy
    else:
        cmd = [a.python, os.path.join(HERE, "gpt_torch.py"), *t_args, *common, "--quiet", "--json", jpath]
        if cfg == "zb-h1-csv":
            cmd += ["--csv", csv_paths[M]]
    rc, wall = run_cmd(cmd, env, a.timeout, lpath)
    rec = {"size": size_name, "config": cfg, "microbatches": M, "side": side, "round": rnd, "cmd": cmd,
           "wall_s": wall, "ok": False}
    if rc == 0 and os.path.exists(jpath):
        with open(jpath) as f:
            j = json.load(f)
        tokens = M * a.micro_batch_size * size["seq_len"]
        steps = [{"step": s["step"], "loss": s["loss"], "step_s": s["step_s"]} for s in j["steps"]]
        steady = steps[a.warmup:]
        t = sum(s["step_s"] for s in steady)
        rec.update(ok=True, steps=steps, tokens_per_step=tokens,
                   tokens_per_s=tokens * len(steady) / t if t > 0 else float("nan"),
                   first_loss=steps[0]["loss"], last_loss=steps[-1]["loss"])
        for k in ("policy", "model_stages", "params", "schedule_class", "torch"):
            if k in j:
                rec[k] = j[k]
    else:
        with open(lpath, errors="replace") as f:
            tail = f.read()[-2000:]
        rec["error"] = f"exit {rc}: " + tail.strip().splitlines()[-1] if tail.strip() else f"exit {rc}"
        rec["log"] = lpath
    return rec


def fmt_tps(xs):
    if not xs:
        return "n/a"
    return f"{statistics.median(xs):,.0f} ({min(xs):,.0f})"


def fmt_ratio(x):
    return "n/a" if x is None or not math.isfinite(x) else f"{x:.2f}"


def fmt_loss(r):
    if r is None:
        return "n/a"
    return f"{r['first_loss']:.4f} → {r['last_loss']:.4f}"


def summarize(a, runs):
    """Per (size, config, M): each side's tokens/s over rounds and losses."""
    rows = []
    for size_name in a.sizes:
        for cfg in a.configs:
            for M in a.ms:
                row = {"size": size_name, "config": cfg, "microbatches": M}
                for side in SIDES:
                    ok = [r for r in runs if r["size"] == size_name and r["config"] == cfg
                          and r["microbatches"] == M and r["side"] == side and r["ok"]]
                    bad = [r for r in runs if r["size"] == size_name and r["config"] == cfg
                           and r["microbatches"] == M and r["side"] == side and not r["ok"]]
                    xs = [r["tokens_per_s"] for r in ok]
                    row[side] = {"tokens_per_s": xs,
                                 "median": statistics.median(xs) if xs else None,
                                 "min": min(xs) if xs else None,
                                 "first_loss": ok[-1]["first_loss"] if ok else None,
                                 "last_loss": ok[-1]["last_loss"] if ok else None,
                                 "failed": len(bad), "error": bad[-1]["error"] if bad else None}
                rows.append(row)
    by = {(r["size"], r["config"], r["microbatches"]): r for r in rows}
    for r in rows:
        rr, tt, rm = r["rrfp"]["median"], r["torch"]["median"], r["rrfp-mpi"]["median"]
        r["rrfp_over_torch"] = rr / tt if rr and tt else None
        r["rrfp_mpi_over_torch"] = rm / tt if rm and tt else None
        s1 = by.get((r["size"], "s1", r["microbatches"]))
        for side in ("rrfp", "torch"):
            v = None
            if CONFIGS[r["config"]][0] == 2 and s1 and s1[side]["median"] and r[side]["median"]:
                v = r[side]["median"] / s1[side]["median"]
            r[side]["s2_over_s1"] = v
    return rows


def markdown(a, rows, meta):
    out = []
    for size_name in a.sizes:
        s = SIZES[size_name]
        out.append(f"gpt-tiny {size_name}: d_model {s['d_model']}, {s['layers']} layers, {s['heads']} heads, "
                   f"seq_len {s['seq_len']}, {a.micro_batch_size} sequences per microbatch; "
                   f"{a.rounds} round(s) x {a.steps} steps, first {a.warmup} left out; "
                   f"{meta['date']}, {meta['cpus']} CPUs; torch side {meta.get('torch_version', '?')}, "
                   f"rrfp on LibTorch {meta.get('rrfp_libtorch_version', '?')}")
        out.append("")
        out.append("| config | M | rrfp tok/s median (min) | torch tok/s median (min) | rrfp / torch "
                   "| rrfp S2/S1 | torch S2/S1 | rrfp loss first → last | torch loss first → last | torch class |")
        out.append("|---|---:|---:|---:|---:|---:|---:|---|---|---|")
        for r in rows:
            if r["size"] != size_name:
                continue
            rr, tt = r["rrfp"], r["torch"]
            cells = [CONFIGS[r["config"]][3], str(r["microbatches"]), fmt_tps(rr["tokens_per_s"]),
                     fmt_tps(tt["tokens_per_s"]), fmt_ratio(r["rrfp_over_torch"]),
                     fmt_ratio(rr["s2_over_s1"]) if CONFIGS[r["config"]][0] == 2 else "—",
                     fmt_ratio(tt["s2_over_s1"]) if CONFIGS[r["config"]][0] == 2 else "—",
                     fmt_loss(rr if rr["first_loss"] is not None else None),
                     fmt_loss(tt if tt["first_loss"] is not None else None), TORCH_CLASS[r["config"]]]
            out.append("| " + " | ".join(cells) + " |")
        out.append("")
    if "rrfp-mpi" in a.sides:  # the same process layout on both sides
        out.append("Same layout on both sides, one process per device (rrfp under mpirun, StarPU-MPI between ranks):")
        out.append("")
        out.append("| config | M | rrfp ranks tok/s median (min) | torch tok/s median (min) | rrfp ranks / torch "
                   "| rrfp ranks / rrfp one process | rrfp ranks loss first → last |")
        out.append("|---|---:|---:|---:|---:|---:|---|")
        for r in rows:
            if CONFIGS[r["config"]][0] != 2:
                continue
            rm, rr = r["rrfp-mpi"], r["rrfp"]
            one = rm["median"] / rr["median"] if rm["median"] and rr["median"] else None
            out.append("| " + " | ".join([f"{r['size']} {CONFIGS[r['config']][3]}", str(r["microbatches"]),
                                          fmt_tps(rm["tokens_per_s"]), fmt_tps(r["torch"]["tokens_per_s"]),
                                          fmt_ratio(r["rrfp_mpi_over_torch"]), fmt_ratio(one),
                                          fmt_loss(rm if rm["first_loss"] is not None else None)]) + " |")
        out.append("")
    fails = [(r, side) for r in rows for side in SIDES if r[side]["failed"]]
    for r, side in fails:
        out.append(f"- {side} {r['size']} {r['config']} M={r['microbatches']}: {r[side]['failed']} failed run(s): "
                   f"{r[side]['error']}")
    if fails:
        out.append("")
    return "\n".join(out)


def machine_meta(a):
    meta = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "cpus": os.cpu_count(), "host": platform.node(), "python": platform.python_version(),
            "loadavg_before": os.getloadavg()}
    try:
        with open("/proc/cpuinfo") as f:
            meta["cpu_model"] = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), "?")
    except OSError:
        pass
    if "torch" in a.sides:
        try:
            meta["torch_version"] = subprocess.run([a.python, "-c", "import torch; print(torch.__version__)"],
                                                   capture_output=True, text=True, timeout=120).stdout.strip()
        except (OSError, subprocess.TimeoutExpired):
            pass
    if "rrfp" in a.sides and shutil.which("ldd"):  # which LibTorch and BLAS rrfp runs on
        v = subprocess.run(["ldd", a.rrfp], capture_output=True, text=True)
        libs = [ln.split()[0] for ln in v.stdout.splitlines()
                if any(k in ln for k in ("torch_cpu", "blas", "mkl", "dnnl"))]
        meta["rrfp_libs"] = libs
    if shutil.which("dpkg-query"):
        v = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "libtorch-dev"], capture_output=True, text=True)
        if v.returncode == 0:
            meta["rrfp_libtorch_version"] = v.stdout.strip()
    return meta


def main(argv=None):
    a = parse_args(list(sys.argv[1:] if argv is None else argv))
    if any(s.startswith("rrfp") for s in a.sides) and not os.access(a.rrfp, os.X_OK):
        print(f"error: {a.rrfp} not found or not executable (cmake --build build, or --rrfp PATH)", file=sys.stderr)
        return 2
    os.makedirs(os.path.join(a.out, "runs"), exist_ok=True)
    if any(s.startswith("rrfp") for s in a.sides):
        # Every round runs the same binary, even if build/ is rebuilt meanwhile.
        snap = os.path.join(a.out, "rrfp")
        shutil.copy2(a.rrfp, snap + ".tmp")
        os.replace(snap + ".tmp", snap)
        a.rrfp_source, a.rrfp = a.rrfp, snap
    meta = machine_meta(a)
    csv_paths = {}
    if "zb-h1-csv" in a.configs and "torch" in a.sides:
        for M in a.ms:
            p = os.path.join(a.out, f"zb-h1-S2-M{M}.csv")
            with open(p, "w") as f:
                subprocess.run([a.rrfp, "hints", "export", "--hint", "zb-h1", "--stages", "2",
                                "--microbatches", str(M)], stdout=f, check=True)
            csv_paths[M] = p
    runs, size_wall = [], {}
    for size_name in a.sizes:
        plan = [(cfg, M, side) for cfg in a.configs for M in a.ms for side in a.sides
                if side != "rrfp-mpi" or CONFIGS[cfg][0] == 2]
        t_size = time.perf_counter()
        for rnd in range(a.rounds):
            k = (rnd * len(plan)) // a.rounds + rnd  # rotate: each round starts elsewhere, sides swap places
            order = plan[k % len(plan):] + plan[:k % len(plan)]
            t_round = time.perf_counter()
            for i, (cfg, M, side) in enumerate(order):
                rec = one_run(a, side, size_name, cfg, M, rnd + 1, csv_paths)
                rec["order_index"] = i
                runs.append(rec)
                if not a.quiet:
                    what = (f"{rec['tokens_per_s']:>9,.0f} tok/s  loss {rec['first_loss']:.4f} -> {rec['last_loss']:.4f}"
                            if rec["ok"] else "FAILED " + rec["error"])
                    print(f"[{size_name} round {rnd + 1}/{a.rounds}] {side:8} {cfg:9} M={M:<2}  {what}  "
                          f"({rec['wall_s']:.1f} s)", flush=True)
            size_wall.setdefault(size_name, []).append(time.perf_counter() - t_round)
        size_wall[size_name + "_total"] = time.perf_counter() - t_size
    meta["round_wall_s"] = {s: size_wall[s] for s in a.sizes}
    meta["loadavg_after"] = os.getloadavg()
    rows = summarize(a, runs)
    md = markdown(a, rows, meta)
    for s in a.sizes:
        md += f"\nOne round of {s}: " + ", ".join(f"{x:.0f} s" for x in size_wall[s])
    md += "\n"
    opts = {k: getattr(a, k) for k in ("rounds", "steps", "warmup", "sizes", "configs", "ms", "micro_batch_size",
                                       "sides", "rrfp", "rrfp_policy", "python")}
    opts["rrfp_source"] = getattr(a, "rrfp_source", None)
    with open(os.path.join(a.out, "peers.json"), "w") as f:
        json.dump({"meta": meta, "options": opts, "sizes": {s: SIZES[s] for s in a.sizes}, "summary": rows,
                   "runs": runs}, f, indent=1)
    with open(os.path.join(a.out, "peers.md"), "w") as f:
        f.write(md)
    print()
    print(md)
    print(f"wrote {os.path.join(a.out, 'peers.md')} and {os.path.join(a.out, 'peers.json')}")
    if a.check:
        bad = []
        for r in runs:
            if not r["ok"]:
                bad.append(f"{r['side']} {r['config']} M={r['microbatches']}: {r['error']}")
                continue
            ls = [s["loss"] for s in r["steps"]]
            if not all(math.isfinite(x) for x in ls):
                bad.append(f"{r['side']} {r['config']} M={r['microbatches']}: non-finite loss {ls}")
            elif len(ls) > 1 and not ls[-1] < ls[0]:
                bad.append(f"{r['side']} {r['config']} M={r['microbatches']}: loss did not fall {ls}")
        if bad:
            print("check failed:\n  " + "\n  ".join(bad), file=sys.stderr)
            return 1
        print(f"check: {len(runs)} runs, every loss finite and falling")
    return 0


if __name__ == "__main__":
    sys.exit(main())
