// --micro-batches K: the reference for data-parallel training on one worker.
// Each step splits the global batch into the K shards K workers would get,
// runs the forward and backward once per shard, averages each parameter's
// gradient over the shards, and then runs the optimizer once. That is what K
// data-parallel workers compute, including batch_norm's statistics, which
// each worker takes over its own
// shard (as PyTorch DDP without SyncBN); one worker on the whole batch would
// normalise over all of it and get other gradients. batch_norm's moving
// statistics are updated K times per step here and once per worker there:
// they are not parameters and not compared.
#pragma once
#include <cstddef>
#include <vector>

#include "executor/runtime/tensor.h"
#include "program_ir/op_role.h"
#include "program_ir/program.h"

namespace ctp::samples {

struct MicroBatchPrograms {
  Program compute;  // the main program without its Optimize-role ops
  Program update;   // the main program's Optimize-role ops only
  std::vector<ParamGrad> params_grads;  // of the backward ops' op_role_var, in order
};

// Throws ctp::Error when `main` has no Optimize-role op or no op_role_var.
MicroBatchPrograms split_at_update(const Program& main);

// Adds up host gradients over micro-batches (in double), then gives each
// divided by a divisor, in its own dtype (FP32 or FP64).
class GradientAccumulator {
 public:
  explicit GradientAccumulator(std::size_t gradients) : sums_(gradients) {}
  void add(std::size_t gradient, const Tensor& host_value);
  Tensor result(std::size_t gradient, double divisor) const;

 private:
  struct Sum {
    DataType dtype = DataType::FP32;
    std::vector<int64_t> shape;
    std::vector<double> values;
  };
  std::vector<Sum> sums_;
};

}  // namespace ctp::samples
