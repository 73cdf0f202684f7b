// chessrl match: two players over paired openings (libs/eval), with live
// progress on stderr and a result line (score, Elo with its 95% interval) on
// stdout. A player is an anchor spec (random, greedy, uci:...), a checkpoint
// searched with MCTS (model:PATH), or MCTS on the uniform fake network
// (match/players.h, shared with `chessrl curve`).
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <string>

#include "bench/util.h"
#include "chessrl/core/error.h"
#include "chessrl/eval/match.h"
#include "chessrl/eval/match_endings.h"
#include "chessrl/mcts/random.h"
#include "chessrl/nn/model_limits.h"
#include "commands.h"
#include "match/players.h"

namespace chessrl::tool {
namespace {

struct MatchCommandOptions {
  std::string first, second;
  eval::MatchOptions match;
  int visits = eval::kEvalVisits;  // the evaluator's
  int leaves = eval::MctsPlayerOptions{}.leaves_per_round;
  std::string gumbel = "none";  // which MCTS sides search the root with Gumbel
  std::string device = "cpu";
  std::int64_t max_model_params = nn::kDefaultMaxModelParams;
  std::string pgn;
};

std::atomic<bool> g_interrupted{false};
extern "C" void on_match_interrupt(int) { g_interrupted = true; }

void run_match(const MatchCommandOptions& o) {
  if (auto valid = o.match.validate(); !valid) throw Error(valid.error());
  Networks networks(std::min(o.match.threads, 2 * o.match.pairs), o.leaves, o.device,
                    o.max_model_params);
  const bool gumbel_first = o.gumbel == "first" || o.gumbel == "both";
  const bool gumbel_second = o.gumbel == "second" || o.gumbel == "both";
  const eval::PlayerFactory first = make_side(o.first, "--first", mcts::mix64(o.match.seed ^ 1),
                                              o.visits, networks, o.leaves, gumbel_first);
  const eval::PlayerFactory second = make_side(o.second, "--second", mcts::mix64(o.match.seed ^ 2),
                                               o.visits, networks, o.leaves, gumbel_second);
  if (!o.pgn.empty()) {
    std::ofstream probe(o.pgn, std::ios::app);
    if (!probe) throw Error("--pgn: cannot open " + o.pgn + " for appending");
  }

  const int total = 2 * o.match.pairs;
  std::fprintf(stderr,
               "match: %s vs %s, %d games (%d pair%s) on %d thread%s, max %d plies, seed %llu\n",
               o.first.c_str(), o.second.c_str(), total, o.match.pairs,
               o.match.pairs == 1 ? "" : "s", o.match.threads, o.match.threads == 1 ? "" : "s",
               o.match.max_plies, static_cast<unsigned long long>(o.match.seed));
  std::string first_name = o.first, second_name = o.second, pgn_error;
  eval::MatchEndings endings;
  eval::MatchScore so_far;
  int done = 0, forfeits = 0;
  ProgressLine progress;
  const bool tty = ::isatty(STDERR_FILENO);
  auto on_game = [&](const eval::MatchGame& g) {
    ++done;
    forfeits += !g.forfeit.empty();
    endings.add(g);
    so_far.wins += g.first_score == 1.0;
    so_far.draws += g.first_score == 0.5;
    so_far.losses += g.first_score == 0.0;
    first_name = g.first_is_white ? g.pgn.white : g.pgn.black;
    second_name = g.first_is_white ? g.pgn.black : g.pgn.white;
    if (!o.pgn.empty() && pgn_error.empty())
      if (auto r = eval::append_pgn(o.pgn, {g.pgn}); !r) pgn_error = r.error();
    progress.clear();
    if (!g.forfeit.empty()) std::fprintf(stderr, "forfeit: %s\n", g.forfeit.c_str());
    char text[256];
    std::snprintf(text, sizeof text, "games %d/%d  +%d =%d -%d  score %.3f", done, total,
                  so_far.wins, so_far.draws, so_far.losses, so_far.score());
    if (tty)
      progress.show("%s", text);
    else
      std::fprintf(stderr, "%s  (pair %d, %s: %s, %zu plies)\n", text, g.pair + 1,
                   g.first_is_white ? "first white" : "first black", g.result.to_string().c_str(),
                   g.pgn.moves.size());
  };

  std::signal(SIGINT, on_match_interrupt);
  std::signal(SIGTERM, on_match_interrupt);
  auto result = eval::play_match(first, second, o.match, on_game, &g_interrupted);
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
  progress.clear();
  if (!result) throw Error("match: " + result.error());

  const eval::MatchScore& s = result->score;
  const eval::EloEstimate elo = result->elo();
  std::printf(
      "%sfirst %s vs second %s: +%d =%d -%d  score %.3f  elo %+.1f [%+.1f, %+.1f]  (%d games, %d "
      "forfeits)\n",
      g_interrupted ? "interrupted: " : "", first_name.c_str(), second_name.c_str(), s.wins,
      s.draws, s.losses, s.score(), elo.elo, elo.lower, elo.upper, s.games(), result->forfeits);
  std::fflush(stdout);
  std::printf("%s", endings.format(first_name).c_str());
  std::fflush(stdout);
  if (!o.pgn.empty() && pgn_error.empty())
    std::fprintf(stderr, "wrote %d games to %s\n", s.games(), o.pgn.c_str());
  if (!pgn_error.empty()) throw Error("--pgn: " + pgn_error);
}

}  // namespace

void add_match_command(CLI::App& app) {
  auto o = std::make_shared<MatchCommandOptions>();
  o->match.threads = 2;
  CLI::App* cmd = app.add_subcommand(
      "match", "Play two players against each other over paired openings; print score and Elo");
  const std::string spec_help =
      ": random, greedy (one ply of material), uniform (MCTS on a uniform fake network), "
      "model:PATH (MCTS on a checkpoint), or uci:PROGRAM[;KEY=VALUE]... (an external engine; keys "
      "nodes, depth, movetime, name, any other is a UCI option)";
  cmd->add_option("--first", o->first, "The first player" + spec_help)->required();
  cmd->add_option("--second", o->second, "The second player (same forms)")->required();
  cmd->add_option("--pairs", o->match.pairs,
                  "Game pairs: each opening is played once with each colour")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  cmd->add_option("--concurrent,--threads", o->match.threads,
                  "Games played at once, each on a thread")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  cmd->add_option("--max-plies", o->match.max_plies, "Plies after which a game is a draw")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  cmd->add_option("--seed", o->match.seed,
                  "Seed: the first pair's opening and the players' random choices")
      ->capture_default_str();
  cmd->add_option("--visits", o->visits, "MCTS root visits per move (model: and uniform)")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  cmd->add_option("--leaves", o->leaves,
                  "MCTS leaves gathered per search round (model: and uniform; virtual loss)")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  cmd->add_option("--gumbel", o->gumbel,
                  "MCTS sides that search the root with Gumbel Sequential Halving (no noise) "
                  "instead of PUCT: none, first, second or both")
      ->check(CLI::IsMember({"none", "first", "second", "both"}))
      ->capture_default_str();
  cmd->add_option("--device", o->device, "Device of model: networks: cpu, cuda or cuda:N")
      ->capture_default_str();
  cmd->add_option("--max-model-params", o->max_model_params,
                  "Refuse a model: checkpoint whose architecture has more parameters than this, "
                  "before allocating it (0: no ceiling)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--pgn", o->pgn, "Append every game to this PGN file as it ends");
  cmd->callback([o] { run_match(*o); });
}

}  // namespace chessrl::tool
