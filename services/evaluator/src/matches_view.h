// MatchesView: what GET /matches on the evaluator's metrics address serves,
// for people to watch (the game viewer, chessrl-web): the newest matches of
// results.jsonl and the PGN text of the newest gating match and the newest
// gauntlet, as JSON. It reads the state directory, so what it shows survives
// a restart; it reads again only when results.jsonl has changed (a line is
// appended after its match's PGN is written, so the PGN is complete). Paths
// are not served. Thread-safe.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>

namespace chessrl::evaluator_service {

class MatchesView {
 public:
  static constexpr std::size_t kMaxMatches = 100;
  static constexpr std::uintmax_t kMaxPgnBytes = 1 << 20;  // a larger file is not served

  explicit MatchesView(std::string state_dir) : state_dir_(std::move(state_dir)) {}

  // {"best_version":N,"matches":[newest first, results.jsonl objects without "pgn"],
  //  "gating":{"candidate","opponent_version","pgn"} or null,
  //  "gauntlet":{"candidate","pgn"} or null}
  std::string json() const;

 private:
  std::string build() const;
  std::string state_dir_;
  mutable std::mutex mutex_;
  mutable std::uintmax_t built_size_ = ~std::uintmax_t{0};
  mutable std::int64_t built_mtime_ = 0;
  mutable std::string cached_;
};

}  // namespace chessrl::evaluator_service
