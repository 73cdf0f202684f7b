#include "cuda/nccl_group.h"

#include <cstdlib>
#include <exception>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#include <torch/version.h>

namespace chessrl::train {
namespace {

bool env_set(const char* name) { return std::getenv(name) != nullptr; }

// shutdown() and abort() differ across LibTorch 2.x (an optional reason argument in
// some releases, none in others; absent before 2.2): called where they exist.
template <class Group>
bool end_group(Group& group, bool clean) {
  if (clean) {
    if constexpr (requires { group.shutdown(); }) {
      group.shutdown();
      return true;
    }
  } else {
    if constexpr (requires { group.abort(); }) {
      group.abort();
      return true;
    }
  }
  return false;
}

}  // namespace

c10::intrusive_ptr<Collectives> make_nccl_group(
    const c10::intrusive_ptr<c10d::Store>& store, int rank, int world_size,
    std::chrono::milliseconds timeout, const std::function<void(const std::string&)>& log) {
  // Read by ProcessGroupNCCL's constructor (NCCL_* are the names before LibTorch 2.2).
  if (env_set("TORCH_NCCL_BLOCKING_WAIT") || env_set("NCCL_BLOCKING_WAIT") ||
      env_set("TORCH_NCCL_ASYNC_ERROR_HANDLING") || env_set("NCCL_ASYNC_ERROR_HANDLING")) {
    log("NCCL: error handling as the environment sets it (TORCH_NCCL_BLOCKING_WAIT / "
        "TORCH_NCCL_ASYNC_ERROR_HANDLING)");
  } else {
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 2)
    ::setenv("TORCH_NCCL_BLOCKING_WAIT", "1", 0);
#else
    ::setenv("NCCL_BLOCKING_WAIT", "1", 0);
#endif
    log("NCCL: blocking wait (TORCH_NCCL_BLOCKING_WAIT=1): a failed or timed-out collective "
        "fails the step that waits for it, after at most " +
        std::to_string(timeout.count() / 1000) + " s");
  }
  auto opts = c10d::ProcessGroupNCCL::Options::create();
  opts->timeout = timeout;
  return c10::make_intrusive<c10d::ProcessGroupNCCL>(store, rank, world_size, opts);
}

void close_nccl_group(Collectives& pg, bool clean,
                      const std::function<void(const std::string&)>& log) {
  auto* nccl = dynamic_cast<c10d::ProcessGroupNCCL*>(&pg);
  if (!nccl) return;
  try {
    if (end_group(*nccl, clean))
      log(clean ? "NCCL: group shut down" : "NCCL: group aborted (a collective had failed)");
  } catch (const std::exception& e) {
    log(std::string("NCCL: ending the group failed: ") + e.what());
  }
}

}  // namespace chessrl::train
