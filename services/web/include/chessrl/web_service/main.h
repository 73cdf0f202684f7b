// chessrl-web's entry point: parses the command line (flags, CHESSRL_*
// variables, a YAML --config file), runs the service and returns the process's
// exit status (0 stopped, 1 failed, 2 bad options). The binary's main.cpp calls
// it and nothing else.
#pragma once

namespace chessrl::web_service {

int web_main(int argc, char** argv);

}  // namespace chessrl::web_service
