// chessrl-replay: the replay store and model registry service (gRPC over
// Redis). See docs/replay.md. Options come from flags, CHESSRL_* variables and
// a YAML --config file (flag > env > file > default).
#include "chessrl/replay_service/main.h"

int main(int argc, char** argv) { return chessrl::replay_service::replay_main(argc, argv); }
