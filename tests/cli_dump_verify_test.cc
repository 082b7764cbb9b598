// `ctp dump` and `ctp verify` as a user runs them: real processes, real files.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "program_ir/atomic_file.h"

namespace ctp {
namespace {

namespace fs = std::filesystem;

struct CliResult {
  int exit_code;
  std::string output;  // stdout and stderr together
};

// `stdout_to`: where the tool's standard output goes instead of the result.
CliResult run_ctp(const std::string& args, const std::string& stdout_to = "") {
  std::string cmd = "{ " + std::string(CTP_CLI_PATH) + " " + args +
                    (stdout_to.empty() ? "" : " >" + stdout_to) + "; } 2>&1";
  FILE* pipe = ::popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  while (std::size_t n = std::fread(buf, 1, sizeof buf, pipe)) out.append(buf, n);
  int status = ::pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

class CliDumpVerify : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("ctp_cli_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::string write(const std::string& name, const std::string& contents) const {
    write_file_atomically(path(name), contents);
    return path(name);
  }
  fs::path dir_;
};

// The hand-written program of the issue, plus the vars its op names.
const char* kProgram = R"({"version": 0, "blocks": [{"idx": 0, "parent_idx": -1, "vars": [
  {"name": "fc_0.w_0", "type": "LOD_TENSOR", "dtype": "FP32", "shape": [784, 10], "persistable": true,
   "is_parameter": true, "stop_gradient": false, "is_distributed": false},
  {"name": "x", "shape": [-1, 784]}, {"name": "fc_0.tmp_0", "shape": [-1, 10]}],
  "ops": [{"type": "mul", "inputs": {"X": ["x"], "Y": ["fc_0.w_0"]}, "outputs": {"Out": ["fc_0.tmp_0"]},
   "attrs": {"op_role": {"type": "INT", "value": 0}, "op_role_var": {"type": "STRINGS", "value": []},
             "x_num_col_dims": {"type": "INT", "value": 1}, "scale_hint": {"type": "FLOAT", "value": 0.1}}}]}]})";

TEST_F(CliDumpVerify, JsonToProtoToJsonIsIdentical) {
  std::string in = write("in.json", kProgram);
  ASSERT_EQ(run_ctp("dump " + in + " -o " + path("a.json")).exit_code, 0);
  ASSERT_EQ(run_ctp("dump " + path("a.json") + " --emit proto -o " + path("p.pb")).exit_code, 0);
  ASSERT_EQ(run_ctp("dump " + path("p.pb") + " --emit json -o " + path("b.json")).exit_code, 0);
  std::string a = read_file(path("a.json"));
  EXPECT_EQ(a, read_file(path("b.json")));
  EXPECT_NE(a.find("\"scale_hint\""), std::string::npos);
  EXPECT_NE(a.find("0.1"), std::string::npos);  // the FLOAT prints as written
  CliResult text = run_ctp("dump " + path("p.pb") + " --emit text");
  EXPECT_EQ(text.exit_code, 0);
  EXPECT_NE(text.output.find("op mul X=[x], Y=[fc_0.w_0] -> Out=[fc_0.tmp_0]"), std::string::npos)
      << text.output;
  CliResult dot = run_ctp("dump " + in + " --emit dot");
  EXPECT_EQ(dot.exit_code, 0);
  EXPECT_EQ(dot.output.rfind("digraph", 0), 0u) << dot.output;
  EXPECT_EQ(run_ctp("verify " + path("p.pb")).exit_code, 0);
}

struct BrokenCase {
  const char* name;
  std::string program;
  std::string expected;  // a fragment of the message naming the place
};

std::string one_op(const std::string& vars, const std::string& op, int parent = -1) {
  return R"({"blocks": [{"idx": 0, "parent_idx": )" + std::to_string(parent) +
         R"(, "vars": [)" + vars + R"(], "ops": [)" + op + "]}]}";
}

TEST_F(CliDumpVerify, BrokenProgramsExitOneNamingThePlace) {
  const std::string vars = R"({"name": "w"}, {"name": "w@GRAD"})";
  std::vector<BrokenCase> cases = {
      {"odd_op_role_var",
       one_op(vars, R"({"type": "scale", "inputs": {"X": ["w@GRAD"]}, "outputs": {"Out": ["w@GRAD"]},
          "attrs": {"op_role": {"type": "INT", "value": 1},
                    "op_role_var": {"type": "STRINGS", "value": ["w"]}}})"),
       "op 0 'scale'"},
      {"undeclared_var",
       one_op(vars, R"({"type": "scale", "inputs": {"X": ["nowhere"]}, "outputs": {"Out": ["w"]}})"),
       "'nowhere'"},
      {"bad_block_parent",
       one_op(vars, R"({"type": "scale", "inputs": {"X": ["w"]}, "outputs": {"Out": ["w"]}})", 3),
       "block 0"},
      {"wrong_attr_type",
       one_op(vars, R"({"type": "c_allreduce_sum", "inputs": {"X": ["w"]}, "outputs": {"Out": ["w"]},
          "attrs": {"ring_id": {"type": "FLOAT", "value": 1.0}}})"),
       "ring_id"},
      {"invalid_json", R"({"blocks": [{"idx": 0,)", "line 1"},
      {"unknown_attr_type",
       one_op(vars, R"({"type": "scale", "inputs": {"X": ["w"]}, "outputs": {"Out": ["w"]},
          "attrs": {"scale": {"type": "FLOAT128", "value": 1}}})"),
       "scale"},
  };
  for (const BrokenCase& c : cases) {
    std::string file = write(std::string(c.name) + ".json", c.program);
    CliResult r = run_ctp("verify " + file);
    EXPECT_EQ(r.exit_code, 1) << c.name << ": " << r.output;
    EXPECT_NE(r.output.find(c.expected), std::string::npos) << c.name << ": " << r.output;
    EXPECT_NE(r.output.find(file), std::string::npos) << c.name << ": " << r.output;
  }
}

TEST_F(CliDumpVerify, TruncatedProtobufFailsWithoutPartialOutput) {
  std::string in = write("in.json", kProgram);
  ASSERT_EQ(run_ctp("dump " + in + " --emit proto -o " + path("p.pb")).exit_code, 0);
  std::string bytes = read_file(path("p.pb"));
  for (std::size_t cut : {std::size_t{1}, bytes.size() / 3, bytes.size() - 1}) {
    std::string file = write("cut.pb", bytes.substr(0, cut));
    CliResult verify = run_ctp("verify " + file);
    EXPECT_EQ(verify.exit_code, 1) << cut << ": " << verify.output;
    EXPECT_NE(verify.output.find("cut.pb"), std::string::npos) << verify.output;
    CliResult dump = run_ctp("dump " + file + " -o " + path("out.json"));
    EXPECT_EQ(dump.exit_code, 1);
    EXPECT_FALSE(fs::exists(path("out.json")));
  }
  for (const auto& entry : fs::directory_iterator(dir_))  // no stray temporaries
    EXPECT_EQ(entry.path().filename().string().find(".tmp"), std::string::npos)
        << entry.path();
}

TEST_F(CliDumpVerify, UsageErrorsExitTwoAndMissingFilesExitOne) {
  EXPECT_EQ(run_ctp("dump").exit_code, 2);
  EXPECT_EQ(run_ctp("dump x.json --emit yaml").exit_code, 2);
  EXPECT_EQ(run_ctp("no-such-command").exit_code, 2);
  CliResult missing = run_ctp("verify " + path("absent.json"));
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.output.find("absent.json"), std::string::npos);
  CliResult help = run_ctp("--help");
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.output.find("dump"), std::string::npos);
  CliResult version = run_ctp("--version");
  EXPECT_EQ(version.exit_code, 0);
  EXPECT_NE(version.output.find("ctp "), std::string::npos);
}

// Output that cannot be written (a full disk) fails the command: no exit 0
// with the result lost.
// PaddleX's training program (846 ops, many of types ctp has no schema for):
// verify says what it checked, counts the ops without a schema by type in one
// line per type, and says a warning many ops share once.
TEST_F(CliDumpVerify, SummarizesOpsWithoutASchema) {
  const fs::path file = fs::path(CTP_SOURCE_DIR) / ".." / "shared" / "realworld" / "programs" /
                        "errorkeen_trash_best_model_train.pdmodel";
  if (!fs::exists(file)) GTEST_SKIP() << file << " is absent (../shared/realworld)";
  const CliResult r = run_ctp("verify " + file.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("is not in the op registry"), std::string::npos);
  EXPECT_NE(r.output.find("checked 6 block(s), 1445 var(s), 846 op(s): block structure"),
            std::string::npos)
      << r.output;
  const std::size_t header = r.output.find(" type(s) have no schema in ctp");
  ASSERT_NE(header, std::string::npos) << r.output;
  // "N op(s) of T type(s) have no schema ...", then T lines "  <type> <count>"
  // whose counts add up to N, prior_box among them; rmsprop (one per
  // parameter) has a schema, so its 129 ops are checked and not listed.
  std::istringstream in(r.output);
  int64_t declared_ops = -1, declared_types = -1, ops = 0, types = 0;
  bool prior_box = false, rmsprop = false;
  for (std::string line; std::getline(in, line);) {
    const std::size_t at = line.find(": ");
    if (line.find(" type(s) have no schema") != std::string::npos)
      std::sscanf(line.c_str() + at + 2, "%ld op(s) of %ld type(s)", &declared_ops, &declared_types);
    if (line.rfind("  ", 0) != 0) continue;
    std::istringstream row(line);
    std::string type;
    int64_t count = 0;
    ASSERT_TRUE(row >> type >> count) << line;
    ops += count;
    ++types;
    prior_box |= type == "prior_box" && count == 6;
    rmsprop |= type == "rmsprop";
  }
  EXPECT_EQ(ops, declared_ops);
  EXPECT_EQ(types, declared_types);
  EXPECT_TRUE(prior_box) << r.output;
  EXPECT_FALSE(rmsprop) << r.output;
  // It printed 489 lines, one per op without a schema.
  EXPECT_LT(std::count(r.output.begin(), r.output.end(), '\n'), 100) << r.output;
}

// A warning that many ops of one type share is said once, with how many.
TEST_F(CliDumpVerify, AWarningManyOpsShareIsSaidOnce) {
  std::string program = kProgram;
  const std::string op = R"({"type": "mul", "inputs": {"X": ["x"], "Y": ["fc_0.w_0"]},
      "outputs": {"Out": ["fc_0.tmp_0"]}, "attrs": {"not_an_attribute": {"type": "INT", "value": 1}}})";
  program.replace(program.rfind("}]}]}"), 5, "}, " + op + ", " + op + ", " + op + "]}]}");
  const CliResult r = run_ctp("verify " + write("p.json", program));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("warning: block 0, op 1 'mul', attr 'not_an_attribute': is not "
                          "declared by 'mul' (and 2 more mul op(s) alike)"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("op 2 'mul'"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("ok (1 block(s), 4 ops, 4 warning(s))"), std::string::npos) << r.output;
}

TEST_F(CliDumpVerify, OutputThatCannotBeWrittenFails) {
  std::string in = write("in.json", kProgram);
  for (const std::string& command : {"verify " + in, "dump " + in + " --emit text"}) {
    CliResult r = run_ctp(command, "/dev/full");  // stderr still reaches the test
    EXPECT_EQ(r.exit_code, 1) << command << ": " << r.output;
    EXPECT_NE(r.output.find("ctp: error: cannot write to standard output: No space left on device"),
              std::string::npos)
        << command << ": " << r.output;
  }
}

}  // namespace
}  // namespace ctp
