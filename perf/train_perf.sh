#!/bin/bash
# Issue 4's training ratios (perf/RESULTS.md): S=1 runtime vs the plain
# LibTorch loop, S=2 vs S=1 tokens/s, 1F1B vs GPipe stage-0 activation peak.
# Usage: perf/train_perf.sh [build dir] [rounds]
#
# The ratios come from perf/bench_train_ab, which trains every configuration
# in one process, one step of each per round, and takes each ratio within a
# round: this VM's two vCPUs change speed within seconds (see RESULTS.md), so
# whole runs one after the other would compare different machines. It runs
# twice: M=8 microbatches of 4 sequences, and the same 32 sequences as 16
# microbatches of 2 (S=1 also measured with 8x4, so the split is not what
# makes S=1 slower). Around it the machine's own parallel capacity is
# measured (two CPU-bound processes at once against one alone; 2.00 = two
# free cores) with each CPU's speed alone, and the CPU that other users'
# niced processes took during the runs.
set -euo pipefail
BUILD=${1:-build}
ROUNDS=${2:-16}
AB=$BUILD/perf/bench_train_ab
[ -x "$AB" ] || { echo "error: $AB not found (cmake --build $BUILD --target bench_train_ab)" >&2; exit 2; }
capacity() {
  python3 - <<'PY'
import subprocess, sys, time
spin = [sys.executable, "-c", "x=0\nfor i in range(4_000_000): x+=i*i"]
def wall(n):
    t = time.time(); ps = [subprocess.Popen(spin) for _ in range(n)]
    for p in ps: p.wait()
    return time.time() - t
one = min(wall(1) for _ in range(2)); two = wall(2)
try:  # each CPU alone (taskset): a CPU whose host core is shared runs slower
    per = []
    for c in range(2):
        t = time.time(); subprocess.run(["taskset", "-c", str(c)] + spin, check=True); per.append(time.time() - t)
    speeds = "/".join(f"{min(per) / x:.2f}" for x in per)
except Exception:
    speeds = "?"
print(f"{2 * one / two:.2f} cores (per-CPU speed {speeds})")
PY
}
echo "date: $(date -u '+%F %H:%M UTC'), load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "machine parallel capacity before: $(capacity)"
NICE0=$(awk '/^cpu /{print $3}' /proc/stat); T0=$(date +%s.%N)
echo
"$AB" --rounds "$ROUNDS" --s2-hints 1f1b,zb-h1 --quiet
echo
"$AB" --rounds "$ROUNDS" --microbatches 16 --micro-batch-size 2 --s1-also 8x4 --s2-hints 1f1b,zb-h1 --quiet
echo
NICE1=$(awk '/^cpu /{print $3}' /proc/stat); T1=$(date +%s.%N)
python3 -c "import os; print(f'other users\' niced CPU during the runs: {($NICE1 - $NICE0) / os.sysconf(\"SC_CLK_TCK\") / ($T1 - $T0):.2f} cores')"
echo "machine parallel capacity after: $(capacity)"
