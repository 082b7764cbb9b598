// The tiny BERT the CPU tests build and run in seconds: 2 layers, hidden 32,
// 4 heads, 8 tokens, vocabulary 50, 5 token classes, initializer seed 5.
#pragma once
#include "samples/real_models.h"

namespace ctp::test {

inline samples::BertConfig tiny_bert_config() {
  samples::BertConfig config;
  config.layers = 2;
  config.hidden = 32;
  config.heads = 4;
  config.seq_len = 8;
  config.vocab = 50;
  config.max_position = 8;
  config.classes = 5;
  config.init_seed = 5;
  return config;
}

}  // namespace ctp::test
