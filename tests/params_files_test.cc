// Paddle's parameter files: the save / save_combine / load / load_combine ops
// (ops/common/persistence_ops.h), their byte layout against one written out
// by hand from Paddle's SerializeToStream and against libprotobuf's
// TensorDesc, their errors, and `ctp run --load-params DIR | --load-params-file
// FILE`, which loads a main program's persistables from such files (also on a
// real model of ../shared/realworld, skipping visibly without it), and
// --save-params(-file), which writes them back.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "ctp_check_framework.pb.h"
#include "executor/runtime/npy.h"
#include "program_ir/atomic_file.h"
#include "program_ir/builder.h"
#include "program_ir/persistables.h"
#include "program_ir/program_io.h"
#include "tests/executor_process_util.h"
#include "tests/kernels_test_util.h"
#include "tests/realworld_files.h"
#include "tests/realworld_inference_util.h"

namespace ctp {
namespace {

namespace fs = std::filesystem;
using test::make_op;
using test::run_op;
using test::tensor;
using test::values;

template <typename T>
void append_le(std::string& out, T v) {
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));
  out.append(b, sizeof(T));
}

Op save_op(const std::string& type, std::vector<std::string> xs, const std::string& path,
           std::vector<NamedAttribute> attrs = {}) {
  attrs.push_back({"file_path", Attribute(path)});
  return make_op(type, {{"X", std::move(xs)}}, {}, std::move(attrs));
}
Op load_op(const std::string& type, std::vector<std::string> outs, const std::string& path,
           std::vector<NamedAttribute> attrs = {}) {
  attrs.push_back({"file_path", Attribute(path)});
  return make_op(type, {}, {{"Out", std::move(outs)}}, std::move(attrs));
}

// Paddle's layout, field by field (lod_tensor.cc SerializeToStream,
// tensor_util.cc TensorToStream): versions, no LoD, TensorDesc{data_type:
// FP32 (5), dims: 2, 3}, then the six floats.
TEST(ParamsFiles, SaveWritesPaddlesLayout) {
  test::TempDir dir("params_layout");
  Scope s;
  const std::vector<float> w = {1.5f, -2, 0, 3.25f, 4, -8};
  s.var("w") = tensor<float>({2, 3}, w);
  run_op(s, save_op("save", {"w"}, dir / "sub/w"));  // missing directories are made
  std::string expected;
  append_le<uint32_t>(expected, 0);
  append_le<uint64_t>(expected, 0);
  append_le<uint32_t>(expected, 0);
  append_le<int32_t>(expected, 6);
  expected += std::string("\x08\x05\x10\x02\x10\x03", 6);
  expected.append(reinterpret_cast<const char*>(w.data()), w.size() * sizeof(float));
  EXPECT_EQ(read_file(dir / "sub/w"), expected);
}

TEST(ParamsFiles, TensorDescAgreesWithLibprotobuf) {
  test::TempDir dir("params_libprotobuf");
  Scope s;
  s.var("ids") = tensor<int64_t>({4, 1, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  run_op(s, save_op("save", {"ids"}, dir / "ids"));
  const std::string bytes = read_file(dir / "ids");
  int32_t desc_size;
  std::memcpy(&desc_size, bytes.data() + 16, 4);
  ctp_check::framework::VarType::TensorDesc desc;
  ASSERT_TRUE(desc.ParseFromString(bytes.substr(20, static_cast<std::size_t>(desc_size))));
  EXPECT_EQ(desc.data_type(), ctp_check::framework::VarType::INT64);
  EXPECT_EQ(std::vector<int64_t>(desc.dims().begin(), desc.dims().end()),
            (std::vector<int64_t>{4, 1, 2}));

  // A file whose TensorDesc libprotobuf wrote (an unknown field added, and
  // dims packed, as a proto3-minded writer might) loads the same.
  ctp_check::framework::VarType::TensorDesc other;
  other.set_data_type(ctp_check::framework::VarType::FP64);
  other.add_dims(3);
  std::string desc_bytes = other.SerializeAsString() + std::string("\x12\x01\x02", 3) +
                           std::string("\xa0\x06\x07", 3);  // dims 2 (packed); field 100
  std::string file;
  append_le<uint32_t>(file, 0);
  append_le<uint64_t>(file, 1);  // one LoD level of two offsets, read and dropped
  append_le<uint64_t>(file, 16);
  append_le<uint64_t>(file, 0);
  append_le<uint64_t>(file, 3);
  append_le<uint32_t>(file, 0);
  append_le<int32_t>(file, static_cast<int32_t>(desc_bytes.size()));
  file += desc_bytes;
  for (int i = 0; i < 6; ++i) append_le<double>(file, i * 0.5);
  write_file_atomically(dir / "d", file);
  run_op(s, load_op("load", {"d"}, dir / "d"));
  EXPECT_EQ(s.get("d").dtype(), DataType::FP64);
  EXPECT_EQ(s.get("d").shape(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(values<double>(s.get("d")), (std::vector<double>{0, 0.5, 1, 1.5, 2, 2.5}));
}

TEST(ParamsFiles, CombinedFilesRoundTripInTheOpsOrder) {
  test::TempDir dir("params_combined");
  Scope s;
  s.var("a") = tensor<float>({3}, {0.1f, 0.2f, 65504.0f});
  s.var("b") = tensor<int64_t>({2, 2}, {-1, 0, 1, int64_t{1} << 40});
  s.var("c") = tensor<double>({}, {2.5});
  run_op(s, save_op("save_combine", {"b", "a", "c"}, dir / "all"));
  run_op(s, load_op("load_combine", {"b2", "a2", "c2"}, dir / "all"));
  EXPECT_EQ(values<int64_t>(s.get("b2")), values<int64_t>(s.get("b")));
  EXPECT_EQ(values<float>(s.get("a2")), values<float>(s.get("a")));
  EXPECT_EQ(s.get("c2").shape(), std::vector<int64_t>{});
  EXPECT_EQ(values<double>(s.get("c2")), (std::vector<double>{2.5}));
  // save_as_fp16 stores FP32 tensors as FP16 (others unchanged).
  run_op(s, save_op("save_combine", {"a", "b"}, dir / "half", {{"save_as_fp16", Attribute(true)}}));
  run_op(s, load_op("load_combine", {"a3", "b3"}, dir / "half"));
  EXPECT_EQ(s.get("a3").dtype(), DataType::FP16);
  EXPECT_EQ(s.get("b3").dtype(), DataType::INT64);
}

TEST(ParamsFiles, BadFilesAreErrorsNamingTheFileAndVar) {
  test::TempDir dir("params_errors");
  Scope s;
  s.var("a") = tensor<float>({4}, {1, 2, 3, 4});
  s.var("b") = tensor<float>({2}, {5, 6});
  run_op(s, save_op("save_combine", {"a", "b"}, dir / "ab"));
  const std::string bytes = read_file(dir / "ab");

  write_file_atomically(dir / "short", bytes.substr(0, bytes.size() - 3));
  std::string what = test::run_op_error(s, load_op("load_combine", {"a", "b"}, dir / "short"));
  EXPECT_NE(what.find("'load_combine'"), std::string::npos) << what;
  EXPECT_NE(what.find("short', tensor 2 of 2 (var 'b')"), std::string::npos) << what;
  EXPECT_NE(what.find("the file ends inside the tensor data"), std::string::npos) << what;

  what = test::run_op_error(s, load_op("load_combine", {"a", "b", "c"}, dir / "ab"));
  EXPECT_NE(what.find("tensor 3 of 3 (var 'c'): the file ends after 2 tensor(s)"),
            std::string::npos) << what;
  what = test::run_op_error(s, load_op("load_combine", {"a"}, dir / "ab"));
  EXPECT_NE(what.find("more byte(s) after the 1 tensor(s) the op loads"), std::string::npos)
      << what;
  what = test::run_op_error(s, load_op("load", {"a"}, dir / "missing"));
  EXPECT_NE(what.find("missing"), std::string::npos) << what;

  std::string bad = bytes;
  bad[0] = 7;  // a LoDTensor version Paddle never wrote
  write_file_atomically(dir / "bad", bad);
  what = test::run_op_error(s, load_op("load_combine", {"a", "b"}, dir / "bad"));
  EXPECT_NE(what.find("byte 4: LoDTensor version 7, expected 0"), std::string::npos) << what;

  what = test::run_op_error(s, load_op("load", {"a"}, dir / "ab", {{"seek", Attribute(int64_t{8})}}));
  EXPECT_NE(what.find("attribute seek is 8"), std::string::npos) << what;
  what = test::run_op_error(s, save_op("save", {"a"}, dir / "ab", {{"overwrite", Attribute(false)}}));
  EXPECT_NE(what.find("exists and attribute overwrite is false"), std::string::npos) << what;
}

// A save that cannot write fails naming the path and changes nothing:
// here a directory it needs is a file already.
TEST(ParamsFiles, AFailedSaveChangesNothingOnDisk) {
  test::TempDir dir("params_partial");
  write_file_atomically(dir / "taken", "not a directory");
  Scope s;
  s.var("a") = tensor<float>({1}, {1});
  const std::string what = test::run_op_error(s, save_op("save", {"a"}, dir / "taken/new/f"));
  EXPECT_NE(what.find("'save'"), std::string::npos) << what;
  EXPECT_NE(what.find("taken"), std::string::npos) << what;
  EXPECT_EQ(read_file(dir / "taken"), "not a directory");
  std::size_t entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir.path())) ++entries;
  EXPECT_EQ(entries, 1u) << "a staging directory or file was left";
}

// Paddle writes a combined file in the order of the vars' names; feed and
// fetch vars are not parameters; what ctp cannot load is named.
TEST(ParamsFiles, PersistablesAreTheSortedTensorsAndTheLoadProgramReadsThem) {
  ProgramBuilder pb;
  pb.param("fc_1.w_0", {2, 2});
  pb.param("fc_0.w_0", {2, 2});
  pb.persistable("batch_norm_0.w_1", {2});
  Var feed;
  feed.name = "feed";
  feed.type = VarKind::FEED_MINIBATCH;
  feed.persistable = true;
  pb.block().add_var(feed);
  const Program main = pb.build();
  const std::vector<std::string> sorted = {"batch_norm_0.w_1", "fc_0.w_0", "fc_1.w_0"};
  EXPECT_EQ(persistable_tensor_names(main), sorted);
  const Program combined = load_persistables_program(main, {"", std::string("/p/__params__")});
  ASSERT_EQ(combined.global_block().op_count(), 1u);
  EXPECT_EQ(*combined.global_block().ops().front().output("Out"), sorted);
  const Program per_var = load_persistables_program(main, {"/p", std::nullopt});
  ASSERT_EQ(per_var.global_block().op_count(), 3u);
  EXPECT_EQ(per_var.global_block().ops().back().attr("file_path")->get<std::string>(), "/p/fc_1.w_0");

  Program odd = main;
  Var rows;
  rows.name = "rows";
  rows.type = VarKind::SELECTED_ROWS;
  rows.persistable = true;
  odd.global_block().add_var(rows);
  try {
    persistable_tensor_names(odd);
    FAIL() << "a persistable SELECTED_ROWS var was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("persistable var 'rows' is a SELECTED_ROWS"),
              std::string::npos) << e.what();
  }
}

// x [-1, 2] times the persistable w [2, 2], fetched.
Program small_model() {
  ProgramBuilder pb;
  pb.data("x", {-1, 2});
  pb.param("w", {2, 2});
  pb.tmp("y", {-1, 2});
  pb.op("mul").in("X", "x").in("Y", "w").out("Out", "y");
  return pb.build();
}

TEST(ParamsFiles, CtpRunLoadsPersistablesFromDirOrCombinedFile) {
  test::TempDir dir("params_cli");
  const Program main = small_model();
  EXPECT_EQ(persistable_tensor_names(main), std::vector<std::string>{"w"});
  write_file_atomically(dir / "main.json", serialize_program(main, ProgramFormat::Json));
  write_file_atomically(dir / "x.npy", tensor_to_npy(tensor<float>({1, 2}, {1, 2})));
  Scope s;
  s.var("w") = tensor<float>({2, 2}, {1, 2, 3, 4});
  run_op(s, save_op("save", {"w"}, dir / "params/w"));
  run_op(s, save_op("save_combine", {"w"}, dir / "params.bin"));
  const std::string base = std::string(CTP_CLI_PATH) + " run --main " + (dir / "main.json") +
                           " --feed x=" + (dir / "x.npy") + " --fetch y ";
  for (const std::string& how : {"--load-params " + (dir / "params"), "--load-params-file " + (dir / "params.bin")}) {
    const test::CommandResult r = test::run_command(base + how);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("y = [1, 2] FP32 = [7, 10]"), std::string::npos) << how << "\n" << r.output;
  }
  // --save-params(-file) writes them back as they came: the same bytes.
  test::CommandResult r = test::run_command(base + "--load-params-file " + (dir / "params.bin") +
                                            " --save-params-file " + (dir / "again/params.bin"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(read_file(dir / "again/params.bin"), read_file(dir / "params.bin"));
  r = test::run_command(base + "--load-params " + (dir / "params") + " --steps 0 --save-params " +
                        (dir / "again_dir"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(read_file(dir / "again_dir/w"), read_file(dir / "params/w"));

  r = test::run_command(base);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--startup, --load-params, --load-params-file or --random-params is "
                          "required"), std::string::npos) << r.output;
  r = test::run_command(base + "--load-params-file " + (dir / "params/w") + "x");
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("params/wx"), std::string::npos) << r.output;
}

// Every persistable tensor an op reads gets its own seeded uniform_random
// (batch_norm's variances 1); vars no op reads, and non-persistable ones,
// get nothing.
TEST(ParamsFiles, RandomParamsGiveEveryReadParameterSeededValues) {
  ProgramBuilder pb;
  pb.data("x", {-1, 2, 1, 1});
  pb.param("w", {2, 2});
  pb.param("unread", {3});
  pb.persistable("bn.mean", {2});
  pb.persistable("bn.var", {2});
  pb.tmp("y", {-1, 2, 1, 1});
  pb.op("batch_norm").in("X", "x").in("Mean", "bn.mean").in("Variance", "bn.var")
      .in("Scale", "w").in("Bias", "w").out("Y", "y");
  const Program startup = random_persistables_program(pb.build(), {.min = -0.5f, .first_seed = 7});
  std::vector<std::string> made;
  for (const Op& op : startup.global_block().ops()) {
    const std::string name = op.output("Out")->front();
    made.push_back(op.type + " " + name);
    EXPECT_TRUE(startup.global_block().find_var(name)->persistable) << name;
    if (op.type == "fill_constant") {
      EXPECT_EQ(op.attr("value")->get<float>(), 1.0f);
    } else {
      EXPECT_EQ(op.attr("min")->get<float>(), -0.5f);
      EXPECT_EQ(op.attr("max")->get<float>(), 0.1f);
    }
  }
  const std::vector<std::string> expected = {"uniform_random w", "uniform_random bn.mean",
                                             "fill_constant bn.var"};
  EXPECT_EQ(made, expected);
  EXPECT_EQ(startup.global_block().ops().front().attr("seed")->get<int32_t>(), 7);
  EXPECT_EQ((++startup.global_block().ops().begin())->attr("seed")->get<int32_t>(), 8);
}

TEST(ParamsFiles, CtpRunRandomParamsRunsAModelWithoutItsWeights) {
  test::TempDir dir("params_random");
  write_file_atomically(dir / "main.json", serialize_program(small_model(), ProgramFormat::Json));
  const std::string base = std::string(CTP_CLI_PATH) + " run --main " + (dir / "main.json") +
                           " --fetch y --batch 2 --random-params";
  const test::CommandResult a = test::run_command(base);
  ASSERT_EQ(a.exit_code, 0) << a.output;
  EXPECT_NE(a.output.find("step 1/1  y = [2, 2] FP32"), std::string::npos) << a.output;
  const test::CommandResult b = test::run_command(base);
  EXPECT_EQ(a.output.substr(0, a.output.find("ran startup")),
            b.output.substr(0, b.output.find("ran startup")));  // the same values every run
  const test::CommandResult both = test::run_command(base + " --startup " + (dir / "main.json"));
  EXPECT_EQ(both.exit_code, 2) << both.output;
  EXPECT_NE(both.output.find("--random-params gives every parameter its values: it excludes "
                             "--startup"), std::string::npos) << both.output;
}

// A real model: its parameters saved as one combined file by a startup
// program that initialises them and ends in save_combine, then loaded with
// --load-params-file: the same outputs as the run that initialised them.
TEST(ParamsFiles, ARealModelRunsFromItsSavedParameters) {
  const test::RealWorld world = test::find_realworld();
  if (world.files.empty()) GTEST_SKIP() << world.skip_reason;
  const std::string model = (fs::path(CTP_SOURCE_DIR) / ".." / "shared" / "realworld" /
                             "programs" / "paddlelite_simple_model.pdmodel").string();
  if (!fs::exists(model)) GTEST_SKIP() << model << " is absent";
  test::TempDir dir("params_realworld");
  const Program main = load_program_file(model);
  Program init = random_persistables_program(main);
  ProgramBuilder pb(std::move(init));
  pb.op("save_combine").in("X", persistable_tensor_names(main))
      .attr("file_path", Attribute(dir / "model.pdiparams"));
  write_file_atomically(dir / "init.json", serialize_program(pb.build(), ProgramFormat::Json));
  const std::string run = std::string(CTP_CLI_PATH) + " run --main " + model + " --batch 2 ";
  test::CommandResult a = test::run_command(run + "--startup " + (dir / "init.json") +
                                            " --save-fetched " + (dir / "a"));
  ASSERT_EQ(a.exit_code, 0) << a.output;
  test::CommandResult b = test::run_command(run + "--load-params-file " + (dir / "model.pdiparams") +
                                            " --save-fetched " + (dir / "b"));
  ASSERT_EQ(b.exit_code, 0) << b.output;
  std::size_t compared = 0;
  for (const auto& entry : fs::recursive_directory_iterator(dir / "a")) {
    if (!entry.is_regular_file()) continue;
    const fs::path other = fs::path(dir / "b") / fs::relative(entry.path(), dir / "a");
    EXPECT_EQ(read_file(entry.path().string()), read_file(other.string())) << other;
    ++compared;
  }
  EXPECT_GT(compared, 0u);
}

}  // namespace
}  // namespace ctp
