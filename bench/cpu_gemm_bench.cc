// Times the CPU kernels' matrix product two ways, the hand-written loops and
// OpenBLAS (ops/cpu/gemm.h), on the products the sample trainer's ResNet and
// BERT make (tests/real_model_trainer_test.cc's "tiny" models and a
// "medium" size), forward and both gradients, and checks that they agree.
//
//   cpu_gemm_bench [--models tiny|medium|all] [--min-time SECONDS]
//
// Prints a Markdown table (bench/RESULTS.md): per product the time of each,
// the speed-up, and the largest difference relative to the largest |C|.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include "ops/cpu/gemm.h"

namespace {

// C[M,N] = op(A) op(B) with op(A) [M,K], op(B) [K,N].
struct Product {
  std::string what;
  bool trans_a = false, trans_b = false;
  int64_t m = 0, n = 0, k = 0;
  int64_t count = 1;  // how many times one training step makes it
};

// A convolution as ctp's CPU kernel computes it per image (im2col + gemm):
// forward W[Cout, Cin*kh*kw] x cols[Cin*kh*kw, Ho*Wo], the filter gradient
// dOut x cols^T, the input gradient W^T x dOut.
void add_conv(std::vector<Product>& out, const std::string& name, int64_t cin, int64_t cout,
              int64_t kernel, int64_t out_size, int64_t batch, int64_t count) {
  const int64_t rows = cin * kernel * kernel, cols = out_size * out_size;
  const int64_t n = batch * count;
  out.push_back({name + " fwd", false, false, cout, cols, rows, n});
  out.push_back({name + " dW", false, true, cout, rows, cols, n});
  out.push_back({name + " dX", true, false, rows, cols, cout, n});
}

// A fully connected layer (mul / matmul_v2) on `rows` rows: forward X W,
// dX = dOut W^T, dW = X^T dOut.
void add_fc(std::vector<Product>& out, const std::string& name, int64_t rows, int64_t in,
            int64_t outs, int64_t count) {
  out.push_back({name + " fwd", false, false, rows, outs, in, count});
  out.push_back({name + " dX", false, true, rows, in, outs, count});
  out.push_back({name + " dW", true, false, in, outs, rows, count});
}

// ResNet-18 (samples/real_models.cc) of stem width `w` on `image` x `image`
// images: the stem, one 3x3 conv of the first and of the last stage, the
// classifier.
std::vector<Product> resnet(const std::string& tag, int64_t w, int64_t image, int64_t batch) {
  std::vector<Product> out;
  const std::string p = "resnet " + tag + " ";
  add_conv(out, p + "stem 7x7", 3, w, 7, image / 2, batch, 1);
  add_conv(out, p + "stage1 3x3", w, w, 3, image / 4, batch, 4);
  add_conv(out, p + "stage4 3x3", 8 * w, 8 * w, 3, image / 32, batch, 3);
  add_fc(out, p + "classifier", batch, 8 * w, 4, 1);
  return out;
}

// A BERT encoder layer of hidden size `h`: a projection (Q, K, V, output:
// four per layer), the feed-forward pair, the attention scores per head.
std::vector<Product> bert(const std::string& tag, int64_t h, int64_t heads, int64_t seq,
                          int64_t batch, int64_t layers) {
  std::vector<Product> out;
  const std::string p = "bert " + tag + " ";
  const int64_t tokens = batch * seq;
  add_fc(out, p + "projection", tokens, h, h, 4 * layers);
  add_fc(out, p + "ffn up", tokens, h, 4 * h, layers);
  add_fc(out, p + "ffn down", tokens, 4 * h, h, layers);
  out.push_back({p + "scores QK^T", false, true, seq, seq, h / heads, batch * heads * layers});
  return out;
}

template <typename F>
double seconds_per_call(F&& call, double min_time) {
  using clock = std::chrono::steady_clock;
  call();  // warm-up (and OpenBLAS's first-call set-up)
  int64_t calls = 0;
  const auto start = clock::now();
  double elapsed = 0;
  do {
    call();
    ++calls;
    elapsed = std::chrono::duration<double>(clock::now() - start).count();
  } while (elapsed < min_time);
  return elapsed / static_cast<double>(calls);
}

void run(const std::vector<Product>& products, double min_time) {
  fmt::print("| product | M x N x K | per step | loops | OpenBLAS | speed-up | max diff |\n");
  fmt::print("|---|---|---|---|---|---|---|\n");
  std::mt19937 engine(7);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  double total_loops = 0, total_blas = 0;
  for (const Product& p : products) {
    std::vector<float> a(static_cast<std::size_t>(p.m * p.k)), b(static_cast<std::size_t>(p.k * p.n));
    for (float& v : a) v = uniform(engine);
    for (float& v : b) v = uniform(engine);
    std::vector<float> c_loops(static_cast<std::size_t>(p.m * p.n)), c_blas(c_loops.size());
    const double loops = seconds_per_call(
        [&] {
          ctp::cpu::gemm_loops<float>(p.trans_a, p.trans_b, p.m, p.n, p.k, a.data(), b.data(),
                                      c_loops.data());
        },
        min_time);
    const double blas = seconds_per_call(
        [&] {
          ctp::cpu::gemm_openblas<float>(p.trans_a, p.trans_b, p.m, p.n, p.k, a.data(),
                                         b.data(), c_blas.data());
        },
        min_time);
    double scale = 0, diff = 0;
    for (std::size_t i = 0; i < c_loops.size(); ++i) {
      scale = std::max(scale, static_cast<double>(std::abs(c_loops[i])));
      diff = std::max(diff, static_cast<double>(std::abs(c_loops[i] - c_blas[i])));
    }
    total_loops += loops * static_cast<double>(p.count);
    total_blas += blas * static_cast<double>(p.count);
    fmt::print("| {}{}{} | {} x {} x {} | {} | {:.1f} us | {:.1f} us | {:.2f}x | {:.1e} |\n",
               p.what, p.trans_a ? " (A^T)" : "", p.trans_b ? " (B^T)" : "", p.m, p.n, p.k,
               p.count, loops * 1e6, blas * 1e6, loops / blas, diff / std::max(scale, 1e-30));
  }
  fmt::print("| **all, weighted by per step** | | | {:.2f} ms | {:.2f} ms | {:.2f}x | |\n\n",
             total_loops * 1e3, total_blas * 1e3, total_loops / total_blas);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"The CPU matrix product: hand-written loops against OpenBLAS"};
  std::string models = "all";
  double min_time = 0.2;
  app.add_option("--models", models, "tiny (the trainer tests' models), medium or all")
      ->check(CLI::IsMember({"tiny", "medium", "all"}))->capture_default_str();
  app.add_option("--min-time", min_time, "seconds of calls per measurement")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  if (models != "medium") {
    fmt::print("### tiny: ResNet-18 width 4, 64x64 images, batch 8; BERT 2 layers, hidden 32, "
               "2 heads, 16 tokens, batch 4\n\n");
    std::vector<Product> tiny = resnet("tiny", 4, 64, 8);
    for (Product& p : bert("tiny", 32, 2, 16, 4, 2)) tiny.push_back(p);
    run(tiny, min_time);
  }
  if (models != "tiny") {
    fmt::print("### medium: ResNet-18 width 16, 128x128 images, batch 8; BERT 4 layers, hidden "
               "256, 4 heads, 128 tokens, batch 8\n\n");
    std::vector<Product> medium = resnet("medium", 16, 128, 8);
    for (Product& p : bert("medium", 256, 4, 128, 8, 4)) medium.push_back(p);
    run(medium, min_time);
  }
  return 0;
}
