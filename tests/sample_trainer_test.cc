// The sample trainer as users run it: the loss falls and accuracy beats
// chance; every data-parallel mode ends with the parameters one worker gets
// on the whole batch; the startup broadcast equalises differently
// initialised workers. Multi-process runs go through `ctp launch` over
// loopback (Gloo); the single-process modes use device threads.
#include <map>
#include <regex>

#include "executor/runtime/npy.h"
#include "executor/rendezvous/rendezvous_socket.h"
#include "program_ir/atomic_file.h"
#include "tests/executor_process_util.h"
#include "tests/kernels_test_util.h"
#include "tests/sample_trainer_util.h"

namespace ctp {
namespace {

using test::Training;
using test::expect_parameters_near;
using test::have_gloo;
using test::mean;
using test::train;

// A small model and problem, so that a run takes well under a second.
const char* const kSmall =
    " --dim 4 --hidden 16 --classes 3 --samples 512 --batch 32 --seed 3 --log-every 1";

TEST(SampleTrainer, LossFallsAndAccuracyBeatsChance) {
  const Training t = train("--mode none --steps 150 --log-every 1");
  ASSERT_EQ(t.exit_code, 0) << t.output;
  ASSERT_EQ(t.losses.size(), 150u) << t.output;
  EXPECT_LT(mean(t.losses, 140, 150), 0.3 * mean(t.losses, 0, 10)) << t.output;
  EXPECT_GT(t.accuracy, 0.9) << t.output;  // four classes: chance is 0.25
  EXPECT_NE(t.output.find("parameters identical on all 1 worker(s): yes"), std::string::npos);
}

TEST(SampleTrainer, ThreadModesMatchOneWorkerOnTheWholeBatch) {
  for (const char* optimizer : {"sgd", "adam"}) {
    SCOPED_TRACE(optimizer);
    const std::string common = std::string(kSmall) + " --steps 20 --optimizer " + optimizer;
    const Training one = train("--mode none" + common);
    ASSERT_EQ(one.exit_code, 0) << one.output;
    ASSERT_EQ(one.workers.size(), 1u);
    for (const char* mode : {"--fuse-allreduce 0", "--fuse-allreduce 1", "--fuse-allreduce 2"}) {
      SCOPED_TRACE(mode);
      const Training t = train(std::string("--mode single_process_multi_thread ") + mode + common);
      ASSERT_EQ(t.exit_code, 0) << t.output;
      EXPECT_EQ(t.workers.size(), 2u);
      expect_parameters_near(t, one.workers[0], 1e-5);
    }
  }
}

TEST(SampleTrainer, MultiThreadSumsGradientsOverThreads) {
  // The reference's MultiThread scales the loss gradient by the number of
  // processes only, so two device threads apply the sum of their gradients:
  // with SGD that is one worker on the whole batch at twice the rate (Adam
  // is invariant to the gradient's scale up to epsilon).
  const std::string common = std::string(kSmall) + " --steps 20";
  const Training sgd_double_rate = train("--mode none --optimizer sgd --lr 0.2" + common);
  const Training adam = train("--mode none --optimizer adam" + common);
  ASSERT_EQ(sgd_double_rate.exit_code, 0) << sgd_double_rate.output;
  ASSERT_EQ(adam.exit_code, 0) << adam.output;
  for (const char* mode : {"fuse_all_reduce", "all_reduce"}) {
    SCOPED_TRACE(mode);
    const Training s = train(std::string("--mode multi_thread --optimizer sgd --lr 0.1 --trans-mode ") +
                             mode + common);
    ASSERT_EQ(s.exit_code, 0) << s.output;
    expect_parameters_near(s, sgd_double_rate.workers[0], 1e-5);
    const Training a = train(std::string("--mode multi_thread --optimizer adam --trans-mode ") + mode + common);
    ASSERT_EQ(a.exit_code, 0) << a.output;
    expect_parameters_near(a, adam.workers[0], 1e-4);
  }
  const Training gathered = train("--mode multi_thread --optimizer adam --trans-mode all_gather" + common);
  ASSERT_EQ(gathered.exit_code, 0) << gathered.output;  // workers stay identical
}

// Paddle 3's op names (ctp transpile --op-dialect paddle3: broadcast,
// all_gather, comm_init_all) run on the kernels of the reference's: the same
// program trains to the very same parameters in both dialects.
TEST(SampleTrainer, Paddle3DialectTrainsToTheSameParameters) {
  const std::string common = std::string(kSmall) + " --steps 6";
  struct Run {
    std::string args;
    int processes;
  };
  std::vector<Run> runs = {
      // comm_init_all, all_gather (2 device threads)
      {"--mode multi_thread --optimizer adam --trans-mode all_gather", 1},
      // comm_init_all, one coalesced allreduce
      {"--mode single_process_multi_thread", 1},
  };
  // broadcast: workers start apart and only the startup broadcast joins them.
  if (have_gloo()) runs.push_back({"--mode grad_allreduce --distinct-init true", 2});
  for (const Run& r : runs) {
    SCOPED_TRACE(r.args);
    const Training legacy = train(r.args + common, r.processes);
    const Training paddle3 = train(r.args + " --op-dialect paddle3" + common, r.processes);
    ASSERT_EQ(legacy.exit_code, 0) << legacy.output;
    ASSERT_EQ(paddle3.exit_code, 0) << paddle3.output;
    EXPECT_NE(paddle3.output.find("op dialect paddle3"), std::string::npos) << paddle3.output;
    ASSERT_EQ(paddle3.workers.size(), legacy.workers.size());
    expect_parameters_near(paddle3, legacy.workers[0], 0.0);
  }
  if (!have_gloo()) GTEST_SKIP() << "built without Gloo: the broadcast run was left out";
}

TEST(SampleTrainer, FusedCopiesHappenOnlyOnTheFirstStep) {
  const Training once = train(std::string("--mode single_process_multi_thread") + kSmall + " --steps 1");
  const Training many = train(std::string("--mode single_process_multi_thread") + kSmall + " --steps 30");
  ASSERT_EQ(once.exit_code, 0) << once.output;
  ASSERT_EQ(many.exit_code, 0) << many.output;
  const std::regex counters(R"(laid out (\d+) time\(s\), (\d+) bytes copied)");
  std::smatch a, b;
  ASSERT_TRUE(std::regex_search(once.output, a, counters)) << once.output;
  ASSERT_TRUE(std::regex_search(many.output, b, counters)) << many.output;
  EXPECT_EQ(b[1].str(), "1");
  EXPECT_EQ(b[2].str(), a[2].str());  // 30 steps copied no more than 1
}

TEST(SampleTrainer, GradAllReduceWorkersMatchOneWorkerOnTheWholeBatch) {
  if (!have_gloo()) GTEST_SKIP() << "built without Gloo";
  for (const char* optimizer : {"sgd", "adam"}) {
    SCOPED_TRACE(optimizer);
    const std::string common = std::string(kSmall) + " --steps 20 --optimizer " + optimizer;
    const Training one = train("--mode none" + common);
    ASSERT_EQ(one.exit_code, 0) << one.output;
    for (int processes : {2, 4}) {
      SCOPED_TRACE(std::to_string(processes) + " workers");
      const Training t = train("--mode grad_allreduce" + common, processes);
      ASSERT_EQ(t.exit_code, 0) << t.output;
      EXPECT_EQ(t.workers.size(), static_cast<std::size_t>(processes));
      expect_parameters_near(t, one.workers[0], 1e-5);
      if (processes == 2) {
        // ctp's bucketed schedule (--bucket-mb; 0.0002 MiB, 209 bytes, makes
        // two buckets of the small model's four gradients) all-reduces the
        // same sums as one call per gradient.
        const Training b = train("--mode grad_allreduce --bucket-mb 0.0002" + common, 2);
        ASSERT_EQ(b.exit_code, 0) << b.output;
        EXPECT_NE(b.output.find("fused gradient buffers laid out 2 time(s)"), std::string::npos)
            << b.output;
        EXPECT_EQ(b.workers.size(), 2u);
        expect_parameters_near(b, one.workers[0], 1e-5);
      }
      if (std::string(optimizer) == "sgd" && processes == 2) {
        // The fused single-process modes agree with GradAllReduce closely.
        const Training fused = train("--mode single_process_multi_thread" + common);
        ASSERT_EQ(fused.exit_code, 0) << fused.output;
        expect_parameters_near(fused, t.workers[0], 1e-6);
      }
    }
  }
}

// In bf16 the buckets (--bucket-mb, the small model's gradients in two) hold
// the 16-bit gradients and agree with one call per gradient; other modes
// refuse the option.
TEST(SampleTrainer, BucketedGradAllReduceInBf16AgreesWithPerGradientCalls) {
  if (!have_gloo()) GTEST_SKIP() << "built without Gloo";
  const std::string bf16 = std::string(kSmall) + " --steps 20 --amp bf16 --mode grad_allreduce";
  const Training per_grad = train(bf16, 2);
  const Training buckets = train(bf16 + " --bucket-mb 0.0002", 2);
  ASSERT_EQ(per_grad.exit_code, 0) << per_grad.output;
  ASSERT_EQ(buckets.exit_code, 0) << buckets.output;
  expect_parameters_near(buckets, per_grad.workers[0], 1e-6);
  const Training wrong_mode = train("--mode local_sgd --bucket-mb 1" + std::string(kSmall), 2);
  EXPECT_NE(wrong_mode.exit_code, 0);
  EXPECT_NE(wrong_mode.output.find("a grad_allreduce schedule"), std::string::npos)
      << wrong_mode.output;
}

TEST(SampleTrainer, MixedPrecisionWorkersAgreeAndLearn) {
  // 16-bit gradients summed over two workers round differently from one
  // worker's on the whole batch, so agreement is within 16-bit tolerance;
  // the workers themselves must stay identical (the trainer exits 1 if not).
  for (const std::string amp : {"bf16", "fp16"}) {
    SCOPED_TRACE(amp);
    const std::string common = std::string(kSmall) + " --steps 40 --amp " + amp;
    const Training one = train("--mode none" + common);
    ASSERT_EQ(one.exit_code, 0) << one.output;
    EXPECT_NE(one.output.find(std::string(amp == "bf16" ? "BF16" : "FP16") +
                              " compute and gradients"),
              std::string::npos)
        << one.output;
    EXPECT_GT(one.accuracy, 0.9) << one.output;
    const Training xsum = train("--mode single_process_multi_thread --fuse-allreduce 2" + common);
    ASSERT_EQ(xsum.exit_code, 0) << xsum.output;
    EXPECT_EQ(xsum.workers.size(), 2u);
    expect_parameters_near(xsum, one.workers[0], 0.05);
    if (amp == "bf16") {
      // multi_thread coalesces the 16-bit gradients in a buffer of their own
      // dtype; it sums them over threads, i.e. one worker at twice the rate.
      const Training twice = train("--mode none --lr 0.2" + common);
      const Training fused = train("--mode multi_thread --trans-mode fuse_all_reduce" + common);
      ASSERT_EQ(fused.exit_code, 0) << fused.output;
      EXPECT_EQ(fused.workers.size(), 2u);
      expect_parameters_near(fused, twice.workers[0], 0.05);
      // The reference's FP32-only paths are refused up front.
      const Training fp32_buffer =
          train("--mode single_process_multi_thread --fuse-allreduce 1" + common);
      EXPECT_EQ(fp32_buffer.exit_code, 2);
      EXPECT_NE(fp32_buffer.output.find("coalesces gradients into an FP32 buffer"),
                std::string::npos) << fp32_buffer.output;
      const Training gathered =
          train("--mode multi_thread --trans-mode all_gather --optimizer adam" + common);
      EXPECT_EQ(gathered.exit_code, 2);
      EXPECT_NE(gathered.output.find("hands adam the gathered gradients"), std::string::npos)
          << gathered.output;
    }
    if (!have_gloo()) continue;
    const Training launched = train("--mode grad_allreduce" + common, 2);
    ASSERT_EQ(launched.exit_code, 0) << launched.output;
    EXPECT_EQ(launched.workers.size(), 2u);
    expect_parameters_near(launched, one.workers[0], 0.05);
  }
}

TEST(SampleTrainer, StartupBroadcastEqualisesDifferentInitialisations) {
  // Without a broadcast (multi_thread's startup has none), different seeds
  // leave the workers different: the trainer says so and fails.
  const Training apart = train(std::string("--mode multi_thread --distinct-init true") + kSmall + " --steps 0");
  EXPECT_EQ(apart.exit_code, 1) << apart.output;
  EXPECT_NE(apart.output.find("identical on all 2 worker(s): NO"), std::string::npos) << apart.output;
  if (!have_gloo()) GTEST_SKIP() << "built without Gloo";
  const Training together = train(std::string("--mode grad_allreduce --distinct-init true") + kSmall + " --steps 0", 2);
  ASSERT_EQ(together.exit_code, 0) << together.output;
  ASSERT_EQ(together.workers.size(), 2u);
  expect_parameters_near(together, together.workers[0], 0.0);
  // ... and the common values are rank 0's initialisation.
  const Training one = train(std::string("--mode none") + kSmall + " --steps 0");
  expect_parameters_near(together, one.workers[0], 0.0);
}

TEST(SampleTrainer, LocalSgdKeepsWorkersIdentical) {
  if (!have_gloo()) GTEST_SKIP() << "built without Gloo";
  for (const char* steps : {"1", "6"}) {
    const Training t = train(std::string("--mode local_sgd") + kSmall + " --steps " + steps, 2);
    ASSERT_EQ(t.exit_code, 0) << t.output;
    ASSERT_EQ(t.workers.size(), 2u);
    expect_parameters_near(t, t.workers[0], 0.0);
  }
}

// mpirun starts the workers itself and names only ranks (Open MPI's
// variables); the endpoints come from --endpoints. Two processes started as
// mpirun starts them must train as two started by ctp launch.
TEST(SampleTrainer, WorkersStartedAsMpirunStartsThemTrainTogether) {
  if (!have_gloo()) GTEST_SKIP() << "built without Gloo";
  const std::string common = std::string(kSmall) + " --steps 10 --mode grad_allreduce";
  const Training launched = train(common, 2);
  ASSERT_EQ(launched.exit_code, 0) << launched.output;

  test::TempDir dir("trainer_mpirun");
  const std::string endpoints = "127.0.0.1:" + std::to_string(net::pick_free_port()) +
                                ",127.0.0.1:" + std::to_string(net::pick_free_port());
  std::string command;
  for (int rank : {0, 1}) {
    const std::string r = std::to_string(rank);
    command += "env -u PADDLE_TRAINER_ID -u PADDLE_TRAINERS_NUM -u PADDLE_TRAINER_ENDPOINTS "
               "-u RANK -u WORLD_SIZE -u LOCAL_RANK OMPI_COMM_WORLD_RANK=" + r +
               " OMPI_COMM_WORLD_SIZE=2 OMPI_COMM_WORLD_LOCAL_RANK=" + r +
               " OMPI_COMM_WORLD_LOCAL_SIZE=2 " + CTP_SAMPLE_TRAINER_PATH + common +
               " --timeout 30 --endpoints " + endpoints + " --save-params " +
               (dir / ("rank" + r)) + " > " + (dir / ("rank" + r + ".log")) + " 2>&1 & p" + r +
               "=$!; ";
  }
  command += "wait $p0; a=$?; wait $p1; b=$?; cat " + (dir / "rank0.log") + " " +
             (dir / "rank1.log") + "; exit $((a + b))";
  const test::CommandResult r = test::run_command("bash -c '" + command + "'");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("rank 1: parameters identical on all 2 worker(s): yes"),
            std::string::npos) << r.output;
  for (int rank : {0, 1}) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    // Each process saves its own worker as worker<rank> under its directory.
    const auto worker_dir = dir.path() / ("rank" + std::to_string(rank)) /
                            ("worker" + std::to_string(rank));
    ASSERT_TRUE(std::filesystem::exists(worker_dir)) << r.output;
    for (const auto& [name, expected] : launched.workers.at(0)) {
      const Tensor got = read_npy_file((worker_dir / (name + ".npy")).string());
      ASSERT_EQ(got.numel(), expected.numel()) << name;
      for (int64_t i = 0; i < got.numel(); ++i)
        EXPECT_EQ(test::element(got, i), test::element(expected, i)) << name << " " << i;
    }
  }
}

// Every bad option exits 2 (as ctp's usage errors do), naming it; a value
// that parses but cannot train (--lr nan) is refused, not replaced.
TEST(SampleTrainer, BadOptionsAreUsageErrors) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--mode none --threads 2", "mode 'none' trains one worker"},
      {"--mode bogus", "unknown transpile mode 'bogus'"},
      {"--mode multi_thread --trans-mode all_gather --optimizer sgd", "use the adam optimizer"},
      {"--mode single_process_multi_thread --threads 3 --batch 32", "does not split evenly over 3 workers"},
      {"--lr nan", "--lr must be a positive finite number"},
      {"--lr -0.5", "--lr must be a positive finite number"},
      {"--loss-scale inf", "--loss-scale must be a positive finite number"},
      {"--timeout 1e300", "--timeout must be a positive number of seconds, at most 1e+07"},
      {"--hidden 8,x", "--hidden '8,x': 'x' is not a positive layer width"},
      {"--optimizer adagrad", "unknown optimizer 'adagrad'"},
      {"--trans-mode sideways", "unknown multi_thread trans mode 'sideways'"},
      {"--steps many", "--steps"},    // CLI11's own errors: 104 before
      {"--dtype fp8", "--dtype"},     // 105
      {"--no-such-flag", "no-such-flag"},
  };
  for (const auto& [args, message] : cases) {
    const Training t = train(args);
    EXPECT_EQ(t.exit_code, 2) << args << ": " << t.output;
    EXPECT_NE(t.output.find(message), std::string::npos) << args << ": " << t.output;
    EXPECT_EQ(t.output.find("step "), std::string::npos) << args << ": " << t.output;
  }
  EXPECT_EQ(train("--help").exit_code, 0);
}

}  // namespace
}  // namespace ctp
