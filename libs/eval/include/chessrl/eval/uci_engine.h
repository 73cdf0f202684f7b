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
  // A move must arrive within the search's own limit plus this.
  std::chrono::milliseconds move_grace{5000};
  std::string name;  // for PGN and metrics; empty: "<program>" plus the options
};

// The player; fails when the engine cannot be started or rejects the handshake.
Result<std::unique_ptr<Player>> make_uci_player(const UciEngineOptions& options);

// Parses an anchor spec into a factory (seeded per player made):
//   random                       the random mover
//   greedy                       the one-ply material player
//   uci:PROGRAM[;KEY=VALUE]...   a UCI engine; keys nodes, depth, movetime
//                                and name set the limit and the label, any
//                                other key is a UCI option, e.g.
//                                uci:stockfish;Skill Level=0;movetime=50;name=sf-skill0
// Errors name the spec and the part that is wrong. The engine is not started
// here; the factory starts it.
Result<PlayerFactory> parse_anchor(const std::string& spec, std::uint64_t seed);
// The label an anchor spec gets (the metric label): "random", "greedy", or
// the engine's name= (else the program's base name with its limit, e.g.
// "stockfish-movetime50"). Only [a-zA-Z0-9_.-] characters.
std::string anchor_label(const std::string& spec);

}  // namespace chessrl::eval
