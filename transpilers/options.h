// What a collective transpile is asked to do: the mode and its options, as
// plain values. The library reads no environment variables; tools/cmd_transpile
// maps Paddle's PADDLE_FUSE_ALLREDUCE, PADDLE_LOSS_SCALE and FLAGS_selected_gpus
// onto these fields. Defaults are the reference's defaults (collective.py).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ctp {

// The reference's transpiler classes.
enum class TranspileMode {
  kGradAllReduce,             // GradAllReduce
  kLocalSgd,                  // LocalSGD
  kSingleProcessMultiThread,  // SingleProcessMultiThread
  kMultiThread,               // MultiThread (the reference calls this mode "box")
};

// MultiThread's trans_mode argument.
enum class MultiThreadTransMode { kFuseAllReduce, kAllGather, kAllReduce };

struct CollectiveOptions {
  // Rings (communicators) to alternate over. Unset: the reference's default for
  // the mode (GradAllReduce and LocalSGD 2, MultiThread 1). SingleProcessMultiThread
  // always uses one ring.
  std::optional<int> nrings;
  int rank = 0;
  std::vector<std::string> endpoints;  // "host:port", one per rank
  std::string current_endpoint;        // must be one of `endpoints`
  // The reference blocks rank 0 until every other endpoint accepts a TCP
  // connection. ctp's transpile never blocks: the executor's rendezvous retries
  // until all ranks are up, so this flag is kept only to be faithful to the
  // reference's interface and has no effect on the rewritten programs.
  bool wait_port = false;
};

struct SingleProcessMultiThreadOptions {
  int fuse_allreduce = 1;  // PADDLE_FUSE_ALLREDUCE: 0 allreduce per grad, 1 coalesce, 2 xsum
  int loss_scale = 1;      // PADDLE_LOSS_SCALE: 0 leaves the loss gradient unscaled
  int gpu_nums = 8;        // number of FLAGS_selected_gpus (default "0,...,7")
};

struct MultiThreadOptions {
  MultiThreadTransMode trans_mode = MultiThreadTransMode::kFuseAllReduce;
  int gpu_num = 9;  // number of FLAGS_selected_gpus (reference default "0,...,8": nine)
};

// ctp's own schedule for GradAllReduce, past the reference: with
// bucket_bytes > 0 the gradients, in the order the backward pass makes them,
// are coalesced into buckets of one dtype of about bucket_bytes each
// (coalesce_tensor: views into one buffer, so nothing is copied after the
// first step), and each bucket's one c_allreduce_sum goes right after the op
// that makes its last gradient. The all-reduces then overlap the rest of the
// backward pass as the reference's per-gradient ones do, in fewer and larger
// calls (DDP's buckets, without its copies). 0: the reference's schedule.
struct GradAllReduceOptions {
  int64_t bucket_bytes = 0;
};

// bucket_bytes for a bucket of `mib` MiB (> 0), as the CLI flags --bucket-mb
// give it: at least one byte.
int64_t bucket_bytes_for_mib(double mib);

struct TranspileOptions {
  CollectiveOptions collective;
  GradAllReduceOptions grad_allreduce;
  SingleProcessMultiThreadOptions single_process_multi_thread;
  MultiThreadOptions multi_thread;
};

// Names as the CLI and the golden files spell them; parse_* throw ctp::Error.
std::string_view to_string(TranspileMode mode);
std::string_view to_string(MultiThreadTransMode mode);
TranspileMode parse_transpile_mode(std::string_view name);
MultiThreadTransMode parse_multi_thread_trans_mode(std::string_view name);

}  // namespace ctp
