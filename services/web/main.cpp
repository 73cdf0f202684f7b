// chessrl-web: the game viewer. A read-only web page of the live self-play
// games (one board per self-play pod, polled from each pod's GET /live), the
// evaluator's newest gating and anchor games and the Elo curve (polled from
// the evaluator's GET /matches). It polls each source once per interval,
// whatever the number of viewers, and serves one cached snapshot to all of
// them; every script, style and piece image is built into the binary. Holds
// no token and talks to nothing but those metrics ports. Options come from
// flags, CHESSRL_* variables and a YAML --config file (flag > env > file >
// default). SIGTERM or SIGINT stops it; bad options exit 2.
#include "chessrl/web_service/main.h"

int main(int argc, char** argv) { return chessrl::web_service::web_main(argc, argv); }
