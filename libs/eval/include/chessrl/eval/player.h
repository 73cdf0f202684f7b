// Players: anything that picks a move in a game — a network searching with
// MCTS, the fixed anchors (a random mover, a one-ply material-greedy player)
// and external UCI engines (uci_engine.h). A Player is used by one game thread
// at a time; matches make one per thread from a PlayerFactory.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "chessrl/chess/position.h"
#include "chessrl/chess/types.h"
#include "chessrl/core/result.h"
#include "chessrl/mcts/search.h"
#include "chessrl/nn/batch_evaluator.h"

namespace chessrl::eval {

// A game in progress: where it started, the moves so far, and the position
// they lead to (with its history, for repetitions and the network's planes).
struct GameState {
  std::string start_fen;  // FEN of the first position
  std::vector<chess::Move> moves;
  chess::Position position;
};

class Player {
 public:
  virtual ~Player() = default;
  // For PGN tags, logs and metric labels.
  virtual std::string name() const = 0;
  // Before each game (a UCI engine gets ucinewgame, or is restarted if it died).
  virtual Result<void> new_game() { return {}; }
  // A legal move in state.position, whose game is not over. A failure (an
  // engine that crashed, timed out or answered an illegal move) forfeits the
  // game; the message says what happened.
  virtual Result<chess::Move> choose(const GameState& state) = 0;
};

// Makes a fresh player: one per game thread. Fails (naming the problem) when
// the player cannot be set up, e.g. an engine that does not start.
using PlayerFactory = std::function<Result<std::unique_ptr<Player>>()>;

// Uniformly random legal moves; seeded, so a game against it is reproducible.
std::unique_ptr<Player> make_random_player(std::uint64_t seed);

// One ply of material: the move after which the mover's material balance
// (its material minus the opponent's: P 1, N 3, B 3, R 5, Q 9; a mate scores
// above everything, a stalemate or other draw as 0) is highest, ties broken
// at random.
std::unique_ptr<Player> make_greedy_player(std::uint64_t seed);

// A network searching with PUCT from a fresh tree each move. No root noise;
// the best move (mcts::Search::best_move), or for the first `random_plies`
// plies of the game (GameState::moves) a move drawn in proportion to visits
// (temperature 1, mcts::choose_move), so games from one opening differ.
struct MctsPlayerOptions {
  mcts::SearchParams search;  // noise_fraction is forced to 0
  int visits = 64;            // root visits per move
  int leaves_per_round = 8;
  int random_plies = 0;
  std::uint64_t seed = 1;
};
// `evaluator` is shared (it is thread-safe) and must outlive the player.
std::unique_ptr<Player> make_mcts_player(nn::BatchEvaluator& evaluator,
                                         const MctsPlayerOptions& options, std::string name);

}  // namespace chessrl::eval
