// The single-process multi-device mode: G device threads, c_comm_init_all,
// collectives meeting in shared memory. Results, agreement checks, a thread
// that fails (the others end at once), a stalled thread (timeout naming it),
// and the FP16/BF16 conversions the CPU reductions use.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <thread>

#include "executor/runtime/communicator_reduce.h"
#include "executor/runtime/float16.h"
#include "executor/thread_group_driver.h"
#include "tests/comm_test_util.h"

namespace ctp {
namespace {

using namespace std::chrono_literals;
using testing_comm::run_block;

Tensor fp32(std::vector<float> values) {
  Tensor t(DataType::FP32, {static_cast<int64_t>(values.size())});
  std::memcpy(t.raw_data(), values.data(), values.size() * sizeof(float));
  return t;
}

Program init_all_program() {
  ProgramBuilder pb;
  pb.op("c_comm_init_all").attr("ring_id", int32_t{0}).attr("devices", std::vector<int32_t>{0, 1, 2, 3});
  return pb.build();
}

TEST(CommThreadGroup, CollectivesAcrossFourDeviceThreads) {
  DeviceThreads threads(4, CommOptions{5s, 20ms}, RunServices{});
  std::vector<Scope> scopes(4);
  Program init = init_all_program();
  ProgramBuilder pb;
  pb.op("c_allreduce_sum").in("X", "s").out("Out", "s");
  pb.op("c_allreduce_max").in("X", "m").out("Out", "m");
  pb.op("c_allreduce_prod").in("X", "p").out("Out", "p");
  pb.op("c_broadcast").in("X", "b").out("Out", "b").attr("root", int32_t{2});
  pb.op("c_allgather").in("X", "g").out("Out", "g_all").attr("nranks", int32_t{4});
  pb.op("c_allreduce_xsum").in("X", std::vector<std::string>{"x1", "x2"})
      .out("Out", std::vector<std::string>{"x1", "x2"}).attr("ring_id", int32_t{0});
  Program main = pb.build();
  threads.run([&](int r, RunServices& services) {
    run_block(init.global_block(), scopes[r], services);
    Scope& s = scopes[r];
    float f = static_cast<float>(r + 1);
    s.var("s") = fp32({f, 10 * f, 0.5f, f, f, f, f});  // 7 elements: uneven slices
    s.var("m") = fp32({f, -f});
    s.var("p") = fp32({f});
    s.var("b") = fp32({f, f, f});
    s.var("g") = fp32({f, -f});
    s.var("x1") = fp32({f});
    s.var("x2") = fp32({f, 1});
    run_block(main.global_block(), s, services);
  });
  for (int r = 0; r < 4; ++r) {
    Scope& s = scopes[r];
    const float* sum = s.get("s").data<float>();
    EXPECT_EQ(sum[0], 10);
    EXPECT_EQ(sum[1], 100);
    EXPECT_EQ(sum[2], 2);
    EXPECT_EQ(sum[6], 10);
    EXPECT_EQ(s.get("m").data<float>()[0], 4);
    EXPECT_EQ(s.get("m").data<float>()[1], -1);
    EXPECT_EQ(s.get("p").data<float>()[0], 24);
    EXPECT_EQ(s.get("b").data<float>()[1], 3);  // root 2 holds 3
    ASSERT_EQ(s.get("g_all").shape(), (std::vector<int64_t>{8}));
    for (int k = 0; k < 4; ++k) {
      EXPECT_EQ(s.get("g_all").data<float>()[2 * k], k + 1);
      EXPECT_EQ(s.get("g_all").data<float>()[2 * k + 1], -(k + 1));
    }
    EXPECT_EQ(s.get("x1").data<float>()[0], 10);
    EXPECT_EQ(s.get("x2").data<float>()[1], 4);
    EXPECT_EQ(threads.comms(r).get(0).backend(), "threads");
    EXPECT_EQ(threads.comms(r).get(0).rank(), r);
  }
  // The rings persist across run() calls: a second "step" works.
  threads.run([&](int r, RunServices& services) {
    scopes[r].var("s") = fp32({1});
    services.comms->get(0).all_reduce(scopes[r].get("s"), ReduceOp::Sum);
  });
  EXPECT_EQ(scopes[3].get("s").data<float>()[0], 4);
}

TEST(CommThreadGroup, InitAllWithoutThreadsIsARingOfOne) {
  CommunicatorManager comms;
  RunServices services;
  services.comms = &comms;
  Scope scope;
  ProgramBuilder pb;
  pb.op("c_comm_init_all").attr("ring_id", int32_t{3});
  pb.op("c_allreduce_sum").in("X", "v").out("Out", "v").attr("ring_id", int32_t{3});
  scope.var("v") = fp32({2.5f});
  run_block(pb.program().global_block(), scope, services);
  EXPECT_EQ(scope.get("v").data<float>()[0], 2.5f);
  EXPECT_EQ(comms.get(3).size(), 1);

  ProgramBuilder two;
  two.op("c_comm_init_all").attr("devices", std::vector<int32_t>{0, 1});
  try {
    run_block(two.program().global_block(), scope, services);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("lists 2 device(s) but this process runs 1"), std::string::npos)
        << e.what();
  }
}

TEST(CommThreadGroup, ThreadsThatDisagreeAllFailWithBothSidesNamed) {
  DeviceThreads threads(3, CommOptions{5s, 20ms}, RunServices{});
  Program init = init_all_program();
  init.global_block().ops().front().remove_attr("devices");
  std::vector<Scope> scopes(3);
  std::atomic<int> failures{0};
  std::string message;
  std::mutex mu;
  try {
    threads.run([&](int r, RunServices& services) {
      run_block(init.global_block(), scopes[r], services);
      Tensor t(DataType::FP32, {r == 2 ? 5 : 4});
      try {
        services.comms->get(0).all_reduce(t, ReduceOp::Sum);
      } catch (const Error& e) {
        ++failures;
        std::lock_guard<std::mutex> lock(mu);
        message = e.what();
        throw;
      }
    });
    FAIL() << "mismatched collectives succeeded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("device thread"), std::string::npos);
  }
  EXPECT_EQ(failures.load(), 3);
  EXPECT_NE(message.find("thread rank 0 called all_reduce(sum) FP32[4] but thread rank 2 called "
                         "all_reduce(sum) FP32[5]"), std::string::npos) << message;
}

TEST(CommThreadGroup, AFailingThreadEndsTheOthersPromptly) {
  DeviceThreads threads(4, CommOptions{30s, 20ms}, RunServices{});
  Program init = init_all_program();
  std::vector<Scope> scopes(4);
  auto start = std::chrono::steady_clock::now();
  try {
    threads.run([&](int r, RunServices& services) {
      run_block(init.global_block(), scopes[r], services);
      if (r == 1) throw Error("kernel 'mul' failed on purpose");
      Tensor t(DataType::FP32, {4});
      services.comms->get(0).all_reduce(t, ReduceOp::Sum);  // waits for thread 1
    });
    FAIL();
  } catch (const Error& e) {
    // The cause is reported, not the other threads' "aborted" echoes.
    EXPECT_EQ(std::string(e.what()), "device thread 1: kernel 'mul' failed on purpose");
  }
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 5.0);
}

TEST(CommThreadGroup, StalledThreadTimesOutNamingIt) {
  DeviceThreads threads(3, CommOptions{600ms, 20ms}, RunServices{});
  Program init = init_all_program();
  init.global_block().ops().front().remove_attr("devices");
  std::vector<Scope> scopes(3);
  try {
    threads.run([&](int r, RunServices& services) {
      run_block(init.global_block(), scopes[r], services);
      if (r == 2) {
        std::this_thread::sleep_for(1500ms);
        return;  // never joins the collective
      }
      Tensor t(DataType::FP32, {4});
      services.comms->get(0).all_reduce(t, ReduceOp::Sum);
    });
    FAIL();
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("timed out after 600 ms waiting for thread rank(s) 2"), std::string::npos) << msg;
    EXPECT_NE(msg.find("ring 0 (threads): all_reduce(sum) FP32[4]"), std::string::npos) << msg;
  }
}

TEST(CommThreadGroup, HalfPrecisionConversionsRoundTripAndRound) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    float f = float16::to_float(static_cast<uint16_t>(h));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(float16::to_float(float16::from_float(f))));
      continue;
    }
    ASSERT_EQ(float16::from_float(f), h) << "half 0x" << std::hex << h;
  }
  EXPECT_EQ(float16::to_float(float16::from_float(1.0f + 1.0f / 4096)), 1.0f);  // ties to even
  EXPECT_EQ(float16::to_float(float16::from_float(65520.0f)), INFINITY);
  EXPECT_EQ(float16::to_float(float16::from_float(5.9604645e-08f)), 5.9604645e-08f);  // smallest subnormal
  EXPECT_EQ(bfloat16::to_float(bfloat16::from_float(3.0f)), 3.0f);
  EXPECT_EQ(bfloat16::to_float(bfloat16::from_float(1.0f + 1.0f / 256)), 1.0f);  // ties to even

  uint16_t a[2] = {float16::from_float(1.5f), float16::from_float(-2.0f)};
  uint16_t b[2] = {float16::from_float(2.25f), float16::from_float(3.0f)};
  uint16_t out[2];
  reduce_elements(DataType::FP16, ReduceOp::Sum, out, a, b, 2);
  EXPECT_EQ(float16::to_float(out[0]), 3.75f);
  EXPECT_EQ(float16::to_float(out[1]), 1.0f);
  reduce_elements(DataType::FP16, ReduceOp::Min, out, a, b, 2);
  EXPECT_EQ(float16::to_float(out[1]), -2.0f);
  EXPECT_THROW(reduce_elements(DataType::BOOL, ReduceOp::Sum, out, a, b, 2), Error);
}

}  // namespace
}  // namespace ctp
