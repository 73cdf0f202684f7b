// The command-line options for tokens and TLS every binary shares, so each
// says the same thing the same way. Values never hold a secret: tokens and
// keys are read from files (or, for tokens, CHESSRL_TOKEN*), see auth.h.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "chessrl/core/result.h"
#include "chessrl/rpc/auth.h"
#include "chessrl/rpc/clients.h"

namespace chessrl::rpc {

// --token-file, --tls, --tls-ca, --tls-server-name (fills `flags`; see
// load_client_security in clients.h).
void add_client_security_options(CLI::App& app, ClientSecurityFlags& flags);

struct ServerSecurityFlags {
  std::string auth_dir;  // empty: CHESSRL_TOKEN_SELFPLAY/_TRAINER/_EVALUATOR
  std::string tls_cert_file;
  std::string tls_key_file;
};
// --auth-dir, --tls-cert, --tls-key.
void add_server_security_options(CLI::App& app, ServerSecurityFlags& flags);

struct ServerSecurity {
  ServerAuth auth;
  std::string tls_cert_pem;  // empty: no TLS
  std::string tls_key_pem;
};
// Reads the tokens and the certificate and key; errors name the option and file.
Result<ServerSecurity> load_server_security(const ServerSecurityFlags& flags);

}  // namespace chessrl::rpc
