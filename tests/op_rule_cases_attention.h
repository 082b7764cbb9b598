// Rule cases (tests/op_rule_cases.h) of flash_attn and flash_attn_grad: bad
// ranks, dims and dtypes, and what no kernel implements (dropout, an
// attention mask), each with the text the schema's inference and every
// kernel must fail with.
#pragma once
#include <string>
#include <vector>

#include "tests/op_rule_cases.h"

namespace ctp::test {

inline std::vector<RuleCase> attention_rule_cases() {
  const std::vector<Slot> outputs = {{"out", {"out"}},
                                     {"softmax", {"softmax"}},
                                     {"softmax_lse", {"lse_out"}},
                                     {"seed_offset", {"seed_offset"}}};
  const auto forward = [&](std::vector<NamedAttribute> attrs = {}, bool mask = false) {
    std::vector<Slot> in = {{"q", {"q"}}, {"k", {"k"}}, {"v", {"v"}}};
    if (mask) in.push_back({"attn_mask", {"mask"}});
    return rule_op("flash_attn", std::move(in), outputs, std::move(attrs));
  };
  const auto grad = [&](std::vector<NamedAttribute> attrs = {}) {
    return rule_op("flash_attn_grad",
                   {{"q", {"q"}}, {"k", {"k"}}, {"v", {"v"}}, {"out", {"o"}},
                    {"softmax_lse", {"lse"}}, {"out@GRAD", {"dout"}}},
                   {{"q@GRAD", {"dq"}}, {"k@GRAD", {"dk"}}, {"v@GRAD", {"dv"}}},
                   std::move(attrs));
  };
  // q [1, 3, 2, 4]; k and v [1, 5, 2, 4].
  const auto qkv = [](std::vector<int64_t> q, std::vector<int64_t> k, std::vector<int64_t> v) {
    return std::map<std::string, Tensor>{{"q", f32(std::move(q))}, {"k", f32(std::move(k))},
                                         {"v", f32(std::move(v))}};
  };
  const auto good = qkv({1, 3, 2, 4}, {1, 5, 2, 4}, {1, 5, 2, 4});
  const auto grad_inputs = [&](std::vector<int64_t> lse, std::vector<int64_t> dout) {
    std::map<std::string, Tensor> in = good;
    in.emplace("o", f32({1, 3, 2, 4}));
    in.emplace("lse", f32(std::move(lse)));
    in.emplace("dout", f32(std::move(dout)));
    return in;
  };
  std::vector<RuleCase> cases;
  cases.push_back({"FlashAttnRank", forward(), qkv({3, 2, 4}, {1, 5, 2, 4}, {1, 5, 2, 4}),
                   "input q 'q' has shape [3, 2, 4]; flash_attn takes rank 4 [batch, seq, "
                   "heads, head_dim]"});
  cases.push_back({"FlashAttnBatch", forward(), qkv({2, 3, 2, 4}, {1, 5, 2, 4}, {1, 5, 2, 4}),
                   "the batch of input q 'q' [2, 3, 2, 4] and input k 'k' [1, 5, 2, 4]: 2 vs 1"});
  cases.push_back({"FlashAttnHeads", forward(), qkv({1, 3, 2, 4}, {1, 5, 3, 4}, {1, 5, 3, 4}),
                   "the heads of input q 'q' [1, 3, 2, 4] and input k 'k' [1, 5, 3, 4]: 2 vs 3"});
  cases.push_back({"FlashAttnHeadDim", forward(), qkv({1, 3, 2, 4}, {1, 5, 2, 4}, {1, 5, 2, 8}),
                   "the head_dim of input q 'q' [1, 3, 2, 4] and input v 'v' [1, 5, 2, 8]: 4 vs "
                   "8"});
  cases.push_back({"FlashAttnKeyValueSeq", forward(),
                   qkv({1, 3, 2, 4}, {1, 5, 2, 4}, {1, 6, 2, 4}),
                   "the sequence of input k 'k' [1, 5, 2, 4] and input v 'v' [1, 6, 2, 4]: 5 vs "
                   "6"});
  std::map<std::string, Tensor> mixed = good;
  mixed["k"] = filled(DataType::FP64, {1, 5, 2, 4});
  cases.push_back({"FlashAttnDtypes", forward(), mixed,
                   "input k 'k' has dtype FP64 but input q 'q' has FP32; q, k and v take one "
                   "dtype"});
  cases.push_back({"FlashAttnDropout", forward({{"dropout", Attribute(0.1f)}}), good,
                   "dropout 0.1 is not implemented (flash_attn computes without dropout: set "
                   "dropout 0, or apply dropout outside the op)"});
  cases.push_back({"FlashAttnDropoutRange",
                   forward({{"dropout", Attribute(1.0f)}, {"is_test", Attribute(true)}}), good,
                   "dropout 1 is outside [0, 1)"});
  std::map<std::string, Tensor> with_mask = good;
  with_mask.emplace("mask", f32({1, 1, 3, 5}));
  cases.push_back({"FlashAttnMask", forward({}, true), with_mask,
                   "input attn_mask 'mask' is given; flash_attn with an attention mask is not "
                   "implemented (use causal, or the unfused ops)"});
  cases.push_back({"FlashAttnGradDropout",
                   grad({{"dropout", Attribute(0.25f)}, {"is_test", Attribute(true)}}),
                   grad_inputs({1, 2, 3}, {1, 3, 2, 4}),
                   "dropout 0.25 is not implemented (flash_attn computes without dropout: set "
                   "dropout 0, or apply dropout outside the op)"});
  cases.push_back({"FlashAttnGradLse", grad(), grad_inputs({1, 3, 2}, {1, 3, 2, 4}),
                   "input softmax_lse 'lse' has shape [1, 3, 2], expected [1, 2, 3]"});
  cases.push_back({"FlashAttnGradOutGrad", grad(), grad_inputs({1, 2, 3}, {1, 5, 2, 4}),
                   "input out@GRAD 'dout' has shape [1, 5, 2, 4], expected [1, 3, 2, 4]"});
  return cases;
}

}  // namespace ctp::test
