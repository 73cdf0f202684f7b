#include "cuda/nccl_group.h"

#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>

namespace chessrl::train {

c10::intrusive_ptr<Collectives> make_nccl_group(const c10::intrusive_ptr<c10d::Store>& store,
                                                int rank, int world_size,
                                                std::chrono::milliseconds timeout) {
  auto opts = c10d::ProcessGroupNCCL::Options::create();
  opts->timeout = timeout;
  return c10::make_intrusive<c10d::ProcessGroupNCCL>(store, rank, world_size, opts);
}

}  // namespace chessrl::train
