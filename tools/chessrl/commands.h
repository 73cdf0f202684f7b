// Registration of the chessrl tool's subcommands; each adds itself to the app
// and runs from its callback.
#pragma once

#include <CLI/CLI.hpp>

namespace chessrl::tool {

void add_perft_command(CLI::App& app);
void add_bench_command(CLI::App& app);
void add_uci_command(CLI::App& app);
void add_selfplay_command(CLI::App& app);
// `match`: two players (networks, anchors, UCI engines) over paired openings.
void add_match_command(CLI::App& app);
// `curve`: a run's saved versions against anchors; a table and a plot of Elo.
void add_curve_command(CLI::App& app);
// `material-probe`: does a network's value head know material?
void add_material_probe_command(CLI::App& app);
// `doctor`: what this machine can do, and a games/hour estimate.
void add_doctor_command(CLI::App& app);
// `local`: the whole loop as child processes (built with CHESSRL_SERVICES only).
void add_local_command(CLI::App& app);
// `probe`: gRPC health and HTTP endpoints answer (built with CHESSRL_SERVICES only).
void add_probe_command(CLI::App& app);
// `bench selfplay`, under the bench command.
void add_bench_selfplay_command(CLI::App& bench);
// `bench replay`, under the bench command (built with CHESSRL_SERVICES only).
void add_bench_replay_command(CLI::App& bench);
// `bench load`, under the bench command: the replay service under load, every
// acknowledged game checked in Redis (built with CHESSRL_SERVICES only).
void add_bench_load_command(CLI::App& bench);
// `bench abuse`, under the bench command: a hostile client against the replay
// service, with the figures that show it stayed bounded (CHESSRL_SERVICES only).
void add_bench_abuse_command(CLI::App& bench);
// `bench selfplay-stop`, under the bench command: chessrl-selfplay from SIGTERM
// to exit, with a full push buffer and with an empty one (CHESSRL_SERVICES only).
void add_bench_selfplay_stop_command(CLI::App& bench);
// `bench sample`, under the bench command: the trainer's examples/s from the
// replay service with 1..8 Sample calls in flight, and decoding alone
// (CHESSRL_SERVICES only).
void add_bench_sample_command(CLI::App& bench);
// `bench capacity`, under the bench command: per-unit Redis and replay costs
// from Redis's own accounting and the capacity model (CHESSRL_SERVICES only).
void add_bench_capacity_command(CLI::App& bench);
// `bench fanout`, under the bench command: model distribution from the
// registry to many followers, per version and per criterion (CHESSRL_SERVICES only).
void add_bench_fanout_command(CLI::App& bench);
// `bench train`, under the bench command: data-parallel training throughput
// (it also runs as one of its own worker ranks).
void add_bench_train_command(CLI::App& bench);
// `bench swap`, under the bench command: self-play's games/s while new model
// versions arrive, with --model-switch overlap and drain (CHESSRL_SERVICES only).
void add_bench_swap_command(CLI::App& bench);

}  // namespace chessrl::tool
