// chessrl-selfplay's entry point: parses the command line (flags, CHESSRL_*
// variables, a YAML --config file), runs the service and returns the process's
// exit status (0 done, 1 failed, 2 bad options). The binary's main.cpp calls it
// and nothing else, so everything the service does lives in its library.
#pragma once

namespace chessrl::selfplay_service {

int selfplay_main(int argc, char** argv);

}  // namespace chessrl::selfplay_service
