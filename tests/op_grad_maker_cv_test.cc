// The grad makers of conv2d, depthwise_conv2d, pool2d and batch_norm write
// the grad ops Paddle's makers write (tests/op_grad_maker_test.cc checks
// every maker's ops against their grad op's schema).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unordered_set>

#include "ops/schema/grad_maker.h"
#include "ops/schema/op_def.h"

namespace ctp {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

Op grad_of(const Op& forward, const std::unordered_set<std::string>& no_grad = {}) {
  const OpDef* d = OpRegistry::global().find(forward.type);
  if (!d || !d->grad.declared()) throw Error("no grad maker for " + forward.type);
  const std::vector<Op> ops = d->grad.make(GradMakerContext(forward, no_grad));
  if (ops.size() != 1) throw Error("expected one grad op for " + forward.type);
  return ops[0];
}

TEST(GradMakersCv, ConvReadsInputFilterAndOutputGrad) {
  for (const char* type : {"conv2d", "depthwise_conv2d"}) {
    SCOPED_TRACE(type);
    const Op conv(type, {{"Input", {"img"}}, {"Filter", {"conv_0.w_0"}}},
                  {{"Output", {"conv_0.tmp_0"}}}, {{"groups", Attribute(int32_t{2})}});
    const Op g = grad_of(conv, {"img"});  // a data input: no gradient
    EXPECT_EQ(g.type, std::string(type) + "_grad");
    EXPECT_EQ(g.inputs(), (std::vector<Slot>{{"Input", {"img"}},
                                           {"Filter", {"conv_0.w_0"}},
                                           {"Output@GRAD", {"conv_0.tmp_0@GRAD"}}}));
    EXPECT_THAT(*g.output("Input@GRAD"), IsEmpty());
    EXPECT_THAT(*g.output("Filter@GRAD"), ElementsAre("conv_0.w_0@GRAD"));
    EXPECT_EQ(g.attrs(), conv.attrs());
  }
}

TEST(GradMakersCv, Pool2dReadsXOutAndOutGrad) {
  const Op pool("pool2d", {{"X", {"a"}}}, {{"Out", {"b"}}}, {{"pooling_type", Attribute("max")}});
  const Op g = grad_of(pool);
  EXPECT_EQ(g.type, "pool2d_grad");
  EXPECT_EQ(g.inputs(),
            (std::vector<Slot>{{"X", {"a"}}, {"Out", {"b"}}, {"Out@GRAD", {"b@GRAD"}}}));
  EXPECT_EQ(g.outputs(), (std::vector<Slot>{{"X@GRAD", {"a@GRAD"}}}));
}

TEST(GradMakersCv, BatchNormReadsTheRunningStatisticsOnlyWhereTheyNormalized) {
  const auto batch_norm = [](std::vector<NamedAttribute> attrs) {
    return Op("batch_norm",
              {{"X", {"x"}}, {"Scale", {"s"}}, {"Bias", {"b"}}, {"Mean", {"m"}},
               {"Variance", {"v"}}},
              {{"Y", {"y"}}, {"MeanOut", {"m"}}, {"VarianceOut", {"v"}},
               {"SavedMean", {"sm"}}, {"SavedVariance", {"sv"}}},
              std::move(attrs));
  };
  const Op training = grad_of(batch_norm({}));
  EXPECT_EQ(training.type, "batch_norm_grad");
  EXPECT_EQ(training.inputs(), (std::vector<Slot>{{"X", {"x"}},
                                                {"Scale", {"s"}},
                                                {"Bias", {"b"}},
                                                {"SavedMean", {"sm"}},
                                                {"SavedVariance", {"sv"}},
                                                {"Y@GRAD", {"y@GRAD"}}}));
  EXPECT_EQ(training.outputs(), (std::vector<Slot>{{"X@GRAD", {"x@GRAD"}},
                                                 {"Scale@GRAD", {"s@GRAD"}},
                                                 {"Bias@GRAD", {"b@GRAD"}}}));
  for (const char* flag : {"use_global_stats", "is_test"}) {
    SCOPED_TRACE(flag);
    const Op fixed = grad_of(batch_norm({{flag, Attribute(true)}}));
    EXPECT_THAT(*fixed.input("Mean"), ElementsAre("m"));  // MeanOut
    EXPECT_THAT(*fixed.input("Variance"), ElementsAre("v"));
  }
  EXPECT_FALSE(grad_of(batch_norm({{"is_test", Attribute(int32_t{0})}})).has_input("Mean"));
}

}  // namespace
}  // namespace ctp
