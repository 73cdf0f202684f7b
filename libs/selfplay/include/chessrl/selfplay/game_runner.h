// GameRunner: plays many self-play games at once on a few threads. Each thread
// owns a share of the game slots; every round it gathers a few leaves from
// each of its games' searches, sends them in one evaluate() call per network
// and backs them up, so the network sees batches of about concurrent_games x
// leaves_per_search positions while the threads wait.
//
// Switching networks without a drain: switch_to() makes games that start from
// then on play on the new network, while the games in progress finish on the
// one they started with. A game is played wholly by one network, and each
// finished game comes with that network's version. During such an overlap a
// thread's round sends one evaluate() per network in play, at the same time
// (the second on a helper thread), so it waits once, not once per network. A
// replaced network is released (and on_retired called) when its last game
// ends.
//
// Each game's moves depend only on the runner seed, the game's index and the
// outputs of the network it was played with, never on thread timing: with a
// deterministic backend a run is reproducible. A switch_to() made while games
// run takes effect at the next game start of each slot, so which index is the
// first played on the new network depends on timing; every game is still the
// game that network plays for that index.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "chessrl/mcts/policies.h"
#include "chessrl/mcts/search.h"
#include "chessrl/nn/batch_evaluator.h"
#include "chessrl/record/game_record.h"

namespace chessrl::selfplay {

// How each game is played. The defaults are the learning settings measured
// in docs/learning.md, and so the defaults of chessrl-selfplay, `chessrl
// selfplay`, `chessrl local` (make run), `chessrl doctor` and the Helm chart,
// none of which sets them again.
struct SelfPlayConfig {
  // Gumbel root search (runs D and E: 0.613 and 0.487 against greedy after 30
  // minutes, where PUCT with root noise scored 0.125-0.325), and a proven draw
  // 0.2 worse than 0 to the side choosing it (runs A and B: 1% repetitions
  // against run 5's 62%). search.gumbel = false plays PUCT with root noise and
  // the temperature schedule.
  mcts::SearchParams search = [] {
    mcts::SearchParams p;
    p.gumbel = true;
    p.draw_contempt = 0.2f;
    return p;
  }();
  // 64 visits on a quarter of the moves (recorded), 16 on the rest.
  mcts::PlayoutCap playouts{.full_visits = 64, .reduced_visits = 16, .full_fraction = 0.25f};
  // PUCT only: moves sampled at temperature 0.5 after ply 30 (run 2), so
  // self-play does not shuffle into repetitions.
  mcts::TemperatureSchedule temperature{.initial = 1.0f, .plies = 30, .final = 0.5f};
  mcts::ResignPolicy resign;
  // A game still going after this many plies is a draw (move limit); at most
  // record::kMaxGamePlies, the longest game replay accepts.
  int max_plies = 200;
  // At the move limit, a side at least this many pawns ahead in material
  // (chess::material_balance) wins by adjudication instead; 0: always a draw
  // (run 1: 3).
  int adjudicate_material = 3;
  // Short games: this share of games ends at short_max_plies instead, won
  // there by a side short_adjudicate_material pawns ahead. Many short games
  // decided on material give the value head a dense material signal (the
  // learning check's regime; runs A and B); 0: every game is full length.
  float short_game_fraction = 0.5f;
  int short_max_plies = 60;
  int short_adjudicate_material = 1;
  bool noise_on_reduced = false;  // root noise on reduced-visit searches too (KataGo: no)
  bool tree_reuse = true;
  Result<void> validate() const;
};

struct GameRunnerOptions {
  SelfPlayConfig config;
  int concurrent_games = 64;
  int threads = 2;
  int leaves_per_search = 8;  // leaves gathered from one game per round (virtual loss)
  std::uint64_t seed = 1;
  // Game ids are "<seed>-<nonce>-<index>" (hex, hex, decimal). The nonce keeps
  // ids unique whatever the seed: a process restarted with the same seed plays
  // the same games under new ids (a repeated id is a DUPLICATE to the replay
  // service, and the game would be lost). Unset: fresh_id_nonce() when the
  // runner is made; set it only to repeat ids on purpose (tests).
  std::optional<std::uint64_t> id_nonce;
  std::uint64_t max_games = 0;  // games to finish; 0: until stopped
  std::string start_fen;        // empty: the standard start position
  // Called by each runner thread after every round with the seconds it spent
  // searching (gathering leaves, backing up, playing moves) and the seconds it
  // waited in evaluate() for the network; must be thread-safe and quick.
  std::function<void(double busy_seconds, double wait_seconds)> on_round = nullptr;
  // Called once per network that switch_to() replaced, when its last game has
  // ended (finished, after that game's on_game; or abandoned by a stop), with
  // its version and the seconds since it was replaced (0 when no game was in
  // progress on it). From a runner thread, or from switch_to()'s caller when
  // nothing was in progress; must be thread-safe and quick.
  std::function<void(std::uint64_t version, double overlap_seconds)> on_retired = nullptr;
  Result<void> validate() const;
};

// Counters since the runner was made; read at any time from any thread.
struct RunnerStats {
  std::uint64_t games = 0;
  std::uint64_t positions = 0;  // moves played
  std::uint64_t recorded = 0;   // moves with a training target
  std::uint64_t playouts = 0;
  std::uint64_t evaluations = 0;  // leaves sent to the evaluator
  double busy_seconds = 0;  // summed over threads: searching, not waiting for the network
  double wait_seconds = 0;  // summed over threads: waiting in evaluate()
  std::uint64_t white_wins = 0, black_wins = 0, draws = 0;
  std::uint64_t resignations = 0;
  std::uint64_t resign_checked = 0;  // resignation-disabled games where a side would have resigned
  std::uint64_t resign_false_positives = 0;  // ... and that side did not lose
  std::uint64_t abandoned = 0;  // games in progress dropped unfinished by a stop (or a failure)
  // Summed over slots: seconds a slot held no game while the runner ran (a
  // drain, the end of max_games). 0 while switch_to() overlaps networks.
  double idle_slot_seconds = 0;
  double resign_false_positive_rate() const {
    return resign_checked ? double(resign_false_positives) / double(resign_checked) : 0;
  }
};

// A game followed for people to watch (the game viewer): the game of the
// runner's first slot, copied as it is played.
struct WatchedGame {
  std::string id;
  std::string start_fen;
  std::vector<chess::Move> moves;
  chess::GameResult result;  // not over while the game is in progress
  int max_plies = 0;         // this game's move limit (short games have a lower one)
};
struct WatchedGames {
  std::optional<WatchedGame> current;   // in progress, or the last one finished
  std::optional<WatchedGame> previous;  // the finished game before `current`
};

// 64 bits that differ between processes and between calls: std::random_device
// mixed with the clock, the process id and a counter (so a random_device that
// repeats itself still gives distinct values). Not from any seed.
std::uint64_t fresh_id_nonce();

// A network to play with: its evaluator and the registry version of its model
// (0: a bootstrap, or none known).
struct Network {
  std::shared_ptr<nn::BatchEvaluator> evaluator;
  std::uint64_t version = 0;
};

class GameRunner {
 public:
  // Each finished game and the version of the network that played it.
  using GameFunction = std::function<void(record::GameRecord&&, std::uint64_t version)>;

  // Plays on `evaluator` (version 0), which must outlive the runner.
  GameRunner(nn::BatchEvaluator& evaluator, GameRunnerOptions options);
  // Plays on `network`, held until its last game ends after a switch_to().
  GameRunner(Network network, GameRunnerOptions options);
  ~GameRunner();

  // Plays until max_games games have finished or *stop is set, then returns.
  // `on_game` receives each finished game with its network's version, from a
  // runner thread, one call at a time. Games in progress when stop is seen are
  // abandoned. While *drain is set no new game starts, and play() returns once
  // the games in progress have finished (nothing is abandoned): the way to
  // change the network between games with one network in play at a time
  // (switch_to() needs no drain). The runner can play again; game indices
  // continue where they stopped.
  void play(const GameFunction& on_game, const std::atomic<bool>* stop = nullptr,
            const std::atomic<bool>* drain = nullptr);
  // play() without the versions.
  void run(const std::function<void(record::GameRecord&&)>& on_game,
           const std::atomic<bool>* stop = nullptr, const std::atomic<bool>* drain = nullptr);
  // From now on every game that starts plays on `next`; the games in progress
  // finish on the network they started with. Any thread, any time (while
  // play() runs or not). Throws chessrl::Error for a network without an
  // evaluator.
  void switch_to(Network next);
  // The version new games start with.
  std::uint64_t version() const;
  // Networks with games in progress or taking new ones: 1, plus those
  // replaced whose games are not all over.
  int networks_in_play() const;
  RunnerStats stats() const;
  // The watched games; any thread, any time. Costs the runner one short lock
  // per move of one game.
  WatchedGames watched() const;
  const GameRunnerOptions& options() const { return options_; }

 private:
  struct Slot;
  struct Counters;
  struct Player;  // a network and the games in progress on it
  void thread_main(std::vector<Slot*> slots, const GameFunction& on_game,
                   const std::atomic<bool>* stop, const std::atomic<bool>* drain,
                   const std::atomic<bool>* failed);
  bool start_game(Slot& slot);
  // The slot's game is over (finished or abandoned): lets go of its network,
  // retiring a replaced one whose last game this was.
  void release(Slot& slot);
  void start_move(Slot& slot);
  // After the search for the current move: records, resigns or plays.
  // Returns true when the game is over.
  bool finish_move(Slot& slot);
  // Copies the watched slot's new moves and result into watched_.
  void publish_watched(const Slot& slot, bool new_game);

  GameRunnerOptions options_;
  mutable std::mutex players_mutex_;  // current_, retiring_, Player::in_progress, next game index
  std::shared_ptr<Player> current_;
  int retiring_ = 0;  // replaced networks with games in progress
  chess::Position start_;
  std::uint64_t id_nonce_ = 0;
  std::atomic<std::uint64_t> next_index_{0};
  std::unique_ptr<Counters> counters_;
  std::mutex emit_mutex_;
  mutable std::mutex watched_mutex_;
  WatchedGames watched_;
};

}  // namespace chessrl::selfplay
