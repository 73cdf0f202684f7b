#include "chessrl/rpc/security_flags.h"

#include <fstream>
#include <iterator>

namespace chessrl::rpc {
namespace {

Result<std::string> read_pem(const std::string& path, const std::string& option,
                             const std::string& marker) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail(option + " " + path + ": cannot read it");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (text.find(marker) == std::string::npos) {
    return fail(option + " " + path + ": not a PEM file (no " + marker + ")");
  }
  return text;
}

}  // namespace

void add_client_security_options(CLI::App& app, ClientSecurityFlags& flags) {
  app.add_option("--token-file", flags.token_file,
                 "file holding this client's bearer token for the replay service and "
                 "registry (default: the variable CHESSRL_TOKEN, if set)");
  app.add_flag("--tls", flags.tls, "talk TLS to the replay service and registry");
  app.add_option("--tls-ca", flags.tls_ca_file,
                 "CA certificate(s) (PEM) to trust for the server's certificate; implies --tls");
  app.add_option("--tls-server-name", flags.tls_server_name,
                 "the name the server's certificate carries, when not the address's host");
}

void add_server_security_options(CLI::App& app, ServerSecurityFlags& flags) {
  app.add_option("--auth-dir", flags.auth_dir,
                 "directory of bearer tokens, one file per caller role (selfplay, trainer, "
                 "evaluator); default: CHESSRL_TOKEN_SELFPLAY/_TRAINER/_EVALUATOR; none: open");
  app.add_option("--tls-cert", flags.tls_cert_file, "TLS certificate chain (PEM) for gRPC");
  app.add_option("--tls-key", flags.tls_key_file, "TLS private key (PEM) of --tls-cert");
}

Result<ServerSecurity> load_server_security(const ServerSecurityFlags& flags) {
  ServerSecurity out;
  auto auth = ServerAuth::load(flags.auth_dir);
  if (!auth.ok()) return fail(auth.error());
  out.auth = std::move(auth).value();
  if (flags.tls_cert_file.empty() != flags.tls_key_file.empty()) {
    return fail("--tls-cert and --tls-key go together: give both or neither");
  }
  if (!flags.tls_cert_file.empty()) {
    auto cert = read_pem(flags.tls_cert_file, "--tls-cert", "-----BEGIN CERTIFICATE-----");
    if (!cert.ok()) return fail(cert.error());
    auto key = read_pem(flags.tls_key_file, "--tls-key", "PRIVATE KEY-----");
    if (!key.ok()) return fail(key.error());
    out.tls_cert_pem = std::move(cert).value();
    out.tls_key_pem = std::move(key).value();
  }
  return out;
}

}  // namespace chessrl::rpc
