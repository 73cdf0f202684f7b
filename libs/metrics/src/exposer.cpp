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
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "chessrl/core/error.h"

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

const char* reason_phrase(int status) {
  switch (status) {
    case 200: return "OK";
    case 304: return "Not Modified";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 503: return "Service Unavailable";
    default: return status < 400 ? "OK" : "Error";
  }
}

// A handler added with Exposer::handle(): GET and HEAD call the function; every
// other method is refused with 405 (these paths are read-only).
class FunctionHandler final : public CivetHandler {
 public:
  explicit FunctionHandler(HttpHandler handler) : handler_(std::move(handler)) {}
  bool handleGet(CivetServer*, mg_connection* conn) override { return serve(conn, true); }
  bool handleHead(CivetServer*, mg_connection* conn) override { return serve(conn, false); }
  bool handlePost(CivetServer*, mg_connection* conn) override { return refuse(conn); }
  bool handlePut(CivetServer*, mg_connection* conn) override { return refuse(conn); }
  bool handleDelete(CivetServer*, mg_connection* conn) override { return refuse(conn); }
  bool handlePatch(CivetServer*, mg_connection* conn) override { return refuse(conn); }
  bool handleOptions(CivetServer*, mg_connection* conn) override { return refuse(conn); }

 private:
  bool serve(mg_connection* conn, bool with_body) {
    const mg_request_info* request = mg_get_request_info(conn);
    const std::string path = request && request->local_uri ? request->local_uri : "/";
    HttpResponse response;
    try {
      response = handler_(path);
    } catch (const std::exception& e) {
      response = {500, "text/plain", std::string("internal error: ") + e.what() + "\n"};
    }
    std::string head = "HTTP/1.1 " + std::to_string(response.status) + " " +
                       reason_phrase(response.status) + "\r\nContent-Type: " +
                       response.content_type + "\r\nContent-Length: " +
                       std::to_string(response.body.size()) +
                       "\r\nX-Content-Type-Options: nosniff\r\n";
    if (!response.cache_control.empty())
      head += "Cache-Control: " + response.cache_control + "\r\n";
    for (const auto& [name, value] : response.headers) head += name + ": " + value + "\r\n";
    head += "Connection: close\r\n\r\n";
    if (mg_write(conn, head.data(), head.size()) != static_cast<int>(head.size())) return true;
    if (with_body && !response.body.empty())
      mg_write(conn, response.body.data(), response.body.size());
    return true;
  }
  static bool refuse(mg_connection* conn) {
    const std::string body = "read-only: only GET and HEAD\n";
    mg_printf(conn,
              "HTTP/1.1 405 Method Not Allowed\r\nAllow: GET, HEAD\r\nContent-Type: "
              "text/plain\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n",
              body.size());
    mg_write(conn, body.data(), body.size());
    return true;
  }
  HttpHandler handler_;
};

constexpr int kWorkerThreads = 32;
constexpr int kRequestTimeoutMs = 3000;
// The probe address: the kubelet sends a probe every few seconds, in one
// segment, and nothing else reaches it (no NetworkPolicy rule opens it).
constexpr int kProbeThreads = 4;
constexpr int kProbeRequestTimeoutMs = 1000;

std::unique_ptr<CivetServer> listen_on(const std::string& address, int threads, int timeout_ms,
                                       int queue, const char* what) {
  // civetweb wants "host:port"; it reports a failure to bind as an exception.
  const std::vector<std::string> options = {
      "listening_ports",    address,
      "num_threads",        std::to_string(threads),
      "request_timeout_ms", std::to_string(timeout_ms),
      // Accepted connections waiting for a thread (civetweb's default 20).
      "connection_queue",   std::to_string(queue),
  };
  try {
    return std::make_unique<CivetServer>(options);
  } catch (const std::exception& e) {
    throw Error(std::string(what) + ": cannot listen on " + address + ": " + e.what());
  }
}

int bound_port(CivetServer& server) {
  const auto ports = server.getListeningPorts();
  return ports.empty() ? 0 : ports.front();
}

// A connection to 127.0.0.1:port, closed at once (no request): it wakes
// civetweb's master thread from its poll() of the listening sockets. It
// fails harmlessly where the address is not reachable over loopback.
void poke(int port) {
  if (port <= 0) return;
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  (void)::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  ::close(fd);
}

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
    server_ = listen_on(address, kWorkerThreads, kRequestTimeoutMs, 64, "metrics");
    server_->addHandler("/metrics", metrics_);
    server_->addHandler("/healthz", health_);
    port_ = bound_port(*server_);
    if (!probe_address.empty() && probe_address != "off") {
      probes_ = listen_on(probe_address, kProbeThreads, kProbeRequestTimeoutMs, 16, "probes");
      probes_->addHandler("/healthz", health_);
      probes_->addHandler("/livez", live_);
      probe_port_ = bound_port(*probes_);
    }
  }
  ~Impl() {
    // civetweb's master thread looks at the stop flag only between polls of
    // its listening sockets, each up to 2 s (SOCKET_TIMEOUT_QUANTUM), and
    // close() waits for it: up to 2 s per server, the last seconds of every
    // process's stop. A connection ends the poll at once, so a thread makes
    // one every 10 ms until both servers are closed.
    std::atomic<bool> closed{false};
    std::thread waker([&] {
      while (!closed.load()) {
        poke(port_);
        poke(probe_port_);
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    });
    if (probes_) probes_->close();
    server_->close();
    closed = true;
    waker.join();
  }
  int port() const { return port_; }
  int probe_port() const { return probe_port_; }
  const MetricsHandler& metrics() const { return metrics_; }
  void handle(const std::string& uri, HttpHandler handler) {
    std::lock_guard lock(handlers_mutex_);
    // Kept until the server is closed: a request may still be in the one replaced.
    handlers_.push_back(std::make_unique<FunctionHandler>(std::move(handler)));
    server_->addHandler(uri, *handlers_.back());
  }

 private:
  MetricsHandler metrics_;
  HealthHandler health_;
  LiveHandler live_;
  std::mutex handlers_mutex_;
  std::vector<std::unique_ptr<FunctionHandler>> handlers_;  // outlive server_ (declared first)
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
  impl_->handle(uri, std::move(handler));
}
std::uint64_t Exposer::scrapes() const { return impl_->metrics().served(); }
std::uint64_t Exposer::scrape_point() const { return impl_->metrics().begun(); }
bool Exposer::wait_for_scrape(std::uint64_t point, std::chrono::milliseconds timeout) const {
  return impl_->metrics().wait_served_after(point, timeout);
}

}  // namespace chessrl::metrics
