// The NCCL process group: the one part of libs/train that needs CUDA's own
// headers (nccl.h). Internal to libs/train.
#pragma once

#include <chrono>
#include <functional>
#include <string>

#include "process_group.h"

namespace chessrl::train {

// A new NCCL group of rank `rank` of `world_size` meeting through `store`,
// whose collectives time out after `timeout`; throws what c10d throws.
// A failed or timed-out collective makes the waiting call throw (c10d's blocking
// wait), so the trainer's own error path runs: TORCH_NCCL_BLOCKING_WAIT=1 is set in
// the environment unless the user set it or TORCH_NCCL_ASYNC_ERROR_HANDLING (then
// theirs holds); `log` says which. LibTorch 2.x's default instead lets a watchdog
// thread end the process, before the error reaches the trainer.
// Defined in cuda/nccl_group.cpp, which is compiled only where CHESSRL_CUDA built
// the CUDA-only code (then CHESSRL_HAVE_NCCL is defined): call it only under that.
c10::intrusive_ptr<Collectives> make_nccl_group(const c10::intrusive_ptr<c10d::Store>& store,
                                                int rank, int world_size,
                                                std::chrono::milliseconds timeout,
                                                const std::function<void(const std::string&)>& log);

// Ends an NCCL group before it is released, as torch.distributed's
// destroy_process_group() does: `clean` (the run ended with every collective done)
// shuts its communicators down, else (a collective failed; a peer may be gone) aborts
// them, which does not wait for the peers. Does nothing to a group of another backend,
// or where this LibTorch has neither call. Never throws: failures go to `log`.
void close_nccl_group(Collectives& pg, bool clean,
                      const std::function<void(const std::string&)>& log);

}  // namespace chessrl::train
