#include "process_group.h"

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#ifdef CHESSRL_HAVE_GLOO
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif
#ifdef CHESSRL_HAVE_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include <chrono>
#include <thread>

namespace chessrl::train {
namespace {

std::string rank_key(int rank) { return "chessrl/rank/" + std::to_string(rank); }

#ifdef CHESSRL_HAVE_GLOO
bool is_loopback(const std::string& addr) {
  return addr == "localhost" || addr.rfind("127.", 0) == 0 || addr == "::1";
}
#endif

}  // namespace

Result<Group> join_group(const DistributedConfig& config, bool cuda,
                         const std::function<void(const std::string&)>& log, int cuda_device) {
  const std::string where = config.master_addr + ":" + std::to_string(config.master_port);
  const auto timeout =
      std::chrono::duration_cast<std::chrono::milliseconds>(config.rendezvous_timeout);
  Group g;
  c10::intrusive_ptr<c10d::TCPStore> store;
  try {
    c10d::TCPStoreOptions o;
    o.port = static_cast<std::uint16_t>(config.master_port);
    o.isServer = config.rank == 0;
    o.numWorkers = config.world_size;
    o.waitWorkers = false;  // we wait ourselves, to name who is missing
    o.timeout = timeout;
    store = c10::make_intrusive<c10d::TCPStore>(config.master_addr, o);
  } catch (const std::exception& e) {
    return fail("rendezvous: rank " + std::to_string(config.rank) +
                (config.rank == 0
                     ? " cannot serve the store on port " + std::to_string(config.master_port)
                     : " cannot reach rank 0's store at " + where) +
                ": " + e.what());
  }
  g.store = store;
  std::vector<std::string> keys;
  for (int r = 0; r < config.world_size; ++r) keys.push_back(rank_key(r));
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  try {
    const std::string host = local_hostname();
    store->set(rank_key(config.rank), std::vector<std::uint8_t>(host.begin(), host.end()));
    log("rendezvous: rank " + std::to_string(config.rank) + " of " +
        std::to_string(config.world_size) + " at " + where + ", waiting for the others");
    auto last_note = std::chrono::steady_clock::now();
    while (!store->check(keys)) {
      const auto now = std::chrono::steady_clock::now();
      if (now >= deadline || now - last_note > std::chrono::seconds(10)) {
        std::string missing;
        int count = 0;
        for (int r = 0; r < config.world_size; ++r)
          if (!store->check({rank_key(r)})) {
            missing += (count++ ? ", " : "") + std::to_string(r);
          }
        if (now >= deadline)
          return fail("rendezvous at " + where + " timed out after " +
                      std::to_string(config.rendezvous_timeout.count()) + " s: rank" +
                      (count > 1 ? "s " : " ") + missing + " of " +
                      std::to_string(config.world_size) + " never joined");
        log("rendezvous: still waiting for rank" + std::string(count > 1 ? "s " : " ") + missing);
        last_note = now;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  } catch (const std::exception& e) {
    return fail("rendezvous at " + where + " failed: " + e.what());
  }

  auto prefix = c10::make_intrusive<c10d::PrefixStore>("chessrl/pg", store);
  const auto collective =
      std::chrono::duration_cast<std::chrono::milliseconds>(config.collective_timeout);
  std::string trying;  // the backend being connected, for the error
  try {
    if (cuda) {
#ifdef CHESSRL_HAVE_NCCL
      trying = "NCCL";
      auto opts = c10d::ProcessGroupNCCL::Options::create();
      opts->timeout = collective;
      g.pg =
          c10::make_intrusive<c10d::ProcessGroupNCCL>(prefix, config.rank, config.world_size, opts);
      g.backend = "nccl";
      g.device = torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(cuda_device));
#else
      (void)cuda_device;
      log("rendezvous: this build has no NCCL; gradients travel through Gloo");
#endif
    }
#ifdef CHESSRL_HAVE_GLOO
    if (!g.pg) {
      trying = "Gloo";
      auto opts = c10d::ProcessGroupGloo::Options::create();
      opts->timeout = collective;
      if (!config.interface.empty())
        opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(config.interface));
      else if (is_loopback(config.master_addr))
        opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
      else
        opts->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
      g.pg =
          c10::make_intrusive<c10d::ProcessGroupGloo>(prefix, config.rank, config.world_size, opts);
      g.backend = "gloo";
    }
#else
    if (!g.pg)
      return fail(std::string("training on several ranks ") +
                  (cuda ? "needs NCCL or Gloo, and this build has neither"
                        : "on the CPU needs Gloo, and this build has none") +
                  " (Gloo's headers were missing at build time; Debian: apt install libgloo-dev, "
                  "then rebuild)");
#endif
  } catch (const std::exception& e) {
    return fail("cannot connect the " + trying + " process group (rank " +
                std::to_string(config.rank) + " of " + std::to_string(config.world_size) +
                "): " + e.what());
  }
  return g;
}

Result<void> wait_work(const c10::intrusive_ptr<c10d::Work>& work, const char* what) {
  try {
    work->wait();
  } catch (const std::exception& e) {
    return fail(std::string(what) + " failed (a rank died or timed out?): " + e.what());
  }
  return {};
}

namespace {

// Runs `op` on `t`, or on a copy of it on the group's device when the backend
// cannot take it where it is (NCCL: CUDA tensors only), copying the result back.
template <class Op>
Result<void> on_group_device(const Group& g, torch::Tensor& t, const char* what, Op op) {
  try {
    const bool stage = g.device.is_cuda() && t.device() != g.device;
    std::vector<torch::Tensor> v{stage ? t.to(g.device) : t};
    if (auto r = wait_work(op(v), what); !r) return r;
    if (stage) t.copy_(v.front());
    return {};
  } catch (const std::exception& e) {
    return fail(std::string(what) + " failed: " + e.what());
  }
}

}  // namespace

Result<void> allreduce(const Group& g, torch::Tensor& t, c10d::ReduceOp op, const char* what) {
  return on_group_device(g, t, what, [&](std::vector<torch::Tensor>& v) {
    c10d::AllreduceOptions o;
    o.reduceOp = op;
    return g.pg->allreduce(v, o);
  });
}

Result<void> broadcast(const Group& g, torch::Tensor& t, int root, const char* what) {
  return on_group_device(g, t, what, [&](std::vector<torch::Tensor>& v) {
    c10d::BroadcastOptions o;
    o.rootRank = root;
    return g.pg->broadcast(v, o);
  });
}

}  // namespace chessrl::train
