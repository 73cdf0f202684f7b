// `chessrl probe`: is every named endpoint up? It asks gRPC servers through the
// standard health service (grpc.health.v1) and HTTP endpoints with a GET, retries
// each until it answers or --timeout passes, prints one line per endpoint and
// exits 0 only when all answered. The Helm chart's `helm test` pod runs it; it is
// also a quick check by hand ("is replay up?").
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "chessrl/core/error.h"
#include "chessrl/core/result.h"
#include "chessrl/metrics/http_client.h"
#include "chessrl/rpc/clients.h"
#include "commands.h"
#include "grpc/health/v1/health.grpc.pb.h"

namespace chessrl::tool {
namespace {

using Clock = std::chrono::steady_clock;

struct ProbeOptions {
  std::vector<std::string> grpc;     // host:port
  std::vector<std::string> http;     // http://host[:port]/path: 200 is enough
  std::vector<std::string> metrics;  // http://host[:port]/path: 200 and chessrl_build_info
  double timeout_s = 60;
  double attempt_s = 3;
  // TLS for --grpc-health (the health service needs no token).
  bool tls = false;
  std::string tls_ca;
  std::string tls_server_name;
  rpc::ClientOptions channel;  // filled from them
};

// The one probe answer we print: what failed, or what it said.
using Answer = Result<std::string>;

Answer probe_grpc(const std::string& target, double attempt_s, rpc::ClientOptions options) {
  options.address = target;
  auto channel = rpc::make_channel(options);
  auto stub = grpc::health::v1::Health::NewStub(channel);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::milliseconds(int(attempt_s * 1000)));
  grpc::health::v1::HealthCheckRequest request;  // "": the server as a whole
  grpc::health::v1::HealthCheckResponse response;
  const grpc::Status status = stub->Check(&context, request, &response);
  if (!status.ok()) return fail("gRPC " + std::to_string(int(status.error_code())) + " " +
                                status.error_message());
  const auto state = grpc::health::v1::HealthCheckResponse::ServingStatus_Name(response.status());
  if (response.status() != grpc::health::v1::HealthCheckResponse::SERVING) return fail(state);
  return state;
}

struct Url {
  std::string host;
  int port = 80;
  std::string path = "/";
};

// http://host[:port][/path]; https is refused (the chart's endpoints are plain HTTP).
Result<Url> parse_url(const std::string& url) {
  const std::string scheme = "http://";
  if (url.rfind(scheme, 0) != 0) return fail("'" + url + "' is not an http:// URL");
  std::string rest = url.substr(scheme.size());
  Url out;
  if (const auto slash = rest.find('/'); slash != std::string::npos) {
    out.path = rest.substr(slash);
    rest = rest.substr(0, slash);
  }
  if (const auto colon = rest.rfind(':'); colon != std::string::npos) {
    const std::string port = rest.substr(colon + 1);
    rest = rest.substr(0, colon);
    try {
      std::size_t used = 0;
      out.port = std::stoi(port, &used);
      if (used != port.size() || out.port < 1 || out.port > 65535) throw std::out_of_range(port);
    } catch (const std::exception&) {
      return fail("'" + url + "': bad port '" + port + "'");
    }
  }
  if (rest.empty()) return fail("'" + url + "' has no host");
  out.host = rest;
  return out;
}

// GET through metrics::http_get (civetweb's client).
Answer probe_http(const Url& url, bool want_metrics, double attempt_s) {
  auto reply = metrics::http_get(url.host, url.port, url.path,
                                 std::chrono::milliseconds(std::int64_t(attempt_s * 1000)));
  if (!reply.ok()) {
    // The line names the URL already: keep what failed.
    const std::string& error = reply.error();
    const auto what = error.rfind("http://", 0) == 0 ? error.find(": ") : std::string::npos;
    return fail(what == std::string::npos ? error : error.substr(what + 2));
  }
  if (reply->status != 200) return fail("HTTP " + std::to_string(reply->status));
  const std::string& body = reply->body;
  if (want_metrics && body.find("chessrl_build_info") == std::string::npos)
    return fail("HTTP 200 but no chessrl_build_info in " + std::to_string(body.size()) + " bytes");
  return "HTTP 200, " + std::to_string(body.size()) + " bytes";
}

struct Target {
  std::string kind;  // "grpc-health", "http" or "metrics"
  std::string where;
};

int run_probe(const ProbeOptions& o) {
  std::vector<Target> targets;
  for (const auto& t : o.grpc) targets.push_back({"grpc-health", t});
  for (const auto& t : o.http) targets.push_back({"http", t});
  for (const auto& t : o.metrics) targets.push_back({"metrics", t});
  std::vector<Url> urls(targets.size());
  for (std::size_t i = 0; i < targets.size(); ++i) {
    if (targets[i].kind == "grpc-health") continue;
    auto url = parse_url(targets[i].where);
    if (!url.ok()) throw Error("--" + targets[i].kind + ": " + url.error());
    urls[i] = *url;
  }

  const auto start = Clock::now();
  const auto deadline = start + std::chrono::milliseconds(int(o.timeout_s * 1000));
  int failed = 0;
  // Each endpoint in turn, each retried until the shared deadline: a slow first
  // one leaves less time to the others, as it should in a test with one bound.
  for (std::size_t i = 0; i < targets.size(); ++i) {
    const Target& t = targets[i];
    int attempts = 0;
    Answer last = fail("not tried");
    for (;;) {
      ++attempts;
      last = t.kind == "grpc-health" ? probe_grpc(t.where, o.attempt_s, o.channel)
                                     : probe_http(urls[i], t.kind == "metrics", o.attempt_s);
      if (last.ok() || Clock::now() >= deadline) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
    const double at = std::chrono::duration<double>(Clock::now() - start).count();
    if (last.ok()) {
      std::printf("ok   %-11s %s: %s (%.1f s, %d attempt%s)\n", t.kind.c_str(), t.where.c_str(),
                  last->c_str(), at, attempts, attempts == 1 ? "" : "s");
    } else {
      ++failed;
      std::printf("FAIL %-11s %s: %s (gave up after %.1f s, %d attempts)\n", t.kind.c_str(),
                  t.where.c_str(), last.error().c_str(), at, attempts);
    }
    std::fflush(stdout);
  }
  std::printf("%zu passed, %d failed\n", targets.size() - std::size_t(failed), failed);
  return failed == 0 ? 0 : 1;
}

}  // namespace

void add_probe_command(CLI::App& app) {
  auto o = std::make_shared<ProbeOptions>();
  CLI::App* cmd = app.add_subcommand(
      "probe",
      "Check that endpoints answer: gRPC health (SERVING), HTTP 200, /metrics with "
      "chessrl_build_info; retries until --timeout; exit 0 only when all answer");
  cmd->add_option("--grpc-health", o->grpc, "host:port of a gRPC server (repeatable)");
  cmd->add_option("--http", o->http, "http://host:port/path that must answer 200 (repeatable)");
  cmd->add_option("--metrics", o->metrics,
                  "http://host:port/metrics that must answer 200 with chessrl metrics (repeatable)");
  cmd->add_option("--timeout", o->timeout_s, "seconds before giving up on the endpoints left")
      ->check(CLI::Range(0.0, 3600.0))
      ->capture_default_str();
  cmd->add_option("--attempt-timeout", o->attempt_s, "seconds one attempt may take")
      ->check(CLI::Range(0.1, 600.0))
      ->capture_default_str();
  cmd->add_flag("--tls", o->tls, "talk TLS to the --grpc-health servers");
  cmd->add_option("--tls-ca", o->tls_ca, "CA certificate(s) (PEM) to trust; implies --tls");
  cmd->add_option("--tls-server-name", o->tls_server_name,
                  "the name the servers' certificates carry, when not the address's host");
  cmd->callback([o] {
    if (o->grpc.empty() && o->http.empty() && o->metrics.empty())
      throw CLI::ValidationError("probe", "name at least one --grpc-health, --http or --metrics");
    rpc::ClientSecurityFlags flags;
    flags.tls = o->tls;
    flags.tls_ca_file = o->tls_ca;
    flags.tls_server_name = o->tls_server_name;
    auto security = rpc::load_client_security(flags);
    if (!security.ok()) throw CLI::ValidationError("probe", security.error());
    o->channel.security = std::move(security).value();
    o->channel.security.token.clear();  // the health service is open; CHESSRL_TOKEN is not sent
    const int code = run_probe(*o);
    if (code != 0) throw CLI::RuntimeError(code);
  });
}

}  // namespace chessrl::tool
