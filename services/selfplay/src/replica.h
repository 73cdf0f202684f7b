// Who this self-play process is, and the seed its games derive from. Every
// replica (pod) plays different games: the runner seed mixes a hash of the
// replica's name with a nonce drawn at each start, so two replicas, or one
// replica restarted, never repeat a game. A fixed seed (tests, reproductions)
// still mixes in the name, and repeats the games of an earlier run with it,
// but never their ids: those carry a nonce of their own, drawn at each start
// whatever the seed (GameRunnerOptions::id_nonce). Free functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace chessrl::selfplay_service {

// The host name (a pod's name in Kubernetes), or "selfplay" when it has none.
std::string default_replica_name();

// The runner seed for `replica`: the name's hash mixed with `nonce`.
std::uint64_t replica_seed(std::string_view replica, std::uint64_t nonce);

// replica_seed(replica, *fixed) with a fixed seed; otherwise with a fresh
// nonce from std::random_device (different at every start).
std::uint64_t choose_seed(std::string_view replica, std::optional<std::uint64_t> fixed);

// The seed of the runner that plays with the `generation`-th network of a run
// (0: the first): distinct per generation, so game ids (seed-index) stay
// unique when a new runner starts its indices again at 0.
std::uint64_t generation_seed(std::uint64_t seed, std::uint64_t generation);

}  // namespace chessrl::selfplay_service
