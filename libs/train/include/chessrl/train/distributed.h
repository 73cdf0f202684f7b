// Where a rank is: its rank, the world size and the rendezvous address, from
// the environment a launcher or an operator gives it (torchrun, a Kubeflow
// PyTorchJob or TrainJob) or the pod's hostname. No LibTorch.
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
  // This process's index among the processes of its machine (LOCAL_RANK):
  // the CUDA device it trains on.
  int local_rank = 0;
  // Where rank, world size and rendezvous address came from, one line for
  // the start-up log (distributed_from_env fills it).
  std::string origin;
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

// Fills `base` from the environment, each value from the first source that
// has it (docs/training.md, "How ranks find each other"):
//   rank         RANK, else PET_NODE_RANK, else the hostname's ordinal (when
//                the world size is above 1), else base.rank
//   world size   WORLD_SIZE, else PET_NNODES x PET_NPROC_PER_NODE, else base
//   master       MASTER_ADDR / MASTER_PORT, else PET_MASTER_ADDR /
//                PET_MASTER_PORT, else base (--master-addr, --master-port)
//   local rank   LOCAL_RANK, else 0
//   interface    GLOO_SOCKET_IFNAME
// RANK, WORLD_SIZE, MASTER_* are per process (torchrun's, or the PyTorchJob
// operator's per pod); PET_* describe the node and are what a TrainJob sets.
// Refused, with the variable and its value in the message: a value that is not
// an integer; a rank outside [0, world size); a port outside 0..65535, or 0 on
// a rank other than 0 (wherever it came from: MASTER_PORT, PET_MASTER_PORT or
// `base`, that is --master-port); PET_NNODES as an elastic range MIN:MAX with
// MIN != MAX; PET_NPROC_PER_NODE other than 1 without RANK, or above 1 without
// LOCAL_RANK (several processes per pod, which this process was not started
// as); a WORLD_SIZE other than PET_NNODES x PET_NPROC_PER_NODE; LOCAL_RANK
// negative or not below LOCAL_WORLD_SIZE (or PET_NPROC_PER_NODE);
// TORCHELASTIC_USE_AGENT_STORE=True with a world above 1 (a torchrun agent
// serving the store that rank 0 serves itself).
Result<DistributedConfig> distributed_from_env(DistributedConfig base, const GetEnv& env,
                                               const std::string& hostname);

}  // namespace chessrl::train
