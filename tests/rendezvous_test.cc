// The unique-id exchange of c_gen_nccl_id and the rendezvous store, over
// 127.0.0.1 with short timeouts: delivery to every peer, a peer that comes
// up late (rank 0 retries), a peer that never comes up (the error names its
// endpoint within the timeout), a port in use, strangers on the port, and
// ranks of another job (refused at once), and the store's liveness
// tracking of a client that dies.
#include <gtest/gtest.h>
#include <signal.h>

#include <cstdio>
#include <future>
#include <thread>

#include "executor/runtime/communicator.h"
#include "executor/rendezvous/rendezvous.h"
#include "executor/rendezvous/rendezvous_store.h"
#include "tests/comm_test_util.h"

namespace ctp {
namespace {

using namespace std::chrono_literals;
using net::Endpoint;

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

Endpoint free_local_endpoint() { return Endpoint{"127.0.0.1", net::pick_free_port()}; }

TEST(Rendezvous, ParsesEndpoints) {
  EXPECT_EQ(net::parse_endpoint("127.0.0.1:6170"), (Endpoint{"127.0.0.1", 6170}));
  EXPECT_EQ(net::parse_endpoint("node-3.cluster:80"), (Endpoint{"node-3.cluster", 80}));
  EXPECT_EQ(net::parse_endpoint("[::1]:9000"), (Endpoint{"::1", 9000}));
  EXPECT_EQ(net::parse_endpoint("[::1]:9000").to_string(), "[::1]:9000");
  for (const char* bad : {"", "host", "host:", ":80", "host:0", "host:65536", "host:8x", "::1:80", "[::1]80"})
    EXPECT_THROW(net::parse_endpoint(bad), Error) << bad;
  try {
    net::parse_endpoint("10.0.0.1", "attribute 'endpoint'");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("attribute 'endpoint' '10.0.0.1'"), std::string::npos) << e.what();
  }
  auto list = net::parse_endpoint_list("a:1,b:2", "PADDLE_TRAINER_ENDPOINTS");
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[1], (Endpoint{"b", 2}));
  EXPECT_THROW(net::parse_endpoint_list("a:1,,b:2", "x"), Error);
}

TEST(Rendezvous, RankZeroDeliversTheIdToEveryPeer) {
  std::vector<Endpoint> peers = {free_local_endpoint(), free_local_endpoint(), free_local_endpoint()};
  IdExchangeOptions options{5s, 20ms};
  std::vector<std::future<std::string>> received;
  for (const auto& p : peers)
    received.push_back(std::async(std::launch::async, [p, options] { return receive_unique_id(p, options); }));
  std::string id = std::string("binary\0id\xff", 10);
  send_unique_id(peers, id, options);
  for (auto& r : received) EXPECT_EQ(r.get(), id);
}

TEST(Rendezvous, PeerThatComesUpLateIsRetried) {
  std::vector<Endpoint> peers = {free_local_endpoint()};
  IdExchangeOptions options{5s, 20ms};
  auto late = std::async(std::launch::async, [&] {
    std::this_thread::sleep_for(800ms);  // rank 0 has been knocking for a while
    return receive_unique_id(peers[0], options);
  });
  auto start = std::chrono::steady_clock::now();
  send_unique_id(peers, "the-id", options);
  EXPECT_GE(seconds_since(start), 0.7);
  EXPECT_EQ(late.get(), "the-id");
}

TEST(Rendezvous, PeerThatNeverComesUpIsNamedWithinTheTimeout) {
  Endpoint up = free_local_endpoint(), never = free_local_endpoint();
  IdExchangeOptions options{1500ms, 20ms};
  auto receiver = std::async(std::launch::async, [&] { return receive_unique_id(up, options); });
  auto start = std::chrono::steady_clock::now();
  try {
    send_unique_id({up, never}, "id", options);
    FAIL() << "the exchange succeeded without its peer";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find(never.to_string() + " never came up"), std::string::npos) << msg;
    EXPECT_NE(msg.find("1 of 2 endpoint(s) within 1.5 s"), std::string::npos) << msg;
    EXPECT_EQ(msg.find(up.to_string() + " never"), std::string::npos) << msg;
  }
  double elapsed = seconds_since(start);
  EXPECT_GE(elapsed, 1.4);
  EXPECT_LT(elapsed, 3.5);
  EXPECT_EQ(receiver.get(), "id");  // the live peer got it regardless
}

TEST(Rendezvous, ReceiverWithoutRankZeroTimesOutNamingItsEndpoint) {
  Endpoint self = free_local_endpoint();
  auto start = std::chrono::steady_clock::now();
  try {
    receive_unique_id(self, IdExchangeOptions{800ms, 20ms});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no unique id arrived at endpoint " + self.to_string()),
              std::string::npos) << e.what();
  }
  EXPECT_LT(seconds_since(start), 2.5);
}

// Probed ports come from below the kernel's ephemeral range, where no
// outgoing connection can take one before the worker binds it.
TEST(Rendezvous, FreePortsAreChosenBelowTheEphemeralRange) {
  int low = 0, high = 0;
  std::FILE* f = std::fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");
  if (!f) GTEST_SKIP() << "no /proc/sys/net/ipv4/ip_local_port_range";
  const bool read = std::fscanf(f, "%d %d", &low, &high) == 2;
  std::fclose(f);
  if (!read || low <= 2048) GTEST_SKIP() << "no room below the ephemeral range " << low;
  for (int i = 0; i < 20; ++i) {
    const int port = net::pick_free_port();
    EXPECT_GE(port, low / 2);
    EXPECT_LT(port, low);
  }
}

TEST(Rendezvous, PortInUseIsAClearError) {
  net::Socket taken = net::listen_on("", 0, "the test");
  Endpoint self{"127.0.0.1", net::local_port(taken)};
  try {
    receive_unique_id(self, IdExchangeOptions{1s, 20ms});
    FAIL();
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("cannot listen on " + self.to_string()), std::string::npos) << msg;
    EXPECT_NE(msg.find("in use"), std::string::npos) << msg;
    EXPECT_NE(msg.find(self.to_string()), std::string::npos) << msg;
  }
}

// 127.0.0.1:P is reachable at that address only: every 127/8 address is this
// machine's, so a listener on every interface would take 127.0.0.2:P too.
TEST(Rendezvous, ListenersBindTheEndpointsOwnAddress) {
  Endpoint self = free_local_endpoint();
  IdExchangeOptions options{5s, 20ms};
  auto receiver = std::async(std::launch::async, [&] { return receive_unique_id(self, options); });
  std::optional<net::Socket> probe;
  for (int i = 0; i < 100 && !probe; ++i) {
    probe = net::try_connect(self, net::deadline_after(1s), nullptr);
    if (!probe) std::this_thread::sleep_for(20ms);
  }
  ASSERT_TRUE(probe);  // a stranger to the receiver: dropped
  probe->close();
  EXPECT_FALSE(net::try_connect(Endpoint{"127.0.0.2", self.port}, net::deadline_after(1s), nullptr));
  send_unique_id({self}, "id", options);
  EXPECT_EQ(receiver.get(), "id");

  StoreServer store("127.0.0.1", 0, 5);
  EXPECT_TRUE(net::try_connect(Endpoint{"127.0.0.1", store.port()}, net::deadline_after(1s), nullptr));
  EXPECT_FALSE(net::try_connect(Endpoint{"127.0.0.2", store.port()}, net::deadline_after(1s), nullptr));

  // An endpoint that is not this machine's is a clear error, not a listener
  // on some other address.
  try {
    net::listen_on("192.0.2.1", 0, "the test");  // TEST-NET-1: never local
    FAIL();
  } catch (const net::NetError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot listen on 192.0.2.1:0 for the test: Cannot assign "
                                         "requested address (192.0.2.1 is not an address of this machine)"),
              std::string::npos)
        << e.what();
  }
}

TEST(Rendezvous, StrangersOnThePortDoNotBreakTheExchange) {
  Endpoint self = free_local_endpoint();
  IdExchangeOptions options{5s, 20ms};
  auto receiver = std::async(std::launch::async, [&] { return receive_unique_id(self, options); });
  // A stranger connects first, sends junk and hangs up; another sends nothing.
  std::optional<net::Socket> stranger;
  for (int i = 0; i < 100 && !stranger; ++i) {
    stranger = net::try_connect(self, net::deadline_after(1s), nullptr);
    if (!stranger) std::this_thread::sleep_for(20ms);
  }
  ASSERT_TRUE(stranger);
  net::send_frame(*stranger, "GET / HTTP/1.0", net::deadline_after(1s));
  stranger->close();
  send_unique_id({self}, "real-id", options);
  EXPECT_EQ(receiver.get(), "real-id");
}

// Two jobs on the same ports (issue 20 item 3): a receiver takes the id only
// from rank 0 of its own job. Rank 0 of the other job fails at once, naming
// both jobs, and the receiver keeps waiting for its own rank 0.
TEST(Rendezvous, AWorkerOfAnotherJobIsRefusedAndTheSenderFailsAtOnce) {
  Endpoint self = free_local_endpoint();
  IdExchangeOptions ours{5s, 20ms, "job-a"};
  auto receiver = std::async(std::launch::async, [&] { return receive_unique_id(self, ours); });
  IdExchangeOptions theirs{5s, 20ms, "job-b"};
  auto start = std::chrono::steady_clock::now();
  try {
    send_unique_id({self}, "job-b's id", theirs);
    FAIL() << "rank 0 of job-b delivered its id to a worker of job-a";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "c_gen_nccl_id: rank 0 could not deliver the unique id: " + self.to_string() +
                  " is held by a worker of another job (job 'job-a'; this is job 'job-b'): two "
                  "jobs on the same ports? give each its own --base-port");
  }
  EXPECT_LT(seconds_since(start), 2.0);
  send_unique_id({self}, "job-a's id", ours);
  EXPECT_EQ(receiver.get(), "job-a's id");
}

TEST(RendezvousStore, SetGetWaitAndTokens) {
  StoreServer server("127.0.0.1", 0, 42);
  StoreAddress address{Endpoint{"127.0.0.1", server.port()}, 42};
  StoreAddress parsed = StoreAddress::from_bytes(address.to_bytes());
  EXPECT_EQ(parsed.endpoint, address.endpoint);
  EXPECT_EQ(parsed.token, 42u);
  EXPECT_THROW(StoreAddress::from_bytes("garbage"), Error);

  StoreClient a(address, 0, "a", 2s), b(address, 1, "b", 2s);
  a.set("k", std::string("v\0w", 3));
  EXPECT_EQ(b.get("k"), std::string("v\0w", 3));
  EXPECT_FALSE(b.try_get("absent"));
  auto later = std::async(std::launch::async, [&] {
    std::this_thread::sleep_for(200ms);
    a.set("late", "x");
  });
  b.wait({"k", "late"}, 2s);
  later.get();
  try {
    b.wait({"k", "never"}, 300ms);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("waiting for 'never'"), std::string::npos) << e.what();
  }
  try {
    StoreClient intruder(StoreAddress{address.endpoint, 43}, 2, "intruder", 2s);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("wrong token"), std::string::npos) << e.what();
  }
}

TEST(RendezvousStore, ClientThatDiesIsReportedLostAndOneThatLeavesIsNot) {
  StoreServer server("127.0.0.1", 0, 7);
  StoreAddress address{Endpoint{"127.0.0.1", server.port()}, 7};
  {
    StoreClient leaves(address, 3, "polite", 2s);
  }  // says goodbye
  auto outcomes = testing_comm::run_ranks(1, [&](int) {
    StoreClient doomed(address, 5, "127.0.0.1:9999", 2s);
    doomed.set("alive", "1");
    ::raise(SIGKILL);
  });
  ASSERT_EQ(outcomes[0].code, SIGKILL);
  StoreClient observer(address, -1, "observer", 2s);
  std::vector<LostPeer> lost;
  for (int i = 0; i < 100 && lost.empty(); ++i) {
    lost = observer.lost_peers();
    if (lost.empty()) std::this_thread::sleep_for(10ms);
  }
  EXPECT_EQ(lost, (std::vector<LostPeer>{{5, "127.0.0.1:9999"}}));
  EXPECT_EQ(server.lost_peers(), lost);
}

TEST(RendezvousStore, WatchersHearOfLossesEvenAfterTheStoreIsGone) {
  auto server = std::make_unique<StoreServer>("127.0.0.1", 0, 11);
  StoreAddress address{Endpoint{"127.0.0.1", server->port()}, 11};
  StoreClient watcher(address, 0, "w", 2s);
  watcher.watch_losses();
  EXPECT_TRUE(watcher.seen_losses(0ms).empty());
  auto outcomes = testing_comm::run_ranks(1, [&](int) {
    StoreClient doomed(address, 4, "doomed", 2s);
    ::raise(SIGKILL);
  });
  ASSERT_EQ(outcomes[0].code, SIGKILL);
  // The store's host goes away right after recording the loss.
  for (int i = 0; i < 200 && server->lost_peers().empty(); ++i) std::this_thread::sleep_for(5ms);
  server.reset();
  auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(watcher.seen_losses(2s), (std::vector<LostPeer>{{4, "doomed"}}));
  EXPECT_LT(seconds_since(start), 1.5);  // the watch ended with the store; no waiting out the 2 s
  EXPECT_THROW(watcher.lost_peers(), net::NetError);
}

TEST(RendezvousStore, ClientOfAStoreThatDisappearsGetsAnError) {
  auto server = std::make_unique<StoreServer>("127.0.0.1", 0, 9);
  StoreAddress address{Endpoint{"127.0.0.1", server->port()}, 9};
  StoreClient client(address, 1, "c", 1s);
  server.reset();
  EXPECT_THROW(client.lost_peers(), net::NetError);
}

}  // namespace
}  // namespace ctp
