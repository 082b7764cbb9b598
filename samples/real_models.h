// Real models as Paddle static programs, forward only, written with
// StaticLayers in Paddle's op vocabulary and naming: ResNet (18/50; width and
// image size configurable) and BERT with a token-classification head (layers,
// hidden, heads, sequence length configurable; BERT-large is 24/1024/16/512).
// The training program comes from the backward and optimizer passes, as in
// Paddle.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "program_ir/program.h"

namespace ctp::samples {

// Forward programs of a model: startup initializes every parameter and
// statistic; main reads the inputs and computes the loss.
struct ModelPrograms {
  Program startup;
  Program main;
  std::vector<std::string> inputs;      // feed vars, in order (int64 ids / FP32 images)
  std::string label;                    // int64 labels
  std::string logits;
  std::string loss;                     // [1]: mean cross entropy, op_role Forward|Loss
  std::vector<std::string> parameters;  // trainable, in creation order
};

struct ResNetConfig {
  int depth = 50;          // 18, 34 (basic blocks) or 50, 101, 152 (bottlenecks)
  int64_t width = 64;      // channels of the stem; the stages have 1, 2, 4, 8 times it
  int64_t image_size = 224;
  int64_t channels = 3;
  int64_t classes = 1000;
  int32_t init_seed = 0;   // the initializers' seed attribute (0: the run's seed)
};

// How BERT's self-attention is written: op by op (reshape2, transpose2,
// matmul_v2, scale, softmax, [dropout], matmul_v2, transpose2, reshape2), or
// as one flash_attn op on [batch, seq, heads, head_dim] (Paddle's
// paddle.nn.functional.flash_attention; no attention dropout).
enum class BertAttention { Ops, Flash };
// "ops" or "flash"; throws ctp::Error for anything else.
BertAttention bert_attention_from_string(const std::string& name);

struct BertConfig {
  int layers = 24;
  int64_t hidden = 1024;
  int64_t heads = 16;
  int64_t seq_len = 512;
  int64_t vocab = 30522;
  int64_t max_position = 512;
  int64_t type_vocab = 2;
  int64_t intermediate = 0;   // 0: 4 * hidden
  int64_t classes = 2;        // token classification
  float dropout = 0.0f;       // hidden and attention dropout (0: no dropout ops)
  BertAttention attention = BertAttention::Ops;  // Flash takes dropout 0 only
  float init_std = 0.02f;
  int32_t init_seed = 0;
};

ModelPrograms build_resnet(const ResNetConfig& config);
ModelPrograms build_bert(const BertConfig& config);

}  // namespace ctp::samples
