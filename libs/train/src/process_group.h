// The c10d process group of a training run: TCPStore rendezvous, then Gloo
// (CPU) or NCCL (CUDA). Internal to libs/train; includes c10d.
#pragma once

#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/types.h>

#include <functional>
#include <string>
#include <vector>

#include "chessrl/core/result.h"
#include "chessrl/train/distributed.h"

namespace chessrl::train {

struct Group {
  c10::intrusive_ptr<c10d::Store> store;
  c10::intrusive_ptr<c10d::ProcessGroup> pg;
  std::string backend;  // "gloo" or "nccl"
};

// Rendezvous: rank 0 serves a TCPStore on master_port; every rank connects,
// announces itself, and waits until all world_size ranks have (the error
// names those that never came); then the collective backend connects.
// Precondition: world_size > 1.
Result<Group> join_group(const DistributedConfig& config, bool cuda,
                         const std::function<void(const std::string&)>& log);

// Blocking collectives that turn c10d's exceptions (a dead peer, a timeout)
// into Result failures naming the operation.
Result<void> wait_work(const c10::intrusive_ptr<c10d::Work>& work, const char* what);
Result<void> allreduce(c10d::ProcessGroup& pg, torch::Tensor& t, c10d::ReduceOp op,
                       const char* what);
Result<void> broadcast(c10d::ProcessGroup& pg, torch::Tensor& t, int root, const char* what);

}  // namespace chessrl::train
