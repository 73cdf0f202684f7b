#include "chessrl/train/distributed.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <climits>
#include <cstdlib>

namespace chessrl::train {
namespace {

Result<long long> parse_int(std::string_view name, std::string_view text) {
  long long v = 0;
  const char* end = text.data() + text.size();
  auto [p, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ec != std::errc() || p != end)
    return fail(std::string(name) + "='" + std::string(text) + "' is not an integer");
  return v;
}

constexpr long long kMaxWorld = 65536;

// PET_NNODES: a node count, or torchrun's elastic MIN:MAX, which is a fixed
// size only when MIN equals MAX.
Result<int> parse_nnodes(const std::string& text) {
  const auto colon = text.find(':');
  std::string count = text;
  if (colon != std::string::npos) {
    auto lo = parse_int("PET_NNODES", std::string_view(text).substr(0, colon));
    auto hi = parse_int("PET_NNODES", std::string_view(text).substr(colon + 1));
    if (!lo || !hi) return fail("PET_NNODES='" + text + "' is neither a node count nor MIN:MAX");
    if (*lo != *hi)
      return fail("PET_NNODES=" + text +
                  " is an elastic range of node counts: chessrl-trainer needs a fixed world "
                  "size (give the job a fixed number of nodes: no elasticPolicy, or "
                  "minReplicas equal to maxReplicas)");
    count = text.substr(0, colon);
  }
  auto v = parse_int("PET_NNODES", count);
  if (!v) return fail(v.error());
  if (*v < 1 || *v > kMaxWorld) return fail("PET_NNODES=" + text + " is outside 1..65536");
  return int(*v);
}

}  // namespace

Result<int> hostname_ordinal(std::string_view hostname) {
  const auto dash = hostname.rfind('-');
  if (dash == std::string_view::npos || dash + 1 == hostname.size())
    return fail("hostname '" + std::string(hostname) +
                "' does not end in -<ordinal> (set RANK instead)");
  auto v = parse_int("hostname ordinal", hostname.substr(dash + 1));
  if (!v || *v < 0 || *v > INT_MAX)
    return fail("hostname '" + std::string(hostname) +
                "' does not end in -<ordinal> (set RANK instead)");
  return int(*v);
}

Result<void> check_master_port(const DistributedConfig& config) {
  if (config.master_port < 0 || config.master_port > 65535)
    return fail("master port " + std::to_string(config.master_port) + " is outside 0..65535");
  if (config.master_port == 0 && config.rank != 0 && config.world_size > 1)
    return fail("master port 0 (a port the kernel picks) is for rank 0 only; rank " +
                std::to_string(config.rank) +
                " must be given the port rank 0 listens on (it logs 'rendezvous: listening on "
                "port N'), in MASTER_PORT or --master-port");
  return {};
}

std::optional<std::string> process_env(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr) return std::nullopt;
  return std::string(v);
}

std::string local_hostname() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "localhost";
  return buf;
}

Result<DistributedConfig> distributed_from_env(DistributedConfig base, const GetEnv& env,
                                               const std::string& hostname) {
  const auto rank_env = env("RANK");
  const auto world_env = env("WORLD_SIZE");
  const auto local_env = env("LOCAL_RANK");

  // The node's view (PET_*, torchrun's names for its own flags): what a
  // Kubeflow TrainJob sets, and a PyTorchJob beside RANK and WORLD_SIZE.
  const auto nnodes_env = env("PET_NNODES");
  std::optional<int> nnodes;
  if (nnodes_env) {
    auto n = parse_nnodes(*nnodes_env);
    if (!n) return fail(n.error());
    nnodes = *n;
  }
  const auto nproc_env = env("PET_NPROC_PER_NODE");
  std::optional<int> nproc;  // empty for auto, cpu, gpu: a count only torchrun resolves
  if (nproc_env && *nproc_env != "auto" && *nproc_env != "cpu" && *nproc_env != "gpu") {
    auto v = parse_int("PET_NPROC_PER_NODE", *nproc_env);
    if (!v)
      return fail("PET_NPROC_PER_NODE='" + *nproc_env + "' is not an integer, auto, cpu or gpu");
    if (*v < 1 || *v > kMaxWorld)
      return fail("PET_NPROC_PER_NODE=" + *nproc_env + " is outside 1..65536");
    nproc = int(*v);
  }
  // Several processes per pod need each its own RANK and LOCAL_RANK, which
  // only a launcher that starts them gives; the operator's RANK is the pod's.
  if (nproc_env && nproc != 1) {
    const std::string what = "PET_NPROC_PER_NODE=" + *nproc_env + " (" +
                             (nproc ? std::to_string(*nproc) + " processes per node"
                                    : std::string("as many processes per node as it has devices")) +
                             ")";
    const std::string fix =
        "chessrl-trainer runs one process per pod: set the processes per node to 1 (TrainJob "
        "spec.trainer.numProcPerNode: 1, PyTorchJob spec.nprocPerNode: \"1\")";
    if (!rank_env)
      return fail(what +
                  " and RANK is not set: several processes in one pod need a launcher "
                  "that starts each with its own RANK, WORLD_SIZE and LOCAL_RANK (as "
                  "torchrun does); " +
                  fix);
    if (nproc && !local_env)
      return fail(what + " with RANK=" + *rank_env +
                  " but no LOCAL_RANK: this RANK is the pod's (an operator sets one per pod), "
                  "and no launcher started this process as one of the pod's " +
                  std::to_string(*nproc) + "; " + fix);
  }

  if (local_env) {
    auto v = parse_int("LOCAL_RANK", *local_env);
    if (!v) return fail(v.error());
    if (*v < 0 || *v >= kMaxWorld) return fail("LOCAL_RANK=" + *local_env + " is outside 0..65535");
    if (auto lws = env("LOCAL_WORLD_SIZE")) {
      auto n = parse_int("LOCAL_WORLD_SIZE", *lws);
      if (!n) return fail(n.error());
      if (*v >= *n)
        return fail("LOCAL_RANK=" + *local_env + " is outside [0, " + *lws +
                    ") (LOCAL_WORLD_SIZE=" + *lws + ")");
    } else if (nproc && *v >= *nproc) {
      return fail("LOCAL_RANK=" + *local_env + " is outside [0, " + *nproc_env +
                  ") (PET_NPROC_PER_NODE=" + *nproc_env + ")");
    }
    base.local_rank = int(*v);
  }

  // World size: WORLD_SIZE, else the nodes times the processes per node.
  std::optional<long long> node_world;
  std::string node_world_from;
  if (nnodes && (nproc || !nproc_env)) {
    node_world = static_cast<long long>(*nnodes) * (nproc ? *nproc : 1);
    node_world_from = "PET_NNODES=" + *nnodes_env;
    if (nproc_env) node_world_from += " x PET_NPROC_PER_NODE=" + *nproc_env;
  }
  std::string world_from = "neither WORLD_SIZE nor PET_NNODES is set";
  if (world_env) {
    auto v = parse_int("WORLD_SIZE", *world_env);
    if (!v) return fail(v.error());
    if (*v < 1 || *v > kMaxWorld) return fail("WORLD_SIZE=" + *world_env + " is outside 1..65536");
    // Both describe one job, so a difference means one of them is stale (a
    // pod template edited by hand, a process count torchrun was not given).
    // Neither can be trusted over the other, and a group of the wrong size
    // only shows as a rendezvous timeout minutes later: refuse now.
    if (node_world && *node_world != *v)
      return fail("WORLD_SIZE=" + *world_env + " contradicts " + node_world_from + " = " +
                  std::to_string(*node_world) +
                  ": the job's per-process and per-node sizes disagree; make them agree (the "
                  "job's nodes and processes per node, or the WORLD_SIZE given)");
    base.world_size = int(*v);
    world_from = "WORLD_SIZE=" + *world_env;
  } else if (node_world) {
    if (*node_world > kMaxWorld)
      return fail(node_world_from + " = " + std::to_string(*node_world) + " ranks, above 65536");
    base.world_size = int(*node_world);
    world_from = node_world_from;
  } else if (nnodes) {
    return fail("PET_NNODES=" + *nnodes_env + " with PET_NPROC_PER_NODE=" + *nproc_env +
                " gives no world size (the processes per node are torchrun's to count), and "
                "WORLD_SIZE is not set");
  }

  // Rank: RANK, else PET_NODE_RANK (one process per node: several were
  // refused above), else the hostname's ordinal. RANK wins without a check
  // against PET_NODE_RANK: torchrun's c10d rendezvous numbers the nodes in
  // the order they arrive, so a process's RANK need not follow the node's.
  std::optional<long long> node_rank;
  const auto node_rank_env = env("PET_NODE_RANK");
  if (node_rank_env) {
    auto v = parse_int("PET_NODE_RANK", *node_rank_env);
    if (!v) return fail(v.error());
    node_rank = *v;
  }
  std::string rank_from = "the default";
  if (rank_env) {
    auto v = parse_int("RANK", *rank_env);
    if (!v) return fail(v.error());
    base.rank = int(std::clamp<long long>(*v, INT_MIN, INT_MAX));
    rank_from = "RANK=" + *rank_env;
  } else if (node_rank) {
    base.rank = int(std::clamp<long long>(*node_rank, INT_MIN, INT_MAX));
    rank_from = "PET_NODE_RANK=" + *node_rank_env;
  } else if (base.world_size > 1) {
    auto ordinal = hostname_ordinal(hostname);
    if (!ordinal) return fail("RANK is not set (nor PET_NODE_RANK) and " + ordinal.error());
    base.rank = *ordinal;
    rank_from = "the ordinal of hostname '" + hostname + "'";
  }
  if (base.rank < 0 || base.rank >= base.world_size)
    return fail(rank_from + ": rank " + std::to_string(base.rank) + " is outside [0, " +
                std::to_string(base.world_size) + ") (world size from " + world_from + ")");

  // torchrun's static rendezvous has its agent on node 0 serve the store at
  // MASTER_ADDR:MASTER_PORT; rank 0 here serves its own there, so the two
  // would fight for the port (a world of one serves none). Say so now rather
  // than fail at the bind.
  if (auto a = env("TORCHELASTIC_USE_AGENT_STORE"); a && *a == "True" && base.world_size > 1)
    return fail(
        "TORCHELASTIC_USE_AGENT_STORE=True: a torchrun agent serves the rendezvous store "
        "at MASTER_ADDR:MASTER_PORT, where chessrl-trainer's rank 0 serves its own; start "
        "chessrl-trainer without torchrun, one process per pod (it reads PET_NNODES, "
        "PET_NODE_RANK, PET_MASTER_ADDR and PET_MASTER_PORT itself)");

  // The rendezvous address: MASTER_*, else PET_MASTER_*, else the flags. No
  // check between the two: torchrun's c10d rendezvous may hand its processes
  // a store on another host or port than the node's PET_MASTER_*.
  std::string addr_from = "--master-addr";
  for (const char* name : {"MASTER_ADDR", "PET_MASTER_ADDR"}) {
    auto a = env(name);
    if (!a) continue;
    if (a->empty()) return fail(std::string(name) + " is empty");
    if (addr_from != "--master-addr") continue;  // MASTER_ADDR was set
    base.master_addr = *a;
    addr_from = name;
  }
  std::string port_from = "--master-port " + std::to_string(base.master_port);
  std::string port_name = "--master-port";
  for (const char* name : {"MASTER_PORT", "PET_MASTER_PORT"}) {
    auto p = env(name);
    if (!p) continue;
    auto v = parse_int(name, *p);
    if (!v) return fail(v.error());
    if (*v < 0 || *v > 65535) return fail(std::string(name) + "=" + *p + " is outside 0..65535");
    if (port_name != "--master-port") continue;  // MASTER_PORT was set
    base.master_port = int(*v);
    port_from = std::string(name) + "=" + *p;
    port_name = name;
  }
  if (auto ok = check_master_port(base); !ok) return fail(port_from + ": " + ok.error());
  if (auto i = env("GLOO_SOCKET_IFNAME")) base.interface = *i;

  std::string origin = "rank " + std::to_string(base.rank) + " (" + rank_from + ") of " +
                       std::to_string(base.world_size) + " (" + world_from + ")";
  if (base.world_size > 1)
    origin += "; rendezvous at " + base.master_addr + ":" + std::to_string(base.master_port) +
              " (" + addr_from + ", " + port_name + ")";
  else
    origin += "; no rendezvous";
  if (local_env) origin += "; local rank " + std::to_string(base.local_rank) + " (LOCAL_RANK)";
  base.origin = std::move(origin);
  return base;
}

}  // namespace chessrl::train
