// The registry/replay client's option group (options.h tells what a group
// is): the addresses a service calls, how long one call may take, and its
// tokens and TLS (rpc/security_flags.h). Self-play and the trainer call the
// replay service and the registry; the evaluator the registry alone. Needs
// gRPC: chessrl::runtime_client (services builds).
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "chessrl/core/result.h"
#include "chessrl/rpc/clients.h"
#include "chessrl/rpc/security_flags.h"

namespace chessrl::runtime {

// Where the replay service listens unless told otherwise (chessrl-replay --listen).
inline constexpr const char* kDefaultReplayAddress = "127.0.0.1:50051";

struct ClientOptions {
  std::string replay = kDefaultReplayAddress;  // --replay
  std::string registry;                        // --registry; empty: --replay
  int rpc_deadline_s = 10;                     // seconds per call attempt
  rpc::ClientSecurityFlags security_flags;     // as given
  rpc::ClientSecurity security;                // read from them by load_security()

  // --replay, --registry (`registry_help`), --rpc-deadline and the client's
  // tokens and TLS: a client of the replay service and the registry.
  void add_to(CLI::App& app, const std::string& registry_help =
                                 "model registry address (host:port); default: "
                                 "--replay");
  // --registry (set `registry` to its default first), --rpc-deadline, tokens
  // and TLS: a client of the registry alone.
  void add_registry_only_to(CLI::App& app);
  // Reads the token and CA files the flags name into `security`; an error names the flag.
  Result<void> load_security();
};

}  // namespace chessrl::runtime
