// Server credentials that check the bearer token on a call's initial metadata,
// before gRPC reads its message.
//
// gRPC's synchronous server reads a unary call's whole request (up to the
// message limit) before any handler runs, so a token checked in the handler
// (ServerAuth::check) is checked after the memory was spent: clients with no
// token at all could make the server buffer message after message. gRPC's
// auth metadata processor runs on the initial metadata instead; its C++
// wrapper refuses plaintext credentials, so these credentials set it through
// gRPC's C API on plaintext or TLS credentials alike.
//
// The gate answers UNAUTHENTICATED, with ServerAuth's message, to a call with
// no token or one it does not know; what a known token's role may do is still
// checked by the handler. The standard health service (grpc.health.v1) stays
// open: probes carry no token.
#pragma once

#include <grpcpp/security/server_credentials.h>

#include <functional>
#include <memory>
#include <string>

#include "chessrl/rpc/auth.h"

namespace chessrl::rpc {

// Called for each call the gate refuses, with the method's short name as the
// client sent it ("PushGames"; anything, from a hostile client) and the code.
using GateRefusal = std::function<void(const std::string& method, grpc::StatusCode code)>;

// Plaintext when `tls_cert_pem` is empty, else TLS with that certificate and
// key (PEM). With `auth` not enabled, no gate (every call goes through).
std::shared_ptr<grpc::ServerCredentials> token_gated_credentials(
    std::shared_ptr<const ServerAuth> auth, const std::string& tls_cert_pem = "",
    const std::string& tls_key_pem = "", GateRefusal on_refused = {});

}  // namespace chessrl::rpc
