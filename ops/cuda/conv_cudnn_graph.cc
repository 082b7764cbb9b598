// cuDNN graph-API convolutions (conv_cudnn_graph.h): build the one-op graph,
// ask the heuristics for engine configurations, time the leading ones, keep
// the fastest plan per shape.
#include "ops/cuda/conv_cudnn_graph.h"

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "executor/cuda/cudnn_check.h"
#include "ops/cuda/cuda_kernel_util.h"

namespace ctp::cuda {
namespace {

// Owns one backend descriptor.
class Backend {
 public:
  explicit Backend(cudnnBackendDescriptorType_t type) {
    CTP_CUDNN_CHECK(cudnnBackendCreateDescriptor(type, &d_));
  }
  ~Backend() {
    if (d_) cudnnBackendDestroyDescriptor(d_);
  }
  Backend(Backend&& other) noexcept : d_(std::exchange(other.d_, nullptr)) {}
  Backend& operator=(Backend&& other) noexcept {
    std::swap(d_, other.d_);
    return *this;
  }
  Backend(const Backend&) = delete;
  Backend& operator=(const Backend&) = delete;

  cudnnBackendDescriptor_t get() const { return d_; }
  void set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, int64_t count,
           const void* values) {
    const cudnnStatus_t status = cudnnBackendSetAttribute(d_, name, type, count, values);
    if (status != CUDNN_STATUS_SUCCESS)
      throw_cudnn_error(status, ("cudnnBackendSetAttribute #" + std::to_string(name)).c_str(),
                        __FILE__, __LINE__);
  }
  void set(cudnnBackendAttributeName_t name, const Backend& value) {
    cudnnBackendDescriptor_t d = value.get();
    set(name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &d);
  }
  void finalize() { CTP_CUDNN_CHECK(cudnnBackendFinalize(d_)); }

 private:
  cudnnBackendDescriptor_t d_ = nullptr;
};

// The tensors' ids in the graph and the variant pack.
constexpr int64_t kX = 1, kW = 2, kY = 3;

Backend tensor(int64_t uid, const int64_t (&dims)[4], cudnnDataType_t type, int64_t alignment) {
  const int64_t strides[4] = {dims[1] * dims[2] * dims[3], dims[2] * dims[3], dims[3], 1};
  Backend t(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  t.set(CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type);
  t.set(CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims);
  t.set(CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides);
  t.set(CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid);
  t.set(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &alignment);
  t.finalize();
  return t;
}

Backend convolution(const GraphConv& c) {
  Backend d(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
  const cudnnDataType_t compute = CUDNN_DATA_FLOAT;
  const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  const int64_t spatial = 2;
  d.set(CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute);
  d.set(CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode);
  d.set(CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &spatial);
  d.set(CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, c.dilation);
  d.set(CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2, c.stride);
  d.set(CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, c.pad);
  d.set(CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, c.pad);
  d.finalize();
  return d;
}

// The operation's descriptor type and the attributes its x, w, y, convolution,
// alpha and beta go under, per direction.
struct DirectionAttributes {
  cudnnBackendDescriptorType_t type;
  cudnnBackendAttributeName_t x, w, y, conv, alpha, beta;
};

DirectionAttributes attributes_of(ConvDirection direction) {
  switch (direction) {
    case ConvDirection::kForward:
      return {CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR,
              CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X,
              CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
              CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y,
              CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
              CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA,
              CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA};
    case ConvDirection::kBackwardData:
      return {CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR,
              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX,
              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W,
              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY,
              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC,
              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA,
              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA};
    case ConvDirection::kBackwardFilter:
      break;
  }
  return {CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR,
          CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X,
          CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW,
          CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY,
          CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC,
          CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA,
          CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA};
}

// The one-op graph of a direction. The graph keeps references to the
// descriptors it was made from, so they live beside it.
struct OperationGraph {
  std::vector<Backend> parts;
  Backend graph{CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR};
};

OperationGraph operation_graph(cudnnHandle_t handle, ConvDirection direction,
                               const GraphConv& c, int64_t alignment) {
  OperationGraph g;
  const DirectionAttributes a = attributes_of(direction);
  Backend op(a.type);
  Backend x = tensor(kX, c.x, c.type, alignment), w = tensor(kW, c.w, c.type, alignment),
          y = tensor(kY, c.y, c.type, alignment), conv = convolution(c);
  const float one = 1, zero = 0;
  op.set(a.x, x);
  op.set(a.w, w);
  op.set(a.y, y);
  op.set(a.conv, conv);
  op.set(a.alpha, CUDNN_TYPE_FLOAT, 1, &one);
  op.set(a.beta, CUDNN_TYPE_FLOAT, 1, &zero);
  op.finalize();
  g.graph.set(CUDNN_ATTR_OPERATIONGRAPH_OPS, op);
  g.graph.set(CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle);
  g.graph.finalize();
  for (Backend* part : {&op, &x, &w, &y, &conv}) g.parts.push_back(std::move(*part));
  return g;
}

// The engine configurations cuDNN's heuristics (mode A, as PyTorch's
// default) rank for the graph, best first; the fallback list when mode A
// has none.
std::vector<Backend> engine_configs(const Backend& graph) {
  std::vector<Backend> configs;
  for (cudnnBackendHeurMode_t mode : {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK}) {
    Backend heuristics(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
    heuristics.set(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph);
    heuristics.set(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
    if (cudnnBackendFinalize(heuristics.get()) != CUDNN_STATUS_SUCCESS) continue;
    int64_t count = 0;
    CTP_CUDNN_CHECK(cudnnBackendGetAttribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                             CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, nullptr));
    if (count <= 0) continue;
    std::vector<cudnnBackendDescriptor_t> raw;
    for (int64_t i = 0; i < count; ++i) {
      configs.emplace_back(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
      raw.push_back(configs.back().get());
    }
    CTP_CUDNN_CHECK(cudnnBackendGetAttribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                             CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &count,
                                             raw.data()));
    while (static_cast<int64_t>(configs.size()) > count) configs.pop_back();
    if (!configs.empty()) break;
  }
  return configs;
}

// Whether an engine computes as ctp's 16-bit convolutions promise (float
// sums) and builds without run-time compilation (NVRTC at plan time, seconds
// per shape).
bool acceptable(const Backend& config) {
  Backend engine(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
  cudnnBackendDescriptor_t e = engine.get();
  int64_t n = 0;
  if (cudnnBackendGetAttribute(config.get(), CUDNN_ATTR_ENGINECFG_ENGINE,
                               CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &e) != CUDNN_STATUS_SUCCESS)
    return false;
  cudnnBackendNumericalNote_t numerical[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
  if (cudnnBackendGetAttribute(e, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                               CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &n, numerical) !=
      CUDNN_STATUS_SUCCESS)
    return false;
  for (int64_t i = 0; i < n; ++i)
    if (numerical[i] == CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION) return false;
  cudnnBackendBehaviorNote_t behavior[CUDNN_BEHAVIOR_NOTE_TYPE_COUNT];
  if (cudnnBackendGetAttribute(e, CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE, CUDNN_TYPE_BEHAVIOR_NOTE,
                               CUDNN_BEHAVIOR_NOTE_TYPE_COUNT, &n, behavior) !=
      CUDNN_STATUS_SUCCESS)
    return false;
  for (int64_t i = 0; i < n; ++i)
    if (behavior[i] == CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION) return false;
  return true;
}

// A finalized execution plan and the workspace it needs; kept in the
// DeviceContext (as a kernel state) with the graph it was made from.
struct ConvPlan {
  OperationGraph graph;
  Backend config{CUDNN_BACKEND_ENGINECFG_DESCRIPTOR};
  Backend plan{CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR};
  int64_t workspace_bytes = 0;
};

// The plan of one engine configuration; nullptr when cuDNN cannot build it.
std::unique_ptr<ConvPlan> make_plan(cudnnHandle_t handle, Backend config) {
  auto p = std::make_unique<ConvPlan>();
  p->config = std::move(config);
  p->plan.set(CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle);
  p->plan.set(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, p->config);
  if (cudnnBackendFinalize(p->plan.get()) != CUDNN_STATUS_SUCCESS) return nullptr;
  int64_t n = 0;
  CTP_CUDNN_CHECK(cudnnBackendGetAttribute(p->plan.get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                           CUDNN_TYPE_INT64, 1, &n, &p->workspace_bytes));
  return p;
}

cudnnStatus_t execute(cudnnHandle_t handle, const ConvPlan& p, void* const (&pointers)[3],
                      void* workspace) {
  Backend pack(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  const int64_t uids[3] = {kX, kW, kY};
  pack.set(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, uids);
  pack.set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3, pointers);
  pack.set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace);
  pack.finalize();
  return cudnnBackendExecute(handle, p.plan.get(), pack.get());
}

// How many of the heuristics' leading candidates are timed, and how: a
// candidate runs twice untimed (the first launch of a kernel loads its
// module), then kTimedRuns times between two events. A later candidate must
// beat the best so far by kMargin to replace it, so that near-ties resolve
// to the heuristics' order, the same in every process.
constexpr std::size_t kCandidates = 6;
constexpr int kWarmupRuns = 2, kTimedRuns = 5;
constexpr float kMargin = 0.97f;
// The most workspace a candidate may want (cf. the legacy search's limit):
// the chosen plan's stays allocated for the run.
constexpr int64_t kWorkspaceLimit = int64_t{1} << 30;

// Mean milliseconds of one run of `p`; negative when it fails to run.
float time_plan(DeviceContext& dc, const ConvPlan& p, void* const (&pointers)[3],
                void* workspace) {
  cudaEvent_t start = nullptr, stop = nullptr;
  CTP_CUDA_CHECK(cudaEventCreate(&start));
  CTP_CUDA_CHECK(cudaEventCreate(&stop));
  float ms = -1;
  bool ran = true;
  for (int i = 0; i < kWarmupRuns && ran; ++i)
    ran = execute(dc.cudnn(), p, pointers, workspace) == CUDNN_STATUS_SUCCESS;
  if (ran) {
    CTP_CUDA_CHECK(cudaEventRecord(start, dc.compute_stream()));
    for (int i = 0; i < kTimedRuns && ran; ++i)
      ran = execute(dc.cudnn(), p, pointers, workspace) == CUDNN_STATUS_SUCCESS;
    CTP_CUDA_CHECK(cudaEventRecord(stop, dc.compute_stream()));
    CTP_CUDA_CHECK(cudaEventSynchronize(stop));
    if (ran) CTP_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return ran ? ms / kTimedRuns : -1;
}

// The fastest of the heuristics' leading acceptable plans, timed on the op's
// own buffers (the direction's output is overwritten; the real run follows).
std::shared_ptr<ConvPlan> choose_plan(KernelContext& ctx, ConvDirection direction,
                                      const GraphConv& c, int64_t alignment,
                                      void* const (&pointers)[3]) {
  DeviceContext& dc = device_context(ctx);
  cudnnHandle_t handle = dc.cudnn();
  std::size_t free = 0, total = 0;
  CTP_CUDA_CHECK(cudaMemGetInfo(&free, &total));
  const int64_t limit = std::min<int64_t>(kWorkspaceLimit, static_cast<int64_t>(free / 2));
  OperationGraph graph = operation_graph(handle, direction, c, alignment);
  std::vector<std::unique_ptr<ConvPlan>> candidates;
  for (Backend& config : engine_configs(graph.graph)) {
    if (candidates.size() == kCandidates) break;
    if (!acceptable(config)) continue;
    std::unique_ptr<ConvPlan> p = make_plan(handle, std::move(config));
    if (p && p->workspace_bytes <= limit) candidates.push_back(std::move(p));
  }
  if (candidates.empty())
    ctx.fail("cuDNN offers no engine for this 16-bit convolution (direction " +
             std::to_string(static_cast<int>(direction)) + ")");
  std::size_t best = 0;
  if (candidates.size() > 1) {
    int64_t most = 0;
    for (const auto& p : candidates) most = std::max(most, p->workspace_bytes);
    Tensor workspace(DataType::UINT8, {most}, dc.device());
    float best_ms = -1;
    for (std::size_t i = 0; i < candidates.size(); ++i) {
      const float ms = time_plan(dc, *candidates[i], pointers, workspace.raw_data());
      if (ms >= 0 && (best_ms < 0 || ms < best_ms * kMargin)) {
        best = i;
        best_ms = ms;
      }
    }
    if (best_ms < 0) ctx.fail("no cuDNN engine ran this 16-bit convolution");
  }
  std::shared_ptr<ConvPlan> chosen(std::move(candidates[best]));
  chosen->graph = std::move(graph);
  return chosen;
}

std::string plan_key(ConvDirection direction, const GraphConv& c, int64_t alignment) {
  std::string key = "graph-conv " + std::to_string(static_cast<int>(direction)) + " t" +
                    std::to_string(c.type) + " a" + std::to_string(alignment);
  for (const int64_t* dims : {c.x, c.w, c.y})
    for (int i = 0; i < 4; ++i) key += " " + std::to_string(dims[i]);
  for (const int64_t* pair : {c.pad, c.stride, c.dilation})
    key += " " + std::to_string(pair[0]) + "," + std::to_string(pair[1]);
  return key;
}

// The byte alignment every buffer shares (16 for the allocator's buffers;
// less for a view into one), which the plan's engines may rely on.
int64_t common_alignment(void* const (&pointers)[3]) {
  int64_t alignment = 16;
  for (void* p : pointers)
    while (alignment > 2 && reinterpret_cast<uintptr_t>(p) % static_cast<uintptr_t>(alignment))
      alignment /= 2;
  return alignment;
}

}  // namespace

void run_graph_conv(KernelContext& ctx, ConvDirection direction, const GraphConv& conv, void* x,
                    void* w, void* y) {
  DeviceContext& dc = device_context(ctx);
  void* const pointers[3] = {x, w, y};
  const int64_t alignment = common_alignment(pointers);
  const std::string key = plan_key(direction, conv, alignment);
  std::shared_ptr<ConvPlan> plan = std::static_pointer_cast<ConvPlan>(dc.find_kernel_state(key));
  if (!plan) {
    plan = choose_plan(ctx, direction, conv, alignment, pointers);
    dc.remember_kernel_state(key, plan);
  }
  void* workspace = plan->workspace_bytes
                        ? dc.compute_workspace(static_cast<std::size_t>(plan->workspace_bytes))
                        : nullptr;
  CTP_CUDNN_CHECK(execute(dc.cudnn(), *plan, pointers, workspace));
}

}  // namespace ctp::cuda
