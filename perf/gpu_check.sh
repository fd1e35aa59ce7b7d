#!/usr/bin/env bash
# The GPU device check (docs/gpu.md, perf/RESULTS.md).
#   perf/gpu_check.sh pack DIR        here: a stripped copy of the StarPU prefix
#                                     and the libraries it needs that a GPU
#                                     machine may lack (hwloc, FxT), ~20 MB
#   perf/gpu_check.sh run OUT [DIR]   on the GPU machine (no network): builds
#                                     perf/gpu_check against its python3's torch
#                                     and DIR (default build-carry/starpu), runs
#                                     it, prints the table, logs under OUT.
# PYTHON picks the interpreter with torch (default python3). Exit 77: no GPU.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
mode=${1:-}
case $mode in
  pack)
    dir=${2:?usage: perf/gpu_check.sh pack DIR}
    prefix=${RRFP_STARPU_PREFIX:-/opt/rrfp/starpu-1.4.10}
    rm -rf "$dir" && mkdir -p "$dir/lib"
    cp -a "$prefix/include" "$dir/"
    cp -a "$prefix"/lib/libstarpu-1.4.so* "$dir/lib/"
    for l in libhwloc.so.15 libfxt.so.2; do
      cp -L "$(ldconfig -p | awk -v l="$l" '$1 == l {print $NF; exit}')" "$dir/lib/$l"
    done
    strip --strip-unneeded "$dir"/lib/*.so* 2>/dev/null || true
    echo "gpu_check: carried StarPU in $dir ($(du -sh "$dir" | cut -f1))"
    ;;
  run)
    out=${2:?usage: perf/gpu_check.sh run OUT [STARPU_DIR]}
    carry=${3:-$here/../build-carry/starpu}
    mkdir -p "$out"
    start=$(date +%s)
    py=${PYTHON:-python3}
    cmake -S "$here/gpu_check" -B "$out/build" -DSTARPU_PREFIX="$(cd "$carry" && pwd)" \
      -DPython3_EXECUTABLE="$(command -v "$py")" >"$out/configure.log" 2>&1 || { tail -20 "$out/configure.log"; exit 1; }
    cmake --build "$out/build" -j"$(nproc)" >"$out/build.log" 2>&1 || { tail -30 "$out/build.log"; exit 1; }
    torch_lib=$("$py" -c "import torch, os; print(os.path.join(os.path.dirname(torch.__file__), 'lib'))")
    set +e
    STARPU_HOME="$out/starpu-home" STARPU_SILENT=1 LD_LIBRARY_PATH="$carry/lib:$torch_lib:${LD_LIBRARY_PATH:-}" \
      "$out/build/rrfp_gpu_check" 2>&1 | tee "$out/gpu_check.log"
    rc=${PIPESTATUS[0]}
    set -e
    echo "gpu_check: exit $rc after $(( $(date +%s) - start )) s; logs in $out" | tee -a "$out/gpu_check.log"
    exit "$rc"
    ;;
  *) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
