// Initializers and copies: fill_constant, uniform_random, gaussian_random, assign,
// fill_zeros_like.
#include <cmath>
#include <cstring>
#include <random>
#include <string>

#include "ops/common/initializer_shape.h"
#include "ops/cpu/cpu_kernel_util.h"

namespace ctp::cpu {
namespace {

void fill_constant(KernelContext& ctx) {
  const DataType dtype = ctx.dtype_attr("dtype", DataType::FP32);
  Tensor& out = ctx.output("Out");
  out.resize(dtype, initializer_shape(ctx));
  if (ctx.has_input("ValueTensor")) {
    fill(out, scalar_value(ctx.input("ValueTensor")));
    return;
  }
  const std::string text = ctx.string_attr("str_value", "");
  if (text.empty()) {
    fill(out, ctx.float_attr("value", 0.0));
    return;
  }
  try {
    // Integers are parsed as integers so that large INT64 values stay exact.
    if (dtype == DataType::INT64 || dtype == DataType::INT32) {
      const int64_t v = std::stoll(text);
      if (dtype == DataType::INT64) {
        int64_t* p = out.data<int64_t>();
        for (int64_t i = 0; i < out.numel(); ++i) p[i] = v;
      } else {
        fill(out, static_cast<double>(v));
      }
    } else {
      fill(out, std::stod(text));
    }
  } catch (const std::logic_error&) {
    ctx.fail("str_value '" + text + "' is not a number");
  }
}

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// The op's `seed` when non-zero (the same numbers on every run, as in
// Paddle); otherwise one derived from the run's seed, the output's name and
// the step, so that ops, ranks with different seeds and steps all differ.
uint64_t random_seed(KernelContext& ctx) {
  const int64_t seed = ctx.int_attr("seed", 0);
  if (seed != 0) return static_cast<uint64_t>(seed);
  uint64_t name_hash = 0xcbf29ce484222325ull;  // FNV-1a
  for (char c : ctx.output_names("Out").at(0)) {
    name_hash ^= static_cast<unsigned char>(c);
    name_hash *= 0x100000001b3ull;
  }
  const RunServices& s = ctx.services();
  return splitmix64(splitmix64(splitmix64(s.seed) ^ name_hash) ^ s.step);
}

// A double in [0, 1) from 53 random bits: the same on every platform, unlike
// std::uniform_real_distribution.
double unit_uniform(std::mt19937_64& engine) {
  return static_cast<double>(engine() >> 11) * 0x1.0p-53;
}

template <typename T>
void store(Tensor& t, const std::vector<double>& values) {
  T* p = static_cast<T*>(t.raw_data());
  for (std::size_t i = 0; i < values.size(); ++i) {
    if constexpr (std::is_same_v<T, uint16_t>)
      p[i] = t.dtype() == DataType::FP16 ? float16::from_float(static_cast<float>(values[i]))
                                         : bfloat16::from_float(static_cast<float>(values[i]));
    else
      p[i] = static_cast<T>(values[i]);
  }
}

void store_random(KernelContext& ctx, Tensor& out, const std::vector<double>& values) {
  switch (out.dtype()) {
    case DataType::FP32: store<float>(out, values); return;
    case DataType::FP64: store<double>(out, values); return;
    case DataType::FP16: case DataType::BF16: store<uint16_t>(out, values); return;
    default:
      ctx.fail("dtype " + std::string(to_string(out.dtype())) +
                  " is not a floating-point type");
  }
}

void uniform_random(KernelContext& ctx) {
  Tensor& out = ctx.output("Out");
  out.resize(ctx.dtype_attr("dtype", DataType::FP32), initializer_shape(ctx));
  const double low = ctx.float_attr("min", -1.0);
  const double high = ctx.float_attr("max", 1.0);
  std::mt19937_64 engine(random_seed(ctx));
  std::vector<double> values(static_cast<std::size_t>(out.numel()));
  for (double& v : values) v = low + unit_uniform(engine) * (high - low);
  // Paddle's diagonal option: diag_num entries at stride diag_step + 1.
  const int64_t diag_num = ctx.int_attr("diag_num", 0);
  const int64_t diag_step = ctx.int_attr("diag_step", 0);
  const double diag_val = ctx.float_attr("diag_val", 1.0);
  for (int64_t i = 0; i < diag_num; ++i) {
    const int64_t pos = i * diag_step + i;
    if (pos >= out.numel())
      throw ctx.error("diag_num/diag_step reach past the " +
                  std::to_string(out.numel()) + " elements of Out");
    values[static_cast<std::size_t>(pos)] = diag_val;
  }
  store_random(ctx, out, values);
}

void gaussian_random(KernelContext& ctx) {
  Tensor& out = ctx.output("Out");
  out.resize(ctx.dtype_attr("dtype", DataType::FP32), initializer_shape(ctx));
  const double mean = ctx.float_attr("mean", 0.0);
  const double stddev = ctx.float_attr("std", 1.0);
  std::mt19937_64 engine(random_seed(ctx));
  std::vector<double> values(static_cast<std::size_t>(out.numel()));
  // Box-Muller, two normals per pair of uniforms.
  for (std::size_t i = 0; i < values.size(); i += 2) {
    const double radius = std::sqrt(-2.0 * std::log(1.0 - unit_uniform(engine)));
    const double angle = 2.0 * M_PI * unit_uniform(engine);
    values[i] = mean + stddev * radius * std::cos(angle);
    if (i + 1 < values.size()) values[i + 1] = mean + stddev * radius * std::sin(angle);
  }
  store_random(ctx, out, values);
}

void assign(KernelContext& ctx) { copy_tensor(ctx.input("X"), ctx.output("Out")); }

// Zeros of X's shape and dtype (any dtype: every one stores zero as zero bytes).
void fill_zeros_like(KernelContext& ctx) {
  const Tensor& x = ctx.shape_input("X");
  Tensor& out = ctx.output("Out");
  out.resize(x.dtype(), x.shape());
  std::memset(out.raw_data(), 0, out.bytes());
}

}  // namespace

CTP_REGISTER_KERNEL(fill_constant, CPU, fill_constant);
CTP_REGISTER_KERNEL(uniform_random, CPU, uniform_random);
CTP_REGISTER_KERNEL(gaussian_random, CPU, gaussian_random);
CTP_REGISTER_KERNEL(assign, CPU, assign);
CTP_REGISTER_KERNEL(fill_zeros_like, CPU, fill_zeros_like);

}  // namespace ctp::cpu
