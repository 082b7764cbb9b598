// Liveness that does not depend on one rank (issue 20 item 1): every rank of
// a Gloo ring watches every other directly (executor/rendezvous/
// peer_liveness.h), so a stalled or dead rank 0, which hosts the ring's
// rendezvous store, is named like any other rank, within the timeout plus a
// few seconds; a stalled rank is "stalled", and ranks that stop after a
// failure of their own are not blamed for it. Forked ranks over 127.0.0.1;
// a rank stalls by stopping itself (SIGSTOP), as a frozen process does.
#ifdef CTP_HAVE_GLOO
#include <gtest/gtest.h>
#include <signal.h>

#include "executor/rendezvous/peer_liveness.h"
#include "executor/runtime/communicator.h"
#include "tests/comm_test_util.h"

namespace ctp {
namespace {

using namespace std::chrono_literals;
using testing_comm::describe;
using testing_comm::local_endpoints;
using testing_comm::run_ranks;

// Every rank sets ring 0 up and all-reduces every 20 ms; rank `victim`
// sends itself `signal` before its fourth all-reduce (SIGSTOP: it stalls,
// and run_ranks' deadline kills it; SIGKILL: it dies).
std::vector<testing_comm::RankOutcome> run_with_victim(int n, int victim, int signal,
                                                       std::chrono::milliseconds timeout,
                                                       std::vector<std::string>& endpoints) {
  endpoints = local_endpoints(n);
  return run_ranks(
      n,
      [&](int rank) {
        testing_comm::as_rank(rank, endpoints, timeout, [&](Scope&, RunServices&,
                                                            CommunicatorManager& comms) {
          for (int step = 0; step < 1000; ++step) {
            if (rank == victim && step == 3) ::raise(signal);
            Tensor g(DataType::FP32, {1024});
            comms.get(0).all_reduce(g, ReduceOp::Sum);
            std::this_thread::sleep_for(20ms);
          }
        });
      },
      std::chrono::duration_cast<std::chrono::seconds>(timeout) + 4s);
}

void expect_survivors_name_the_stalled_rank(const std::vector<testing_comm::RankOutcome>& outcomes,
                                            int victim, const std::vector<std::string>& endpoints,
                                            double timeout_s) {
  EXPECT_FALSE(outcomes[static_cast<std::size_t>(victim)].exited) << describe(outcomes);
  for (const auto& o : outcomes) {
    if (o.rank == victim) continue;
    EXPECT_TRUE(o.exited && o.code == 1) << describe(outcomes);
    EXPECT_NE(o.message.find("rank " + std::to_string(o.rank) + " of " +
                             std::to_string(outcomes.size()) + ", ring 0 (gloo): all_reduce"),
              std::string::npos)
        << describe(outcomes);
    EXPECT_NE(o.message.find("peer rank " + std::to_string(victim) + " (" +
                             endpoints[static_cast<std::size_t>(victim)] +
                             ") stalled (no sign of life for "),
              std::string::npos)
        << describe(outcomes);
    // Nobody else is blamed: the survivors that stopped first said so.
    EXPECT_EQ(o.message.find(" died"), std::string::npos) << describe(outcomes);
    EXPECT_EQ(o.message.find("gone"), std::string::npos) << describe(outcomes);
    EXPECT_EQ(o.message.find("closed the communicator"), std::string::npos) << describe(outcomes);
    EXPECT_LT(o.seconds, timeout_s + 3.0) << describe(outcomes);
  }
}

// A stalled rank 0 used to be noticed after 3 to 4 times the timeout (every
// question to its frozen store waited the timeout) and was reported "gone
// (it died or exited)".
TEST(CommGlooLiveness, AStalledRankZeroIsNamedStalledWithinTheTimeout) {
  std::vector<std::string> endpoints;
  auto outcomes = run_with_victim(3, /*victim=*/0, SIGSTOP, 2s, endpoints);
  expect_survivors_name_the_stalled_rank(outcomes, 0, endpoints, 2.0);
}

// With rank 2 of 4 stalled, ranks 1 and 3 used to blame "rank 0, rank 3":
// the survivors that timed out first and exited.
TEST(CommGlooLiveness, EverySurvivorNamesAStalledRank) {
  std::vector<std::string> endpoints;
  auto outcomes = run_with_victim(4, /*victim=*/2, SIGSTOP, 2s, endpoints);
  expect_survivors_name_the_stalled_rank(outcomes, 2, endpoints, 2.0);
}

// A dead rank 0 is named as any other dead rank, without its store.
TEST(CommGlooLiveness, ADeadRankZeroIsNamedDead) {
  std::vector<std::string> endpoints;
  auto outcomes = run_with_victim(3, /*victim=*/0, SIGKILL, 4s, endpoints);
  EXPECT_EQ(outcomes[0].code, SIGKILL) << describe(outcomes);
  for (int r : {1, 2}) {
    EXPECT_TRUE(outcomes[r].exited && outcomes[r].code == 1) << describe(outcomes);
    EXPECT_NE(outcomes[r].message.find("peer rank 0 (" + endpoints[0] + ") died"), std::string::npos)
        << describe(outcomes);
    EXPECT_LT(outcomes[r].seconds, 4.0) << describe(outcomes);
  }
}

// The watcher on its own, in one process: heartbeats keep peers alive (and
// labelled), a goodbye says whether the peer left after a failure, and a
// stranger without the ring's token is no peer. (Stalled and dead peers need
// processes: the tests above.)
TEST(PeerLiveness, TellsLeavingAfterAFailureFromLeavingAndRefusesStrangers) {
  const uint64_t token = 42;
  auto make = [&](int rank) {
    return std::make_unique<PeerLiveness>(rank, 4, "r" + std::to_string(rank), "127.0.0.1", token,
                                          20ms, 200ms);
  };
  std::vector<std::unique_ptr<PeerLiveness>> ranks;
  for (int r = 0; r < 4; ++r) ranks.push_back(make(r));
  std::vector<std::string> addresses;
  for (auto& r : ranks) addresses.push_back(r->address());
  // A stranger with the wrong token is not a peer.
  auto stranger = net::try_connect(net::parse_endpoint(addresses[0]), net::deadline_after(1s), nullptr);
  ASSERT_TRUE(stranger);
  net::send_frame(*stranger, "ctp-liveness/1 0000000000000007 1 intruder", net::deadline_after(1s));
  std::vector<std::thread> connecting;
  for (int r = 0; r < 4; ++r)
    connecting.emplace_back([&, r] { ranks[static_cast<std::size_t>(r)]->connect(addresses, net::deadline_after(5s)); });
  for (auto& t : connecting) t.join();
  std::this_thread::sleep_for(300ms);
  for (const auto& p : ranks[0]->peers()) {
    EXPECT_EQ(p.state, PeerLiveness::State::kAlive) << p.rank;
    EXPECT_EQ(p.label, "r" + std::to_string(p.rank));
  }
  ranks[1]->mark_failed();
  ranks[1].reset();  // goodbye after a failure
  ranks[2].reset();  // goodbye
  ranks[0]->wait_for_departure(1s);
  std::this_thread::sleep_for(100ms);
  auto peers = ranks[0]->peers();
  ASSERT_EQ(peers.size(), 3u);
  EXPECT_EQ(peers[0].state, PeerLiveness::State::kLeftAfterFailure);
  EXPECT_EQ(peers[1].state, PeerLiveness::State::kLeft);
  EXPECT_EQ(peers[2].state, PeerLiveness::State::kAlive);
}

}  // namespace
}  // namespace ctp
#endif
