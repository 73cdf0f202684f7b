// chessrl-trainer: data-parallel training (one process per rank; Gloo on CPU,
// NCCL on CUDA) on positions sampled from the replay service, or on a fixed
// data set of self-play records (--data). Rank 0 checkpoints and publishes
// model versions to the registry. Options come from flags, CHESSRL_* variables
// and a YAML --config file (flag > env > file > default); the rank and world
// from RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT (or the pod's hostname).
//
// On success it prints one JSON line on stdout (rank, world_size, start_step,
// end_step, resumed, samples_total, weights_hash, checkpoint, seconds,
// published, publish_skipped) and exits 0; SIGTERM or SIGINT ends training at the next step with a checkpoint.
// Logs go to stderr.
#include "chessrl/trainer_service/main.h"

int main(int argc, char** argv) { return chessrl::trainer_service::trainer_main(argc, argv); }
