// chessrl-selfplay: plays self-play games on the newest model in the registry
// and pushes them to the replay service (services/selfplay/src). Options come
// from flags, CHESSRL_* variables and a YAML --config file (flag > env > file
// > default). SIGTERM or SIGINT stops play (the games in progress are
// abandoned), pushes what is buffered for up to --flush-timeout, waits up to
// --final-scrape-wait for a scrape of /metrics when games were lost, and exits
// 0; a failure of self-play exits 1, bad options 2. Logs go to stderr.
#include "chessrl/selfplay_service/main.h"

int main(int argc, char** argv) { return chessrl::selfplay_service::selfplay_main(argc, argv); }
