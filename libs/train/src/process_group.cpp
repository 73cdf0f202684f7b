#include "process_group.h"

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#ifdef CHESSRL_HAVE_GLOO
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <thread>

#include "cuda/nccl_group.h"

namespace chessrl::train {
namespace {

// Every key of a rendezvous carries rank 0's generation, a nonce it draws at
// start: a rank restarted while rank 0 still serves the store of a group
// already formed never reads that group's keys (its ranks, Gloo's addresses).
constexpr char kGenerationKey[] = "chessrl/generation";
std::string rank_key(const std::string& gen, int rank) {
  return "chessrl/" + gen + "/rank/" + std::to_string(rank);
}
std::string formed_key(const std::string& gen) { return "chessrl/" + gen + "/formed"; }

std::string new_generation() {
  std::random_device rd;
  const auto now = std::chrono::system_clock::now().time_since_epoch().count();
  std::mt19937_64 g((std::uint64_t(rd()) << 32) ^ rd() ^ std::uint64_t(now));
  char buf[24];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(g()));
  return buf;
}

std::string text(const std::vector<std::uint8_t>& v) { return std::string(v.begin(), v.end()); }

#ifdef CHESSRL_HAVE_GLOO
bool is_loopback(const std::string& addr) {
  return addr == "localhost" || addr.rfind("127.", 0) == 0 || addr == "::1";
}
#endif

// How long one try to reach rank 0's store lasts before the loop looks at the
// stop flag and the deadline again (each failed try is one line of c10d's log).
constexpr std::chrono::milliseconds kSlice{5000};

bool stopping(const DistributedConfig& config) { return config.stop && config.stop->load(); }
std::string stopped_message(const DistributedConfig& config) {
  return "rendezvous: stopped (asked to) while rank " + std::to_string(config.rank) +
         " waited for the others";
}

}  // namespace

Result<Group> join_group(const DistributedConfig& config, bool cuda,
                         const std::function<void(const std::string&)>& log, int cuda_device) {
  if (auto ok = check_master_port(config); !ok) return fail("rendezvous: " + ok.error());
  std::string where = config.master_addr + ":" + std::to_string(config.master_port);
  const auto timeout =
      std::chrono::duration_cast<std::chrono::milliseconds>(config.rendezvous_timeout);
  Group g;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto connect = [&](std::chrono::milliseconds limit) {
    c10d::TCPStoreOptions o;
    o.port = static_cast<std::uint16_t>(config.master_port);
    o.isServer = config.rank == 0;
    o.numWorkers = config.world_size;
    o.waitWorkers = false;  // we wait ourselves, to name who is missing
    o.timeout = limit;
    return c10::make_intrusive<c10d::TCPStore>(config.master_addr, o);
  };
  c10::intrusive_ptr<c10d::TCPStore> store;
  std::string gen;
  if (config.rank == 0) {
    try {
      store = connect(timeout);
      gen = new_generation();
      store->set(kGenerationKey, std::vector<std::uint8_t>(gen.begin(), gen.end()));
    } catch (const std::exception& e) {
      return fail("rendezvous: rank 0 cannot serve the store on port " +
                  std::to_string(config.master_port) + ": " + e.what());
    }
    // With master_port 0 the kernel picked the port: the other ranks need it.
    const int port = store->getPort();
    where = config.master_addr + ":" + std::to_string(port);
    log("rendezvous: listening on port " + std::to_string(port));
    if (config.on_listening) config.on_listening(port);
  } else {
    // Rank 0's generation, unless its group already formed without us (we
    // restarted while it lives on): then wait for a new rank 0 and its store.
    bool noted = false;
    std::string last_error;
    for (;;) {
      if (stopping(config)) return fail(stopped_message(config));
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left <= std::chrono::milliseconds(0)) {
        if (!gen.empty())
          return fail("rendezvous at " + where + " timed out after " +
                      std::to_string(config.rendezvous_timeout.count()) +
                      " s: rank 0's group (generation " + gen +
                      ") already formed without this rank, and no new generation came (rank 0 "
                      "must restart too)");
        return fail("rendezvous: rank " + std::to_string(config.rank) +
                    " cannot reach rank 0's store at " + where + ": " + last_error);
      }
      try {
        // In slices, so that a stop request is seen within kSlice.
        if (!store) {
          store = connect(std::min(left, kSlice));
          store->setTimeout(timeout);
        }
        if (!store->check({kGenerationKey})) {
          std::this_thread::sleep_for(std::chrono::milliseconds(100));
          continue;
        }
        gen = text(store->get(kGenerationKey));
        if (!store->check({formed_key(gen)})) break;
        if (!noted)
          log("rendezvous: rank 0's group (generation " + gen +
              ") already formed without this rank; waiting for a new generation");
        noted = true;
        store.reset();  // a restarted rank 0 serves a new store
      } catch (const std::exception& e) {
        store.reset();
        last_error = e.what();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
  }
  g.store = store;
  std::vector<std::string> keys;
  for (int r = 0; r < config.world_size; ++r) keys.push_back(rank_key(gen, r));
  try {
    const std::string host = local_hostname();
    store->set(rank_key(gen, config.rank), std::vector<std::uint8_t>(host.begin(), host.end()));
    log("rendezvous: rank " + std::to_string(config.rank) + " of " +
        std::to_string(config.world_size) + " at " + where + ", waiting for the others");
    auto last_note = std::chrono::steady_clock::now();
    while (!store->check(keys)) {
      if (stopping(config)) return fail(stopped_message(config));
      const auto now = std::chrono::steady_clock::now();
      if (now >= deadline || now - last_note > std::chrono::seconds(10)) {
        std::string missing;
        int count = 0;
        for (int r = 0; r < config.world_size; ++r)
          if (!store->check({rank_key(gen, r)})) {
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
    if (config.rank == 0) store->set(formed_key(gen), std::vector<std::uint8_t>{1});
  } catch (const std::exception& e) {
    return fail("rendezvous at " + where + " failed: " + e.what());
  }

  auto prefix = c10::make_intrusive<c10d::PrefixStore>("chessrl/" + gen + "/pg", store);
  const auto collective =
      std::chrono::duration_cast<std::chrono::milliseconds>(config.collective_timeout);
  std::string trying;  // the backend being connected, for the error
  try {
    if (cuda) {
#ifdef CHESSRL_HAVE_NCCL
      trying = "NCCL";
      g.pg = make_nccl_group(prefix, config.rank, config.world_size, collective, log);
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

void leave_group(Group& g, bool clean, const std::function<void(const std::string&)>& log) {
#ifdef CHESSRL_HAVE_NCCL
  if (g.pg && g.backend == "nccl") close_nccl_group(*g.pg, clean, log);
#else
  (void)clean;
  (void)log;
#endif
  g.pg.reset();
  g.store.reset();
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
