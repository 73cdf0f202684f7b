// chessrl-evaluator: plays each new model version from the registry against
// the current best (gating: paired openings, colours swapped, Elo with a 95%
// interval, promotion of the winner to `best`) and against fixed anchors (a
// random mover, a one-ply material player, UCI engines given with --engine).
// Options come from flags, CHESSRL_* variables and a YAML --config file (flag
// > env > file > default). Serves /metrics and /healthz on --metrics-listen.
//
// With --once it evaluates the latest version (if not done yet), prints one
// JSON line on stdout and exits 0. SIGTERM or SIGINT stops the match in
// progress (nothing of it is written) and exits 0, within 20 s even when a
// registry call is in flight (StopWatchdog). Bad options exit 2, fatal
// errors 1; logs go to stderr.
#include "chessrl/evaluator_service/main.h"

int main(int argc, char** argv) { return chessrl::evaluator_service::evaluator_main(argc, argv); }
