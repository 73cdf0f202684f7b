// Where a rank is: its rank, the world size and the rendezvous address, from
// torchrun's environment variables or the pod's hostname. No LibTorch.
#pragma once

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
  int master_port = 29500;
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

using GetEnv = std::function<std::optional<std::string>(const char* name)>;
// The process environment.
std::optional<std::string> process_env(const char* name);
// This machine's hostname.
std::string local_hostname();

// Fills `base` from RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT and
// GLOO_SOCKET_IFNAME where they are set. Without RANK, the rank is the
// hostname's ordinal when WORLD_SIZE > 1. Errors name the variable and value:
// not a number, rank outside [0, world size), port outside 1..65535.
Result<DistributedConfig> distributed_from_env(DistributedConfig base, const GetEnv& env,
                                               const std::string& hostname);

}  // namespace chessrl::train
