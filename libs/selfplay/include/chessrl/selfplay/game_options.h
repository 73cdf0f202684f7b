// The command-line options of how each self-play game is played (search
// visits and playout cap, game length, temperature, resignation, PUCT and
// root noise), shared by `chessrl selfplay` and chessrl-selfplay so the tool
// and the service take the same names. Header-only: only code that includes it
// needs CLI11 (libs/selfplay itself does not).
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "chessrl/record/game_limits.h"
#include "chessrl/selfplay/game_runner.h"

namespace chessrl::selfplay {

// A move limit in [1, record::kMaxGamePlies]: a longer game is one the replay
// service refuses. CLI11 puts the flag's name before the message.
inline CLI::Validator game_plies_check() {
  const std::string range = "[1, " + std::to_string(record::kMaxGamePlies) + "]";
  return CLI::Validator(
      [range](std::string& value) -> std::string {
        int plies = 0;
        if (CLI::detail::lexical_cast(value, plies) && plies >= 1 &&
            plies <= record::kMaxGamePlies)
          return {};
        return value + " is not in " + range + ": the replay service refuses a game of more " +
               "than " + std::to_string(record::kMaxGamePlies) + " plies";
      },
      "INT in " + range);
}

inline void add_game_options(CLI::App& app, SelfPlayConfig& c) {
  app.add_option("--visits", c.playouts.full_visits, "Visits of a full (recorded) search")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  app.add_option("--reduced-visits", c.playouts.reduced_visits,
                 "Visits of a reduced search (playout cap randomization; not recorded)")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  app.add_option("--full-fraction", c.playouts.full_fraction,
                 "Fraction of moves searched fully and recorded (1: every move)")
      ->check(CLI::Range(0.001, 1.0))
      ->capture_default_str();
  app.add_option("--max-plies", c.max_plies,
                 "Plies after which a game is a draw (at most the longest game replay accepts)")
      ->check(game_plies_check())
      ->capture_default_str();
  app.add_option("--adjudicate-material", c.adjudicate_material,
                 "At the move limit, a side this many pawns ahead wins (0: a draw)")
      ->check(CLI::Range(0, 100))
      ->capture_default_str();
  app.add_option("--short-games", c.short_game_fraction,
                 "Share of games cut at --short-max-plies and adjudicated there (0: none)")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  app.add_option("--short-max-plies", c.short_max_plies, "Move limit of a short game")
      ->check(game_plies_check())
      ->capture_default_str();
  app.add_option("--short-adjudicate-material", c.short_adjudicate_material,
                 "At a short game's limit, a side this many pawns ahead wins (0: a draw)")
      ->check(CLI::Range(0, 100))
      ->capture_default_str();
  app.add_option("--temperature", c.temperature.initial, "Move-choice temperature early on")
      ->capture_default_str();
  app.add_option("--temperature-plies", c.temperature.plies,
                 "Plies played at --temperature; later ones at --final-temperature")
      ->capture_default_str();
  app.add_option("--final-temperature", c.temperature.final, "Temperature after that")
      ->capture_default_str();
  app.add_option("--resign-threshold", c.resign.threshold,
                 "Resign below this root value (-1: never)")
      ->capture_default_str();
  app.add_option("--resign-consecutive", c.resign.consecutive,
                 "... on this many of one's own moves in a row")
      ->capture_default_str();
  app.add_option("--resign-disabled", c.resign.disabled_fraction,
                 "Fraction of games played out to measure false resignations")
      ->capture_default_str();
  app.add_option("--cpuct", c.search.cpuct, "PUCT exploration constant")->capture_default_str();
  app.add_option("--fpu-reduction", c.search.fpu_reduction, "First-play urgency reduction")
      ->capture_default_str();
  app.add_option("--virtual-loss", c.search.virtual_loss,
                 "Each visit in flight counts as a loss of this size (0: it raises only the "
                 "exploration term's N)")
      ->check(CLI::Range(0.0, 10.0))
      ->capture_default_str();
  app.add_option("--draw-contempt", c.search.draw_contempt,
                 "A proven draw looks this much worse than 0 to the side choosing it (selection "
                 "only; 0: exact)")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  app.add_option("--mates-at-expansion", c.search.mates_at_expansion,
                 "Find a mate in one when a node's moves are generated")
      ->capture_default_str();
  app.add_option("--gumbel", c.search.gumbel,
                 "Gumbel root search (Sequential Halving; completed-Q policy targets) in place "
                 "of PUCT at the root, root noise and temperature (true/false)")
      ->capture_default_str();
  app.add_option("--gumbel-considered", c.search.gumbel_considered,
                 "Root moves the Gumbel search considers (top by noise + log prior)")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  app.add_option("--noise-alpha", c.search.noise_alpha, "Root Dirichlet noise alpha")
      ->capture_default_str();
  app.add_option("--noise-fraction", c.search.noise_fraction, "Root noise weight (0: none)")
      ->capture_default_str();
}

}  // namespace chessrl::selfplay
