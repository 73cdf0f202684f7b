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
  if (auto w = env("WORLD_SIZE")) {
    auto v = parse_int("WORLD_SIZE", *w);
    if (!v) return fail(v.error());
    if (*v < 1 || *v > 65536) return fail("WORLD_SIZE=" + *w + " is outside 1..65536");
    base.world_size = int(*v);
  }
  std::string rank_from = "rank";
  if (auto r = env("RANK")) {
    auto v = parse_int("RANK", *r);
    if (!v) return fail(v.error());
    base.rank = int(std::clamp<long long>(*v, INT_MIN, INT_MAX));
    rank_from = "RANK=" + *r + ":";
  } else if (base.world_size > 1) {
    auto ordinal = hostname_ordinal(hostname);
    if (!ordinal) return fail("RANK is not set and " + ordinal.error());
    base.rank = *ordinal;
    rank_from = "rank " + std::to_string(base.rank) + " (the ordinal of hostname '" + hostname + "'):";
  }
  if (base.rank < 0 || base.rank >= base.world_size)
    return fail(rank_from + " rank " + std::to_string(base.rank) + " is outside [0, " +
                std::to_string(base.world_size) + ") (WORLD_SIZE=" +
                std::to_string(base.world_size) + ")");
  if (auto a = env("MASTER_ADDR")) {
    if (a->empty()) return fail("MASTER_ADDR is empty");
    base.master_addr = *a;
  }
  std::string port_from = "--master-port " + std::to_string(base.master_port);
  if (auto p = env("MASTER_PORT")) {
    auto v = parse_int("MASTER_PORT", *p);
    if (!v) return fail(v.error());
    if (*v < 0 || *v > 65535) return fail("MASTER_PORT=" + *p + " is outside 0..65535");
    base.master_port = int(*v);
    port_from = "MASTER_PORT=" + *p;
  }
  if (auto ok = check_master_port(base); !ok) return fail(port_from + ": " + ok.error());
  if (auto i = env("GLOO_SOCKET_IFNAME")) base.interface = *i;
  return base;
}

}  // namespace chessrl::train
