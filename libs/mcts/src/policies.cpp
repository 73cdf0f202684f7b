#include "chessrl/mcts/policies.h"

#include <cmath>
#include <string>
#include <vector>

namespace chessrl::mcts {

Result<void> TemperatureSchedule::validate() const {
  if (!(initial >= 0 && initial <= 100)) return fail("temperature must be in [0, 100]");
  if (!(final >= 0 && final <= 100)) return fail("final temperature must be in [0, 100]");
  if (plies < 0) return fail("temperature plies must be >= 0");
  return {};
}

chess::Move choose_move(const Search& search, float temperature, Rng& rng) {
  const chess::Move best = search.best_move();
  if (temperature <= 0 || best == chess::Move::none()) return best;
  const std::vector<ChildInfo> children = search.children();
  bool any_not_lost = false;
  double max_visits = 0;
  for (const ChildInfo& c : children) {
    if (c.proof == Proof::kWin) return best;  // best_move puts forced wins first
    if (c.proof != Proof::kLoss && c.visits > 0) any_not_lost = true;
    max_visits = std::max(max_visits, double(c.visits));
  }
  if (max_visits == 0) return best;
  // Weights relative to the most visited move, so large powers stay finite.
  std::vector<double> weights(children.size(), 0.0);
  double sum = 0;
  for (std::size_t i = 0; i < children.size(); ++i) {
    const ChildInfo& c = children[i];
    if (c.visits == 0 || (any_not_lost && c.proof == Proof::kLoss)) continue;
    weights[i] = std::pow(double(c.visits) / max_visits, 1.0 / double(temperature));
    sum += weights[i];
  }
  if (!(sum > 0)) return best;
  double x = rng.uniform() * sum;
  for (std::size_t i = 0; i < children.size(); ++i) {
    if (weights[i] <= 0) continue;
    x -= weights[i];
    if (x < 0) return children[i].move;
  }
  for (std::size_t i = children.size(); i-- > 0;)
    if (weights[i] > 0) return children[i].move;
  return best;
}

PlayoutCap::Draw PlayoutCap::draw(Rng& rng) const {
  if (full_fraction >= 1 || reduced_visits >= full_visits) return {full_visits, true};
  const bool full = rng.uniform() < double(full_fraction);
  return {full ? full_visits : reduced_visits, full};
}

Result<void> PlayoutCap::validate() const {
  if (full_visits < 1) return fail("visits must be >= 1, got " + std::to_string(full_visits));
  if (reduced_visits < 1)
    return fail("reduced visits must be >= 1, got " + std::to_string(reduced_visits));
  if (!(full_fraction > 0 && full_fraction <= 1))
    return fail("full-search fraction must be in (0, 1]");
  return {};
}

Result<void> ResignPolicy::validate() const {
  if (!(threshold >= -2 && threshold < 1)) return fail("resign threshold must be in [-2, 1)");
  if (consecutive < 1) return fail("resign consecutive moves must be >= 1");
  if (!(disabled_fraction >= 0 && disabled_fraction <= 1))
    return fail("resign disabled fraction must be in [0, 1]");
  return {};
}

bool ResignTracker::update(chess::Color side, float root_value, int ply) {
  if (!policy_.enabled()) return false;
  int& below = below_[side];
  below = root_value < policy_.threshold ? below + 1 : 0;
  if (below < policy_.consecutive) return false;
  if (!disabled_) return true;
  if (would_ply_ < 0) {
    would_ply_ = ply;
    would_side_ = side;
  }
  return false;
}

}  // namespace chessrl::mcts
