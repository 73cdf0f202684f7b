// The NCCL process group: the one part of libs/train that needs CUDA's own
// headers (nccl.h). Internal to libs/train.
#pragma once

#include <chrono>

#include "process_group.h"

namespace chessrl::train {

// A new NCCL group of rank `rank` of `world_size` meeting through `store`,
// whose collectives time out after `timeout`; throws what c10d throws.
// Defined in cuda/nccl_group.cpp, which is compiled only where CHESSRL_CUDA built
// the CUDA-only code (then CHESSRL_HAVE_NCCL is defined): call it only under that.
c10::intrusive_ptr<Collectives> make_nccl_group(const c10::intrusive_ptr<c10d::Store>& store,
                                                int rank, int world_size,
                                                std::chrono::milliseconds timeout);

}  // namespace chessrl::train
