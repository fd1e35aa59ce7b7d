#!/usr/bin/env bash
# Builds the tests with a sanitizer and runs the subset that build is for
# (README, "Building it yourself"): address = ASan + UBSan on the core, runtime,
# simulator, CSV, training-pass, BLAS, data-flow and policy-API suites;
# thread = TSan on the policies, the submitter, tensor parallelism and the
# training passes. Usage: scripts/sanitize.sh address|thread
set -euo pipefail
cd "$(dirname "$0")/.."
kind=${1:?usage: scripts/sanitize.sh address|thread}
export STARPU_WORKERS_NOBIND=1 STARPU_SILENT=1
# Line tables only (-g1): enough for file:line in every sanitizer report,
# and it halves the compile time of the LibTorch-heavy files. TSan at -O2,
# as the main build; ASan+UBSan at -O1, the level ASan's documentation
# suggests, which compiles those files in 0.6x the time of -O2.
flags=(-DRRFP_BUILD_PERF=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo)
case $kind in
  address)
    cmake -S . -B build-asan -DRRFP_SANITIZE=address "${flags[@]}" "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG"
    cmake --build build-asan -j"$(nproc)" --target rrfp_core_tests rrfp_runtime_tests rrfp_train_tests rrfp_cli_tests rrfp_cli
    # Leak detection is off: StarPU, fontconfig and dlopen'd libraries leak at exit.
    ASAN_OPTIONS=detect_leaks=0 ctest --test-dir build-asan --output-on-failure -j"$(nproc)" \
      -R 'Arbiter|Simulator|Csv|Graph|Zoo|Validator|Generators|Runtime|CostModel|Plot|CliSim|CliTopo|LinearTape|TrainGrad|Blas|DataFlow|SchedApi|EdgeOrder|BoundedWait|DurationTrace|TrainSeqLen|Tuner|GreedySchedule|TrainPartition|CliTune|TrainAsync|TrainAmdp|TrainEval|TrainLrSchedule|TrainClip|TrainTensorParallel.Clips|AsyncModel|DecisionCheck|MemoryBudget|MirrorPlan|Replicate|TrainDataParallel|TuneDataParallel|TuneTensorParallel|TrainTensorParallelMm'
    ;;
  thread)
    cmake -S . -B build-tsan -DRRFP_SANITIZE=thread "${flags[@]}" "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG"
    cmake --build build-tsan -j"$(nproc)" --target rrfp_runtime_tests rrfp_train_tests
    # StarPU and LibTorch are not instrumented: tests/tsan.supp suppresses three hand-offs inside them TSan cannot see.
    export TSAN_OPTIONS="suppressions=$PWD/tests/tsan.supp halt_on_error=1"
    # oneDNN (LibTorch's GELU) is not instrumented either: when two workers
    # create a primitive for a new shape at once (--seq-len-dist), its shared
    # primitive cache hands keys between them in ways TSan reports as races
    # inside libdnnl (CI, 2026-12-06; 2 runs in 6 locally). Each thread then
    # creates its own primitives; everything of ours stays instrumented.
    export ONEDNN_PRIMITIVE_CACHE_CAPACITY=0
    build-tsan/tests/rrfp_runtime_tests \
      --gtest_filter='RuntimePolicies.*:RuntimeBehaviour.*:RuntimeErrors.*:TensorParallel.*:TpComm.*:DataFlow.*:SchedApi.*:RuntimeAsync.*:RuntimeAsyncDataParallel.*:RuntimeAmdp.*:RuntimeSimAgreement.*:RuntimeMemoryBudget.*:RuntimeCuda.Cpu*:RuntimeCuda.CudaWorkers*'
    build-tsan/tests/rrfp_train_tests \
      --gtest_filter='TrainTensorParallel.Grad*:TrainTensorParallelMm.Grad*:TrainTensorParallel.Clips*:TrainTensorParallel.VariableLength*:TrainClip.Async*:LinearTape.*:TrainLoop.OptimizerStep*:TrainGrad.EveryHintMatchesReferenceUnderRrfp:TrainGrad.Deterministic*:TrainSeqLen.*:TrainPartition.*:TrainAsync.*:TrainAsyncDataParallel.*:TrainAmdp.*:TrainDataParallel.Multimodal*'
    ;;
  *) echo "usage: scripts/sanitize.sh address|thread" >&2; exit 2 ;;
esac
