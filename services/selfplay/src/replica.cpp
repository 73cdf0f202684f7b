#include "replica.h"

#include <unistd.h>

#include <climits>
#include <random>

#include "chessrl/mcts/random.h"

namespace chessrl::selfplay_service {

std::string default_replica_name() {
  char name[HOST_NAME_MAX + 1] = {};
  if (::gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') return "selfplay";
  return name;
}

std::uint64_t replica_seed(std::string_view replica, std::uint64_t nonce) {
  std::uint64_t hash = 0xcbf29ce484222325ull;  // FNV-1a
  for (const char c : replica) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001b3ull;
  }
  return mcts::mix64(mcts::mix64(hash) ^ nonce);
}

std::uint64_t choose_seed(std::string_view replica, std::optional<std::uint64_t> fixed) {
  if (fixed) return replica_seed(replica, *fixed);
  std::random_device device;
  const std::uint64_t nonce = (std::uint64_t{device()} << 32) ^ device();
  return replica_seed(replica, nonce);
}

std::uint64_t generation_seed(std::uint64_t seed, std::uint64_t generation) {
  return generation == 0 ? seed : mcts::mix64(seed ^ mcts::mix64(~generation));
}

}  // namespace chessrl::selfplay_service
