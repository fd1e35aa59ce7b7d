#!/usr/bin/env bash
# The GPU device check (docs/gpu.md, perf/RESULTS.md).
#   perf/gpu_check.sh pack DIR [BUILD]  here: a stripped copy of the StarPU
#                                     prefix and the libraries a GPU machine
#                                     may lack (hwloc, FxT); with a CUDA build
#                                     (BUILD, default build-cuda) also its
#                                     rrfp and the shared libraries it loads
#                                     that are neither glibc's nor CUDA's nor
#                                     torch's (those come from the GPU machine)
#   perf/gpu_check.sh run OUT [DIR]   on the GPU machine (no network): builds
#                                     perf/gpu_check against its python3's torch
#                                     and DIR (default build-carry/starpu), runs
#                                     it, then, when DIR has rrfp, the GPU tests
#                                     (tests/gpu/bench_cuda.sh, train_cuda.sh)
#                                     with it; prints the table, logs under OUT.
# PYTHON picks the interpreter with torch (default python3). Exit 77: no GPU.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
mode=${1:-}
case $mode in
  pack)
    dir=${2:?usage: perf/gpu_check.sh pack DIR [BUILD]}
    build=${3:-$here/../build-cuda}
    prefix=${RRFP_STARPU_PREFIX:-/opt/rrfp/starpu-1.4.10}
    rm -rf "$dir" && mkdir -p "$dir/lib"
    cp -a "$prefix/include" "$dir/"
    cp -a "$prefix"/lib/libstarpu-1.4.so* "$prefix"/lib/libstarpumpi-1.4.so* "$dir/lib/"
    for l in libhwloc.so.15 libfxt.so.2; do
      cp -L "$(ldconfig -p | awk -v l="$l" '$1 == l {print $NF; exit}')" "$dir/lib/$l"
    done
    # starpu.h includes hwloc.h: the GPU machine has no hwloc headers.
    mkdir -p "$dir/include/hwloc-headers" && cp -a /usr/include/hwloc.h /usr/include/hwloc "$dir/include/hwloc-headers/"
    if [ -x "$build/rrfp" ]; then
      cp "$build/rrfp" "$dir/rrfp"
      # Everything rrfp loads except glibc, the compiler's runtime, the GPU
      # driver, the CUDA toolkit and torch's wheel (the GPU machine has those).
      ldd "$build/rrfp" | awk '$3 ~ /^\// {print $1, $3}' | while read -r name path; do
        case $name in
          libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*|ld-linux*|libgcc_s.so*|libstdc++.so*|libcuda.so*) continue ;;
        esac
        case $path in
          /opt/rrfp/torch-cuda/*|/usr/local/cuda*|*/nvidia/*) continue ;;
        esac
        [ -e "$dir/lib/$name" ] || cp -L "$path" "$dir/lib/$name"
      done
      strip --strip-unneeded "$dir/rrfp" 2>/dev/null || true
    fi
    strip --strip-unneeded "$dir"/lib/*.so* 2>/dev/null || true
    echo "gpu_check: carried StarPU$([ -x "$dir/rrfp" ] && echo ' and rrfp') in $dir ($(du -sh "$dir" | cut -f1))"
    ;;
  run)
    out=${2:?usage: perf/gpu_check.sh run OUT [STARPU_DIR]}
    carry=$(cd "${3:-$here/../build-carry/starpu}" && pwd)
    mkdir -p "$out"
    out=$(cd "$out" && pwd)
    start=$(date +%s)
    py=${PYTHON:-python3}
    cmake -S "$here/gpu_check" -B "$out/build" -DSTARPU_PREFIX="$carry" \
      -DPython3_EXECUTABLE="$(command -v "$py")" >"$out/configure.log" 2>&1 || { tail -20 "$out/configure.log"; exit 1; }
    cmake --build "$out/build" -j"$(nproc)" >"$out/build.log" 2>&1 || { tail -30 "$out/build.log"; exit 1; }
    torch_lib=$("$py" -c "import torch, os; print(os.path.join(os.path.dirname(torch.__file__), 'lib'))")
    # The wheel's CUDA libraries (cudart, cublas, nccl, ...) for the carried rrfp and StarPU.
    nv=$(ls -d "$torch_lib"/../../nvidia/*/lib 2>/dev/null | tr '\n' ':')
    export STARPU_HOME="$out/starpu-home" STARPU_SILENT=1 LD_LIBRARY_PATH="$carry/lib:$torch_lib:$nv${LD_LIBRARY_PATH:-}"
    set +e
    "$out/build/rrfp_gpu_check" 2>&1 | tee "$out/gpu_check.log"
    rc=${PIPESTATUS[0]}
    if [ "$rc" = 0 ] && [ -x "$carry/rrfp" ]; then
      if ! ldd "$carry/rrfp" >"$out/rrfp_ldd.log" 2>&1 || grep -q "not found" "$out/rrfp_ldd.log"; then
        echo "gpu_check: the carried rrfp cannot load here (see rrfp_ldd.log)" | tee -a "$out/gpu_check.log"
        grep "not found" "$out/rrfp_ldd.log" | tee -a "$out/gpu_check.log"
        rc=1
      else
        for t in bench_cuda train_cuda; do
          echo "== tests/gpu/$t.sh" | tee -a "$out/gpu_check.log"
          "$here/../tests/gpu/$t.sh" "$carry/rrfp" 2>&1 | tee "$out/$t.log" | tail -12 | tee -a "$out/gpu_check.log"
          [ "${PIPESTATUS[0]}" = 0 ] || rc=1
        done
      fi
    fi
    set -e
    echo "gpu_check: exit $rc after $(( $(date +%s) - start )) s; logs in $out" | tee -a "$out/gpu_check.log"
    exit "$rc"
    ;;
  *) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
