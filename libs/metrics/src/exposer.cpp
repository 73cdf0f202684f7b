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

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <string>
#include <vector>

#include "civet_util.h"

namespace chessrl::metrics {
namespace {

// True when the whole response was written (handed to the kernel).
bool respond(mg_connection* conn, int status, const char* reason, const char* type,
             const std::string& body) {
  const int header = mg_printf(conn,
                               "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
                               "Connection: close\r\n\r\n",
                               status, reason, type, body.size());
  if (header <= 0) return false;
  return body.empty() || mg_write(conn, body.data(), body.size()) == static_cast<int>(body.size());
}

// GET /metrics, counted: each request takes a ticket (1, 2, ...) before it
// serializes the registry, and a response written in full records its
// ticket, so a waiter can tell a scrape that began after its point (and holds
// what was set before it) from one already under way.
class MetricsHandler final : public CivetHandler {
 public:
  explicit MetricsHandler(const Registry& registry) : registry_(registry) {}
  bool handleGet(CivetServer*, mg_connection* conn) override {
    std::uint64_t ticket;
    {
      std::lock_guard lock(mutex_);
      ticket = ++begun_;
    }
    const bool written =
        respond(conn, 200, "OK", "text/plain; version=0.0.4; charset=utf-8", registry_.serialize());
    if (written) {
      {
        std::lock_guard lock(mutex_);
        ++served_;
        newest_served_ = std::max(newest_served_, ticket);
      }
      served_cv_.notify_all();
    }
    return true;
  }
  std::uint64_t served() const {
    std::lock_guard lock(mutex_);
    return served_;
  }
  std::uint64_t begun() const {
    std::lock_guard lock(mutex_);
    return begun_;
  }
  bool wait_served_after(std::uint64_t point, std::chrono::milliseconds timeout) const {
    std::unique_lock lock(mutex_);
    return served_cv_.wait_for(lock, timeout, [&] { return newest_served_ > point; });
  }

 private:
  const Registry& registry_;
  mutable std::mutex mutex_;
  mutable std::condition_variable served_cv_;
  std::uint64_t begun_ = 0;          // requests that took a ticket
  std::uint64_t served_ = 0;         // responses written in full
  std::uint64_t newest_served_ = 0;  // the highest ticket among them
};

// GET /livez: the process serves HTTP (what the chart's liveness probes of
// replay, self-play and the evaluator ask; restarting them would not mend
// what /healthz reports, an unreachable Redis or registry).
class LiveHandler final : public CivetHandler {
 public:
  bool handleGet(CivetServer*, mg_connection* conn) override {
    respond(conn, 200, "OK", "text/plain", "ok\n");
    return true;
  }
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
// The probe address: the kubelet sends a probe every few seconds, in one
// segment, and nothing else reaches it (no NetworkPolicy rule opens it).
constexpr int kProbeThreads = 4;
constexpr int kProbeRequestTimeoutMs = 1000;

}  // namespace

class Exposer::Impl {
 public:
  Impl(const Registry& registry, const std::string& address, HealthCheck health,
       const std::string& probe_address)
      : metrics_(registry), health_(std::move(health)) {
    // A worker thread is held by one connection until its request is read: with
    // 2 threads and civetweb's 30 s request timeout, two clients sending half a
    // request (anyone the metrics port is open to) kept /healthz, the liveness
    // probe, from answering, and the kubelet restarted the pod. Now a request
    // must arrive within kRequestTimeoutMs (a scrape or a probe sends it in one
    // segment), and kWorkerThreads threads serve: an attack must hold more than
    // that many connections, each renewed every kRequestTimeoutMs, to delay a
    // request. The probes go to probe_address, which only the kubelet reaches
    // (docs/security.md, "Load and abuse").
    server_ = civet::listen_on(address, kWorkerThreads, kRequestTimeoutMs, 64, "metrics");
    server_->addHandler("/metrics", metrics_);
    server_->addHandler("/healthz", health_);
    port_ = civet::bound_port(*server_);
    if (!probe_address.empty() && probe_address != "off") {
      probes_ = civet::listen_on(probe_address, kProbeThreads, kProbeRequestTimeoutMs, 16, "probes");
      probes_->addHandler("/healthz", health_);
      probes_->addHandler("/livez", live_);
      probe_port_ = civet::bound_port(*probes_);
    }
  }
  ~Impl() {
    // Without civetweb's wait of up to 2 s per server (civet_util.h).
    civet::close_quickly({probes_.get(), server_.get()}, {probe_port_, port_});
  }
  int port() const { return port_; }
  int probe_port() const { return probe_port_; }
  const MetricsHandler& metrics() const { return metrics_; }
  void handle(const std::string& uri, HttpRequestHandler handler) {
    std::lock_guard lock(handlers_mutex_);
    // Kept until the server is closed: a request may still be in the one replaced.
    handlers_.push_back(std::make_unique<civet::FunctionHandler>(std::move(handler)));
    server_->addHandler(uri, *handlers_.back());
  }

 private:
  MetricsHandler metrics_;
  HealthHandler health_;
  LiveHandler live_;
  std::mutex handlers_mutex_;
  std::vector<std::unique_ptr<civet::FunctionHandler>> handlers_;  // outlive server_ (declared first)
  std::unique_ptr<CivetServer> server_;
  std::unique_ptr<CivetServer> probes_;
  int port_ = 0;
  int probe_port_ = 0;
};

Exposer::Exposer(const Registry& registry, const std::string& address, HealthCheck health,
                 const std::string& probe_address)
    : impl_(std::make_unique<Impl>(registry, address, std::move(health), probe_address)) {}
Exposer::~Exposer() = default;
int Exposer::port() const { return impl_->port(); }
int Exposer::probe_port() const { return impl_->probe_port(); }
void Exposer::handle(const std::string& uri, HttpHandler handler) {
  impl_->handle(uri, [handler = std::move(handler)](const HttpRequest& request) {
    return handler(request.path);
  });
}
void Exposer::handle_request(const std::string& uri, HttpRequestHandler handler) {
  impl_->handle(uri, std::move(handler));
}
std::uint64_t Exposer::scrapes() const { return impl_->metrics().served(); }
std::uint64_t Exposer::scrape_point() const { return impl_->metrics().begun(); }
bool Exposer::wait_for_scrape(std::uint64_t point, std::chrono::milliseconds timeout) const {
  return impl_->metrics().wait_served_after(point, timeout);
}

}  // namespace chessrl::metrics
