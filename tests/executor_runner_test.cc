// ProgramRunner (the engine of `ctp run`) and .npy tensors.
#include <cmath>

#include "executor/runtime/npy.h"
#include "executor/program_runner.h"
#include "samples/mlp_model.h"
#include "tests/kernels_test_util.h"

namespace ctp {
namespace {

using test::tensor;
using test::values;

TEST(ExecutorNpy, RoundTripsDtypesAndShapes) {
  const Tensor a = tensor<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  const std::string bytes = tensor_to_npy(a);
  EXPECT_EQ(bytes.size() % 64, 24u);  // 64-byte header + 24 data bytes
  const Tensor b = tensor_from_npy(bytes, "a.npy");
  EXPECT_EQ(b.dtype(), DataType::FP32);
  EXPECT_EQ(b.shape(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(values<float>(b), values<float>(a));
  const Tensor v = tensor_from_npy(tensor_to_npy(tensor<int64_t>({3}, {7, -8, 9})), "v.npy");
  EXPECT_EQ(v.shape(), (std::vector<int64_t>{3}));
  EXPECT_EQ(values<int64_t>(v), (std::vector<int64_t>{7, -8, 9}));
  const Tensor s = tensor_from_npy(tensor_to_npy(tensor<double>({}, {2.5})), "s.npy");
  EXPECT_TRUE(s.shape().empty());
  EXPECT_EQ(values<double>(s), (std::vector<double>{2.5}));
}

std::string npy_with_header(const std::string& dict, const std::string& data) {
  std::string header = dict;
  header.append((64 - (10 + header.size() + 1) % 64) % 64, ' ');
  header += '\n';
  std::string out = "\x93NUMPY\x01";
  out += '\0';
  out += static_cast<char>(header.size());
  out += '\0';
  return out + header + data;
}

TEST(ExecutorNpy, ReadsNumpyHeadersAndRejectsWhatItCannotRead) {
  const double values_[2] = {1.5, -2};
  const std::string data(reinterpret_cast<const char*>(values_), sizeof values_);
  const Tensor t =
      tensor_from_npy(npy_with_header("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 1), }", data),
                      "t.npy");
  EXPECT_EQ(t.shape(), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(values<double>(t), (std::vector<double>{1.5, -2}));
  const auto error_of = [](const std::string& bytes) {
    try {
      tensor_from_npy(bytes, "bad.npy");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error_of(npy_with_header("{'descr': '<f8', 'fortran_order': True, 'shape': (2,), }", data))
                .find("Fortran"), std::string::npos);
  EXPECT_NE(error_of(npy_with_header("{'descr': '>f8', 'fortran_order': False, 'shape': (2,), }", data))
                .find("'>f8'"), std::string::npos);
  EXPECT_NE(error_of(npy_with_header("{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }", data))
                .find("needs 24"), std::string::npos);
  EXPECT_NE(error_of("hello").find("bad.npy: not a .npy file"), std::string::npos);
}

samples::MlpPrograms small_mlp() {
  samples::MlpConfig c;
  c.input_dim = 3;
  c.hidden = {8};
  c.classes = 4;
  c.init_seed = 3;
  return samples::build_mlp(c);
}

TEST(ExecutorRunner, SyntheticInputsFollowDeclarationsAndLossIsFetched) {
  const samples::MlpPrograms p = small_mlp();
  ProgramRunOptions options;
  options.batch = 16;
  options.seed = 1;
  ProgramRunner runner(p.startup, p.main, options);
  EXPECT_EQ(runner.synthetic_inputs(), (std::vector<std::string>{"x", "label"}));
  EXPECT_EQ(runner.fetch_names(), (std::vector<std::string>{p.loss}));
  runner.run_startup();
  std::vector<double> losses;
  for (int step = 0; step < 3; ++step) {
    const Fetched f = runner.run_step();
    ASSERT_EQ(f.size(), 1u);
    losses.push_back(test::cpu_scalar(f[0].second));
    EXPECT_TRUE(std::isfinite(losses.back()));
  }
  EXPECT_NE(losses[0], losses[1]);  // each step draws new data
  const Tensor& x = runner.scope().get("x");
  EXPECT_EQ(x.shape(), (std::vector<int64_t>{16, 3}));
  const Tensor& label = runner.scope().get("label");
  EXPECT_EQ(label.shape(), (std::vector<int64_t>{16, 1}));
  std::vector<int> seen(4, 0);
  for (int64_t v : values<int64_t>(label)) {
    ASSERT_GE(v, 0);
    ASSERT_LT(v, 4);  // the logits' class count
    ++seen[static_cast<std::size_t>(v)];
  }
  EXPECT_GT(seen[3], 0);
}

TEST(ExecutorRunner, SameSeedSameRunAndRanksDiffer) {
  const samples::MlpPrograms p = small_mlp();
  const auto run = [&](int rank) {
    ProgramRunOptions options;
    options.batch = 4;
    options.rank = rank;
    ProgramRunner runner(p.startup, p.main, options);
    runner.run_startup();
    runner.run_step();
    return values<float>(runner.run_step()[0].second);
  };
  EXPECT_EQ(run(0), run(0));
  EXPECT_NE(run(0), run(1));
}

TEST(ExecutorRunner, FixedFeedsAndExplicitFetches) {
  const samples::MlpPrograms p = small_mlp();
  ProgramRunOptions options;
  options.feeds["x"] = tensor<float>({2, 3}, {1, 0, 0, 0, 1, 0});
  options.feeds["label"] = tensor<int64_t>({2, 1}, {3, 1});
  options.fetch = {"fc_1.b_0", p.loss};
  ProgramRunner runner(p.startup, p.main, options);
  EXPECT_TRUE(runner.synthetic_inputs().empty());
  runner.run_startup();
  const Fetched first = runner.run_step();
  ASSERT_EQ(first.size(), 2u);
  EXPECT_EQ(first[0].first, "fc_1.b_0");
  EXPECT_EQ(first[0].second.shape(), (std::vector<int64_t>{4}));
  double loss = test::cpu_scalar(first[1].second);
  for (int step = 0; step < 20; ++step) runner.run_step();
  EXPECT_LT(test::cpu_scalar(runner.run_step()[1].second), loss);  // same batch: it is learned

  ProgramRunOptions bad;
  bad.feeds["fc_0.w_0"] = tensor<float>({1}, {1});
  try {
    ProgramRunner(p.startup, p.main, bad);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("does not read 'fc_0.w_0'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(" x label"), std::string::npos) << e.what();
  }
}

TEST(ExecutorRunner, FeedAndFetchOpsAreServed) {
  Program startup = Program::with_global_block();
  Program main = Program::with_global_block();
  Block& b = main.global_block();
  b.add_var(Var{.name = "feed", .type = VarKind::FEED_MINIBATCH, .persistable = true});
  b.add_var(Var{.name = "fetch", .type = VarKind::FETCH_LIST, .persistable = true});
  b.add_var(Var{.name = "x", .dtype = DataType::FP64, .shape = {-1, 2}});
  b.append_op(test::make_op("feed", {{"X", {"feed"}}}, {{"Out", {"x"}}}, {{"col", Attribute(int32_t{0})}}));
  b.append_op(test::make_op("scale", {{"X", {"x"}}}, {{"Out", {"y"}}}, {{"scale", Attribute(2.0f)}}));
  b.append_op(test::make_op("fetch", {{"X", {"y"}}}, {{"Out", {"fetch"}}}, {{"col", Attribute(int32_t{0})}}));
  ProgramRunOptions options;
  options.batch = 3;
  ProgramRunner runner(startup, main, options);
  EXPECT_EQ(runner.synthetic_inputs(), (std::vector<std::string>{"x"}));
  EXPECT_EQ(runner.fetch_names(), (std::vector<std::string>{"y"}));
  const Fetched f = runner.run_step();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].second.shape(), (std::vector<int64_t>{3, 2}));
  const std::vector<double> y = values<double>(f[0].second);
  const std::vector<double> x = values<double>(runner.scope().get("x"));
  for (std::size_t i = 0; i < y.size(); ++i) {
    EXPECT_EQ(y[i], 2 * x[i]);
    EXPECT_GE(x[i], -1.0);
    EXPECT_LT(x[i], 1.0);
  }
  EXPECT_EQ(describe_tensor(tensor<float>({2, 2}, {1.5f, 2, 3, 4}), 3),
            "[2, 2] FP32 = [1.5, 2, 3, ... (4 values)]");
}

// An input with unknown dims beside the batch (an image of any width) gets
// the whole shape given for it; a shape that does not fit the declaration,
// or one given for a var that gets no synthetic data, is refused up front.
TEST(ExecutorRunner, GivenInputShapesReplaceTheDeclaredUnknownDims) {
  Program startup = Program::with_global_block();
  Program main = Program::with_global_block();
  Block& b = main.global_block();
  b.add_var(Var{.name = "x", .dtype = DataType::FP32, .shape = {-1, 3, -1}});
  b.add_var(Var{.name = "w", .dtype = DataType::FP32, .shape = {-1, 2}});
  b.append_op(test::make_op("relu", {{"X", {"x"}}}, {{"Out", {"y"}}}));
  b.append_op(test::make_op("relu", {{"X", {"w"}}}, {{"Out", {"z"}}}));
  ProgramRunOptions options;
  options.batch = 4;
  options.fetch = {"y", "z"};
  options.input_shapes["x"] = {2, 3, 320};
  ProgramRunner runner(startup, main, options);
  const Fetched f = runner.run_step();
  EXPECT_EQ(f[0].second.shape(), (std::vector<int64_t>{2, 3, 320}));
  EXPECT_EQ(f[1].second.shape(), (std::vector<int64_t>{4, 2}));  // --batch for the others
  const auto error = [&](std::map<std::string, std::vector<int64_t>> shapes,
                         std::map<std::string, Tensor> feeds = {}) {
    ProgramRunOptions o;
    o.input_shapes = std::move(shapes);
    o.feeds = std::move(feeds);
    try {
      ProgramRunner(startup, main, o);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error({{"x", {2, 3}}}),
            "input 'x' is declared [-1, 3, -1]; the shape given for it, [2, 3], has 2 dims, not 3");
  EXPECT_EQ(error({{"x", {2, 4, 320}}}),
            "input 'x' is declared [-1, 3, -1]; the shape given for it, [2, 4, 320], differs at "
            "dim 1, which is fixed");
  EXPECT_EQ(error({{"y", {2}}}),
            "--input-shape y: 'y' is not an input of the main program that gets synthetic data; "
            "those are: x w");
  EXPECT_EQ(error({{"x", {2, 3, 5}}}, {{"x", tensor<float>({1, 3, 1}, {1, 2, 3})}}),
            "input 'x' is fed (--feed) and also given a shape (--input-shape); a fed input has "
            "its array's shape");
}

TEST(ExecutorRunner, UndeclaredSyntheticInputIsAnErrorUpFront) {
  Program startup = Program::with_global_block();
  Program main = Program::with_global_block();
  main.global_block().append_op(test::make_op("relu", {{"X", {"mystery"}}}, {{"Out", {"y"}}}));
  try {
    ProgramRunner(startup, main, {});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--feed mystery=FILE.npy"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ctp
