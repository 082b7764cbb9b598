// Non-finite values (FLAGS_check_nan_inf): the executor's check after every
// op stops a diverging MLP at the first op that writes Inf, naming the step;
// off, nothing is checked; after a bad step the first op whose output holds
// a non-finite value is found; every floating dtype is recognised; `ctp run`
// and the sample trainer stop on a loss that is not finite.
#include <cmath>

#include "executor/finite_check.h"
#include "executor/runtime/float16.h"
#include "program_ir/atomic_file.h"
#include "program_ir/program_io.h"
#include "samples/cluster_data.h"
#include "samples/mlp_model.h"
#include "tests/executor_process_util.h"
#include "tests/kernels_test_util.h"

namespace ctp {
namespace {

// An MLP whose learning rate makes the parameters huge after one step, so
// that the second step's first matmul overflows.
samples::MlpPrograms diverging_mlp() {
  samples::MlpConfig config;
  config.input_dim = 4;
  config.hidden = {8};
  config.classes = 3;
  config.learning_rate = 1e38f;
  config.init_seed = 5;
  return samples::build_mlp(config);
}

void bind_batch(Scope& scope, const samples::MlpPrograms& p, int step) {
  const samples::ClusterData data = samples::make_clusters(64, 4, 3, 11, 2.0, 1.0);
  samples::Batch batch = samples::shard_batch(data, step, 16, 0, 1, DataType::FP32);
  scope.var(p.input) = batch.features;
  scope.var(p.label) = batch.labels;
}

TEST(ExecutorFiniteCheck, StopsAtTheFirstOpThatWritesANonFiniteValue) {
  const samples::MlpPrograms p = diverging_mlp();
  Scope scope;
  Executor(p.startup, RunServices{}).run(scope);
  RunServices services;
  services.check_finite = true;
  Executor main(p.main, services);
  bind_batch(scope, p, 0);
  main.run(scope);  // step 1 is finite
  bind_batch(scope, p, 1);
  try {
    main.run(scope);
    FAIL() << "step 2 wrote inf and went on";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind("block 0, op 0 'mul': step 2: output Out='fc_0.tmp_0' FP32[16, 8] holds ", 0), 0u)
        << msg;
    EXPECT_NE(msg.find("inf at element"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[check_nan_inf"), std::string::npos) << msg;
  }
}

TEST(ExecutorFiniteCheck, OffByDefaultAndTheSourceIsFoundAfterTheStep) {
  const samples::MlpPrograms p = diverging_mlp();
  Scope scope;
  Executor(p.startup, RunServices{}).run(scope);
  Executor main(p.main, RunServices{});
  for (int step = 0; step < 2; ++step) {
    bind_batch(scope, p, step);
    main.run(scope);  // no check: runs on
  }
  EXPECT_TRUE(non_finite_value(scope.get(p.loss)).has_value());
  const auto source = first_non_finite_op(p.main.global_block(), scope, nullptr);
  ASSERT_TRUE(source.has_value());
  EXPECT_EQ(source->rfind("block 0, op 0 'mul': output Out='fc_0.tmp_0' FP32[16, 8] holds ", 0), 0u)
      << *source;
}

TEST(ExecutorFiniteCheck, EveryFloatingTypeIsRecognised) {
  Tensor f32(DataType::FP32, {3});
  f32.data<float>()[2] = NAN;
  EXPECT_EQ(non_finite_value(f32), "FP32[3] holds nan at element 2 (1 of 3 values are not finite)");
  Tensor f64(DataType::FP64, {2});
  f64.data<double>()[0] = -INFINITY;
  f64.data<double>()[1] = INFINITY;
  EXPECT_EQ(non_finite_value(f64), "FP64[2] holds -inf at element 0 (2 of 2 values are not finite)");
  Tensor f16(DataType::FP16, {2});
  f16.data<uint16_t>()[0] = float16::from_float(65504.0f);  // the largest finite half
  f16.data<uint16_t>()[1] = 0x7c00;                   // +inf
  EXPECT_EQ(non_finite_value(f16), "FP16[2] holds inf at element 1 (1 of 2 values are not finite)");
  Tensor bf16(DataType::BF16, {2});
  bf16.data<uint16_t>()[1] = 0x7fc1;  // a NaN
  EXPECT_EQ(non_finite_value(bf16), "BF16[2] holds nan at element 1 (1 of 2 values are not finite)");
  Tensor ints(DataType::INT64, {2});
  EXPECT_FALSE(non_finite_value(ints));
  EXPECT_FALSE(non_finite_value(Tensor(DataType::FP32, {4})));
}

// The sample trainer with a learning rate that diverges used to finish with
// rc 0 and "parameters identical: yes".
TEST(ExecutorFiniteCheck, TheSampleTrainerStopsOnALossThatIsNotFinite) {
  const std::string trainer = std::string(CTP_SAMPLE_TRAINER_PATH) +
                              " --mode none --dim 4 --hidden 8 --samples 64 --batch 8 --steps 5 "
                              "--lr 1e38";
  test::CommandResult plain = test::run_command(trainer);
  EXPECT_EQ(plain.exit_code, 1) << plain.output;
  EXPECT_NE(plain.output.find("error: step 2, worker 0: the loss 'mean_0.tmp_0' FP32[1] holds nan"),
            std::string::npos)
      << plain.output;
  // The trainer frees each step's intermediates after their last use, so
  // only --check-nan-inf names the op that made the first one.
  EXPECT_NE(plain.output.find("holds nan at element 0 (1 of 1 values are not finite) "
                              "(--check-nan-inf stops at the op that produces the first one)"),
            std::string::npos)
      << plain.output;
  EXPECT_EQ(plain.output.find("identical"), std::string::npos) << plain.output;
  for (const std::string& how : {trainer + " --check-nan-inf", "FLAGS_check_nan_inf=1 " + trainer}) {
    test::CommandResult checked = test::run_command(how);
    EXPECT_EQ(checked.exit_code, 1) << checked.output;
    EXPECT_NE(checked.output.find("error: block 0, op 0 'mul': step 2: output Out='fc_0.tmp_0'"),
              std::string::npos)
        << how << ": " << checked.output;
  }
  test::CommandResult bad_flag = test::run_command("FLAGS_check_nan_inf=maybe " + trainer);
  EXPECT_EQ(bad_flag.exit_code, 1) << bad_flag.output;
  EXPECT_NE(bad_flag.output.find("FLAGS_check_nan_inf='maybe' is not 1/true or 0/false"),
            std::string::npos)
      << bad_flag.output;
}

TEST(ExecutorFiniteCheck, CtpRunStopsOnAFetchedValueThatIsNotFinite) {
  test::TempDir dir("run_non_finite");
  const samples::MlpPrograms p = diverging_mlp();
  write_file_atomically(dir / "startup.pb", serialize_program(p.startup, ProgramFormat::Proto));
  write_file_atomically(dir / "main.pb", serialize_program(p.main, ProgramFormat::Proto));
  const std::string run = std::string(CTP_CLI_PATH) + " run --startup " + (dir / "startup.pb") +
                          " --main " + (dir / "main.pb") + " --steps 4 --batch 16";
  test::CommandResult plain = test::run_command(run);
  EXPECT_EQ(plain.exit_code, 1) << plain.output;
  EXPECT_NE(plain.output.find("ctp: error: step 2: fetched 'mean_0.tmp_0' FP32[1] holds nan"),
            std::string::npos)
      << plain.output;
  // Intermediates are freed after their last use: the op that made the
  // first non-finite value is not known after the step...
  EXPECT_NE(plain.output.find("; intermediates were freed after their last use (--keep-all-vars "
                              "keeps them to name the op whose output holds one)"),
            std::string::npos)
      << plain.output;
  // ... unless every var is kept. The synthetic data overflow the second
  // layer first; both ways name it.
  test::CommandResult kept = test::run_command(run + " --keep-all-vars");
  EXPECT_EQ(kept.exit_code, 1) << kept.output;
  EXPECT_NE(kept.output.find("the first op whose output holds a non-finite value: block 0, op 3 "
                             "'mul': output Out='fc_1.tmp_0'"),
            std::string::npos)
      << kept.output;
  test::CommandResult checked = test::run_command(run + " --check-nan-inf");
  EXPECT_EQ(checked.exit_code, 1) << checked.output;
  EXPECT_NE(checked.output.find("ctp: error: block 0, op 3 'mul': step 2: output Out='fc_1.tmp_0'"),
            std::string::npos)
      << checked.output;
}

}  // namespace
}  // namespace ctp
