// coalesce_tensor: aligned views into FusedOutput, copy_data/set_constant,
// and no reallocation or copy on later steps once the views are in place.
#include "tests/kernels_test_util.h"

namespace ctp {
namespace {

using test::make_op;
using test::tensor;
using test::values;

Op coalesce(std::vector<std::string> in, std::vector<std::string> out,
            std::vector<NamedAttribute> extra = {}) {
  Op op = make_op("coalesce_tensor", {{"Input", std::move(in)}},
                  {{"Output", std::move(out)}, {"FusedOutput", {"fused"}}},
                  {{"dtype", Attribute(static_cast<int32_t>(DataType::FP32))},
                   {"copy_data", Attribute(true)}});
  for (auto& a : extra) op.set_attr(a.name, std::move(a.value));
  return op;
}

// A "backward" that writes a and b in place every step, then the coalesce.
Program gradient_program(Op fuse) {
  Program p = Program::with_global_block();
  Block& b = p.global_block();
  b.append_op(make_op("scale", {{"X", {"a"}}}, {{"Out", {"a"}}}, {{"scale", Attribute(2.0f)}}));
  b.append_op(make_op("elementwise_add", {{"X", {"b"}}, {"Y", {"one"}}}, {{"Out", {"b"}}}));
  b.append_op(std::move(fuse));
  return p;
}

TEST(KernelsCoalesce, ViewsAreAlignedAndDataCopiedOnce) {
  Scope s;
  s.var("a") = tensor<float>({3}, {1, 2, 3});
  s.var("b") = tensor<float>({2, 2}, {4, 5, 6, 7});
  s.var("one") = tensor<float>({1}, {1});
  const Program program = gradient_program(coalesce({"a", "b"}, {"a", "b"}));
  Executor executor(program, RunServices{});
  executor.run(s);

  const Tensor& fused = s.get("fused");
  // 12 and 16 bytes, each rounded up to the 64-byte CPU alignment.
  EXPECT_EQ(fused.shape(), (std::vector<int64_t>{32}));
  EXPECT_TRUE(s.get("a").shares_buffer_with(fused));
  EXPECT_TRUE(s.get("b").shares_buffer_with(fused));
  EXPECT_EQ(s.get("a").offset(), fused.offset());
  EXPECT_EQ(s.get("b").offset(), fused.offset() + 64);
  EXPECT_EQ(s.get("b").shape(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(values<float>(s.get("a")), (std::vector<float>{2, 4, 6}));
  EXPECT_EQ(values<float>(s.get("b")), (std::vector<float>{5, 6, 7, 8}));
  const float* f = fused.data<float>();
  EXPECT_EQ(std::vector<float>(f + 16, f + 20), (std::vector<float>{5, 6, 7, 8}));
  EXPECT_EQ(executor.services().counters.coalesce_layouts, 1u);
  EXPECT_EQ(executor.services().counters.coalesce_bytes_copied, 28u);

  const void* fused_memory = fused.raw_data();
  const void* a_memory = s.get("a").raw_data();
  const auto buffer = fused.buffer();
  for (int step = 0; step < 3; ++step) executor.run(s);
  // The producers wrote straight into the fused buffer: no new layout, no copy.
  EXPECT_EQ(executor.services().counters.coalesce_layouts, 1u);
  EXPECT_EQ(executor.services().counters.coalesce_bytes_copied, 28u);
  EXPECT_EQ(s.get("fused").buffer(), buffer);
  EXPECT_EQ(s.get("fused").raw_data(), fused_memory);
  EXPECT_EQ(s.get("a").raw_data(), a_memory);
  const float* g = s.get("fused").data<float>();
  EXPECT_EQ(std::vector<float>(g, g + 3), (std::vector<float>{16, 32, 48}));
  EXPECT_EQ(std::vector<float>(g + 16, g + 20), (std::vector<float>{8, 9, 10, 11}));
}

TEST(KernelsCoalesce, UnalignedAndCustomAlignment) {
  Scope s;
  s.var("a") = tensor<float>({3}, {1, 2, 3});
  s.var("b") = tensor<float>({2}, {4, 5});
  test::run_op(s, coalesce({"a", "b"}, {"a", "b"}, {{"use_align", Attribute(false)}}));
  EXPECT_EQ(values<float>(s.get("fused")), (std::vector<float>{1, 2, 3, 4, 5}));
  Scope t;
  t.var("a") = tensor<float>({3}, {1, 2, 3});
  t.var("b") = tensor<float>({2}, {4, 5});
  test::run_op(t, coalesce({"a", "b"}, {"a", "b"}, {{"align_size", Attribute(int32_t{16})}}));
  EXPECT_EQ(values<float>(t.get("fused")), (std::vector<float>{1, 2, 3, 0, 4, 5, 0, 0}));
}

TEST(KernelsCoalesce, GpuDefaultAlignmentIs256Bytes) {
  Scope s;
  s.var("a") = tensor<float>({3}, {1, 2, 3});
  s.var("b") = tensor<float>({2}, {4, 5});
  // The layout rule depends only on the device kind; CPU memory stands in.
  Program p = Program::with_global_block();
  p.global_block().append_op(coalesce({"a", "b"}, {"a", "b"}));
  Block& block = p.global_block();
  RunServices services;
  services.device = Device{DeviceKind::CUDA, 0};
  KernelContext ctx(block.ops().front(), block, s, services, 0);
  (*KernelRegistry::global().find("coalesce_tensor", DeviceKind::CPU))(ctx);
  EXPECT_EQ(s.get("fused").numel(), 128);
  EXPECT_EQ(s.get("b").offset() - s.get("fused").offset(), 256u);
}

TEST(KernelsCoalesce, SetConstantFillsEveryStepWithoutInputs) {
  Program p = Program::with_global_block();
  Block& b = p.global_block();
  b.add_var(Var{.name = "ga", .shape = {2}});
  b.add_var(Var{.name = "gb", .shape = {3}});
  b.append_op(coalesce({"ga", "gb"}, {"ga", "gb"},
                       {{"copy_data", Attribute(false)}, {"set_constant", Attribute(true)},
                        {"constant", Attribute(0.5f)}}));
  Scope s;
  Executor executor(p, RunServices{});
  executor.run(s);  // ga and gb do not exist yet: declared shapes are used
  EXPECT_EQ(values<float>(s.get("ga")), (std::vector<float>{0.5f, 0.5f}));
  EXPECT_EQ(values<float>(s.get("gb")), (std::vector<float>{0.5f, 0.5f, 0.5f}));
  s.get("ga").data<float>()[0] = 9;
  executor.run(s);
  EXPECT_EQ(values<float>(s.get("ga")), (std::vector<float>{0.5f, 0.5f}));
  EXPECT_EQ(executor.services().counters.coalesce_layouts, 1u);
}

TEST(KernelsCoalesce, DistinctInputsAreCopiedEveryStep) {
  Scope s;
  s.var("x") = tensor<float>({2}, {1, 2});
  Program p = Program::with_global_block();
  p.global_block().append_op(coalesce({"x"}, {"y"}));
  Executor executor(p, RunServices{});
  executor.run(s);
  s.get("x").data<float>()[1] = 7;
  executor.run(s);
  EXPECT_EQ(values<float>(s.get("y")), (std::vector<float>{1, 7}));
  EXPECT_EQ(executor.services().counters.coalesce_layouts, 1u);
  EXPECT_EQ(executor.services().counters.coalesce_bytes_copied, 16u);
}

TEST(KernelsCoalesce, ShapeChangeRelaysOutAndDtypeMismatchIsAnError) {
  Scope s;
  s.var("a") = tensor<float>({2}, {1, 2});
  Program p = Program::with_global_block();
  p.global_block().append_op(coalesce({"a"}, {"a"}));
  Executor executor(p, RunServices{});
  executor.run(s);
  s.var("a") = tensor<float>({3}, {1, 2, 3});
  executor.run(s);
  EXPECT_EQ(executor.services().counters.coalesce_layouts, 2u);
  EXPECT_EQ(values<float>(s.get("a")), (std::vector<float>{1, 2, 3}));
  s.var("a") = tensor<double>({1}, {1});
  EXPECT_THROW(executor.run(s), Error);
}

}  // namespace
}  // namespace ctp
