// The cross-rank schedule check: ranks whose programs would run different
// collectives stop with an error showing the first difference on each side,
// instead of hanging in the collective (threads and Gloo processes).
#include <gtest/gtest.h>

#include "executor/communicator_schedule.h"
#include "executor/thread_group_driver.h"
#include "tests/comm_test_util.h"

namespace ctp {
namespace {

using namespace std::chrono_literals;

// A main program's gradient all-reduces, as GradAllReduce inserts them.
Program grad_program(int64_t w_rows, bool skip_bias = false) {
  ProgramBuilder pb;
  pb.param("w", {w_rows, 4});
  pb.param("b", {4});
  pb.tmp("w@GRAD", {w_rows, 4});
  pb.tmp("b@GRAD", {4});
  pb.op("c_sync_calc_stream").in("X", "w@GRAD").out("Out", "w@GRAD");
  pb.op("c_allreduce_sum").in("X", "w@GRAD").out("Out", "w@GRAD").attr("ring_id", int32_t{0});
  if (!skip_bias) pb.op("c_allreduce_sum").in("X", "b@GRAD").out("Out", "b@GRAD").attr("ring_id", int32_t{0});
  pb.op("c_broadcast").in("X", "w").out("Out", "w").attr("root", int32_t{0});
  pb.op("c_sync_comm_stream").in("X", "w@GRAD").out("Out", "w@GRAD");
  return pb.build();
}

TEST(CommSchedule, ExtractsTheCollectivesInOrder) {
  Program p = grad_program(8);
  CollectiveSchedule s = collective_schedule(p.global_block());
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(to_string(s[0]), "c_allreduce_sum ring 0 FP32[32] X='w@GRAD'");
  EXPECT_EQ(to_string(s[1]), "c_allreduce_sum ring 0 FP32[4] X='b@GRAD'");
  EXPECT_EQ(to_string(s[2]), "c_broadcast ring 0 FP32[32] root 0 X='w'");
  EXPECT_EQ(fingerprint(s), fingerprint(collective_schedule(grad_program(8).global_block())));
  EXPECT_NE(fingerprint(s), fingerprint(collective_schedule(grad_program(9).global_block())));
}

TEST(CommSchedule, ThreadsWithDifferentProgramsAllStop) {
  DeviceThreads threads(3, CommOptions{5s, 20ms}, RunServices{});
  std::atomic<int> errors{0};
  std::string message;
  std::mutex mu;
  try {
    threads.run([&](int r, RunServices& services) {
      services.comms->install(0, threads.group()->make_communicator(r, 0));
      Program p = grad_program(r == 2 ? 9 : 8);
      try {
        verify_schedule_agreement(*services.comms, collective_schedule(p.global_block()));
      } catch (const Error& e) {
        ++errors;
        std::lock_guard<std::mutex> lock(mu);
        message = e.what();
        throw;
      }
    });
    FAIL();
  } catch (const Error&) {
  }
  EXPECT_EQ(errors.load(), 3);
  EXPECT_NE(message.find("first difference between rank 0 and rank 2 at collective #0: rank 0 runs "
                         "c_allreduce_sum ring 0 FP32[32] X='w@GRAD', rank 2 runs c_allreduce_sum ring 0 "
                         "FP32[36] X='w@GRAD'"), std::string::npos) << message;
  EXPECT_EQ(message.find("rank 1 at collective"), std::string::npos) << message;
}

#ifdef CTP_HAVE_GLOO
TEST(CommSchedule, GlooRanksAgreeOrStopNamingTheDifference) {
  for (bool skip : {false, true}) {
    auto endpoints = testing_comm::local_endpoints(2);
    auto outcomes = testing_comm::run_ranks(2, [&](int rank) {
      CommunicatorManager comms(CommOptions{10s, 20ms});
      RunServices services;
      services.comms = &comms;
      Scope scope;
      ProgramBuilder startup;
      testing_comm::add_comm_init(startup, endpoints, rank, 0);
      testing_comm::run_block(startup.program().global_block(), scope, services);
      Program p = grad_program(8, /*skip_bias=*/skip && rank == 1);
      verify_schedule_agreement(comms, collective_schedule(p.global_block()));
    });
    if (!skip) {
      for (const auto& o : outcomes) EXPECT_TRUE(o.ok()) << testing_comm::describe(outcomes);
      continue;
    }
    for (const auto& o : outcomes) {
      EXPECT_EQ(o.code, 1) << testing_comm::describe(outcomes);
      EXPECT_NE(o.message.find("at collective #1: rank 0 runs c_allreduce_sum ring 0 FP32[4] X='b@GRAD', "
                               "rank 1 runs c_broadcast ring 0 FP32[32] root 0 X='w'"),
                std::string::npos) << o.message;
    }
  }
}
#endif

}  // namespace
}  // namespace ctp
