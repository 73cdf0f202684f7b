#include "chessrl/eval/player.h"

#include <limits>
#include <utility>

#include "chessrl/chess/bitboard.h"
#include "chessrl/chess/movegen.h"
#include "chessrl/chess/notation.h"
#include "chessrl/chess/rules.h"
#include "chessrl/mcts/policies.h"
#include "chessrl/mcts/random.h"

namespace chessrl::eval {
namespace {

using chess::Move;
using chess::Position;

class RandomPlayer final : public Player {
 public:
  explicit RandomPlayer(std::uint64_t seed) : rng_(seed) {}
  std::string name() const override { return "random"; }
  Result<Move> choose(const GameState& state) override {
    const chess::MoveList moves = chess::legal_moves(state.position);
    if (moves.empty()) return fail("random: no legal moves in " + state.position.fen());
    return moves[int(rng_.below(std::uint64_t(moves.size())))];
  }

 private:
  mcts::Rng rng_;
};

// Material of `c` in pawns: P 1, N 3, B 3, R 5, Q 9.
int material(const Position& pos, chess::Color c) {
  static constexpr int kValue[] = {1, 3, 3, 5, 9};
  int sum = 0;
  for (int pt = chess::kPawn; pt <= chess::kQueen; ++pt)
    sum += kValue[pt] * chess::popcount(pos.pieces(c, chess::PieceType(pt)));
  return sum;
}

class GreedyPlayer final : public Player {
 public:
  explicit GreedyPlayer(std::uint64_t seed) : rng_(seed) {}
  std::string name() const override { return "greedy"; }

  Result<Move> choose(const GameState& state) override {
    const chess::MoveList moves = chess::legal_moves(state.position);
    if (moves.empty()) return fail("greedy: no legal moves in " + state.position.fen());
    Position pos = state.position;
    const chess::Color us = pos.side_to_move();
    constexpr int kMate = std::numeric_limits<int>::max();
    int best = std::numeric_limits<int>::min();
    int ties = 0;
    Move chosen = moves[0];
    for (const Move m : moves) {
      pos.make_move(m);
      const chess::GameResult r = chess::game_result(pos);
      int value = 0;
      if (r.reason == chess::Termination::kCheckmate)
        value = kMate;
      else if (!r.is_over())
        value = material(pos, us) - material(pos, ~us);
      pos.unmake_move();
      // Reservoir sampling over the best moves: each tie equally likely.
      if (value > best) {
        best = value;
        ties = 1;
        chosen = m;
      } else if (value == best && rng_.below(std::uint64_t(++ties)) == 0) {
        chosen = m;
      }
    }
    return chosen;
  }

 private:
  mcts::Rng rng_;
};

class MctsPlayer final : public Player {
 public:
  MctsPlayer(nn::BatchEvaluator& evaluator, const MctsPlayerOptions& options, std::string name)
      : evaluator_(evaluator),
        options_(options),
        name_(std::move(name)),
        search_([&] {
          mcts::SearchParams p = options.search;
          p.noise_fraction = 0;
          return p;
        }()),
        rng_(options.seed) {}

  std::string name() const override { return name_; }

  Result<Move> choose(const GameState& state) override {
    if (const chess::GameResult r = chess::game_result(state.position); r.is_over())
      return fail(name_ + ": the game is already over: " + r.to_string());
    search_.reset(state.position);
    mcts::SearchLimits limits;
    limits.visits = std::uint64_t(options_.visits);
    limits.leaves_per_round = options_.leaves_per_round;
    const bool random_ply = int(state.moves.size()) < options_.random_plies;
    // Gumbel without noise: Sequential Halving over the top moves by prior.
    if (options_.search.gumbel) search_.start_gumbel(std::nullopt, limits.visits);
    mcts::run_search(search_, evaluator_, limits);
    const Move m = options_.search.gumbel && !random_ply
                       ? search_.gumbel_move()
                       : mcts::choose_move(search_, random_ply ? 1.0f : 0.0f, rng_);
    if (m.is_none()) return fail(name_ + ": the search found no move");
    return m;
  }

 private:
  nn::BatchEvaluator& evaluator_;
  MctsPlayerOptions options_;
  std::string name_;
  mcts::Search search_;
  mcts::Rng rng_;
};

}  // namespace

std::unique_ptr<Player> make_random_player(std::uint64_t seed) {
  return std::make_unique<RandomPlayer>(seed);
}

std::unique_ptr<Player> make_greedy_player(std::uint64_t seed) {
  return std::make_unique<GreedyPlayer>(seed);
}

std::unique_ptr<Player> make_mcts_player(nn::BatchEvaluator& evaluator,
                                         const MctsPlayerOptions& options, std::string name) {
  return std::make_unique<MctsPlayer>(evaluator, options, std::move(name));
}

}  // namespace chessrl::eval
