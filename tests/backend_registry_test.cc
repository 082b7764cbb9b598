// The communicator and device backend registries: backends are chosen per
// device kind (and, for communicators, per ring span); a kind with nothing
// registered is loaded once, then a clear error; the built-in backends are
// the CPU device and, for CPU rings, the thread group and Gloo.
#include <gtest/gtest.h>

#include <chrono>

#include "executor/runtime/backend_library.h"
#include "executor/runtime/comm_backend.h"
#include "executor/runtime/device_backend.h"
#include "executor/runtime/device_runtime.h"
#include "executor/thread_group_driver.h"
#include "ops/common/collective_init.h"
#include "program_ir/builder.h"

namespace ctp {
namespace {

class FakeBackend final : public CommBackend {
 public:
  explicit FakeBackend(std::string name) : name_(std::move(name)) {}
  std::string name() const override { return name_; }
  std::string make_unique_id(const RingIdRequest&) override { return name_ + "-id"; }
  std::unique_ptr<Communicator> connect(const RingSetup&) override { return nullptr; }

 private:
  std::string name_;
};

TEST(CommBackendRegistry, ChoosesTheBackendByDeviceKindAndSpan) {
  CommBackendRegistry registry([](DeviceKind) {});
  registry.add(DeviceKind::CPU, RingSpan::Processes, std::make_shared<FakeBackend>("cpu-procs"));
  registry.add(DeviceKind::CPU, RingSpan::Threads, std::make_shared<FakeBackend>("cpu-threads"));
  registry.add(DeviceKind::CUDA, RingSpan::Processes, std::make_shared<FakeBackend>("gpu-procs"));
  EXPECT_EQ(registry.get(DeviceKind::CPU, RingSpan::Processes).name(), "cpu-procs");
  EXPECT_EQ(registry.get(DeviceKind::CPU, RingSpan::Threads).name(), "cpu-threads");
  EXPECT_EQ(registry.get(DeviceKind::CUDA, RingSpan::Processes).name(), "gpu-procs");
  EXPECT_EQ(registry.name_of(DeviceKind::CUDA, RingSpan::Threads), "");
  EXPECT_THROW(
      registry.add(DeviceKind::CPU, RingSpan::Threads, std::make_shared<FakeBackend>("again")),
      Error);
}

TEST(CommBackendRegistry, LoadsAMissingKindOnceThenNamesWhatIsRegistered) {
  std::vector<DeviceKind> loads;
  CommBackendRegistry registry([&](DeviceKind kind) { loads.push_back(kind); });
  registry.add(DeviceKind::CPU, RingSpan::Threads, std::make_shared<FakeBackend>("threads"));
  try {
    registry.get(DeviceKind::CUDA, RingSpan::Threads);
    FAIL() << "no backend for cuda rings among device threads, yet get() returned";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("no communicator backend connects cuda rings among device threads"),
              std::string::npos) << what;
    EXPECT_NE(what.find("threads for cpu rings among device threads"), std::string::npos) << what;
  }
  EXPECT_EQ(loads, std::vector<DeviceKind>{DeviceKind::CUDA});
}

TEST(CommBackendRegistry, ABackendRegisteredWhileLoadingIsFound) {
  CommBackendRegistry* self = nullptr;
  CommBackendRegistry registry([&](DeviceKind kind) {
    // What a backend library's static initializers do when it is loaded.
    self->add(kind, RingSpan::Processes, std::make_shared<FakeBackend>("loaded"));
  });
  self = &registry;
  EXPECT_EQ(registry.get(DeviceKind::CUDA, RingSpan::Processes).name(), "loaded");
  EXPECT_EQ(registry.get(DeviceKind::CUDA, RingSpan::Processes).make_unique_id({}), "loaded-id");
}

TEST(CommBackendRegistry, TheCpuBackendsAreBuiltIn) {
  CommBackendRegistry& registry = CommBackendRegistry::global();
  EXPECT_EQ(registry.get(DeviceKind::CPU, RingSpan::Threads).name(), "threads");
#ifdef CTP_HAVE_GLOO
  EXPECT_EQ(registry.get(DeviceKind::CPU, RingSpan::Processes).name(), "gloo");
#endif
  EXPECT_NO_THROW(registry.id_exchange());
}

TEST(CommBackendRegistry, CommInitAllConnectsTheThreadBackendsRingOnTheCpu) {
  using namespace std::chrono_literals;
  ProgramBuilder pb;
  pb.op("c_comm_init_all").attr("ring_id", 3);
  const Program program = pb.build();
  const Op& op = program.global_block().ops().front();
  DeviceThreads threads(2, CommOptions{5s, 20ms}, RunServices{});
  threads.run([&](int r, RunServices& services) {
    Scope scope;
    KernelContext ctx(op, program.global_block(), scope, services, 0);
    collective::comm_init_all_kernel(ctx);
    EXPECT_EQ(services.comms->get(3).backend(), "threads");
    EXPECT_EQ(services.comms->get(3).rank(), r);
    EXPECT_EQ(services.comms->get(3).size(), 2);
  });
}

TEST(CommBackendRegistry, ARingSetUpErrorNamesTheOpTheRankTheRingAndTheBackend) {
#ifndef CTP_HAVE_GLOO
  GTEST_SKIP() << "built without Gloo";
#endif
  ProgramBuilder pb;
  pb.op("c_comm_init").in("X", "id").attr("nranks", 2).attr("rank", 1).attr("ring_id", 5);
  const Program program = pb.build();
  Scope scope;
  Tensor id(DataType::UINT8, {3});  // not what Gloo's c_gen_nccl_id makes
  scope.var("id") = id;
  CommunicatorManager comms;
  RunServices services;
  services.comms = &comms;
  KernelContext ctx(program.global_block().ops().front(), program.global_block(), scope,
                    services, 0);
  try {
    collective::comm_init_kernel(ctx);
    FAIL() << "a 3-byte id connected a ring";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("op 0 'c_comm_init': rank 1 of 2, ring 5 (gloo): "),
              std::string::npos) << e.what();
  }
}

TEST(CommBackendRegistry, ACpuRingRefusesTheStreamOrderedFormsNamingItself) {
  CommunicatorManager comms;
  const std::unique_ptr<Communicator> ring =
      CommBackendRegistry::global().get(DeviceKind::CPU, RingSpan::Threads).connect([&] {
        RingSetup setup;
        setup.ring_id = 2;
        setup.comms = &comms;
        return setup;
      }());
  Tensor t(DataType::FP32, {4});
  try {
    ring->queue_all_reduce(t, t, ReduceOp::Sum, DeviceStream{});
    FAIL() << "a CPU ring queued a collective on a device stream";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("rank 0 of 1, ring 2 (threads): all_reduce: a threads "
                                         "ring has no device streams"),
              std::string::npos) << e.what();
  }
}

TEST(DeviceBackendRegistry, TheCpuBackendIsBuiltInAndOthersAreLoadedOnce) {
  EXPECT_EQ(DeviceBackendRegistry::global().get(DeviceKind::CPU).name(), "cpu");
  std::vector<DeviceKind> loads;
  DeviceBackendRegistry registry([&](DeviceKind kind) { loads.push_back(kind); });
  EXPECT_THROW(registry.get(DeviceKind::CUDA), Error);
  EXPECT_EQ(loads, std::vector<DeviceKind>{DeviceKind::CUDA});
}

TEST(DeviceBackendRegistry, ACpuRuntimeSharesAndCopiesHostTensors) {
  DeviceRuntime runtime(Device{});
  EXPECT_EQ(runtime.context(), nullptr);
  EXPECT_EQ(runtime.make_op_timer(), nullptr);
  Tensor value(DataType::FP32, {2});
  value.data<float>()[0] = 1.5f;
  Scope scope;
  runtime.bind(scope, "x", value);
  EXPECT_TRUE(scope.get("x").shares_buffer_with(value));
  Tensor copy = runtime.copy_to_device(value);
  EXPECT_FALSE(copy.shares_buffer_with(value));
  EXPECT_EQ(copy.data<float>()[0], 1.5f);
  EXPECT_TRUE(runtime.to_host(value, nullptr).shares_buffer_with(value));
}

// Loads the CUDA backend into this process (it maps CUDA, cuBLAS and NCCL
// from here on; the tests that check what a CPU-only process maps run ctp and
// the consumer in processes of their own).
TEST(BackendLibrary, TheCudaLibraryRegistersItsBackendsKernelsAndAllocatorWhenLoaded) {
  const std::vector<BackendLibrary> libraries = backend_libraries();
#ifndef CTP_CUDA_BACKEND_BUILT
  EXPECT_TRUE(libraries.empty());
  try {
    load_device_backend(DeviceKind::CUDA);
    FAIL() << "this build has no CUDA backend, yet it loaded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("this build of ctp has no cuda backend"),
              std::string::npos) << e.what();
  }
  GTEST_SKIP() << "built without the CUDA backend";
#endif
  ASSERT_EQ(libraries.size(), 1u);
  EXPECT_EQ(libraries[0].kind, DeviceKind::CUDA);
  EXPECT_TRUE(libraries[0].present) << libraries[0].path;
  EXPECT_EQ(libraries[0].provides, "nccl");
  load_device_backend(DeviceKind::CUDA);
  EXPECT_TRUE(backend_libraries()[0].loaded);
  EXPECT_NE(DeviceBackendRegistry::global().find(DeviceKind::CUDA), nullptr);
  EXPECT_EQ(CommBackendRegistry::global().name_of(DeviceKind::CUDA, RingSpan::Processes), "nccl");
  EXPECT_EQ(CommBackendRegistry::global().name_of(DeviceKind::CUDA, RingSpan::Threads), "nccl");
  EXPECT_NE(KernelRegistry::global().find("c_allreduce_sum", DeviceKind::CUDA), nullptr);
  EXPECT_NE(KernelRegistry::global().find("c_comm_init", DeviceKind::CUDA), nullptr);
  EXPECT_EQ(backend_summary().find("loaded on demand"), std::string::npos) << backend_summary();
  EXPECT_NO_THROW(load_device_backend(DeviceKind::CUDA));  // once only
}

}  // namespace
}  // namespace ctp
