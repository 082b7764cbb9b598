// Runs of the ops that declare shape-only inputs (SlotDef::shape_only), one
// per op type, with FP32 inputs: tests/shape_only_inputs_test.cc runs their
// CPU kernels and tests/gpu/var_release_gpu_test.cc their CUDA kernels with
// and without those inputs' elements.
#pragma once
#include <map>
#include <string>

#include "tests/kernels_test_util.h"

namespace ctp::test {

// One run of an op that declares shape-only inputs: its inputs by var name.
struct ShapeOnlyCase {
  Op op;
  std::map<std::string, Tensor> inputs;
};

inline Tensor random_fp32(std::vector<int64_t> shape, uint64_t seed, double add = 0.0) {
  const Tensor d = random_tensor(shape, seed, 0.1);
  Tensor f(DataType::FP32, shape);
  for (int64_t i = 0; i < f.numel(); ++i)
    f.data<float>()[i] = static_cast<float>(d.data<double>()[i] + add);
  return f;
}

inline std::map<std::string, ShapeOnlyCase> shape_only_cases() {
  const auto ints = [](std::vector<int32_t> v) { return Attribute(std::move(v)); };
  const Slot x{"X", {"x"}}, y{"Y", {"y"}}, dout{"Out@GRAD", {"dout"}};
  const Slot dx{"X@GRAD", {"dx"}}, dy{"Y@GRAD", {"dy"}};
  std::map<std::string, ShapeOnlyCase> cases;
  for (const char* type : {"elementwise_add_grad", "elementwise_sub_grad"})
    cases[type] = {make_op(type, {x, y, dout}, {dx, dy}),
                   {{"x", random_fp32({2, 3, 4}, 1)}, {"y", random_fp32({4}, 2)},
                    {"dout", random_fp32({2, 3, 4}, 3)}}};
  cases["elementwise_div_grad"] = {
      make_op("elementwise_div_grad", {x, y, {"Out", {"out"}}, dout}, {dx, dy}),
      {{"x", random_fp32({2, 3}, 1)},
       {"y", random_fp32({2, 3}, 4, 2.0)},  // in [1, 3)
       {"out", random_fp32({2, 3}, 5)},
       {"dout", random_fp32({2, 3}, 3)}}};
  cases["mean_grad"] = {make_op("mean_grad", {x, dout}, {dx}),
                        {{"x", random_fp32({3, 4}, 1)}, {"dout", random_fp32({1}, 3)}}};
  for (const char* type : {"reduce_mean_grad", "reduce_sum_grad"})
    cases[type] = {make_op(type, {x, dout}, {dx}, {{"dim", ints({1})}}),
                   {{"x", random_fp32({2, 3, 4}, 1)}, {"dout", random_fp32({2, 4}, 3)}}};
  cases["fill_zeros_like"] = {make_op("fill_zeros_like", {x}, {{"Out", {"out"}}}),
                              {{"x", random_fp32({2, 3}, 1)}}};
  cases["shape"] = {make_op("shape", {{"Input", {"x"}}}, {{"Out", {"out"}}}),
                    {{"x", random_fp32({2, 3, 5}, 1)}}};
  cases["slice_grad"] = {
      make_op("slice_grad", {{"Input", {"x"}}, dout}, {{"Input@GRAD", {"dx"}}},
              {{"axes", ints({0})}, {"starts", ints({1})}, {"ends", ints({2})}}),
      {{"x", random_fp32({3, 4}, 1)}, {"dout", random_fp32({1, 4}, 3)}}};
  cases["lookup_table_v2_grad"] = {
      make_op("lookup_table_v2_grad", {{"W", {"w"}}, {"Ids", {"ids"}}, dout},
              {{"W@GRAD", {"dw"}}}),
      {{"w", random_fp32({5, 3}, 1)},
       {"ids", tensor<int64_t>({4}, {4, 0, 2, 4})},
       {"dout", random_fp32({4, 3}, 3)}}};
  return cases;
}

}  // namespace ctp::test
