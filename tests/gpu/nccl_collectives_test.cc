// NCCL rings through the executor's CUDA kernels: set-up (c_gen_nccl_id +
// c_comm_init over loopback, and c_comm_init_all on device threads), every
// collective the transpilers insert, the stream-sync ops, and a ring whose
// peer never comes (the timeout aborts it instead of hanging).
#include <gtest/gtest.h>

#include <chrono>
#include <algorithm>
#include <cmath>

#include "executor/cuda/nccl_communicator.h"
#include "executor/executor.h"
#include "executor/runtime/float16.h"
#include "executor/thread_group_driver.h"
#include "tests/comm_test_util.h"
#include "tests/gpu/gpu_test_util.h"

namespace ctp {
namespace {

using gpu_testing::run_on_threads;

Tensor host_vector(std::vector<float> values) {
  Tensor t(DataType::FP32, {static_cast<int64_t>(values.size())});
  std::copy(values.begin(), values.end(), t.data<float>());
  return t;
}

std::vector<float> values_of(DeviceContext& dc, const Tensor& t) {
  Tensor h = dc.to_host(t);
  return std::vector<float>(h.data<float>(), h.data<float>() + h.numel());
}

TEST(GpuMemory, TensorsLiveOnTheGpuAndRoundTrip) {
  CTP_REQUIRE_GPUS(1);
  DeviceContext dc(0);
  Tensor host = host_vector({1.5f, -2.f, 3.25f});
  Tensor dev = dc.to_device(host);
  EXPECT_EQ(dev.device(), (Device{DeviceKind::CUDA, 0}));
  EXPECT_EQ(values_of(dc, dev), (std::vector<float>{1.5f, -2.f, 3.25f}));

  Tensor zeros(DataType::FP32, {4}, dc.device());
  EXPECT_EQ(values_of(dc, zeros), (std::vector<float>(4, 0.f)));
  auto buffer = zeros.buffer();
  zeros.resize(DataType::FP32, {4}, dc.device());
  EXPECT_EQ(zeros.buffer(), buffer) << "an unchanged resize must keep the device buffer";
  zeros.resize(DataType::FP32, {4});  // the device-less overload keeps it too
  EXPECT_EQ(zeros.buffer(), buffer);
  zeros.resize(DataType::FP32, {8}, dc.device());
  EXPECT_NE(zeros.buffer(), buffer);
  EXPECT_THROW(DeviceContext(cuda_device_count() + 3), Error);
}

// Each rank: x = rank+1 (+i), and every collective the transpilers insert.
Program collective_program(int nranks) {
  ProgramBuilder pb;
  for (const char* name : {"a", "b", "b_max", "b_min", "c", "d", "e", "e_all", "g1", "g2"})
    pb.persistable(name, {-1});
  pb.op("c_sync_calc_stream").in("X", "a").out("Out", "a");
  pb.op("c_allreduce_sum").in("X", "a").out("Out", "a").attr("ring_id", 0);
  pb.op("c_allreduce_max").in("X", "b").out("Out", "b_max").attr("ring_id", 0);
  pb.op("c_allreduce_min").in("X", "b").out("Out", "b_min").attr("ring_id", 1)
      .attr("use_calc_stream", true);
  pb.op("c_allreduce_prod").in("X", "c").out("Out", "c").attr("ring_id", 1);
  pb.op("c_broadcast").in("X", "d").out("Out", "d").attr("ring_id", 0).attr("root", 1);
  pb.op("c_allgather").in("X", "e").out("Out", "e_all").attr("ring_id", 1)
      .attr("nranks", nranks);
  pb.op("c_allreduce_xsum").in("X", std::vector<std::string>{"g1", "g2"}).out("Out", std::vector<std::string>{"g1", "g2"}).attr("ring_id", 0);
  for (int ring : {0, 1}) pb.op("c_sync_comm_stream").in("X", "a").out("Out", "a")
      .attr("ring_id", ring);
  return pb.build();
}

TEST(NcclRing, EveryCollectiveOnTwoGpusInTwoRings) {
  CTP_REQUIRE_GPUS(2);
  constexpr int n = 2;
  const auto endpoints0 = testing_comm::local_endpoints(n);
  const auto endpoints1 = testing_comm::local_endpoints(n);
  const Program main = collective_program(n);
  std::vector<std::vector<float>> a(n), b_max(n), b_min(n), c(n), d(n), e_all(n), g1(n), g2(n);
  run_on_threads(n, [&](int rank) {
    ProgramBuilder sb;
    testing_comm::add_comm_init(sb, endpoints0, rank, 0);
    testing_comm::add_comm_init(sb, endpoints1, rank, 1);
    const Program startup = sb.build();
    gpu_testing::GpuRank gpu_rank(rank);
    DeviceContext& dc = gpu_rank.device;
    CommunicatorManager& comms = gpu_rank.comms;
    RunServices& services = gpu_rank.services;
    Scope scope;
    Executor(startup, services).run(scope);
    // c_gen_nccl_id + c_comm_init give the blocking ring (inline launches).
    EXPECT_TRUE(as_nccl(comms.get(0)).blocking());
    EXPECT_TRUE(as_nccl(comms.get(1)).blocking());
    const float r = static_cast<float>(rank);
    scope.var("a") = host_vector({r + 1, 10 * r, -r});
    scope.var("b") = host_vector({r, -r, 5.f});
    scope.var("c") = host_vector({r + 2, 0.5f});
    scope.var("d") = host_vector({100 + r, 200 + r});
    scope.var("e") = host_vector({r, r + 0.5f});
    scope.var("g1") = host_vector({1 + r});
    scope.var("g2") = host_vector({2 * r, 3.f});
    Executor(main, services).run(scope);
    synchronize_device(dc, &comms);
    a[rank] = values_of(dc, scope.get("a"));
    b_max[rank] = values_of(dc, scope.get("b_max"));
    b_min[rank] = values_of(dc, scope.get("b_min"));
    c[rank] = values_of(dc, scope.get("c"));
    d[rank] = values_of(dc, scope.get("d"));
    e_all[rank] = values_of(dc, scope.get("e_all"));
    g1[rank] = values_of(dc, scope.get("g1"));
    g2[rank] = values_of(dc, scope.get("g2"));
    EXPECT_EQ(scope.get("a").device(), dc.device());
    comms.get(0).barrier();
  });
  for (int rank = 0; rank < n; ++rank) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    EXPECT_EQ(a[rank], (std::vector<float>{3, 10, -1}));
    EXPECT_EQ(b_max[rank], (std::vector<float>{1, 0, 5}));
    EXPECT_EQ(b_min[rank], (std::vector<float>{0, -1, 5}));
    EXPECT_EQ(c[rank], (std::vector<float>{6, 0.25f}));
    EXPECT_EQ(d[rank], (std::vector<float>{101, 201}));
    EXPECT_EQ(e_all[rank], (std::vector<float>{0, 0.5f, 1, 1.5f}));
    EXPECT_EQ(g1[rank], (std::vector<float>{3}));
    EXPECT_EQ(g2[rank], (std::vector<float>{2, 6}));
  }
}

Tensor host_16bit(DataType dtype, const std::vector<float>& values) {
  Tensor t(dtype, {static_cast<int64_t>(values.size())});
  for (std::size_t i = 0; i < values.size(); ++i)
    t.data<uint16_t>()[i] = dtype == DataType::FP16 ? float16::from_float(values[i])
                                                    : bfloat16::from_float(values[i]);
  return t;
}

std::vector<float> values_of_16bit(DeviceContext& dc, const Tensor& t) {
  Tensor h = dc.to_host(t);
  EXPECT_EQ(h.dtype(), t.dtype());
  std::vector<float> out;
  for (int64_t i = 0; i < h.numel(); ++i)
    out.push_back(h.dtype() == DataType::FP16 ? float16::to_float(h.data<uint16_t>()[i])
                                              : bfloat16::to_float(h.data<uint16_t>()[i]));
  return out;
}

// 16-bit tensors go through NCCL as ncclFloat16/ncclBfloat16 (what mixed
// precision all-reduces): sums of small integers and halves are exact in
// both formats. On as many GPUs as there are, up to two (on one GPU the ring
// has one rank and checks the dtype's path only).
TEST(NcclRing, SixteenBitCollectivesKeepTheirDtypeAndSumExactly) {
  CTP_REQUIRE_GPUS(1);
  const int n = std::min(cuda_device_count(), 2);
  for (DataType dtype : {DataType::FP16, DataType::BF16}) {
    SCOPED_TRACE(std::string(to_string(dtype)) + " on " + std::to_string(n) + " GPU(s)");
    const auto endpoints = testing_comm::local_endpoints(n);
    ProgramBuilder pb;
    for (const char* name : {"s", "m", "g", "g_all"}) pb.persistable(name, {-1}, dtype);
    pb.op("c_allreduce_sum").in("X", "s").out("Out", "s").attr("ring_id", 0);
    pb.op("c_allreduce_max").in("X", "m").out("Out", "m").attr("ring_id", 0)
        .attr("use_calc_stream", true);
    pb.op("c_allgather").in("X", "g").out("Out", "g_all").attr("ring_id", 0).attr("nranks", n);
    pb.op("c_sync_comm_stream").in("X", "s").out("Out", "s").attr("ring_id", 0);
    const Program main = pb.build();
    std::vector<std::vector<float>> sums(n), maxima(n), gathered(n);
    run_on_threads(n, [&](int rank) {
      ProgramBuilder sb;
      testing_comm::add_comm_init(sb, endpoints, rank, 0);
      gpu_testing::GpuRank gpu_rank(rank);
      DeviceContext& dc = gpu_rank.device;
      CommunicatorManager& comms = gpu_rank.comms;
      RunServices& services = gpu_rank.services;
      Scope scope;
      Executor(sb.build(), services).run(scope);
      const float r = static_cast<float>(rank);
      scope.var("s") = host_16bit(dtype, {r + 1, 0.5f * r, -256.f});
      scope.var("m") = host_16bit(dtype, {r, -r});
      scope.var("g") = host_16bit(dtype, {r + 0.25f});
      Executor(main, services).run(scope);
      synchronize_device(dc, &comms);
      sums[rank] = values_of_16bit(dc, scope.get("s"));
      maxima[rank] = values_of_16bit(dc, scope.get("m"));
      gathered[rank] = values_of_16bit(dc, scope.get("g_all"));
      comms.get(0).barrier();
    });
    std::vector<float> want_sum{0, 0, -256.f * static_cast<float>(n)}, want_gather;
    for (int r = 0; r < n; ++r) {
      want_sum[0] += static_cast<float>(r + 1);
      want_sum[1] += 0.5f * static_cast<float>(r);
      want_gather.push_back(static_cast<float>(r) + 0.25f);
    }
    for (int rank = 0; rank < n; ++rank) {
      EXPECT_EQ(sums[rank], want_sum) << "rank " << rank;
      EXPECT_EQ(maxima[rank], (std::vector<float>{static_cast<float>(n - 1), 0.f})) << rank;
      EXPECT_EQ(gathered[rank], want_gather) << "rank " << rank;
    }
  }
}

TEST(NcclRing, CommInitAllOnDeviceThreads) {
  CTP_REQUIRE_GPUS(2);
  constexpr int n = 2;
  ProgramBuilder sb;
  sb.op("c_comm_init_all").attr("ring_id", 0).attr("devices", std::vector<int32_t>{0, 1});
  const Program startup = sb.build();
  ProgramBuilder mb;
  mb.persistable("w", {3});
  mb.op("c_allreduce_sum").in("X", "w").out("Out", "w").attr("ring_id", 0);
  mb.op("c_sync_comm_stream").in("X", "w").out("Out", "w").attr("ring_id", 0);
  const Program main = mb.build();

  std::vector<std::unique_ptr<DeviceContext>> contexts;
  for (int i = 0; i < n; ++i) contexts.push_back(std::make_unique<DeviceContext>(i));
  std::vector<Scope> scopes(n);
  std::vector<std::vector<float>> got(n);
  {
    DeviceThreads threads(n, CommOptions{std::chrono::seconds(60)}, RunServices{},
                          {contexts[0]->device(), contexts[1]->device()});
    for (int i = 0; i < n; ++i) threads.services(i).device_context = contexts[i].get();
    threads.run([&](int rank, RunServices& services) {
      Executor(startup, services).run(scopes[rank]);
      scopes[rank].var("w") = host_vector({1.f * rank, 2.f, 0.5f});
      Executor(main, services).run(scopes[rank]);
      Executor(main, services).run(scopes[rank]);
      synchronize_device(*contexts[rank], services.comms);
      got[rank] = values_of(*contexts[rank], scopes[rank].get("w"));
      EXPECT_EQ(services.comms->get(0).backend(), "nccl");
      EXPECT_TRUE(as_nccl(services.comms->get(0)).blocking());
    });
  }
  // Two steps of a sum over two ranks: ((0+1), 4, 1) then doubled.
  for (int rank = 0; rank < n; ++rank) EXPECT_EQ(got[rank], (std::vector<float>{2, 8, 2}));
}

// The blocking ring of NcclRingSetup::blocking_unique_id (inline launches):
// every collective form still gives the right values.
TEST(NcclRing, BlockingRingFromASecondIdReducesCorrectly) {
  CTP_REQUIRE_GPUS(2);
  constexpr int n = 2;
  const std::string probe_id = make_nccl_unique_id();
  const std::string blocking_id = make_nccl_unique_id();
  std::vector<std::vector<float>> got(n);
  run_on_threads(n, [&](int rank) {
    DeviceContext dc(rank);
    CommunicatorManager comms(CommOptions{std::chrono::seconds(60)});
    NcclRingSetup setup;
    setup.unique_id = probe_id;
    setup.blocking_unique_id = blocking_id;
    setup.rank = rank;
    setup.size = n;
    setup.device = &dc;
    setup.options = comms.options();
    comms.install(0, NcclCommunicator::connect(setup));
    Tensor x = dc.to_device(host_vector({1.f + rank, -2.f * rank}));
    std::vector<Tensor*> many{&x};
    Communicator& ring = comms.get(0);
    ring.all_reduce(x, ReduceOp::Sum);   // {3, -2}
    ring.all_reduce_many(many, ReduceOp::Max);
    ring.broadcast(x, 1);
    ring.barrier();
    synchronize_device(dc, &comms);
    got[rank] = values_of(dc, x);
  });
  for (int rank = 0; rank < n; ++rank) EXPECT_EQ(got[rank], (std::vector<float>{3, -2}));
}

// connect_all: one thread joins every GPU (up to two) to one ring with
// grouped calls; the rings carry collectives on blocking communicators.
TEST(NcclRing, ConnectAllFromOneThreadGivesBlockingRings) {
  CTP_REQUIRE_GPUS(1);
  const int n = std::min(cuda_device_count(), 2);
  std::vector<std::unique_ptr<DeviceContext>> contexts;
  std::vector<DeviceContext*> devices;
  for (int i = 0; i < n; ++i) {
    contexts.push_back(std::make_unique<DeviceContext>(i));
    devices.push_back(contexts.back().get());
  }
  std::vector<std::unique_ptr<NcclCommunicator>> rings =
      NcclCommunicator::connect_all(devices, 4, CommOptions{std::chrono::seconds(60)});
  ASSERT_EQ(rings.size(), static_cast<std::size_t>(n));
  std::vector<Tensor> values;
  for (int i = 0; i < n; ++i) {
    EXPECT_TRUE(rings[i]->blocking());
    EXPECT_EQ(rings[i]->rank(), i);
    EXPECT_EQ(rings[i]->size(), n);
    EXPECT_EQ(rings[i]->ring_id(), 4);
    values.push_back(contexts[i]->to_device(host_vector({1.f + i, 2.f})));
  }
  // One thread issues every rank's part of a collective, so they go in a group.
  NcclGroup group;
  for (int i = 0; i < n; ++i)
    rings[i]->all_reduce(values[i], values[i], ReduceOp::Sum, contexts[i]->comm_stream(4));
  group.end();
  const float first = n == 1 ? 1.f : 3.f;
  for (int i = 0; i < n; ++i) {
    synchronize_device(*contexts[i], nullptr);
    EXPECT_EQ(values_of(*contexts[i], values[i]), (std::vector<float>{first, 2.f * n})) << i;
  }
}

TEST(NcclRing, APeerThatNeverJoinsTimesOutWithAnAbort) {
  CTP_REQUIRE_GPUS(1);
  DeviceContext dc(0);
  NcclRingSetup setup;
  // Both ids, as c_gen_nccl_id hands them out: the probe must time out
  // before the blocking init could wait for the missing peer.
  set_ring_ids(setup, make_nccl_ring_ids(), {});
  EXPECT_FALSE(setup.blocking_unique_id.empty());
  setup.rank = 0;
  setup.size = 2;
  setup.ring_id = 3;
  setup.device = &dc;
  setup.options.timeout = std::chrono::seconds(3);
  const auto start = std::chrono::steady_clock::now();
  try {
    NcclCommunicator::connect(setup);
    FAIL() << "a ring of 2 with one rank must not come up";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("rank 0 of 2, ring 3 (nccl)"), std::string::npos) << what;
    EXPECT_NE(what.find("did not join"), std::string::npos) << what;
  }
  const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(
      std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 30) << "the timeout must end the wait";
}

TEST(NcclRing, CpuRingsAndMissingContextsAreClearErrors) {
  CTP_REQUIRE_GPUS(1);
  ProgramBuilder mb;
  mb.persistable("w", {1});
  mb.op("c_allreduce_sum").in("X", "w").out("Out", "w").attr("ring_id", 0);
  const Program main = mb.build();
  Scope scope;
  scope.var("w") = host_vector({1.f});
  RunServices services;
  services.device = Device{DeviceKind::CUDA, 0};
  CommunicatorManager comms;
  services.comms = &comms;
  try {
    Executor(main, services).run(scope);
    FAIL() << "a GPU run without a DeviceContext must fail";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("op 0 'c_allreduce_sum'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ctp
