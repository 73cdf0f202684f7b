// Where a rank is: its rank, the world size and the rendezvous address, from
// torchrun's environment variables or the pod's hostname. No LibTorch.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "chessrl/core/result.h"

namespace chessrl::train {

struct DistributedConfig {
  int rank = 0;
  int world_size = 1;
  std::string master_addr = "127.0.0.1";
  // 0 (rank 0 only): the store binds a port the kernel picks, which rank 0
  // reports through on_listening and logs ("rendezvous: listening on port N");
  // the other ranks must be given that number.
  int master_port = 29500;
  // Rank 0: called once with the port its store listens on, before it waits
  // for the other ranks (a caller starting them in-process reads it here).
  std::function<void(int port)> on_listening;
  // When set, the rendezvous looks at it while it waits and fails at once
  // ("stopped") once it is true: a SIGTERM does not wait out the timeout.
  const std::atomic<bool>* stop = nullptr;
  // How long rendezvous waits for every rank before failing, naming the
  // ranks that never arrived.
  std::chrono::seconds rendezvous_timeout{300};
  // How long one collective may block (a dead peer) before the rank fails.
  std::chrono::seconds collective_timeout{600};
  // Network interface for Gloo (GLOO_SOCKET_IFNAME); empty: the one the
  // hostname resolves to (loopback when master_addr is loopback).
  std::string interface;
};

// The ordinal at the end of a hostname: "chess-rl-trainer-2" -> 2. Fails when
// the name does not end in "-<digits>".
Result<int> hostname_ordinal(std::string_view hostname);

// Fails when the master port is outside 0..65535, or 0 on a rank other than 0
// of several (only rank 0 can bind a port the kernel picks); the message names
// MASTER_PORT and --master-port.
Result<void> check_master_port(const DistributedConfig& config);

using GetEnv = std::function<std::optional<std::string>(const char* name)>;
// The process environment.
std::optional<std::string> process_env(const char* name);
// This machine's hostname.
std::string local_hostname();

// Fills `base` from RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT and
// GLOO_SOCKET_IFNAME where they are set. Without RANK, the rank is the
// hostname's ordinal when WORLD_SIZE > 1. Errors name the variable and value:
// not a number, rank outside [0, world size), port outside 0..65535, port 0
// (a port the kernel picks) on a rank other than 0, wherever the port came
// from (MASTER_PORT or `base`, that is --master-port).
Result<DistributedConfig> distributed_from_env(DistributedConfig base, const GetEnv& env,
                                               const std::string& hostname);

}  // namespace chessrl::train
