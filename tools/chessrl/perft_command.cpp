// chessrl perft: move-generation counts, divide, and the benchmark against
// stockfish's `go perft` on the same positions in the same run.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "bench/util.h"
#include "chessrl/chess/movegen.h"
#include "chessrl/chess/notation.h"
#include "chessrl/core/error.h"
#include "chessrl/core/uci_session.h"
#include "commands.h"

namespace chessrl::tool {
namespace {

using chess::Position;

struct BenchPosition {
  const char* name;
  const char* fen;
  int depth;
};

// The six standard perft positions of the Chess Programming Wiki, at depths
// that take around a second each.
constexpr BenchPosition kBenchPositions[] = {
    {"start", "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1", 6},
    {"kiwipete", "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1", 5},
    {"pos3", "8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1", 7},
    {"pos4", "r3k2r/Pppp1ppp/1b3nbN/nP6/BBP1P3/q4N2/Pp1P2PP/R2Q1RK1 w kq - 0 1", 5},
    {"pos5", "rnbq1k1r/pp1Pbppp/2p5/8/2B5/8/PPP1NnPP/RNBQK2R w KQ - 1 8", 5},
    {"pos6", "r4rk1/1pp1qppp/p1np1n2/2b1p1B1/2B1P1b1/P1NP1N2/1PP1QPPP/R4RK1 w - - 0 10", 5},
};

// Times stockfish's `go perft` over UCI.
class StockfishPerft {
 public:
  explicit StockfishPerft(UciSession session) : uci_(std::move(session)) {}
  const std::string& version() const { return uci_.name(); }

  // Runs perft and returns {nodes, seconds}, or nullopt if stockfish stops answering.
  std::optional<std::pair<std::uint64_t, double>> perft(const std::string& fen, int depth) {
    uci_.send("position fen " + fen);
    if (!uci_.sync()) return std::nullopt;
    auto start = Clock::now();
    uci_.send("go perft " + std::to_string(depth));
    auto lines =
        uci_.read_until([](const std::string& l) { return l.rfind("Nodes searched: ", 0) == 0; },
                        std::chrono::minutes(10));
    if (!lines) return std::nullopt;
    double secs = seconds_since(start);
    return std::make_pair(std::stoull(lines->back().substr(16)), secs);
  }

 private:
  UciSession uci_;
};

int run_bench(int repeat, const std::string& stockfish_name) {
  std::optional<StockfishPerft> sf;
  std::string against;
  if (auto session = UciSession::start(stockfish_name)) {
    sf.emplace(std::move(session).value());
    against = ", against " + sf->version();
  } else {
    against = " (no comparison: " + session.error() + ")";
  }
  std::printf("perft benchmark: %d position(s), median of %d run(s)%s\n",
              int(std::size(kBenchPositions)), repeat, against.c_str());
  std::printf("%-9s %5s %12s %9s %12s", "position", "depth", "nodes", "seconds", "nodes/s");
  if (sf) std::printf(" %9s %12s %7s", "sf secs", "sf nodes/s", "ratio");
  std::printf("\n");

  std::uint64_t total_nodes = 0;
  double total_secs = 0, total_sf_secs = 0;
  for (const auto& bp : kBenchPositions) {
    Position pos = Position::from_fen(bp.fen).value_or_throw();
    std::vector<double> times, sf_times;
    std::uint64_t nodes = 0;
    for (int r = 0; r < repeat; ++r) {
      auto start = Clock::now();
      nodes = chess::perft(pos, bp.depth);
      times.push_back(seconds_since(start));
      if (sf) {
        auto result = sf->perft(bp.fen, bp.depth);
        if (!result) throw Error("stockfish stopped answering during go perft");
        if (result->first != nodes)
          throw Error(std::string("node count mismatch on ") + bp.name + ": chessrl " +
                      std::to_string(nodes) + ", stockfish " + std::to_string(result->first));
        sf_times.push_back(result->second);
      }
    }
    double t = median(times);
    total_nodes += nodes;
    total_secs += t;
    std::printf("%-9s %5d %12llu %9.3f %12.0f", bp.name, bp.depth, (unsigned long long)nodes, t,
                double(nodes) / t);
    if (sf) {
      double st = median(sf_times);
      total_sf_secs += st;
      std::printf(" %9.3f %12.0f %6.2fx", st, double(nodes) / st, st / t);
    }
    std::printf("\n");
    std::fflush(stdout);
  }
  std::printf("%-9s %5s %12llu %9.3f %12.0f", "total", "", (unsigned long long)total_nodes,
              total_secs, double(total_nodes) / total_secs);
  if (sf)
    std::printf(" %9.3f %12.0f %6.2fx", total_sf_secs, double(total_nodes) / total_sf_secs,
                total_sf_secs / total_secs);
  std::printf("\n");
  return 0;
}

}  // namespace

void add_perft_command(CLI::App& app) {
  struct Options {
    std::string fen{chess::kStartFen};
    int depth = 5;
    bool divide = false;
    bool bench = false;
    int repeat = 5;
    std::string stockfish = "stockfish";
  };
  auto opts = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("perft", "Count leaf nodes of the legal move tree");
  cmd->add_option("--fen", opts->fen, "Position (default: the start position)");
  cmd->add_option("--depth", opts->depth, "Depth in plies")
      ->check(CLI::Range(0, 20))
      ->capture_default_str();
  cmd->add_flag("--divide", opts->divide, "Print the node count below each legal move");
  cmd->add_flag("--bench", opts->bench,
                "Time a fixed set of positions, and stockfish's `go perft` on them when installed");
  cmd->add_option("--repeat", opts->repeat, "Runs per position in --bench (median reported)")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  cmd->add_option("--stockfish", opts->stockfish, "Stockfish program for --bench")
      ->capture_default_str();
  cmd->callback([opts] {
    if (opts->bench) {
      run_bench(opts->repeat, opts->stockfish);
      return;
    }
    auto parsed = Position::from_fen(opts->fen);
    if (!parsed) throw Error("--fen: " + parsed.error());
    Position pos = std::move(parsed).value();
    auto start = Clock::now();
    std::uint64_t total = 0;
    if (opts->depth == 0) {
      total = 1;
    } else {
      // Streams --divide lines as they are counted and, on a terminal, shows
      // how many root moves are done: deep counts take minutes.
      const int root_moves = chess::count_legal(pos);
      const bool progress = ::isatty(STDERR_FILENO);
      int done = 0;
      chess::perft_divide(pos, opts->depth, [&](const chess::PerftDivide& d) {
        total += d.nodes;
        ++done;
        if (opts->divide) {
          std::printf("%s: %llu\n", chess::to_uci(d.move).c_str(), (unsigned long long)d.nodes);
          std::fflush(stdout);
        }
        if (progress)
          std::fprintf(stderr, "\r\033[Kperft: %d/%d root moves, %llu nodes, %.1f s", done,
                       root_moves, (unsigned long long)total, seconds_since(start));
      });
      if (progress) std::fprintf(stderr, "\r\033[K");
      if (opts->divide) std::printf("\n");
    }
    double secs = seconds_since(start);
    std::fprintf(stderr, "perft depth %d: %.3f s, %.0f nodes/s\n", opts->depth, secs,
                 secs > 0 ? double(total) / secs : 0.0);
    std::fflush(stderr);
    std::printf("total %llu\n", (unsigned long long)total);
  });
}

}  // namespace chessrl::tool
