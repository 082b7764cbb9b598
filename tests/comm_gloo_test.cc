// The Gloo backend end to end: forked processes over 127.0.0.1 run Paddle's
// communicator set-up (c_gen_nccl_id + c_comm_init) and the collective ops
// through their CPU kernels, and check every rank's results; then the
// faults: a peer killed mid-run, rank 0 killed, a stalled peer, a peer that
// never joins. Each must end every survivor with an error naming the cause
// within the configured timeout.
#ifdef CTP_HAVE_GLOO
#include <gtest/gtest.h>
#include <signal.h>

#include <cmath>
#include <cstring>

#include "executor/runtime/communicator.h"
#include "executor/runtime/communicator_reduce.h"
#include "executor/runtime/float16.h"
#include "executor/thread_group_driver.h"
#include "tests/comm_test_util.h"

namespace ctp {
namespace {

using namespace std::chrono_literals;
using testing_comm::add_comm_init;
using testing_comm::as_rank;
using testing_comm::describe;
using testing_comm::local_endpoints;
using testing_comm::require;
using testing_comm::run_block;
using testing_comm::run_ranks;

// Runs one op through its kernel.
void run_op(Scope& scope, RunServices& services, Op op) {
  ProgramBuilder pb;
  pb.block().append_op(std::move(op));
  run_block(pb.program().global_block(), scope, services);
}

Op allreduce_op(const std::string& type, const std::string& var, int ring = 0) {
  Op op(type, {{"X", {var}}}, {{"Out", {var}}});
  op.set_attr("ring_id", Attribute(int32_t{ring}));
  return op;
}

Op allreduce_op_many(const std::string& type, const std::vector<std::string>& vars) {
  Op op(type, {{"X", vars}}, {{"Out", vars}});
  op.set_attr("ring_id", Attribute(int32_t{0}));
  return op;
}

template <typename T>
Tensor filled(DataType dtype, int64_t n, const std::function<double(int64_t)>& value) {
  Tensor t(dtype, {n});
  T* p = static_cast<T*>(t.raw_data());
  for (int64_t i = 0; i < n; ++i) {
    if constexpr (std::is_same_v<T, uint16_t>)
      p[i] = float16::from_float(static_cast<float>(value(i)));
    else
      p[i] = static_cast<T>(value(i));
  }
  return t;
}

template <typename T>
double element(const Tensor& t, int64_t i) {
  const T* p = static_cast<const T*>(t.raw_data());
  if constexpr (std::is_same_v<T, uint16_t>)
    return float16::to_float(p[i]);
  else
    return static_cast<double>(p[i]);
}

// Every (dtype, reduction) pair on every rank: rank r contributes
// (r + 1) + (i % 4) at element i, so each result has a closed form that is
// exact in every dtype.
template <typename T>
void check_all_reductions(Scope& scope, RunServices& services, DataType dtype, int n) {
  const int64_t count = 1000;
  const char* ops[] = {"c_allreduce_sum", "c_allreduce_max", "c_allreduce_min", "c_allreduce_prod"};
  int rank = services.comms->get(0).rank();
  for (const char* type : ops) {
    std::string var = std::string(type) + "_" + std::string(to_string(dtype));
    scope.var(var) = filled<T>(dtype, count, [&](int64_t i) { return rank + 1 + i % 4; });
    run_op(scope, services, allreduce_op(type, var));
    const Tensor& out = scope.get(var);
    for (int64_t i = 0; i < count; ++i) {
      double k = static_cast<double>(i % 4), expect = 0;
      if (std::string(type) == "c_allreduce_sum") expect = n * (n + 1) / 2.0 + n * k;
      if (std::string(type) == "c_allreduce_max") expect = n + k;
      if (std::string(type) == "c_allreduce_min") expect = 1 + k;
      if (std::string(type) == "c_allreduce_prod") {
        expect = 1;
        for (int r = 0; r < n; ++r) expect *= r + 1 + k;
      }
      require(element<T>(out, i) == expect,
              var + "[" + std::to_string(i) + "] = " + std::to_string(element<T>(out, i)) +
                  ", expected " + std::to_string(expect));
    }
  }
}

class GlooRanks : public ::testing::TestWithParam<int> {};

TEST_P(GlooRanks, AllReduceEveryReductionAndDtype) {
  int n = GetParam();
  auto endpoints = local_endpoints(n);
  auto outcomes = run_ranks(n, [&](int rank) {
    as_rank(rank, endpoints, 20s, [&](Scope& scope, RunServices& services, CommunicatorManager& comms) {
      require(comms.get(0).backend() == "gloo" && comms.get(0).size() == n, "a gloo ring of n ranks");
      check_all_reductions<float>(scope, services, DataType::FP32, n);
      check_all_reductions<double>(scope, services, DataType::FP64, n);
      check_all_reductions<int32_t>(scope, services, DataType::INT32, n);
      check_all_reductions<int64_t>(scope, services, DataType::INT64, n);
      check_all_reductions<uint16_t>(scope, services, DataType::FP16, n);
    });
  });
  for (const auto& o : outcomes) EXPECT_TRUE(o.ok()) << describe(outcomes);
}

TEST_P(GlooRanks, BroadcastAllGatherFusedSumAndBarrier) {
  int n = GetParam();
  auto endpoints = local_endpoints(n);
  auto outcomes = run_ranks(n, [&](int rank) {
    as_rank(rank, endpoints, 20s, [&](Scope& scope, RunServices& services, CommunicatorManager& comms) {
      // c_broadcast from root 1: every rank ends with root 1's values.
      scope.var("w") = filled<double>(DataType::FP64, 77, [&](int64_t i) { return rank * 100.0 + i; });
      Op bcast("c_broadcast", {{"X", {"w"}}}, {{"Out", {"w"}}});
      bcast.set_attr("root", Attribute(int32_t{1}));
      run_op(scope, services, bcast);
      for (int64_t i = 0; i < 77; ++i)
        require(element<double>(scope.get("w"), i) == 100.0 + i, "broadcast from root 1");

      // c_allgather of a [3, 2] INT64 tensor into [3n, 2], rank-major.
      Tensor g(DataType::INT64, {3, 2});
      for (int i = 0; i < 6; ++i) g.data<int64_t>()[i] = rank * 10 + i;
      scope.var("g") = g;
      Op gather("c_allgather", {{"X", {"g"}}}, {{"Out", {"g_all"}}});
      gather.set_attr("nranks", Attribute(int32_t{n}));
      run_op(scope, services, gather);
      const Tensor& all = scope.get("g_all");
      require(all.shape() == std::vector<int64_t>{3 * n, 2}, "allgather shape");
      for (int r = 0; r < n; ++r)
        for (int i = 0; i < 6; ++i)
          require(all.data<int64_t>()[r * 6 + i] == r * 10 + i, "allgather values");

      // c_allreduce_xsum over separate tensors (packed) and over views
      // back to back in one buffer (reduced in place).
      scope.var("a") = filled<float>(DataType::FP32, 5, [&](int64_t i) { return rank + i; });
      scope.var("b") = filled<float>(DataType::FP32, 300, [&](int64_t) { return 1.0; });
      auto fused = allocate_cpu_buffer(64 * sizeof(float));
      scope.var("c") = Tensor::view(fused, 0, DataType::FP32, {24});
      scope.var("d") = Tensor::view(fused, 24 * sizeof(float), DataType::FP32, {40});
      for (int i = 0; i < 64; ++i) static_cast<float*>(fused->data())[i] = static_cast<float>(rank);
      run_op(scope, services, allreduce_op_many("c_allreduce_xsum", {"a", "b"}));
      run_op(scope, services, allreduce_op_many("c_allreduce_xsum", {"c", "d"}));
      double rank_sum = n * (n - 1) / 2.0;
      for (int64_t i = 0; i < 5; ++i)
        require(element<float>(scope.get("a"), i) == rank_sum + n * i, "xsum a");
      require(element<float>(scope.get("b"), 299) == n, "xsum b");
      for (int i = 0; i < 64; ++i)
        require(static_cast<float*>(fused->data())[i] == rank_sum, "xsum of views");
      require(scope.get("c").shares_buffer_with(scope.get("d")), "views stay views");

      // Out different from X: Out gets the sum, X keeps its values.
      scope.var("x") = filled<float>(DataType::FP32, 4, [&](int64_t) { return rank + 1.0; });
      run_op(scope, services, Op("c_allreduce_sum", {{"X", {"x"}}}, {{"Out", {"y"}}}));
      require(element<float>(scope.get("y"), 3) == n * (n + 1) / 2.0, "sum into another var");
      require(element<float>(scope.get("x"), 3) == rank + 1.0, "X unchanged");

      // The sync ops order nothing on CPU but keep Out bound to X.
      run_op(scope, services, Op("c_sync_calc_stream", {{"X", {"x"}}}, {{"Out", {"x"}}}));
      run_op(scope, services, Op("c_sync_comm_stream", {{"X", {"x"}}}, {{"Out", {"x"}}}));
      comms.get(0).barrier();
    });
  });
  for (const auto& o : outcomes) EXPECT_TRUE(o.ok()) << describe(outcomes);
}

INSTANTIATE_TEST_SUITE_P(Comm, GlooRanks, ::testing::Values(2, 4),
                         [](const auto& info) { return std::to_string(info.param) + "Ranks"; });

TEST(CommGloo, TwoRingsShareTheEndpoints) {
  auto endpoints = local_endpoints(2);
  auto outcomes = run_ranks(2, [&](int rank) {
    as_rank(rank, endpoints, 20s, [&](Scope& scope, RunServices& services, CommunicatorManager& comms) {
      require(comms.ring_ids() == std::vector<int>{0, 1}, "two rings");
      scope.var("v") = filled<int32_t>(DataType::INT32, 3, [&](int64_t) { return rank + 5; });
      run_op(scope, services, allreduce_op("c_allreduce_max", "v", 1));
      require(element<int32_t>(scope.get("v"), 2) == 6, "max on ring 1");
    }, /*rings=*/2);
  });
  for (const auto& o : outcomes) EXPECT_TRUE(o.ok()) << describe(outcomes);
}

// Two processes of two device threads each: c_comm_init_multitrainer makes
// one 4-rank Gloo ring over all threads, c_comm_init_all a ring of the two
// threads of each process.
TEST(CommGloo, MultiTrainerWithDeviceThreads) {
  auto endpoints = local_endpoints(2);
  auto outcomes = run_ranks(2, [&](int trainer) {
    RunServices base;
    DeviceThreads threads(2, CommOptions{20s, 20ms}, base);
    std::vector<Scope> scopes(2);
    ProgramBuilder pb;
    add_comm_init(pb, endpoints, trainer, 0, /*multitrainer=*/true);
    pb.op("c_comm_init_all").attr("ring_id", int32_t{1});
    pb.op("c_allreduce_sum").in("X", "v").out("Out", "v").attr("ring_id", int32_t{0});
    pb.op("c_allreduce_sum").in("X", "u").out("Out", "u").attr("ring_id", int32_t{1});
    Program program = pb.build();
    threads.run([&](int local, RunServices& services) {
      int global = trainer * 2 + local;
      scopes[local].var("v") = filled<float>(DataType::FP32, 10, [&](int64_t) { return global + 1.0; });
      scopes[local].var("u") = filled<float>(DataType::FP32, 10, [&](int64_t) { return global + 1.0; });
      run_block(program.global_block(), scopes[local], services);
      require(services.comms->get(0).size() == 4 && services.comms->get(0).rank() == global,
              "trainer-major global rank");
      require(element<float>(scopes[local].get("v"), 9) == 10.0, "sum over 4 threads");
      float local_sum = trainer == 0 ? 3.0f : 7.0f;
      require(element<float>(scopes[local].get("u"), 0) == local_sum, "sum over this process");
    });
  });
  for (const auto& o : outcomes) EXPECT_TRUE(o.ok()) << describe(outcomes);
}

// Steps of an all-reduce; `die_at` makes the rank kill itself (SIGKILL, as a
// crash or an OOM kill would) before that step.
void all_reduce_steps(int rank, int steps, int victim, int die_at, Scope& scope,
                      RunServices& services) {
  for (int step = 0; step < steps; ++step) {
    if (rank == victim && step == die_at) ::raise(SIGKILL);
    scope.var("g") = filled<float>(DataType::FP32, 4096, [&](int64_t) { return 1.0; });
    run_op(scope, services, allreduce_op("c_allreduce_sum", "g"));
    std::this_thread::sleep_for(20ms);
  }
}

TEST(CommGloo, KilledPeerIsNamedBySurvivorsWithinTimeout) {
  auto endpoints = local_endpoints(3);
  const auto timeout = 4s;
  auto outcomes = run_ranks(3, [&](int rank) {
    as_rank(rank, endpoints, timeout, [&](Scope& scope, RunServices& services, CommunicatorManager&) {
      all_reduce_steps(rank, 1000, /*victim=*/2, /*die_at=*/5, scope, services);
    });
  });
  EXPECT_FALSE(outcomes[2].exited) << describe(outcomes);
  EXPECT_EQ(outcomes[2].code, SIGKILL);
  for (int r : {0, 1}) {
    EXPECT_TRUE(outcomes[r].exited && outcomes[r].code == 1) << describe(outcomes);
    EXPECT_NE(outcomes[r].message.find("rank 2 (" + endpoints[2] + ") died"), std::string::npos)
        << describe(outcomes);
    EXPECT_NE(outcomes[r].message.find("rank " + std::to_string(r) + " of 3, ring 0"),
              std::string::npos) << describe(outcomes);
    EXPECT_NE(outcomes[r].message.find("c_allreduce_sum"), std::string::npos) << describe(outcomes);
    EXPECT_LT(outcomes[r].seconds, 4.0 + 3.0) << describe(outcomes);
  }
}

TEST(CommGloo, KilledRankZeroIsNamed) {
  auto endpoints = local_endpoints(2);
  auto outcomes = run_ranks(2, [&](int rank) {
    as_rank(rank, endpoints, 4s, [&](Scope& scope, RunServices& services, CommunicatorManager&) {
      all_reduce_steps(rank, 1000, /*victim=*/0, /*die_at=*/3, scope, services);
    });
  });
  EXPECT_EQ(outcomes[0].code, SIGKILL) << describe(outcomes);
  EXPECT_TRUE(outcomes[1].exited && outcomes[1].code == 1) << describe(outcomes);
  EXPECT_NE(outcomes[1].message.find("rank 0"), std::string::npos) << describe(outcomes);
  EXPECT_LT(outcomes[1].seconds, 4.0 + 3.0) << describe(outcomes);
}

TEST(CommGloo, PeerThatFinishesEarlyIsNamed) {
  auto endpoints = local_endpoints(2);
  auto outcomes = run_ranks(2, [&](int rank) {
    as_rank(rank, endpoints, 5s, [&](Scope& scope, RunServices& services, CommunicatorManager&) {
      all_reduce_steps(rank, rank == 1 ? 2 : 3, -1, -1, scope, services);
    });
  });
  EXPECT_TRUE(outcomes[1].ok()) << describe(outcomes);
  EXPECT_EQ(outcomes[0].code, 1) << describe(outcomes);
  EXPECT_NE(outcomes[0].message.find("peer rank 1 (" + endpoints[1] +
                                     ") closed the communicator while this rank still ran collectives"),
            std::string::npos) << describe(outcomes);
  EXPECT_LT(outcomes[0].seconds, 5.0) << describe(outcomes);
}

TEST(CommGloo, StalledPeerEndsInTimeoutError) {
  auto endpoints = local_endpoints(2);
  auto outcomes = run_ranks(2, [&](int rank) {
    as_rank(rank, endpoints, 1500ms, [&](Scope& scope, RunServices& services, CommunicatorManager&) {
      if (rank == 1) std::this_thread::sleep_for(4s);  // stalls past rank 0's timeout
      scope.var("g") = filled<float>(DataType::FP32, 16, [&](int64_t) { return 1.0; });
      auto start = std::chrono::steady_clock::now();
      run_op(scope, services, allreduce_op("c_allreduce_sum", "g"));
      (void)start;
    });
  });
  EXPECT_TRUE(outcomes[0].exited && outcomes[0].code == 1) << describe(outcomes);
  EXPECT_NE(outcomes[0].message.find("timed out after 1.5 s"), std::string::npos) << describe(outcomes);
  EXPECT_NE(outcomes[0].message.find("rank 0 of 2, ring 0"), std::string::npos) << describe(outcomes);
}

TEST(CommGloo, PeerThatNeverJoinsTheRingIsNamed) {
  auto endpoints = local_endpoints(2);
  auto outcomes = run_ranks(2, [&](int rank) {
    CommunicatorManager comms(CommOptions{1500ms, 20ms});
    RunServices services;
    services.comms = &comms;
    Scope scope;
    ProgramBuilder pb;
    add_comm_init(pb, endpoints, rank, 0);
    Program p = pb.build();
    if (rank == 1) {  // takes the id, then never builds the ring
      const Op& gen = p.global_block().ops().front();
      KernelContext ctx(gen, p.global_block(), scope, services);
      (*KernelRegistry::global().find("c_gen_nccl_id", DeviceKind::CPU))(ctx);
      std::this_thread::sleep_for(3s);
      return;
    }
    run_block(p.global_block(), scope, services);
  });
  EXPECT_TRUE(outcomes[1].ok()) << describe(outcomes);
  EXPECT_TRUE(outcomes[0].exited && outcomes[0].code == 1) << describe(outcomes);
  EXPECT_NE(outcomes[0].message.find("rank 1 did not join"), std::string::npos) << describe(outcomes);
  EXPECT_LT(outcomes[0].seconds, 1.5 + 2.5) << describe(outcomes);
}

}  // namespace
}  // namespace ctp
#endif  // CTP_HAVE_GLOO
