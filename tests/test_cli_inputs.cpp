// Bad input gets a clear error, before the work when it can be known then:
// non-finite numbers, outputs that cannot be written (a full disk, a
// missing directory), windows whose microbatch count would overflow, a
// diverged loss, a plan with flags it fixes, unknown tuner schedules, a
// resume that would train nothing. Found by an audit of the command line.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <string>

#include "cli_run.hpp"

namespace {

const std::string kTrain = "train --d-model 16 --heads 2 --seq-len 8 --micro-batch-size 1 --layers 2 --quiet ";

// A refusal: exit 1 or 2, a message naming the problem, no signal.
void expect_refused(const std::string& args, const std::string& message) {
  auto r = run_cli(args);
  EXPECT_TRUE(r.code == 1 || r.code == 2) << args << " exited " << r.code << "\n" << r.out;
  EXPECT_NE(r.out.find(message), std::string::npos) << args << "\n" << r.out;
}

TEST(CliInputs, NonFiniteNumbersAreRefusedByEveryCommand) {
  expect_refused("sim --bandwidth-gbps nan", "--bandwidth-gbps: 'nan' is not a finite number");
  expect_refused("sim --unit-ms inf", "--unit-ms: 'inf' is not a finite number");
  expect_refused(kTrain + "--steps 1 --lr inf", "--lr: 'inf' is not a finite number");
  expect_refused("sim async --update-ms -inf", "not a finite number");
  expect_refused(kTrain + "--steps 1 --lr-decay cosine --min-lr nan", "--min-lr: 'nan' is not a finite number");
}

TEST(CliInputs, AFailedReportWriteIsAnError) {
  // /dev/full takes the open and fails the write: a full disk.
  expect_refused("sim --json /dev/full", "cannot write '/dev/full'");
  expect_refused("bench --hint 1f1b --stages 2 --microbatches 2 --unit-ms 0.1 --json /dev/full",
                 "cannot write '/dev/full'");
  expect_refused("topo --json /dev/full", "cannot write '/dev/full'");
}

TEST(CliInputs, AnOutputDirectoryThatDoesNotExistStopsTrainingBeforeItStarts) {
  const auto t0 = std::chrono::steady_clock::now();
  expect_refused(kTrain + "--steps 200 --json /nonexistent-rrfp/x.json", "directory '/nonexistent-rrfp' does not exist");
  expect_refused(kTrain + "--steps 200 --trace /nonexistent-rrfp/t.json", "--trace");
  // 200 steps take seconds; a refusal before the first takes none of them.
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 20.0);
}

TEST(CliInputs, AWindowWhoseMicrobatchesWouldOverflowIsRefused) {
  expect_refused("hints show --async paci --accumulate 65536 --window 65537", "over the limit");
  expect_refused("sim async --accumulate 1000000 --window 1000000", "over the limit");
}

// Flags of another form, refused instead of ignored; links too slow for a
// plan file; more profiling devices than layers (found by a review).
TEST(CliInputs, AsyncFlagsOfTheOtherFormSlowLinksAndSpareDevicesAreRefused) {
  expect_refused("hints show --async paci --microbatches 8", "drop --microbatches");
  expect_refused("hints show --async amdp --stages 4 --split", "drop --split");
  expect_refused("hints show --async paci --directions 4", "--directions is for --async amdp");
  expect_refused("hints show --hint 1f1b --accumulate 2", "--accumulate needs --async");
  expect_refused("sim async --method paci --directions 4", "--directions is for --method amdp");
  expect_refused("sim async --method amdp --data-parallel 2", "--data-parallel is for --method paci");
  expect_refused("sim async --data-parallel 0", "PACI needs --data-parallel of at least 1");
  expect_refused("sim async --data-parallel 2 --mirror-reduce after-graph", "is a synchronous step's exchange");
  expect_refused(kTrain + "--steps 1 --stages 4 --async amdp --hint 1f1b", "does not accept the hint '1f1b'");
  expect_refused(kTrain + "--steps 2 --min-lr 1e-4", "--min-lr applies to --lr-decay cosine or linear");
  expect_refused(kTrain + "--steps 2 --lr-decay-steps 4", "--lr-decay-steps applies to --lr-decay cosine or linear");
  expect_refused(kTrain + "--steps 2 --lr-decay linear --lr-decay-steps -1", "--lr-decay-steps must be at least 1");
  expect_refused(kTrain + "--steps 2 --clip-grad -0.5", "--clip-grad -0.5 must be a norm >= 0");
  expect_refused(kTrain + "--steps 2 --clip-grad nan", "--clip-grad: 'nan' is not a finite number");
  expect_refused("sim --hint 1f1b --stages 2 --bandwidth-gbps 1e-30", "must be 0 (infinite) or from 1e-06");
  expect_refused("profile --d-model 16 --heads 2 --seq-len 8 --layers 2 --devices 5 -o " + ::testing::TempDir() +
                     "p.json",
                 "--devices 5 is more than the model's 4 layers");
  expect_refused("sim sweep --hint zb-h1 --param bandwidth --values 0.01,1", "--param bandwidth needs --message-mb");
  expect_refused("sim sweep --hint zb-h1 --param link-jitter --values 0,0.5", "--param link-jitter needs --link-ms");
  expect_refused("sim sweep --hint zb-h1 --values 0.1,,0.2", "has an empty item");
  expect_refused("sim --cost F=0,B=0,W=0", "every pass costs 0");
  // A swept bandwidth with a message size needs no --bandwidth-gbps of its
  // own, and takes the flag's range: 0 is infinite, 1e-30 is refused.
  EXPECT_EQ(run_cli("sim sweep --hint 1f1b --stages 2 --microbatches 4 --param bandwidth --values 0,1,10 --message-mb 1 "
                    "--seeds 1")
                .code,
            0);
  expect_refused("sim sweep --hint 1f1b --stages 2 --param bandwidth --values 1e-30 --message-mb 1",
                 "--param bandwidth value 1e-30 must be 0 (infinite) or from 1e-06");
  // Values that computed inf or picked one of two silently (fuzzing review).
  expect_refused("sim --hint 1f1b --cost F=1,F=2", "--cost F=1,F=2: F is given twice");
  expect_refused("sim --hint 1f1b --cost B=1,I=2", "B is given twice");
  expect_refused("bench --hint 1f1b --unit-ms 1e-320", "--unit-ms 1e-320 must be at least 1e-06");
  expect_refused("sim --hint 1f1b --act-mb 1e308", "at most 1e12 MB");
  expect_refused("sim --hint 1f1b --weight-mb -1", "--weight-mb must not be negative");
}

TEST(CliInputs, ADivergedLossStopsTheRunWithoutACheckpoint) {
  const std::string dir = ::testing::TempDir() + "rrfp_diverged_ckpt";
  std::filesystem::remove_all(dir);
  auto r = run_cli(kTrain + "--steps 3 --lr 1e10 --checkpoint " + dir);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("the run diverged"), std::string::npos) << r.out;
  EXPECT_FALSE(std::filesystem::exists(dir + "/checkpoint.rrfp"));  // the last good one would have stayed
}

TEST(CliInputs, AResumeThatWouldTrainNothingSaysSo) {
  const std::string dir = ::testing::TempDir() + "rrfp_resume_nothing";
  std::filesystem::remove_all(dir);
  ASSERT_EQ(run_cli(kTrain + "--steps 3 --checkpoint " + dir).code, 0);
  expect_refused(kTrain + "--steps 2 --checkpoint " + dir + " --resume", "is at step 3; --steps 2 trains nothing more");
  // A fresh run never replaces a run's saved state.
  expect_refused(kTrain + "--steps 1 --checkpoint " + dir, "already holds a checkpoint: --resume continues it");
  std::filesystem::remove_all(dir);
}

TEST(CliInputs, UnknownTunerSchedulesAndPlanFlagsAreRefused) {
  const std::string prof = ::testing::TempDir() + "rrfp_inputs_profile.json";
  ASSERT_EQ(run_cli("profile --layers 2 --d-model 16 --heads 2 --seq-len 8 --repetitions 1 -o " + prof).code, 0);
  const std::string out = " -o " + ::testing::TempDir() + "rrfp_inputs_plan.json";
  expect_refused("tune --profile " + prof + " --schedules gpipe,typo" + out, "unknown schedule 'typo'");
  expect_refused("tune --profile " + prof + " --max-moves -1" + out, "--max-moves must not be negative");
  // A plan fixes the hint and its dimensions; its partition must cover the model.
  const std::string plan = ::testing::TempDir() + "rrfp_inputs_plan.json";
  ASSERT_EQ(run_cli("tune --profile " + prof + " --quiet -o " + plan).code, 0);
  expect_refused("sim --plan " + plan + " --stages 4", "--plan fixes the schedule");
  expect_refused("sim --plan " + plan + " --variability lognormal:0.5", "drop --variability");
  expect_refused("bench --hint 1f1b --stages 2 --microbatches 2 --inflight-slack -5", "--inflight-slack");
  expect_refused("profile --model gpt-small -o x.json", "--model");
}

TEST(CliInputs, AnUnknownCommandIsNamed) {
  expect_refused("foo", "unknown command 'foo' (known here: hints, bench");
  expect_refused("hints foo", "unknown command 'foo' (known here: list, show");
  EXPECT_EQ(run_cli("hints list").code, 0);
  EXPECT_EQ(run_cli("sim compare --hints 1f1b --stages 2 --microbatches 2").code, 0);
}

TEST(CliInputs, SimCompareTakesACsvHintsOwnSizes) {
  const std::string csv = ::testing::TempDir() + "rrfp_inputs_1f1b.csv";
  ASSERT_EQ(run_cli("hints export --hint 1f1b --stages 2 --microbatches 2 > " + csv).code, 0);
  auto r = run_cli("sim compare --hints csv:" + csv);  // alone, at its own size, which the header says
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out.rfind("p=2 m=2 ", 0), 0u) << r.out;
  r = run_cli("sim compare --hints 1f1b,csv:" + csv + " --stages 2 --microbatches 2");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("csv:"), std::string::npos) << r.out;
  // Beside 1f1b at the defaults (4 x 8) it would be ranked at another size.
  expect_refused("sim compare --hints 1f1b,csv:" + csv, "ranks hints of one size: '1f1b' runs 4 devices x 8");
  expect_refused("sim compare --hints csv:" + csv + " --stages 4", "--stages 4");
}

}  // namespace

namespace {

// CLI11 would wrap -1 into an unsigned flag, an empty text would read as
// "not given", and --waves 0 as the default.
TEST(CliInputs, NegativeUnsignedEmptyTextAndZeroWavesAreRefused) {
  expect_refused("sim --seed -1", "'-1' is negative");
  expect_refused("bench --hint 1f1b --stages 2 --microbatches 2 --seed -5", "'-5' is negative");
  expect_refused("sim --json ''", "--json: an empty value");
  expect_refused("hints show --hint ''", "an empty value");
  expect_refused("sim --hint hanayo --stages 2 --waves 0", "--waves");
  expect_refused("hints show --hint hanayo --stages 2 --waves 0", "--waves");
}

// Parse errors take the form and exit code of every other refusal.
TEST(CliInputs, ParseErrorsAreRrfpErrorsWithExitTwo) {
  for (const std::string args : {"train --stages abc", "train --no-such-flag", "sim sweep --values", ""}) {
    auto r = run_cli(args);
    EXPECT_EQ(r.code, 2) << args << "\n" << r.out;
    EXPECT_EQ(r.out.rfind("rrfp: error: ", 0), 0u) << args << "\n" << r.out;
  }
  EXPECT_NE(run_cli("sim sweep --values").out.find("(rrfp sim sweep --help lists the flags)"), std::string::npos);
  EXPECT_EQ(run_cli("train --help").code, 0);
  EXPECT_EQ(run_cli("sim compare --stages 4 --microbatches 8 --waves 2").code, 0);  // hanayo's, among the others
  expect_refused("hints show --hint hanayo --stages 2 --waves 0", "not in range 1 to 64");
}

// Flags a command would otherwise ignore, found by a user's review.
TEST(CliInputs, FlagsThatWouldBeIgnoredAreRefused) {
  expect_refused(kTrain + "--steps 1 --batch-size 0", "--batch-size must be at least 1, got 0");
  expect_refused(kTrain + "--steps 1 --batch-size 8", "drop --micro-batch-size");
  expect_refused(kTrain + "--steps 1 --executor plain --trace /tmp/rrfp_plain_trace.json", "the plain loop");
  expect_refused("sim sweep --hint 1f1b --policy rrfp-fixed", "--policy rrfp or rrfp-wait, not 'rrfp-fixed'");
  expect_refused("hints show --hint gpipe --stages 2 --waves 2", "--waves applies to hint 'hanayo', not 'gpipe'");
  expect_refused("bench --hint 1f1b --stages 2 --microbatches 2 --devices-per-rank 2", "launch 2 or more ranks with mpirun or srun");
  expect_refused(kTrain + "--steps 1 --devices-per-rank 2", "launch 2 or more ranks with mpirun or srun");
  expect_refused(kTrain + "--steps 1 --mirror-reduce after-graph", "--mirror-reduce applies under mpirun/srun");
  const std::string trace = std::string(RRFP_SOURCE_DIR) + "/perf/traces/mm-tiny_1f1b.json";
  expect_refused("sim --durations " + trace + " --cost F=3 --stages 2 --microbatches 4", "drop --cost");
  expect_refused("bench --durations " + trace + " --unit-ms 2 --stages 2 --microbatches 4 --hint 1f1b",
                 "drop --unit-ms");
}

// A picture that cannot be written leaves nothing behind, not an empty or
// half file: a file size limit (ulimit -f, its signal ignored) makes the
// write fail the way a full disk does.
TEST(CliInputs, AFailedPictureLeavesNoFile) {
  const std::string png = ::testing::TempDir() + "rrfp_failed_picture.png";
  std::filesystem::remove(png);
  const std::string args = "sim --hint 1f1b --stages 2 --microbatches 4 --png " + png;
  auto r = run_cli(args, "trap '' XFSZ; ulimit -f 2;");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("cannot write '" + png + "'"), std::string::npos) << r.out;
  EXPECT_FALSE(std::filesystem::exists(png));
  EXPECT_FALSE(std::filesystem::exists(png + ".tmp"));
  r = run_cli(args);  // without the limit: written, under its own name only
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_GT(std::filesystem::file_size(png), 2048u);
  EXPECT_FALSE(std::filesystem::exists(png + ".tmp"));
  std::filesystem::remove(png);
}

// Found by an adversarial review (2026-12-05): each used to abort with a
// core dump, print inf and exit 0, or be taken silently.
TEST(CliInputs, OverflowsAndBrokenEnvironmentsAreRefused) {
  expect_refused("sim --hint 1f1b --stages 2 --microbatches 4 --unit-ms 1e308", "over an hour");
  expect_refused("bench --hint 1f1b --stages 2 --microbatches 2 --variability straggler:0:1e308:1", "over an hour");
  expect_refused("sim compare --hints 1f1b --stages 2 --microbatches 4 --latency-ms 1e308", "link latency");
  expect_refused("sim --hint 1f1b --stages 2 --microbatches 4 --seed 18446744073709551616", "too large");
  auto r = run_cli("bench --hint 1f1b --stages 2 --microbatches 2", "STARPU_NCPU=abc");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("STARPU_NCPU='abc' is not a worker count"), std::string::npos) << r.out;
  r = run_cli("bench --hint 1f1b --stages 2 --microbatches 2", "STARPU_NCPU=-1");
  EXPECT_EQ(r.code, 2) << r.out;
  r = run_cli("sim --hint 1f1b --stages 2 --microbatches 4", "RRFP_MPI=yes");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("RRFP_MPI='yes' must be 0 or 1"), std::string::npos) << r.out;
  // One process training alone on every rank: refused under a launcher.
  r = run_cli(kTrain + "--steps 1 --executor replay", "RRFP_MPI=1");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--executor replay runs in one process"), std::string::npos) << r.out;
}

// RRFP_FAIL_TASK where it cannot fire would let a fault test pass without
// a fault: refused by name.
TEST(CliInputs, TrainFaultVariablesAreRefusedWhereTheyCannotFire) {
  auto refused = [](const std::string& args, const std::string& env, const std::string& message) {
    const CliResult r = run_cli(args, env);
    EXPECT_EQ(r.code, 2) << r.out;
    EXPECT_NE(r.out.find(message), std::string::npos) << r.out;
  };
  refused("bench --hint 1f1b --stages 2 --microbatches 2", "RRFP_FAIL_TASK=1B0",
          "RRFP_FAIL_TASK is set, and only rrfp train reads it: rrfp bench would never fail (it fails a "
          "task with RRFP_MPI_FAIL_TASK=LABEL)");
  refused("profile --layers 2 --repetitions 1 -o " + ::testing::TempDir() + "rrfp_never.json", "RRFP_FAIL_STEP=2",
          "RRFP_FAIL_STEP is set, and only rrfp train reads it: rrfp profile would never fail");
  refused(kTrain + "--steps 1 --executor plain", "RRFP_FAIL_TASK=1B0", "--executor plain runs no task graph");
  // The optimizer's step is a call plain makes: it fails there.
  const CliResult r = run_cli(kTrain + "--steps 1 --executor plain", "RRFP_FAIL_TASK=opt1");
  EXPECT_NE(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("injected failure in the optimizer step of stage 1"), std::string::npos) << r.out;
  refused(kTrain + "--steps 3", "RRFP_FAIL_TASK=0F0 RRFP_FAIL_STEP=5", "RRFP_FAIL_STEP=5 is past the last step (--steps 3)");
  refused(kTrain + "--steps 3", "RRFP_FAIL_STEP=2", "RRFP_FAIL_STEP is set without RRFP_FAIL_TASK");
}

TEST(CliInputs, AJsonFileWithAnythingAfterItsValueIsRefused) {
  const std::string dir = ::testing::TempDir();
  auto r = run_cli("profile --layers 2 --d-model 16 --heads 2 --seq-len 8 --micro-batch-size 1 --repetitions 1 -o " +
                   dir + "rrfp_prof.json");
  ASSERT_EQ(r.code, 0) << r.out;
  // The profile with `tail` (printf's format) appended, refused by the tuner.
  auto tune_refuses = [&](const std::string& name, const std::string& tail, const std::string& message) {
    ASSERT_EQ(std::system(("cp " + dir + "rrfp_prof.json " + dir + name + " && printf '" + tail + "' >> " + dir + name)
                              .c_str()),
              0);
    expect_refused("tune --quiet --profile " + dir + name + " --devices 2 --microbatches 4 -o " + dir + "rrfp_plan.json",
                   message);
  };
  tune_refuses("rrfp_prof2.json", "{\"x\": ", "is not valid JSON");
  // Every time 0 (the tuner would write an arbitrary plan predicted at 0 ms).
  ASSERT_EQ(std::system(("sed -E 's/\"mean_s\": *[0-9.e+-]+/\"mean_s\":0/g' " + dir + "rrfp_prof.json > " + dir +
                         "rrfp_prof0.json").c_str()),
            0);
  expect_refused("tune --quiet --profile " + dir + "rrfp_prof0.json --devices 2 -o " + dir + "rrfp_plan.json",
                 "every layer's every pass takes 0 s");
  // A NUL byte ends the parser's input: the value before it must not pass
  // for the whole file (a profile, and a trace read by --durations).
  tune_refuses("rrfp_prof3.json", "\\000{", "a NUL byte at offset");
  ASSERT_EQ(std::system(("printf '{\"traceEvents\": []}\\000x' > " + dir + "rrfp_nul_trace.json").c_str()), 0);
  expect_refused("sim --hint 1f1b --stages 2 --microbatches 2 --durations " + dir + "rrfp_nul_trace.json",
                 "a NUL byte at offset 19");
}

// Found by a second audit (2026-12-06): each used to hang, exit 0 with
// the flag ignored, overwrite one output with another, or name the wrong
// problem.
TEST(CliInputs, FlagsThatChangedNothingOrWouldHangAreRefused) {
  const std::string t = kTrain + "--steps 1 ";
  expect_refused(t + "--link-ms 1e10", "--link-ms 1e+10 is over an hour");  // used to wait 115 days
  expect_refused(t + "--eval-every 1 --target-loss 0", "--target-loss must be positive, got 0");
  expect_refused(t + "--eval-microbatches 3", "--eval-microbatches needs --eval-every");
  expect_refused(t + "--link-jitter 0.5", "--link-jitter is relative to --link-ms");
  expect_refused(t + "--enc-layers 3", "--enc-layers applies to mm-tiny");
  expect_refused(t + "--executor plain --inflight-slack 3", "--executor plain has none");
  expect_refused("train --model mm-tiny --seq-len 32 --steps 1", "--seq-len applies to gpt-tiny");
  expect_refused(t + "--json same.json --trace same.json", "--json same.json and --trace same.json are one file");
  expect_refused(t + "--inflight-slack 2147483647", "--inflight-slack: Value 2147483647 not in range");
  expect_refused(t + "--json " + ::testing::TempDir(), "this is a directory");
  expect_refused(t + "--eval-every 1 --eval-microbatches 1500000000", "over 2^24 sequences");
  expect_refused(t + "--seq-len-dist lognormal:", "ends with ':'");  // read as plain lognormal before
  expect_refused(t + "--hint csv:" + std::string(RRFP_SOURCE_DIR) + "/tests/data/reference/zb1p_2rank_2stagep_compute.csv --async paci",
                 "does not accept the hint 'csv:");
  expect_refused("sim --json same.json --trace same.json", "are one file");
  expect_refused("sim --cost F=1,BW=5 --split", "--cost BW= is the fused backward's cost");
  expect_refused("sim --cost F=0,B=0,W=0,BW=1 --split", "every task of this pipeline would take 0 s");
  expect_refused("sim --fused --hint 1f1b --stages 2 --microbatches 2 --cost F=0,B=1,BW=0",
                 "every task of this pipeline would take 0 s");
  expect_refused("bench --hint 1f1b --stages 2 --microbatches 2 --json same.json --trace same.json",
                 "are one file");
  expect_refused("train --d-model 16 --layers 2 --mlp-widths 2000000000,0 --steps 1",
                 "block 0 has width 2000000000 (0 = attention only, else from 1 to 1048576)");
  expect_refused("train --model mm-tiny --d-model 16 --layers 2 --mlp-widths 64,64 --steps 1",
                 "--mlp-widths applies to gpt-tiny");
  expect_refused("sim --update-ms 0.2 compare", "which has no --update-ms");
  expect_refused("sim --update-ms 1e300", "--update-ms 1e+300 is over an hour");
  expect_refused("sim --message-mb 1e300 --bandwidth-gbps 1", "over an hour: the message size or the bandwidth");
  expect_refused("sim --link-jitter 0.5", "--link-jitter is relative to --link-ms");
  expect_refused("sim --inflight-slack 2147483647", "not in range");
  expect_refused("sim sweep --param sigma --values 0.1 --variability straggler:0:2:0.5", "drop --variability");
  expect_refused("sim sweep --param stages --values 2 --stages 8", "drop --stages");
  expect_refused("sim compare --hints 1f1b --waves 3", "--waves applies to hanayo");
  expect_refused("sim compare --hints 1f1b --chunks 3", "--chunks applies to interleaved-1f1b");
  expect_refused("sim compare --hints interleaved-1f1b --chunks 0", "needs --chunks v >= 2 (got 0)");
  expect_refused("sim compare --hints 1f1b,,gpipe", "has an empty item");
  expect_refused("sim async --method amdp --directions 3", "AMDP runs 2 or 4 directions, not 3");
  expect_refused("profile --model mm-tiny --seq-len 32 -o p.json", "--seq-len applies to gpt-tiny, not mm-tiny");
  expect_refused("profile --executor plain --devices 2 -o p.json", "--devices applies to --executor starpu");
  // The tuner's refusal says why each placement was skipped.
  const std::string prof = ::testing::TempDir() + "rrfp_audit_prof.json";
  ASSERT_EQ(run_cli("profile --layers 2 --d-model 16 --heads 2 --seq-len 8 --micro-batch-size 1 --repetitions 1 -o " +
                    prof).code,
            0);
  expect_refused("tune --quiet --profile " + prof + " --placements bidirectional --devices 3 -o " +
                     ::testing::TempDir() + "rrfp_audit_plan.json",
                 "needs an even number of devices (got 3)");
  const std::string neg = ::testing::TempDir() + "rrfp_negative_dur.json";
  ASSERT_EQ(std::system(("printf '{\"traceEvents\":[{\"ph\":\"X\",\"name\":\"F0\",\"ts\":0,\"dur\":-5}]}' > " +
                         neg).c_str()),
            0);
  expect_refused("plot " + neg + " -o " + ::testing::TempDir() + "rrfp_negative_dur.png", "has a negative duration");
  // The default widths, written out, are the default model: its checkpoint resumes.
  const std::string ck = ::testing::TempDir() + "rrfp_default_widths_ck";
  std::filesystem::remove_all(ck);
  ASSERT_EQ(run_cli(t + "--checkpoint " + ck).code, 0);
  auto resumed = run_cli(kTrain + "--steps 2 --checkpoint " + ck + " --resume --mlp-widths 64,64");
  EXPECT_EQ(resumed.code, 0) << resumed.out;
  std::filesystem::remove_all(ck);
  // BW costs a graph's fused backwards: accepted where one runs (DualPipeV
  // fuses some), and beside B and W for the fused hints of a comparison.
  for (const char* ok : {"sim --hint dualpipev --stages 2 --microbatches 4 --cost F=1,B=1,W=1,BW=1.5",
                         "sim compare --stages 2 --microbatches 4 --cost F=1,B=1,W=1,BW=1.5",
                         "sim compare --hints interleaved --chunks 2 --stages 2 --microbatches 4"}) {
    auto r = run_cli(ok);
    EXPECT_EQ(r.code, 0) << ok << "\n" << r.out;
  }
  // A jitter swept over link delays is fine, and so is a sweep of the delay with a jitter.
  auto r = run_cli("sim sweep --hint 1f1b --stages 2 --microbatches 4 --param link-ms --values 0.5,1 --link-jitter 0.5 "
                   "--seeds 1");
  EXPECT_EQ(r.code, 0) << r.out;
}

// Found by a third audit (2026-12-07): two names of one file, the
// checkpoint among the outputs, and outputs that could not be written
// found only after all the work.
TEST(CliInputs, OutputsAreCheckedAsFilesAndBeforeTheWork) {
  const std::string t = kTrain + "--steps 30 ";
  const std::string d = ::testing::TempDir() + "rrfp_outputs";
  expect_refused(t + "--json same.json --trace ./same.json", "--json same.json and --trace ./same.json are one file");
  expect_refused(t + "--checkpoint " + d + " --json " + d + "/checkpoint.rrfp",
                 "--json " + d + "/checkpoint.rrfp and --checkpoint");
  expect_refused("bench --hint 1f1b --stages 2 --microbatches 2 --json same.json --trace ./sub/../same.json",
                 "are one file");
  expect_refused("sim --json same.svg --svg ./same.svg", "are one file");
  for (const std::string& late : {t + "--json /proc/rrfp.json", t + "--trace /proc/rrfp.json",
                                  std::string("bench --hint 1f1b --stages 2 --microbatches 2 --iterations 50 --json /proc/rrfp.json"),
                                  std::string("sim --stages 64 --microbatches 64 --png x.jpg"),
                                  std::string("sim sweep --values 0.1,0.2 --png /proc/x.png")}) {
    const CliResult r = run_cli(late);
    EXPECT_EQ(r.code, 2) << late << "\n" << r.out;
    EXPECT_TRUE(r.out.find("cannot write in '/proc'") != std::string::npos ||
                r.out.find("picture format must be .png or .svg") != std::string::npos)
        << late << "\n" << r.out;
    for (const char* work : {"step ", "makespan", "sweep "})  // refused before any step, iteration or point
      EXPECT_EQ(r.out.find(work), std::string::npos) << late << "\n" << r.out;
  }
}

// A model too large for memory: LibTorch's allocator text becomes what it
// means and what to change. (Not in the sanitizer builds' subset: ASan
// would abort at a 48 GiB request instead of returning its error.)
TEST(CliInputs, AModelTooLargeForMemorySaysSo) {
  const CliResult r = run_cli("train --steps 1 --quiet --d-model 65536 --heads 1 --layers 1");
  if (r.code == 0) GTEST_SKIP() << "this machine holds 48 GiB tensors";
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("out of memory: a tensor of 48.00 GiB (51539607552 bytes) does not fit"), std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("enforce fail"), std::string::npos) << r.out;
}

}  // namespace
