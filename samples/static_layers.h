// Paddle's static-graph layers (paddle.static.nn / paddle.nn in static mode)
// as a small C++ API over ProgramBuilder, for writing real models as programs:
// each call appends the ops Paddle's layer appends to the main program, with
// its slots and attributes, declares its parameters in both programs and
// their initializers in startup, and names everything the way Paddle's
// unique_name does (conv2d_0.w_0, batch_norm_3.w_1, linear_7.b_0,
// layer_norm_2.tmp_2, ...). So the programs read like, and transpile like,
// programs Paddle saves.
//
// Output shapes and dtypes come from the ops' schemas (their inference, the
// one place each op's shape rules live), never from this file: a layer whose
// op has no schema, or whose inputs the schema refuses, throws ctp::Error
// naming the op.
//
// Only the forward pass: the backward and the optimizer come from the passes
// that write them (append_backward, the optimizer pass), as in Paddle.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "program_ir/builder.h"

namespace ctp::samples {

// How a parameter starts (its startup op).
struct ParamInit {
  enum class Kind { Constant, Uniform, Normal };
  Kind kind = Kind::Constant;
  float a = 0.0f;  // Constant: the value; Uniform: min; Normal: mean
  float b = 0.0f;  // Uniform: max; Normal: std
  static ParamInit constant(float value) { return {Kind::Constant, value, 0.0f}; }
  static ParamInit uniform(float limit) { return {Kind::Uniform, -limit, limit}; }
  static ParamInit normal(float std) { return {Kind::Normal, 0.0f, std}; }
};

struct Conv2dOptions {
  int64_t filters = 1;
  int64_t kernel = 1;
  int64_t stride = 1;
  int64_t padding = 0;
  int64_t groups = 1;
  bool bias = false;  // ResNet's convolutions have none (batch_norm follows)
};

struct Pool2dOptions {
  std::string type = "max";  // "max" or "avg"
  int64_t kernel = 2;
  int64_t stride = 2;
  int64_t padding = 0;
  bool global = false;
};

class StaticLayers {
 public:
  // init_seed: the initializers' seed attribute (0: the run's seed).
  StaticLayers(ProgramBuilder& startup, ProgramBuilder& main, int32_t init_seed = 0);

  // A feed var (data layer) of the main program.
  std::string data(const std::string& name, std::vector<int64_t> shape,
                   DataType dtype = DataType::FP32);

  // conv2d (NCHW), weights He-normal as ResNet's; + elementwise_add of a bias.
  std::string conv2d(const std::string& x, const Conv2dOptions& options);
  // batch_norm in training mode (is_test false): scale w_0, bias b_0, moving
  // mean w_1, moving variance w_2, then relu when asked.
  std::string batch_norm(const std::string& x, bool relu, float momentum = 0.9f,
                         float epsilon = 1e-5f);
  std::string pool2d(const std::string& x, const Pool2dOptions& options);
  // paddle.static.nn.fc: mul (flattening x from num_flatten_dims) + bias.
  std::string fc(const std::string& x, int64_t size, int32_t num_flatten_dims = 1);
  // paddle.nn.Linear: matmul_v2 over the last dim + bias (weights [in, out]).
  std::string linear(const std::string& x, int64_t size, float init_std);
  // paddle.nn.Embedding: lookup_table_v2 of int64 ids.
  std::string embedding(const std::string& ids, int64_t vocab, int64_t dim, float init_std);
  // layer_norm over the dims from begin_norm_axis; scale w_0 = 1, bias b_0 = 0.
  std::string layer_norm(const std::string& x, int32_t begin_norm_axis, float epsilon = 1e-12f);
  // dropout (upscale_in_train); probability 0 adds no op.
  std::string dropout(const std::string& x, float probability);

  std::string relu(const std::string& x) { return unary("relu", x); }
  std::string gelu(const std::string& x);
  std::string softmax(const std::string& x, int32_t axis = -1);
  std::string scale(const std::string& x, float scale);
  std::string add(const std::string& x, const std::string& y, int32_t axis = -1);
  std::string matmul(const std::string& x, const std::string& y, bool trans_x, bool trans_y);
  std::string reshape(const std::string& x, std::vector<int32_t> shape);
  std::string transpose(const std::string& x, std::vector<int32_t> perm);
  std::string flatten(const std::string& x, int32_t start_axis, int32_t stop_axis);
  // paddle.nn.functional.flash_attention on [batch, seq, heads, head_dim]
  // q, k, v: one flash_attn op (outputs out, softmax, softmax_lse,
  // seed_offset; softmax holds the probabilities only with return_softmax),
  // without dropout; returns out.
  std::string flash_attention(const std::string& q, const std::string& k, const std::string& v,
                              bool causal, bool return_softmax = false);
  // softmax_with_cross_entropy of logits and int64 labels, then mean: the loss
  // op gets op_role Forward|Loss as Paddle's minimize marks it.
  std::string cross_entropy_loss(const std::string& logits, const std::string& label);

  // Every parameter created so far, in creation order.
  const std::vector<std::string>& parameters() const { return parameters_; }
  ProgramBuilder& main() { return main_; }

 private:
  std::string unique(const std::string& layer);  // conv2d -> conv2d_0, conv2d_1, ...
  std::string tmp(const std::string& layer_name, DataType dtype);
  std::string param(const std::string& name, std::vector<int64_t> shape, ParamInit init);
  std::string statistic(const std::string& name, std::vector<int64_t> shape, float value);
  void init(const std::string& name, const std::vector<int64_t>& shape, ParamInit init);
  // Runs the op's schema inference: its outputs get their shapes and dtypes.
  void infer(OpBuilder op);
  std::string unary(const std::string& type, const std::string& x);
  std::string bias_add(const std::string& layer_name, const std::string& x, int64_t size,
                       int32_t axis);
  DataType dtype_of(const std::string& var);

  ProgramBuilder& startup_;
  ProgramBuilder& main_;
  int32_t init_seed_;
  std::map<std::string, int> layer_counts_;
  std::map<std::string, int> tmp_counts_;
  std::vector<std::string> parameters_;
};

}  // namespace ctp::samples
