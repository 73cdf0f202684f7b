#include "chessrl/rpc/token_gate.h"

#include <grpc/grpc_security.h>

#include <optional>
#include <string_view>

namespace chessrl::rpc {
namespace {

constexpr std::string_view kHealthPrefix = "/grpc.health.v1.Health/";

std::string_view view(const grpc_slice& s) {
  return {reinterpret_cast<const char*>(GRPC_SLICE_START_PTR(s)), GRPC_SLICE_LENGTH(s)};
}

// The processor's state: the tokens, shared with the handlers' checks.
struct Gate {
  std::shared_ptr<const ServerAuth> auth;
  GateRefusal on_refused;
};

void process(void* state, grpc_auth_context* /*context*/, const grpc_metadata* md,
             std::size_t num_md, grpc_process_auth_metadata_done_cb done, void* user_data) {
  const Gate& gate = *static_cast<const Gate*>(state);
  std::optional<std::string_view> authorization;
  std::string method = "call";
  for (std::size_t i = 0; i < num_md; ++i) {
    const std::string_view key = view(md[i].key);
    if (key == kAuthorizationKey) authorization = view(md[i].value);
    if (key == ":path") method = std::string(view(md[i].value));
  }
  if (method.rfind(kHealthPrefix, 0) == 0) {
    done(user_data, nullptr, 0, nullptr, 0, GRPC_STATUS_OK, nullptr);
    return;
  }
  // The method's short name in messages, as the handlers name it ("PushGames").
  if (const auto slash = method.rfind('/'); slash != std::string::npos) method = method.substr(slash + 1);
  // Every role may read: a known token passes here, its role is checked later.
  const grpc::Status status = gate.auth->check_token(authorization, Action::kRead, method.c_str());
  if (status.ok()) {
    done(user_data, nullptr, 0, nullptr, 0, GRPC_STATUS_OK, nullptr);
  } else {
    if (gate.on_refused) gate.on_refused(method, status.error_code());
    done(user_data, nullptr, 0, nullptr, 0, static_cast<grpc_status_code>(status.error_code()),
         status.error_message().c_str());
  }
}

void destroy(void* state) { delete static_cast<Gate*>(state); }

// gRPC's ServerCredentials, with the port added through the C API (the one
// place a processor can be set on plaintext credentials).
class GatedCredentials final : public grpc::ServerCredentials {
 public:
  GatedCredentials(std::shared_ptr<const ServerAuth> auth, std::string cert, std::string key,
                   GateRefusal on_refused)
      : auth_(std::move(auth)),
        cert_(std::move(cert)),
        key_(std::move(key)),
        on_refused_(std::move(on_refused)) {}

  void SetAuthMetadataProcessor(const std::shared_ptr<grpc::AuthMetadataProcessor>&) override {
    // Not used: the gate is the processor.
  }

 private:
  int AddPortToServer(const std::string& addr, grpc_server* server) override {
    grpc_server_credentials* creds = nullptr;
    if (cert_.empty()) {
      creds = grpc_insecure_server_credentials_create();
    } else {
      grpc_ssl_pem_key_cert_pair pair{key_.c_str(), cert_.c_str()};
      creds = grpc_ssl_server_credentials_create_ex(
          nullptr, &pair, 1, GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE, nullptr);
    }
    if (!creds) return 0;
    if (auth_ && auth_->enabled()) {
      grpc_server_credentials_set_auth_metadata_processor(
          creds, grpc_auth_metadata_processor{&process, &destroy, new Gate{auth_, on_refused_}});
    }
    const int port = grpc_server_add_http2_port(server, addr.c_str(), creds);
    grpc_server_credentials_release(creds);
    return port;
  }
  std::shared_ptr<const ServerAuth> auth_;
  std::string cert_, key_;
  GateRefusal on_refused_;
};

}  // namespace

std::shared_ptr<grpc::ServerCredentials> token_gated_credentials(
    std::shared_ptr<const ServerAuth> auth, const std::string& tls_cert_pem,
    const std::string& tls_key_pem, GateRefusal on_refused) {
  return std::make_shared<GatedCredentials>(std::move(auth), tls_cert_pem, tls_key_pem,
                                            std::move(on_refused));
}

}  // namespace chessrl::rpc
