#include "chessrl/runtime/client_options.h"

#include <utility>

namespace chessrl::runtime {
namespace {

void add_deadline_and_security(CLI::App& app, ClientOptions& o, const char* calls) {
  app.add_option("--rpc-deadline", o.rpc_deadline_s,
                 std::string("seconds one ") + calls + " call may take")
      ->check(CLI::Range(1, 3600))
      ->capture_default_str();
  rpc::add_client_security_options(app, o.security_flags);
}

}  // namespace

void ClientOptions::add_to(CLI::App& app, const std::string& registry_help) {
  app.add_option("--replay", replay, "replay service address (host:port)")->capture_default_str();
  app.add_option("--registry", registry, registry_help);
  add_deadline_and_security(app, *this, "replay or registry");
}

void ClientOptions::add_registry_only_to(CLI::App& app) {
  app.add_option("--registry", registry, "model registry address (host:port)")
      ->capture_default_str();
  add_deadline_and_security(app, *this, "registry");
}

Result<void> ClientOptions::load_security() {
  auto loaded = rpc::load_client_security(security_flags);
  if (!loaded.ok()) return fail(loaded.error());
  security = std::move(loaded).value();
  return {};
}

}  // namespace chessrl::runtime
