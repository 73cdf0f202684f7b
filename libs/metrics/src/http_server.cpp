// HttpServer, and the civetweb pieces it shares with the Exposer
// (civet_util.h): the listener, the quick close, and the handler that writes
// an HttpResponse (a shared body in slices, HEAD without a body).
#include "chessrl/metrics/http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "chessrl/core/error.h"
#include "civet_util.h"

namespace chessrl::metrics {

std::optional<std::string_view> HttpRequest::header(std::string_view name) const {
  for (const auto& [key, value] : headers) {
    if (key.size() == name.size() && ::strncasecmp(key.data(), name.data(), key.size()) == 0)
      return std::string_view(value);
  }
  return std::nullopt;
}

std::size_t HttpResponse::content_length() const {
  if (!shared_body) return body.size();
  const std::size_t size = shared_body->size();
  const std::size_t offset = std::min(shared_offset, size);
  return std::min(shared_length, size - offset);
}

namespace civet {
namespace {

const char* reason_phrase(int status) {
  switch (status) {
    case 200: return "OK";
    case 206: return "Partial Content";
    case 301: return "Moved Permanently";
    case 302: return "Found";
    case 304: return "Not Modified";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 416: return "Range Not Satisfiable";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
    default: return status < 400 ? "OK" : "Error";
  }
}

// A body goes to the socket in slices of this: civetweb's mg_write counts in
// int, and its stop flag is looked at between slices.
constexpr std::size_t kWriteSlice = 1 << 20;

bool write_all(mg_connection* conn, const char* data, std::size_t size) {
  while (size > 0) {
    const std::size_t n = std::min(size, kWriteSlice);
    if (mg_write(conn, data, n) != static_cast<int>(n)) return false;  // the reader went away
    data += n;
    size -= n;
  }
  return true;
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

bool FunctionHandler::serve(mg_connection* conn, bool with_body) {
  const mg_request_info* info = mg_get_request_info(conn);
  HttpRequest request;
  request.method = with_body ? "GET" : "HEAD";
  request.path = info && info->local_uri ? info->local_uri : "/";
  if (info != nullptr) {
    for (int i = 0; i < info->num_headers; ++i) {
      const mg_header& h = info->http_headers[i];
      if (h.name != nullptr) request.headers.emplace_back(h.name, h.value ? h.value : "");
    }
  }
  HttpResponse response;
  try {
    response = handler_(request);
  } catch (const std::exception& e) {
    response = {500, "text/plain", std::string("internal error: ") + e.what() + "\n"};
  }
  const std::size_t length = response.content_length();
  std::string head = "HTTP/1.1 " + std::to_string(response.status) + " " +
                     reason_phrase(response.status) + "\r\nContent-Type: " +
                     response.content_type + "\r\nContent-Length: " + std::to_string(length) +
                     "\r\nX-Content-Type-Options: nosniff\r\n";
  if (!response.cache_control.empty())
    head += "Cache-Control: " + response.cache_control + "\r\n";
  for (const auto& [name, value] : response.headers) head += name + ": " + value + "\r\n";
  head += "Connection: close\r\n\r\n";
  if (mg_write(conn, head.data(), head.size()) != static_cast<int>(head.size())) return true;
  if (!with_body || length == 0) return true;
  if (response.shared_body) {
    const std::size_t offset = std::min(response.shared_offset, response.shared_body->size());
    write_all(conn, response.shared_body->data() + offset, length);
  } else {
    write_all(conn, response.body.data(), length);
  }
  return true;
}

bool FunctionHandler::refuse(mg_connection* conn) {
  const std::string body = "read-only: only GET and HEAD\n";
  mg_printf(conn,
            "HTTP/1.1 405 Method Not Allowed\r\nAllow: GET, HEAD\r\nContent-Type: "
            "text/plain\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n",
            body.size());
  mg_write(conn, body.data(), body.size());
  return true;
}

std::unique_ptr<CivetServer> listen_on(const std::string& address, int threads, int timeout_ms,
                                       int queue, const std::string& what) {
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
    throw Error(what + ": cannot listen on " + address + ": " + e.what());
  }
}

int bound_port(CivetServer& server) {
  const auto ports = server.getListeningPorts();
  return ports.empty() ? 0 : ports.front();
}

void close_quickly(const std::vector<CivetServer*>& servers, const std::vector<int>& ports) {
  // civetweb's master thread looks at the stop flag only between polls of
  // its listening sockets, each up to 2 s (SOCKET_TIMEOUT_QUANTUM), and
  // close() waits for it: up to 2 s per server, the last seconds of every
  // process's stop. A connection ends the poll at once.
  std::atomic<bool> closed{false};
  std::thread waker([&] {
    while (!closed.load()) {
      for (const int port : ports) poke(port);
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  });
  for (CivetServer* server : servers) {
    if (server != nullptr) server->close();
  }
  closed = true;
  waker.join();
}

}  // namespace civet

class HttpServer::Impl {
 public:
  Impl(const std::string& address, const HttpServerOptions& options) {
    server_ = civet::listen_on(address, options.threads,
                               static_cast<int>(options.request_timeout.count()),
                               options.connection_queue, options.name);
    port_ = civet::bound_port(*server_);
  }
  ~Impl() { civet::close_quickly({server_.get()}, {port_}); }
  void handle(const std::string& uri, HttpRequestHandler handler) {
    std::lock_guard lock(mutex_);
    // Kept until the server is closed: a request may still be in the one replaced.
    handlers_.push_back(std::make_unique<civet::FunctionHandler>(std::move(handler)));
    server_->addHandler(uri, *handlers_.back());
  }
  int port() const { return port_; }

 private:
  std::mutex mutex_;
  std::vector<std::unique_ptr<civet::FunctionHandler>> handlers_;  // outlive server_
  std::unique_ptr<CivetServer> server_;
  int port_ = 0;
};

HttpServer::HttpServer(const std::string& address, HttpServerOptions options)
    : impl_(std::make_unique<Impl>(address, options)) {}
HttpServer::~HttpServer() = default;
void HttpServer::handle(const std::string& uri, HttpRequestHandler handler) {
  impl_->handle(uri, std::move(handler));
}
int HttpServer::port() const { return impl_->port(); }

}  // namespace chessrl::metrics
