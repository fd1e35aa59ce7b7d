// The training loop end to end: loss falls, determinism across policies and
// hints, resume == uninterrupted, checkpoints survive SIGKILL mid-write and
// refuse corrupt or mismatched files, bad input fails cleanly. Torch-free.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "train/checkpoint.hpp"
#include "train/trainer.hpp"

namespace rrfp::train {
namespace {

namespace fs = std::filesystem;

TrainOptions tiny(const std::string& hint = "1f1b", int stages = 2) {
  TrainOptions o;
  o.gpt.d_model = 16;
  o.gpt.heads = 2;
  o.gpt.layers = 4;
  o.gpt.seq_len = 16;
  o.stages = stages;
  o.microbatches = 4;
  o.micro_batch_size = 2;
  o.steps = 20;
  o.hint = hint;
  o.lr = 1e-2;
  o.executor = "replay";
  return o;
}

std::vector<double> losses(const TrainResult& r) {
  std::vector<double> l;
  for (const auto& s : r.steps) l.push_back(s.loss);
  return l;
}

// Resuming with `x` is refused, with `what` in the message.
void expect_refused(const TrainOptions& x, const std::string& what) {
  try {
    train(x);
    ADD_FAILURE() << "accepted: " << what;
  } catch (const CheckpointError& e) {
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
  }
}

fs::path fresh_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("rrfp_train_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  return d;
}

TEST(TrainLoop, LossFalls) {
  TrainOptions o = tiny();
  o.steps = 30;
  const auto l = losses(train(o));
  ASSERT_EQ(l.size(), 30u);
  EXPECT_LT(l.back(), l.front() - 1.0) << l.front() << " -> " << l.back();
}

TEST(TrainLoop, MmTinyLossFalls) {
  TrainOptions o = tiny("1f1b", 2);
  o.model = "mm-tiny";
  o.gpt.layers = 2;
  o.enc_layers = 1;
  o.steps = 30;
  o.micro_batch_size = 4;
  const auto l = losses(train(o));
  EXPECT_LT(l.back(), l.front() - 1.0) << l.front() << " -> " << l.back();
}

// 20 deterministic steps: bitwise the same losses whatever the hint or the
// policy; and the non-deterministic ones within 1e-5 of the plain loop.
TEST(TrainLoop, DeterministicLossesAreBitwiseEqualAcrossHintsAndPolicies) {
  TrainOptions base = tiny();
  base.deterministic = true;
  base.executor = "plain";
  const auto ref = losses(train(base));
  struct Run {
    std::string hint;
    int chunks;
  };
  const std::vector<Run> hints = {{"gpipe", 0}, {"1f1b", 0}, {"zb-h1", 0}, {"interleaved-1f1b", 2}};
  std::vector<std::string> executors = {"replay"};
#if __has_include("runtime/executor.hpp")
  for (const char* p : {"rrfp", "rrfp-fixed", "eager"}) executors.push_back(p);
#endif
  for (const auto& h : hints)
    for (const auto& ex : executors)
      for (bool det : {true, false}) {
        // Each StarPU step opens a session: keep the non-deterministic runs
        // (tolerance only) to one policy so the suite stays short.
        if (!det && ex != "replay" && ex != "rrfp") continue;
        TrainOptions o = tiny(h.hint);
        o.chunks = h.chunks;
        o.deterministic = det;
        o.executor = ex == "replay" ? "replay" : "starpu";
        o.policy = ex == "replay" ? "" : ex;
        SCOPED_TRACE(h.hint + " " + ex + (det ? " deterministic" : ""));
        const auto l = losses(train(o));
        ASSERT_EQ(l.size(), ref.size());
        for (size_t i = 0; i < l.size(); ++i) {
          if (det)
            EXPECT_EQ(l[i], ref[i]) << "step " << i + 1;
          else
            EXPECT_NEAR(l[i], ref[i], 1e-5 * std::abs(ref[i])) << "step " << i + 1;
        }
      }
}

#if __has_include("runtime/executor.hpp")
// Each stage's AdamW step is a StarPU task on the worker of the stage's
// device (interleaved: several stages a device), under every policy, and
// deterministic losses stay bitwise those of the plain loop.
TEST(TrainLoop, OptimizerStepIsAStarpuTaskOnTheStagesDevice) {
  unsetenv("RRFP_FAIL_TASK");
  TrainOptions base = tiny();
  base.steps = 3;
  base.deterministic = true;
  base.executor = "plain";
  const auto ref = losses(train(base));
  for (const char* pol : {"rrfp", "rrfp-fixed", "static-order", "eager", "prio", "dmda"})
    for (int chunks : {0, 2}) {
      TrainOptions o = base;
      o.executor = "starpu";
      o.policy = pol;
      if (chunks) o.hint = "interleaved-1f1b", o.chunks = chunks;
      SCOPED_TRACE(std::string(pol) + " " + o.hint);
      const TrainResult r = train(o);
      EXPECT_EQ(losses(r), ref);
      const int P = r.model_stages;
      ASSERT_EQ(P, chunks ? 4 : 2);
      for (const auto& st : r.steps) {
        ASSERT_EQ(static_cast<int>(st.optimizer_device.size()), P);
        for (int s = 0; s < P; ++s) EXPECT_EQ(st.optimizer_device[s], s % o.stages) << "stage " << s;
      }
    }
  TrainOptions o = base;
  o.executor = "replay";
  const TrainResult replay = train(o);
  for (int d : replay.steps.back().optimizer_device) EXPECT_EQ(d, -1);  // main thread
}

// A throwing optimizer step is a clear error, not a hang, and the failed
// step writes no checkpoint.
TEST(TrainLoop, ThrowingOptimizerStepIsAnError) {
  const fs::path dir = fresh_dir("opt_fail");
  for (const char* pol : {"rrfp", "rrfp-fixed", "static-order", "eager"}) {
    fs::remove_all(dir);  // each policy's run starts afresh
    TrainOptions o = tiny();
    o.steps = 3;
    o.executor = "starpu";
    o.policy = pol;
    o.checkpoint_dir = dir.string();
    o.checkpoint_every = 1;
    o.fail_task = "opt1";  // the driver's RRFP_FAIL_TASK=opt1 RRFP_FAIL_STEP=2
    o.fail_step = 2;
    const auto t0 = std::chrono::steady_clock::now();
    try {
      train(o);
      ADD_FAILURE() << pol << ": no error";
    } catch (const std::exception& e) {
      EXPECT_NE(std::string(e.what()).find("optimizer step of stage 1 at step 2"), std::string::npos) << e.what();
    }
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 30.0) << pol;
    EXPECT_EQ(load_checkpoint(dir.string()).meta.at("step").get<int>(), 1) << pol;
  }
  fs::remove_all(dir);
}
#endif

TEST(TrainLoop, ResumeContinuesExactly) {
  for (bool det : {true, false}) {
    const fs::path dir = fresh_dir(det ? "resume_det" : "resume");
    TrainOptions o = tiny("zb-h1");
    o.deterministic = det;
    o.steps = 8;
    const auto full = losses(train(o));
    o.steps = 5;
    o.checkpoint_dir = dir.string();
    o.checkpoint_every = 2;  // also writes at the last step
    train(o);
    o.steps = 8;
    o.resume = true;
    const TrainResult r = train(o);
    ASSERT_EQ(r.first_step, 6);
    const auto tail = losses(r);
    ASSERT_EQ(tail.size(), 3u);
    for (int i = 0; i < 3; ++i) EXPECT_EQ(tail[i], full[5 + i]) << "step " << 6 + i;
    fs::remove_all(dir);
  }
}

TEST(TrainLoop, MismatchedOrCorruptCheckpointIsRefused) {
  const fs::path dir = fresh_dir("mismatch");
  TrainOptions o = tiny();
  o.steps = 2;
  o.checkpoint_dir = dir.string();
  train(o);
  o.resume = true;
  o.steps = 3;
  TrainOptions wide = o;
  wide.gpt.d_model = 32;
  expect_refused(wide, "gpt");
  TrainOptions deeper = o;
  deeper.stages = 4;
  expect_refused(deeper, "stages");
  TrainOptions reseeded = o;  // the generated corpus would change under the run
  reseeded.seed = o.seed + 1;
  expect_refused(reseeded, "seed");
  // Flip one byte in the middle: the checksum catches it.
  const std::string path = checkpoint_path(dir.string());
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(static_cast<std::streamoff>(fs::file_size(path) / 2));
    char c;
    f.get(c);
    f.seekp(static_cast<std::streamoff>(fs::file_size(path) / 2));
    f.put(static_cast<char>(c ^ 0x5a));
  }
  expect_refused(o, "corrupt");
  fs::resize_file(path, 100);
  expect_refused(o, "corrupt");
  fs::remove_all(dir);
  expect_refused(o, "cannot read checkpoint");
}

// What only the checkpoint has counts too: an asynchronous run, a held-out
// split or a data file is not resumed by a run without it, nor on other text.
TEST(TrainLoop, CheckpointIdentityIsComparedBothWays) {
  const fs::path dir = fresh_dir("identity");
  fs::create_directories(dir);
  auto text_file = [&](const std::string& name, const std::string& line) {
    const std::string path = (dir / name).string();
    std::ofstream f(path);
    for (int i = 0; i < 200; ++i) f << line << i << "\n";
    return path;
  };
  TrainOptions o = tiny();
  o.steps = 1;
  o.checkpoint_dir = (dir / "ck").string();
  o.eval_every = 1;
  o.data_path = text_file("a.txt", "the cat sat on the mat ");
  train(o);
  o.resume = true;
  o.steps = 2;
  train(o);  // the same run resumes
  o.steps = 3;
  TrainOptions all_text = o;  // would train on the held-out tenth
  all_text.eval_every = 0;
  expect_refused(all_text, "validation = \"held-out\", this run has validation = nothing");
  TrainOptions other = o;
  other.data_path = text_file("b.txt", "a dog ran in the fog ");
  expect_refused(other, "data = ");
  TrainOptions generated = o;
  generated.data_path.clear();
  expect_refused(generated, "this run has data = \"generated\"");
  fs::remove_all(dir);
}

// An update that leaves NaN or inf behind stops the run before its
// checkpoint replaces the last good one.
TEST(TrainLoop, DivergedUpdateKeepsTheLastGoodCheckpoint) {
  const fs::path dir = fresh_dir("diverged");
  TrainOptions o = tiny();
  o.steps = 6;
  o.lr = 1e4;
  o.checkpoint_dir = dir.string();
  o.checkpoint_every = 1;
  try {
    train(o);
    ADD_FAILURE() << "a run at lr 1e4 did not diverge";
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("diverged"), std::string::npos) << e.what();
  }
  const Checkpoint c = load_checkpoint(dir.string());
  EXPECT_LT(c.meta.at("step").get<int>(), 6);
  for (const auto& t : c.tensors)
    for (float v : t.data) ASSERT_TRUE(std::isfinite(v)) << t.name << " at step " << c.meta.at("step");
  fs::remove_all(dir);
}

// A child rewrites the checkpoint in a loop and is killed with SIGKILL at
// varying moments; the file must always load, with one of the written steps.
TEST(TrainLoop, SigkillDuringWriteLeavesALoadableCheckpoint) {
  const fs::path dir = fresh_dir("kill");
  fs::create_directories(dir);
  auto make = [](int step) {
    Checkpoint c;
    c.meta = {{"step", step}};
    c.tensors.push_back({"big", {1 << 20}, std::vector<float>(1 << 20, static_cast<float>(step))});
    return encode_checkpoint(c);
  };
  // Encoded before fork: the child only makes system calls.
  const std::vector<std::vector<char>> payloads = {make(1), make(2), make(3)};
  write_file_atomic(checkpoint_path(dir.string()), payloads[0]);
  int torn_temp_seen = 0;
  char host_buf[256] = {};
  ::gethostname(host_buf, sizeof host_buf - 1);
  const std::string host = host_buf[0] ? host_buf : "host";
  for (int round = 0; round < 8; ++round) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      for (int i = 0;; ++i) write_file_atomic(checkpoint_path(dir.string()), payloads[i % 3]);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20 + 7 * round));
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFSIGNALED(status));
    for (const auto& e : fs::directory_iterator(dir))
      torn_temp_seen += e.path().filename().string() == "checkpoint.rrfp.tmp." + host + "." + std::to_string(pid);
    const Checkpoint c = load_checkpoint(dir.string());
    const int step = c.meta.at("step").get<int>();
    EXPECT_TRUE(step >= 1 && step <= 3);
    ASSERT_EQ(c.tensors.size(), 1u);
    EXPECT_EQ(c.tensors[0].data.back(), static_cast<float>(step));
  }
  // Not asserted (timing), but shows the kill did land mid-write.
  std::printf("killed mid-write (temporary file left) in %d of 8 rounds\n", torn_temp_seen);
  // The next write removes the dead writers' temporaries, not a live one's
  // nor another host's.
  const fs::path live = dir / ("checkpoint.rrfp.tmp." + host + "." + std::to_string(::getppid()));
  const fs::path elsewhere = dir / "checkpoint.rrfp.tmp.another-host.1234567";
  { std::ofstream(live.string()) << "x"; }
  { std::ofstream(elsewhere.string()) << "x"; }
  write_file_atomic(checkpoint_path(dir.string()), payloads[0]);
  std::vector<std::string> left;
  for (const auto& e : fs::directory_iterator(dir)) left.push_back(e.path().filename().string());
  std::sort(left.begin(), left.end());
  std::vector<std::string> want = {"checkpoint.rrfp", live.filename().string(), elsewhere.filename().string()};
  std::sort(want.begin(), want.end());
  EXPECT_EQ(left, want);
  fs::remove_all(dir);
}

TEST(TrainLoop, BadOptionsAreRefused) {
  auto refused = [](TrainOptions o, const std::string& what) {
    try {
      train(o);
      ADD_FAILURE() << "accepted: " << what;
    } catch (const SpecError& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  TrainOptions o = tiny();
  o.steps = 1;
  TrainOptions m = o;
  m.model = "gpt-huge";
  refused(m, "unknown model");
  TrainOptions s = o;
  s.stages = 8;
  s.hint = "gpipe";
  refused(s, "only 4 blocks");
  TrainOptions b = o;
  b.batch_size = 10;
  refused(b, "cannot be divided");
  TrainOptions d = o;
  d.data_path = "/nonexistent/file.txt";
  refused(d, "cannot read data file");
  const fs::path empty = fs::temp_directory_path() / ("rrfp_empty_" + std::to_string(::getpid()));
  { std::ofstream(empty.string()); }
  d.data_path = empty.string();
  refused(d, "is empty");
  fs::remove(empty);
}

#ifdef RRFP_CLI
// Through the command line: a failing task ends the run with a clear message
// and non-zero status, and leaves the last checkpoint loadable.
TEST(TrainLoop, CliFailingTaskKeepsLastCheckpoint) {
  const fs::path dir = fresh_dir("cli_fail");
  const std::string common = std::string("timeout 120 ") + RRFP_CLI +
                             " train --quiet --stages 2 --layers 2 --d-model 16 --heads 2 --seq-len 8"
                             " --micro-batch-size 2 --microbatches 2 --checkpoint " + dir.string();
  ASSERT_EQ(std::system((common + " --steps 2 > /dev/null 2>&1").c_str()), 0);
  const std::string out = (dir / "err.txt").string();
  const int rc = std::system(("RRFP_FAIL_TASK=1B0 " + common + " --resume --steps 4 --checkpoint-every 1 2> " + out +
                              " > /dev/null").c_str());
  ASSERT_TRUE(WIFEXITED(rc));
  EXPECT_NE(WEXITSTATUS(rc), 0);
  EXPECT_NE(WEXITSTATUS(rc), 124) << "hung";
  std::ifstream in(out);
  std::string msg((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(msg.find("injected failure in task 1B0"), std::string::npos) << msg;
  EXPECT_EQ(load_checkpoint(dir.string()).meta.at("step").get<int>(), 2);
  const int bad = std::system((std::string(RRFP_CLI) + " train --model nope > /dev/null 2>&1").c_str());
  EXPECT_TRUE(WIFEXITED(bad) && WEXITSTATUS(bad) != 0);
  fs::remove_all(dir);
}
#endif

}  // namespace
}  // namespace rrfp::train
