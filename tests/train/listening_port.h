// Two ranks of a rendezvous in one process without a port picked in advance:
// rank 0 binds a port the kernel picks (master_port 0) and reports it through
// DistributedConfig::on_listening while join_group waits for the others; the
// other ranks are started with that port once it is known.
#pragma once

#include <chrono>
#include <future>

#include "chessrl/train/distributed.h"

namespace chessrl::train {

class ListeningPort {
 public:
  // `d` for rank 0: master_port 0, reporting the port here.
  DistributedConfig rank0(DistributedConfig d) {
    d.rank = 0;
    d.master_port = 0;
    d.on_listening = [this](int port) { promise_.set_value(port); };
    return d;
  }
  // The port rank 0 listens on; 0 when it has not said within `timeout` (a
  // rank given port 0 is refused, so the test fails rather than hangs).
  int get(std::chrono::seconds timeout = std::chrono::seconds(60)) const {
    if (future_.wait_for(timeout) != std::future_status::ready) return 0;
    return future_.get();
  }

 private:
  std::promise<int> promise_;
  std::shared_future<int> future_ = promise_.get_future().share();
};

}  // namespace chessrl::train
