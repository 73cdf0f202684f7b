#include "chessrl/eval/match.h"

#include <algorithm>
#include <ctime>
#include <exception>
#include <fstream>
#include <mutex>
#include <optional>
#include <thread>

#include "chessrl/chess/movegen.h"
#include "chessrl/chess/notation.h"

namespace chessrl::eval {
namespace {

using chess::Color;
using chess::GameResult;
using chess::Outcome;
using chess::Termination;

// Today's date in PGN form (UTC): "2024.05.31".
std::string pgn_date() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&now, &tm);
  char text[16];
  std::strftime(text, sizeof text, "%Y.%m.%d", &tm);
  return text;
}

// Plays one game; nullopt when *stop cut it short.
std::optional<MatchGame> play_game(Player& first, Player& second, int pair, bool first_is_white,
                                   const MatchOptions& options, const std::atomic<bool>* stop) {
  const std::size_t opening =
      std::size_t((options.seed + std::uint64_t(pair)) % opening_fens().size());
  MatchGame game;
  game.pair = pair;
  game.first_is_white = first_is_white;
  Player& white = first_is_white ? first : second;
  Player& black = first_is_white ? second : first;

  GameState state;
  state.start_fen = opening_fens()[opening];
  state.position = chess::Position::from_fen(state.start_fen).value_or_throw();

  // A forfeit: `side` failed; the other side wins.
  auto forfeit = [&](Color side, Player& player, const std::string& why) {
    game.result = {side == chess::kWhite ? Outcome::kBlackWins : Outcome::kWhiteWins,
                   Termination::kAdjudication};
    game.forfeit = player.name() + ": " + why;
  };
  auto start = [](Player& p) -> Result<void> {
    try {
      return p.new_game();
    } catch (const std::exception& e) {
      return fail(std::string("new_game threw: ") + e.what());
    }
  };
  if (auto r = start(white); !r) {
    forfeit(chess::kWhite, white, r.error());
  } else if (auto b = start(black); !b) {
    forfeit(chess::kBlack, black, b.error());
  }

  while (game.forfeit.empty()) {
    if (stop && stop->load()) return std::nullopt;
    game.result = chess::game_result(state.position);
    if (game.result.is_over()) break;
    if (int(state.moves.size()) >= options.max_plies) {
      game.result = chess::move_limit_result(state.position, options.adjudicate_material);
      break;
    }
    const Color side = state.position.side_to_move();
    Player& mover = side == chess::kWhite ? white : black;
    Result<chess::Move> move = fail("");
    try {
      move = mover.choose(state);
    } catch (const std::exception& e) {
      move = fail(std::string("choose threw: ") + e.what());
    }
    if (!move) {
      // An interrupt (Ctrl-C reaches engines too) is no forfeit: drop the game.
      if (stop && stop->load()) return std::nullopt;
      forfeit(side, mover, move.error());
      break;
    }
    if (!chess::is_legal(state.position, *move)) {
      forfeit(side, mover, "chose illegal move " + chess::to_uci(*move));
      break;
    }
    state.position.make_move(*move);
    state.moves.push_back(*move);
  }

  const bool first_won =
      game.result.outcome == (first_is_white ? Outcome::kWhiteWins : Outcome::kBlackWins);
  game.first_score = game.result.outcome == Outcome::kDraw ? 0.5 : first_won ? 1.0 : 0.0;

  chess::PgnGame& pgn = game.pgn;
  pgn.event = options.event;
  pgn.date = pgn_date();
  pgn.round = std::to_string(pair + 1) + "." + (first_is_white ? "1" : "2");
  pgn.white = white.name();
  pgn.black = black.name();
  pgn.start_fen = state.start_fen;
  pgn.moves = state.moves;
  pgn.result = game.result.pgn_result();
  pgn.tags.emplace_back("Opening", opening_name(opening));
  pgn.tags.emplace_back("Termination", game.forfeit.empty()
                                           ? chess::termination_name(game.result.reason)
                                           : "forfeit");
  if (!game.forfeit.empty()) pgn.tags.emplace_back("Forfeit", game.forfeit);
  pgn.tags.emplace_back("PlyCount", std::to_string(state.moves.size()));
  return game;
}

// What the match threads share.
struct MatchState {
  std::mutex mutex;
  MatchResult result;
  std::vector<double> pair_points;  // the first player's points in each pair so far
  std::vector<int> pair_games;      // games finished in each pair
  std::string error;                // the first factory failure
  std::atomic<int> next_game{0};
  std::atomic<bool> failed{false};
};

void run_thread(const PlayerFactory& first, const PlayerFactory& second,
                const MatchOptions& options, const std::function<void(const MatchGame&)>& on_game,
                const std::atomic<bool>* stop, MatchState& shared) {
  auto make = [&](const PlayerFactory& factory) -> std::unique_ptr<Player> {
    Result<std::unique_ptr<Player>> made = fail("");
    try {
      made = factory();
    } catch (const std::exception& e) {
      made = fail(std::string("the player factory threw: ") + e.what());
    }
    if (made && !*made) made = fail("the player factory made no player");
    if (made) return std::move(made).value();
    std::lock_guard lock(shared.mutex);
    if (shared.error.empty()) shared.error = made.error();
    shared.failed = true;
    return nullptr;
  };
  std::unique_ptr<Player> a = make(first);
  if (!a) return;
  std::unique_ptr<Player> b = make(second);
  if (!b) return;

  const int games = 2 * options.pairs;
  while (!shared.failed && !(stop && stop->load())) {
    const int index = shared.next_game++;
    if (index >= games) break;
    std::optional<MatchGame> game = play_game(*a, *b, index / 2, index % 2 == 0, options, stop);
    if (!game) break;
    std::lock_guard lock(shared.mutex);
    MatchScore& score = shared.result.score;
    if (game->first_score == 1.0)
      ++score.wins;
    else if (game->first_score == 0.0)
      ++score.losses;
    else
      ++score.draws;
    if (!game->forfeit.empty()) ++shared.result.forfeits;
    const auto pair = std::size_t(game->pair);
    shared.pair_points[pair] += game->first_score;
    if (++shared.pair_games[pair] == 2) ++score.pairs[std::size_t(2 * shared.pair_points[pair])];
    if (on_game) on_game(*game);
    shared.result.games.push_back(std::move(*game));
  }
}

}  // namespace

Result<void> MatchOptions::validate() const {
  if (pairs < 1 || pairs > 1000000) return fail("match pairs must be in [1, 1000000]");
  if (threads < 1 || threads > 1024) return fail("match threads must be in [1, 1024]");
  if (max_plies < 1 || max_plies > 100000) return fail("match max_plies must be in [1, 100000]");
  if (adjudicate_material < 0 || adjudicate_material > 100)
    return fail("match adjudicate_material must be in [0, 100]");
  return {};
}

Result<MatchResult> play_match(const PlayerFactory& first, const PlayerFactory& second,
                               const MatchOptions& options,
                               const std::function<void(const MatchGame&)>& on_game,
                               const std::atomic<bool>* stop) {
  if (auto valid = options.validate(); !valid) return fail(valid.error());
  if (!first || !second) return fail("play_match: a player factory is empty");
  MatchState shared;
  shared.pair_points.assign(std::size_t(options.pairs), 0.0);
  shared.pair_games.assign(std::size_t(options.pairs), 0);
  const int threads = std::min(options.threads, 2 * options.pairs);
  if (threads == 1) {
    run_thread(first, second, options, on_game, stop, shared);
  } else {
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&] { run_thread(first, second, options, on_game, stop, shared); });
    for (std::thread& t : pool) t.join();
  }
  if (shared.failed) return fail(shared.error);
  std::sort(shared.result.games.begin(), shared.result.games.end(),
            [](const MatchGame& x, const MatchGame& y) {
              return x.pair != y.pair ? x.pair < y.pair : x.first_is_white > y.first_is_white;
            });
  return std::move(shared.result);
}

Result<void> append_pgn(const std::string& path, const std::vector<chess::PgnGame>& games) {
  std::string text;
  for (std::size_t i = 0; i < games.size(); ++i) {
    auto pgn = chess::write_pgn(games[i]);
    if (!pgn) return fail(path + ": game " + std::to_string(i + 1) + ": " + pgn.error());
    text += *pgn + "\n";
  }
  std::ofstream out(path, std::ios::app | std::ios::binary);
  if (!out) return fail("cannot open " + path + " for appending");
  out << text;
  out.flush();
  if (!out) return fail("cannot write to " + path);
  return {};
}

}  // namespace chessrl::eval
