// The CPU backend: a Communicator over Gloo's TCP transport. Ranks meet
// through the rendezvous store that rank 0 hosts (its address is what
// c_gen_nccl_id's unique id carries), build a full mesh of TCP pairs, and
// then run Gloo's collectives with the communicator's timeout on every op.
//
// Once the mesh is built, every rank also watches every other directly
// (PeerLiveness: heartbeats and goodbyes on connections of their own), and
// the store is no longer used: rank 0 is watched like any other rank. When
// an op fails (a peer died, stalled past the timeout, or left) the error
// names this rank, the ring and the op, and what this rank saw of its peers:
// "peer rank 2 (127.0.0.1:6172) died", "peer rank 0 (...) stalled (no sign
// of life for 2 s ...)". The communicator is then broken: later ops fail at
// once with the same cause.
//
// Only compiled with Gloo (CTP_HAVE_GLOO); this header exposes no Gloo type.
#pragma once
#include <memory>
#include <string>

#include "executor/runtime/communicator.h"
#include "executor/rendezvous/rendezvous_store.h"

namespace ctp {

struct GlooRingSetup {
  StoreAddress store;  // from the unique id
  int rank = 0;
  int size = 1;
  int ring_id = 0;
  // Local address Gloo's transport binds to; empty: this worker's address
  // towards the store (127.0.0.1 when the store is on loopback).
  std::string bind_host;
  // Names this worker in its peers' errors (its endpoint); empty: host/pid.
  std::string label;
  CommOptions options;
};

// Connects the ring; throws ctp::Error naming the rank, the ring and the
// store when a peer does not arrive within the timeout.
std::unique_ptr<Communicator> connect_gloo_ring(const GlooRingSetup& setup);

}  // namespace ctp
