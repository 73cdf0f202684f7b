// The c10d process group of a training run: TCPStore rendezvous, then Gloo
// (CPU) or NCCL (CUDA). Internal to libs/train; includes c10d.
#pragma once

#include <torch/types.h>
#include <torch/version.h>

// LibTorch 2.x split c10d: Gloo and NCCL are Backends (what Python's
// ProcessGroup dispatches to); in 1.x they are ProcessGroups themselves.
#if TORCH_VERSION_MAJOR >= 2
#include <torch/csrc/distributed/c10d/Backend.hpp>
#else
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#endif
#include <functional>
#include <string>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <vector>

#include "chessrl/core/result.h"
#include "chessrl/train/distributed.h"

namespace chessrl::train {

// The collective interface the trainer uses: allreduce, broadcast, getSize.
#if TORCH_VERSION_MAJOR >= 2
using Collectives = c10d::Backend;
#else
using Collectives = c10d::ProcessGroup;
#endif

struct Group {
  c10::intrusive_ptr<c10d::Store> store;
  c10::intrusive_ptr<Collectives> pg;
  std::string backend;                // "gloo" or "nccl"
  torch::Device device{torch::kCPU};  // where collectives run: cuda:N for NCCL, else CPU
};

// Rendezvous: rank 0 serves a TCPStore on master_port (0: a port the kernel
// picks), logs "rendezvous: listening on port N" and calls
// config.on_listening(N) before it waits; every rank connects, announces itself, and waits until all world_size ranks have (the error
// names those that never came); then the collective backend connects: NCCL on
// GPU `cuda_device` when `cuda` and the build has NCCL, else Gloo.
// Precondition: world_size > 1.
Result<Group> join_group(const DistributedConfig& config, bool cuda,
                         const std::function<void(const std::string&)>& log, int cuda_device = 0);

// Ends the group before it is released (torch.distributed's destroy_process_group):
// an NCCL group is shut down when `clean` (every collective of the run completed) and
// aborted otherwise (one failed: a peer may be gone, and nothing waits for it); a Gloo
// group is only released. Leaves g without a group or store. Never throws.
void leave_group(Group& g, bool clean, const std::function<void(const std::string&)>& log);

// Blocking collectives that turn c10d's exceptions (a dead peer, a timeout)
// into Result failures naming the operation. `t` may live anywhere: where the
// group's backend needs another device (NCCL takes CUDA tensors only), it is
// staged there and the result copied back.
Result<void> wait_work(const c10::intrusive_ptr<c10d::Work>& work, const char* what);
Result<void> allreduce(const Group& g, torch::Tensor& t, c10d::ReduceOp op, const char* what);
Result<void> broadcast(const Group& g, torch::Tensor& t, int root, const char* what);

}  // namespace chessrl::train
