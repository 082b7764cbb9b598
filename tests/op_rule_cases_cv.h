// Rule cases (tests/op_rule_cases.h) of conv2d, depthwise_conv2d, pool2d,
// batch_norm and their grads: unsupported attribute values and bad shapes,
// each with the text the schema's inference and every kernel must fail with.
#pragma once
#include <string>
#include <vector>

#include "tests/op_rule_cases.h"

namespace ctp::test {

inline std::vector<RuleCase> cv_rule_cases() {
  const Slot input{"Input", {"x"}}, filter{"Filter", {"w"}}, output{"Output", {"out"}};
  const Slot x{"X", {"x"}}, out{"Out", {"out"}};
  const auto conv = [&](std::vector<NamedAttribute> attrs, std::string type = "conv2d") {
    return rule_op(std::move(type), {input, filter}, {output}, std::move(attrs));
  };
  const auto pool = [&](std::vector<NamedAttribute> attrs) {
    attrs.push_back({"pooling_type", Attribute("max")});
    attrs.push_back({"ksize", Attribute(std::vector<int32_t>{2, 2})});
    return rule_op("pool2d", {x}, {out}, std::move(attrs));
  };
  const std::map<std::string, Tensor> image = {{"x", f32({1, 4, 5, 5})}, {"w", f32({6, 2, 3, 3})}};
  std::vector<RuleCase> cases;
  cases.push_back({"Conv2dChannels", conv({}), image,
                   "input Input 'x' [1, 4, 5, 5] has 4 channels, but input Filter 'w' "
                   "[6, 2, 3, 3] with groups 1 reads 2"});
  cases.push_back({"DepthwiseConv2dGroups",
                   conv({{"groups", Attribute(int32_t{4})}}, "depthwise_conv2d"),
                   {{"x", f32({1, 4, 5, 5})}, {"w", f32({6, 1, 3, 3})}},
                   "input Filter 'w' [6, 1, 3, 3] has 6 output channels, not a multiple of "
                   "groups 4"});
  cases.push_back({"Conv2dDataFormat",
                   conv({{"groups", Attribute(int32_t{2})}, {"data_format", Attribute("NHWC")}}),
                   image, "data_format NHWC is not supported (only NCHW)"});
  cases.push_back({"Conv2dPaddingAlgorithm",
                   conv({{"groups", Attribute(int32_t{2})},
                         {"padding_algorithm", Attribute("FULL")}}),
                   image, "padding_algorithm 'FULL' is not one of EXPLICIT, SAME, VALID"});
  cases.push_back({"Conv2dPaddings",
                   conv({{"groups", Attribute(int32_t{2})},
                         {"paddings", Attribute(std::vector<int32_t>{1, 1, 1})}}),
                   image,
                   "paddings [1, 1, 1] has 3 values; expected 2 (height, width) or 4 (top, "
                   "bottom, left, right)"});
  cases.push_back({"Conv2dWindowTooLarge",
                   conv({{"groups", Attribute(int32_t{2})},
                         {"dilations", Attribute(std::vector<int32_t>{3, 1})}}),
                   image, "input height 5 with paddings 0 + 0 is smaller than the window's 7"});
  cases.push_back({"Conv2dFusion",
                   conv({{"groups", Attribute(int32_t{2})}, {"fuse_relu", Attribute(true)}}),
                   image, "fuse_relu (a fusion) is not supported"});
  cases.push_back({"Conv2dGradOutGrad",
                   rule_op("conv2d_grad", {input, filter, {"Output@GRAD", {"dout"}}},
                           {{"Input@GRAD", {"dx"}}},
                           {{"groups", Attribute(int32_t{2})}}),
                   {{"x", f32({1, 4, 5, 5})},
                    {"w", f32({6, 2, 3, 3})},
                    {"dout", f32({1, 6, 4, 3})}},
                   "input Output@GRAD 'dout' has shape [1, 6, 4, 3], expected [1, 6, 3, 3]"});
  cases.push_back({"Pool2dType",
                   rule_op("pool2d", {x}, {out},
                           {{"pooling_type", Attribute("min")},
                            {"ksize", Attribute(std::vector<int32_t>{2, 2})}}),
                   {{"x", f32({1, 2, 4, 4})}}, "pooling_type 'min' is not one of max, avg"});
  cases.push_back({"Pool2dRank", pool({}), {{"x", f32({2, 4, 4})}},
                   "input X 'x' has shape [2, 4, 4]; expected rank 4 (N, C, H, W)"});
  cases.push_back({"Pool2dStrides", pool({{"strides", Attribute(std::vector<int32_t>{0, 1})}}),
                   {{"x", f32({1, 2, 4, 4})}}, "strides [0, 1] must be positive"});
  cases.push_back({"Pool2dDataFormat", pool({{"data_format", Attribute("NHWC")}}),
                   {{"x", f32({1, 2, 4, 4})}}, "data_format NHWC is not supported (only NCHW)"});
  cases.push_back({"Pool2dGradOut",
                   rule_op("pool2d_grad", {x, out, {"Out@GRAD", {"dout"}}}, {{"X@GRAD", {"dx"}}},
                           {{"pooling_type", Attribute("avg")},
                            {"ksize", Attribute(std::vector<int32_t>{2, 2})},
                            {"strides", Attribute(std::vector<int32_t>{2, 2})}}),
                   {{"x", f32({1, 2, 4, 4})},
                    {"out", f32({1, 2, 2, 2})},
                    {"dout", f32({1, 2, 3, 3})}},
                   "input Out@GRAD 'dout' has shape [1, 2, 3, 3], expected [1, 2, 2, 2]"});
  const std::vector<Slot> bn_in = {x, {"Scale", {"s"}}, {"Bias", {"b"}}, {"Mean", {"m"}},
                                   {"Variance", {"v"}}};
  const std::vector<Slot> bn_out = {{"Y", {"y"}}, {"MeanOut", {"m"}}, {"VarianceOut", {"v"}},
                                    {"SavedMean", {"sm"}}, {"SavedVariance", {"sv"}}};
  cases.push_back({"BatchNormScaleShape", rule_op("batch_norm", bn_in, bn_out),
                   {{"x", f32({2, 3, 4})}, {"s", f32({4})}, {"b", f32({3})}, {"m", f32({3})},
                    {"v", f32({3})}},
                   "input Scale 's' has shape [4], expected [3] (one value per channel of X)"});
  cases.push_back({"BatchNormLayout",
                   rule_op("batch_norm", bn_in, bn_out, {{"data_layout", Attribute("NCDHW")}}),
                   {{"x", f32({2, 3, 4})}, {"s", f32({3})}, {"b", f32({3})}, {"m", f32({3})},
                    {"v", f32({3})}},
                   "data_layout 'NCDHW' is not one of NCHW, NHWC"});
  cases.push_back({"BatchNormStatsDtype", rule_op("batch_norm", bn_in, bn_out),
                   {{"x", f32({2, 3})}, {"s", f32({3})}, {"b", f32({3})}, {"m", f32({3})},
                    {"v", filled(DataType::FP64, {3})}},
                   "input Variance 'v' is FP64, expected FP32 (the statistics' dtype for input X "
                   "'x' FP32)"});
  cases.push_back({"BatchNormGradGlobalStats",
                   rule_op("batch_norm_grad",
                           {x, {"Scale", {"s"}}, {"SavedMean", {"m"}}, {"SavedVariance", {"v"}},
                            {"Y@GRAD", {"dy"}}},
                           {{"X@GRAD", {"dx"}}}, {{"use_global_stats", Attribute(true)}}),
                   {{"x", f32({2, 3})}, {"s", f32({3})}, {"m", f32({3})}, {"v", f32({3})},
                    {"dy", f32({2, 3})}},
                   "input Mean is required when is_test or use_global_stats is set"});
  return cases;
}

}  // namespace ctp::test
