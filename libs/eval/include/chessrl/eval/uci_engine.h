// A client for external UCI engines (Stockfish and others) as match players:
// the handshake, setoption, positions as "position fen <start> moves ...",
// and "go" with node, depth or time limits. Every read has a deadline: an
// engine that does not answer in time is killed and the move fails; one that
// crashes is noticed at once; the next new_game() starts a fresh process.
// Not thread-safe: one engine process per player, one player per thread.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "chessrl/core/result.h"
#include "chessrl/eval/player.h"

namespace chessrl::eval {

struct UciEngineOptions {
  std::string program = "stockfish";  // name (PATH, /usr/games) or path
  std::vector<std::string> arguments;
  // "setoption name <first> value <second>", in order, after the handshake.
  std::vector<std::pair<std::string, std::string>> options;
  // The search limit of each move: the first non-zero of nodes, depth, movetime.
  long long nodes = 0;
  int depth = 0;
  int movetime_ms = 100;
  std::chrono::milliseconds start_timeout{10000};  // uci -> uciok, isready -> readyok
  // A move must arrive within movetime plus this; node and depth searches,
  // which have no time bound of their own, get 4 times this (20 s by default).
  // An engine that misses its deadline is killed (SIGKILL) at once.
  std::chrono::milliseconds move_grace{5000};
  // For PGN and metrics; empty: the program's base name, its options and its
  // limit, e.g. "stockfish-SkillLevel0-movetime50".
  std::string name;
};

// The player; fails when the engine cannot be started or rejects the handshake
// (or no limit is set). A move fails with "engine NAME did not answer 'go ...'
// within N ms", "engine NAME exited ...", or names the illegal bestmove.
Result<std::unique_ptr<Player>> make_uci_player(const UciEngineOptions& options);

// Parses an anchor spec into a factory (seeded per player made):
//   random                       the random mover
//   greedy                       the one-ply material player
//   uci:PROGRAM[;KEY=VALUE]...   a UCI engine; keys nodes, depth, movetime
//                                (at most one) and name set the limit and the
//                                label, any other key is a UCI option, e.g.
//                                uci:stockfish;Skill Level=0;movetime=50;name=sf-skill0
// Errors name the spec and the part that is wrong. The engine is not started
// here; the factory starts it.
Result<PlayerFactory> parse_anchor(const std::string& spec, std::uint64_t seed);
// The label an anchor spec gets (the metric label): "random", "greedy", or
// the engine's name= (else the program's base name with its options and
// limit, e.g. "stockfish-SkillLevel0-movetime50"). Only [a-zA-Z0-9_.-]
// characters; a spec that does not parse gets its own characters so filtered.
std::string anchor_label(const std::string& spec);

}  // namespace chessrl::eval
