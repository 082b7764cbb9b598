#include "executor/rendezvous/rendezvous.h"

#include <algorithm>
#include <thread>

namespace ctp {
namespace {

// A connection that does not begin with these bytes is not rank 0 (a port
// scanner, a stale peer) and is dropped. Then comes the sender's job id: a
// receiver of another job answers kOtherJob and its own job id.
constexpr std::string_view kIdMagic = "ctp-unique-id/2";
constexpr std::size_t kMaxIdBytes = 64 * 1024;
constexpr char kAck = 'K';
constexpr char kOtherJob = 'J';

// The receiver belongs to another job: no retry can help.
class OtherJobError : public Error {
 public:
  using Error::Error;
};

std::string job_text(const std::string& job_id) {
  return job_id.empty() ? std::string("no job id") : "job '" + job_id + "'";
}

std::string join_endpoints(const std::vector<net::Endpoint>& eps) {
  std::string out;
  for (const auto& e : eps) out += (out.empty() ? "" : ", ") + e.to_string();
  return out;
}

// One delivery attempt; false (with the reason) when the peer is not up.
bool deliver(const net::Endpoint& peer, const std::string& id, const std::string& job_id,
             net::Deadline deadline, std::string* why) {
  // A single attempt may wait at most a second, so one slow peer does not
  // use up the time the others need.
  auto attempt_deadline = std::min(deadline, net::deadline_after(std::chrono::seconds(1)));
  auto socket = net::try_connect(peer, attempt_deadline, why);
  if (!socket) return false;
  try {
    net::send_frame(*socket, kIdMagic, deadline);
    net::send_frame(*socket, job_id, deadline);
    net::send_frame(*socket, id, deadline);
    char ack = 0;
    if (net::recv_all(*socket, &ack, 1, deadline) && ack == kOtherJob) {
      auto theirs = net::recv_frame(*socket, kMaxIdBytes, deadline);
      throw OtherJobError(peer.to_string() + " is held by a worker of another job (" +
                          job_text(theirs.value_or("")) + "; this is " + job_text(job_id) +
                          "): two jobs on the same ports? give each its own --base-port");
    }
    if (ack != kAck) {
      *why = "it closed the connection without acknowledging the id";
      return false;
    }
  } catch (const net::NetError& e) {
    *why = e.what();
    return false;
  }
  return true;
}

}  // namespace

void send_unique_id(const std::vector<net::Endpoint>& peers, const std::string& id,
                    const IdExchangeOptions& options) {
  net::Deadline deadline = net::deadline_after(options.timeout);
  std::vector<net::Endpoint> pending = peers;
  std::vector<std::string> reasons(pending.size());
  while (!pending.empty()) {
    std::vector<net::Endpoint> still;
    std::vector<std::string> still_reasons;
    for (std::size_t i = 0; i < pending.size(); ++i) {
      std::string why;
      bool delivered = false;
      try {
        delivered = deliver(pending[i], id, options.job_id, deadline, &why);
      } catch (const OtherJobError& e) {
        throw Error("c_gen_nccl_id: rank 0 could not deliver the unique id: " +
                    std::string(e.what()));
      }
      if (!delivered) {
        still.push_back(pending[i]);
        still_reasons.push_back(why);
      }
    }
    pending = std::move(still);
    reasons = std::move(still_reasons);
    if (pending.empty()) break;
    if (net::Clock::now() >= deadline) {
      std::string detail;
      for (std::size_t i = 0; i < pending.size(); ++i)
        detail += (i ? "; " : "") + pending[i].to_string() + ": " + reasons[i];
      throw Error("c_gen_nccl_id: rank 0 could not deliver the unique id to " +
                  std::to_string(pending.size()) + " of " + std::to_string(peers.size()) +
                  " endpoint(s) within " + net::duration_text(options.timeout) + ": " +
                  join_endpoints(pending) + " never came up (" + detail + ")");
    }
    std::this_thread::sleep_for(
        std::min<std::chrono::milliseconds>(options.retry_interval,
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - net::Clock::now()) +
                std::chrono::milliseconds(1)));
  }
}

std::string receive_unique_id(const net::Endpoint& self, const IdExchangeOptions& options) {
  net::Socket listener;
  try {
    listener = net::listen_on(self.host, self.port, "the unique id at endpoint " + self.to_string());
  } catch (const net::NetError& e) {
    throw Error(std::string("c_gen_nccl_id: ") + e.what());
  }
  net::Deadline deadline = net::deadline_after(options.timeout);
  for (;;) {
    auto conn = net::accept_until(listener, deadline);
    if (!conn)
      throw Error("c_gen_nccl_id: no unique id arrived at endpoint " + self.to_string() +
                  " within " + net::duration_text(options.timeout) +
                  " (is rank 0 running, and does it list this endpoint?)");
    try {
      // A stranger gets a short while to prove itself, then is dropped.
      auto hello_deadline = std::min(deadline, net::deadline_after(std::chrono::seconds(5)));
      auto magic = net::recv_frame(*conn, kIdMagic.size(), hello_deadline);
      if (!magic || *magic != kIdMagic) continue;
      auto job = net::recv_frame(*conn, kMaxIdBytes, hello_deadline);
      auto id = net::recv_frame(*conn, kMaxIdBytes, deadline);
      if (!job || !id) continue;
      if (*job != options.job_id) {  // rank 0 of another job: tell it, keep waiting for ours
        net::send_all(*conn, &kOtherJob, 1, hello_deadline);
        net::send_frame(*conn, options.job_id, hello_deadline);
        continue;
      }
      net::send_all(*conn, &kAck, 1, deadline);
      return *id;
    } catch (const net::NetError&) {
      continue;  // a broken or foreign connection: keep listening
    }
  }
}

}  // namespace ctp
