#include "samples/real_models.h"

#include <cmath>
#include <sstream>

#include "samples/static_layers.h"

namespace ctp::samples {
namespace {

struct ResNetLayout {
  std::vector<int> blocks;  // per stage
  bool bottleneck;
};

ResNetLayout resnet_layout(int depth) {
  switch (depth) {
    case 18: return {{2, 2, 2, 2}, false};
    case 34: return {{3, 4, 6, 3}, false};
    case 50: return {{3, 4, 6, 3}, true};
    case 101: return {{3, 4, 23, 3}, true};
    case 152: return {{3, 8, 36, 3}, true};
    default:
      throw Error("ResNet depth " + std::to_string(depth) + " is not one of 18, 34, 50, 101, 152");
  }
}

std::string conv_bn(StaticLayers& nn, const std::string& x, int64_t filters, int64_t kernel,
                    int64_t stride, bool relu) {
  const std::string conv =
      nn.conv2d(x, Conv2dOptions{filters, kernel, stride, (kernel - 1) / 2, 1, false});
  return nn.batch_norm(conv, relu);
}

// One residual block: basic (two 3x3) or bottleneck (1x1, 3x3, 1x1 x4), with
// a 1x1 projection on the shortcut when the shape changes.
std::string residual_block(StaticLayers& nn, const std::string& x, int64_t in_channels,
                           int64_t filters, int64_t stride, bool bottleneck) {
  std::string y;
  int64_t out_channels;
  if (bottleneck) {
    out_channels = filters * 4;
    y = conv_bn(nn, x, filters, 1, 1, true);
    y = conv_bn(nn, y, filters, 3, stride, true);
    y = conv_bn(nn, y, out_channels, 1, 1, false);
  } else {
    out_channels = filters;
    y = conv_bn(nn, x, filters, 3, stride, true);
    y = conv_bn(nn, y, filters, 3, 1, false);
  }
  std::string shortcut = x;
  if (stride != 1 || in_channels != out_channels)
    shortcut = conv_bn(nn, x, out_channels, 1, stride, false);
  return nn.relu(nn.add(y, shortcut));
}

}  // namespace

ModelPrograms build_resnet(const ResNetConfig& c) {
  const ResNetLayout layout = resnet_layout(c.depth);
  if (c.width < 1 || c.image_size < 32 || c.channels < 1 || c.classes < 2)
    throw Error("ResNet needs width >= 1, image_size >= 32, channels >= 1 and classes >= 2");
  ProgramBuilder startup, main;
  StaticLayers nn(startup, main, c.init_seed);
  ModelPrograms out;
  out.inputs = {nn.data("image", {-1, c.channels, c.image_size, c.image_size})};
  out.label = nn.data("label", {-1, 1}, DataType::INT64);
  std::string x = conv_bn(nn, out.inputs[0], c.width, 7, 2, true);
  x = nn.pool2d(x, Pool2dOptions{"max", 3, 2, 1, false});
  int64_t channels = c.width;
  for (std::size_t stage = 0; stage < layout.blocks.size(); ++stage) {
    const int64_t filters = c.width << stage;
    for (int b = 0; b < layout.blocks[stage]; ++b) {
      const int64_t stride = (stage > 0 && b == 0) ? 2 : 1;
      x = residual_block(nn, x, channels, filters, stride, layout.bottleneck);
      channels = layout.bottleneck ? filters * 4 : filters;
    }
  }
  x = nn.pool2d(x, Pool2dOptions{"avg", 1, 1, 0, true});
  out.logits = nn.fc(x, c.classes, 1);
  out.loss = nn.cross_entropy_loss(out.logits, out.label);
  out.parameters = nn.parameters();
  out.startup = startup.build();
  out.main = main.build();
  return out;
}

namespace {

// Multi-head self-attention on x [batch, seq, hidden], no mask (every token
// attends to every token). Both forms have the same parameters, made in the
// same order, so one seed gives both the same weights.
std::string self_attention(StaticLayers& nn, const std::string& x, const BertConfig& c) {
  const auto heads = static_cast<int32_t>(c.heads);
  const auto head_dim = static_cast<int32_t>(c.hidden / c.heads);
  // [batch, seq, hidden] -> [batch, seq, heads, head_dim], and (ops) the
  // heads to the front.
  const auto split_heads = [&](const std::string& t) {
    const std::string split = nn.reshape(t, {0, 0, heads, head_dim});
    return c.attention == BertAttention::Flash ? split : nn.transpose(split, {0, 2, 1, 3});
  };
  const std::string q = split_heads(nn.linear(x, c.hidden, c.init_std));
  const std::string k = split_heads(nn.linear(x, c.hidden, c.init_std));
  const std::string v = split_heads(nn.linear(x, c.hidden, c.init_std));
  std::string context;  // [batch, seq, heads, head_dim]
  if (c.attention == BertAttention::Flash) {
    context = nn.flash_attention(q, k, v, false);
  } else {
    const std::string scores =
        nn.scale(nn.matmul(q, k, false, true), 1.0f / std::sqrt(static_cast<float>(head_dim)));
    const std::string probs = nn.dropout(nn.softmax(scores), c.dropout);
    context = nn.transpose(nn.matmul(probs, v, false, false), {0, 2, 1, 3});
  }
  const std::string merged = nn.reshape(context, {0, 0, static_cast<int32_t>(c.hidden)});
  return nn.linear(merged, c.hidden, c.init_std);
}

std::string encoder_layer(StaticLayers& nn, const std::string& x, const BertConfig& c) {
  const std::string attended = nn.dropout(self_attention(nn, x, c), c.dropout);
  const std::string h = nn.layer_norm(nn.add(attended, x), 2);
  const int64_t inner = c.intermediate > 0 ? c.intermediate : 4 * c.hidden;
  const std::string ffn = nn.linear(nn.gelu(nn.linear(h, inner, c.init_std)), c.hidden,
                                    c.init_std);
  return nn.layer_norm(nn.add(nn.dropout(ffn, c.dropout), h), 2);
}

}  // namespace

BertAttention bert_attention_from_string(const std::string& name) {
  if (name == "ops") return BertAttention::Ops;
  if (name == "flash") return BertAttention::Flash;
  throw Error("BERT attention '" + name + "' is not one of ops, flash");
}

ModelPrograms build_bert(const BertConfig& c) {
  if (c.layers < 1 || c.hidden < 1 || c.heads < 1 || c.hidden % c.heads != 0)
    throw Error("BERT needs layers >= 1 and a hidden size divisible by the heads (" +
                std::to_string(c.hidden) + " / " + std::to_string(c.heads) + ")");
  if (c.seq_len < 1 || c.seq_len > c.max_position || c.vocab < 2 || c.classes < 2)
    throw Error("BERT needs 1 <= seq_len <= max_position (" + std::to_string(c.max_position) +
                "), vocab >= 2 and classes >= 2");
  if (c.attention == BertAttention::Flash && c.dropout != 0.0f) {
    std::ostringstream dropout;
    dropout << c.dropout;
    throw Error("BERT with flash attention needs dropout 0 (flash_attn implements no "
                "dropout), not " + dropout.str() + "; use the ops attention for dropout");
  }
  ProgramBuilder startup, main;
  StaticLayers nn(startup, main, c.init_seed);
  ModelPrograms out;
  const std::string ids = nn.data("src_ids", {-1, c.seq_len}, DataType::INT64);
  const std::string positions = nn.data("pos_ids", {-1, c.seq_len}, DataType::INT64);
  const std::string segments = nn.data("sent_ids", {-1, c.seq_len}, DataType::INT64);
  out.inputs = {ids, positions, segments};
  out.label = nn.data("label", {-1, c.seq_len, 1}, DataType::INT64);
  // One statement each: arguments of one call are evaluated in an unspecified
  // order (GCC right to left), and the names (embedding_0 = words) must not
  // depend on the compiler.
  const std::string words = nn.embedding(ids, c.vocab, c.hidden, c.init_std);
  const std::string places = nn.embedding(positions, c.max_position, c.hidden, c.init_std);
  const std::string sentences = nn.embedding(segments, c.type_vocab, c.hidden, c.init_std);
  std::string x = nn.add(nn.add(words, places), sentences);
  x = nn.dropout(nn.layer_norm(x, 2), c.dropout);
  for (int layer = 0; layer < c.layers; ++layer) x = encoder_layer(nn, x, c);
  out.logits = nn.linear(x, c.classes, c.init_std);
  out.loss = nn.cross_entropy_loss(out.logits, out.label);
  out.parameters = nn.parameters();
  out.startup = startup.build();
  out.main = main.build();
  return out;
}

}  // namespace ctp::samples
