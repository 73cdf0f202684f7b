// One civetweb server for /metrics and /healthz rather than prometheus-cpp's
// pull Exposer (prometheus::Exposer, civetweb inside): that one serves
// collectables only, always with 200, while /healthz must answer 503 with the
// reason (Kubernetes' probes read it). It would take a second server on a
// second port, which --metrics-listen, the chart's probes and PodMonitors do
// not have (civetweb's raw begin_request callback could intercept the path,
// but carries no state of ours). It would also add its own exposer_* series,
// a summary among them, to every scrape. prometheus-cpp still makes the
// series and the text: Registry::serialize().
#include "chessrl/metrics/exposer.h"

#include <CivetServer.h>

#include <string>
#include <vector>

#include "chessrl/core/error.h"

namespace chessrl::metrics {
namespace {

void respond(mg_connection* conn, int status, const char* reason, const char* type,
             const std::string& body) {
  mg_printf(conn,
            "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
            "Connection: close\r\n\r\n",
            status, reason, type, body.size());
  mg_write(conn, body.data(), body.size());
}

class MetricsHandler final : public CivetHandler {
 public:
  explicit MetricsHandler(const Registry& registry) : registry_(registry) {}
  bool handleGet(CivetServer*, mg_connection* conn) override {
    respond(conn, 200, "OK", "text/plain; version=0.0.4; charset=utf-8", registry_.serialize());
    return true;
  }

 private:
  const Registry& registry_;
};

class HealthHandler final : public CivetHandler {
 public:
  explicit HealthHandler(HealthCheck check) : check_(std::move(check)) {}
  bool handleGet(CivetServer*, mg_connection* conn) override {
    const std::string problem = check_ ? check_() : std::string();
    if (problem.empty()) {
      respond(conn, 200, "OK", "text/plain", "ok\n");
    } else {
      respond(conn, 503, "Service Unavailable", "text/plain", problem + "\n");
    }
    return true;
  }

 private:
  HealthCheck check_;
};

constexpr int kWorkerThreads = 32;
constexpr int kRequestTimeoutMs = 3000;

}  // namespace

class Exposer::Impl {
 public:
  Impl(const Registry& registry, const std::string& address, HealthCheck health)
      : metrics_(registry), health_(std::move(health)) {
    // civetweb wants "host:port"; it reports a failure to bind as an exception.
    // A worker thread is held by one connection until its request is read: with
    // 2 threads and civetweb's 30 s request timeout, two clients sending half a
    // request (anyone the metrics port is open to) kept /healthz, the liveness
    // probe, from answering, and the kubelet restarted the pod. Now a request
    // must arrive within kRequestTimeoutMs (a scrape or a probe sends it in one
    // segment), and kWorkerThreads threads serve: an attack must hold more than
    // that many connections, each renewed every kRequestTimeoutMs, to delay a
    // probe (docs/security.md, "Load and abuse").
    const std::vector<std::string> options = {
        "listening_ports",    address,
        "num_threads",        std::to_string(kWorkerThreads),
        "request_timeout_ms", std::to_string(kRequestTimeoutMs),
        // Accepted connections waiting for a thread (civetweb's default 20).
        "connection_queue",   "64",
    };
    try {
      server_ = std::make_unique<CivetServer>(options);
    } catch (const std::exception& e) {
      throw Error("metrics: cannot listen on " + address + ": " + e.what());
    }
    server_->addHandler("/metrics", metrics_);
    server_->addHandler("/healthz", health_);
    const auto ports = server_->getListeningPorts();
    port_ = ports.empty() ? 0 : ports.front();
  }
  ~Impl() { server_->close(); }
  int port() const { return port_; }

 private:
  MetricsHandler metrics_;
  HealthHandler health_;
  std::unique_ptr<CivetServer> server_;
  int port_ = 0;
};

Exposer::Exposer(const Registry& registry, const std::string& address, HealthCheck health)
    : impl_(std::make_unique<Impl>(registry, address, std::move(health))) {}
Exposer::~Exposer() = default;
int Exposer::port() const { return impl_->port(); }

}  // namespace chessrl::metrics
