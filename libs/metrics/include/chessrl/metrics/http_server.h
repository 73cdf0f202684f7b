// Read-only HTTP on civetweb: the request and response types of the handlers
// the Exposer (exposer.h) serves beside /metrics, and HttpServer, a listener
// with such handlers alone (chessrl-replay's model URLs, --models-http-listen).
//
// Every response closes its connection (civetweb's keep-alive is off): a
// worker thread serves one request at a time, so a server's thread count is
// the number of responses it writes at once, a slow reader included. A reader
// that takes nothing for the server's request timeout (3 s) is dropped.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace chessrl::metrics {

// A GET or HEAD request as a handler sees it.
struct HttpRequest {
  std::string method;  // "GET" or "HEAD"
  std::string path;    // decoded, without the query string
  std::vector<std::pair<std::string, std::string>> headers;  // as received
  // The first header named `name` (case-insensitive); nullopt when absent.
  std::optional<std::string_view> header(std::string_view name) const;
};

// A response of a handler.
struct HttpResponse {
  HttpResponse() = default;
  HttpResponse(int status_code, std::string type, std::string text)
      : status(status_code), content_type(std::move(type)), body(std::move(text)) {}
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  // A large body shared by every response that sends it, not copied per
  // request: when set, the bytes [shared_offset, shared_offset +
  // shared_length) of it are the body (clamped to its size) and `body` is not
  // sent. Held until the response is written.
  std::shared_ptr<const std::string> shared_body;
  std::size_t shared_offset = 0;
  std::size_t shared_length = 0;
  std::string cache_control = "no-store";  // "" sends no Cache-Control header
  std::vector<std::pair<std::string, std::string>> headers;  // any others

  // Sends `length` bytes of `shared` from `offset`.
  void share(std::shared_ptr<const std::string> shared, std::size_t offset, std::size_t length) {
    shared_body = std::move(shared);
    shared_offset = offset;
    shared_length = length;
  }
  // The body's length, as Content-Length says (HEAD included).
  std::size_t content_length() const;
};

// Called on the server's threads with the request's path (no query string);
// must be thread-safe and quick, and must not throw.
using HttpHandler = std::function<HttpResponse(const std::string& path)>;
// The same with the whole request (method, path, headers). An exception
// becomes a 500. A HEAD response is sent without its body, whatever the
// handler puts there, with the Content-Length a GET would have.
using HttpRequestHandler = std::function<HttpResponse(const HttpRequest& request)>;

struct HttpServerOptions {
  // Worker threads: the requests served at once (the others wait in the
  // connection queue, then are refused by the kernel's backlog).
  int threads = 32;
  int connection_queue = 64;
  // A request's headers must arrive within this, and a response's reader
  // must take some of it within this, or the connection is closed.
  std::chrono::milliseconds request_timeout{3000};
  std::string name = "http";  // in errors: "<name>: cannot listen on ..."
};

// An HTTP server with handlers added by handle(), nothing else (every other
// path is civetweb's 404). Runs on its own threads until destroyed.
class HttpServer {
 public:
  // Listens on `address` ("0.0.0.0:9103", "127.0.0.1:0" for any free port).
  // Throws chessrl::Error naming the address when it cannot listen.
  HttpServer(const std::string& address, HttpServerOptions options = {});
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Serves GET and HEAD for `uri` (a path, or one ending in "/**" for every
  // path under it) with `handler`; other methods get 405.
  void handle(const std::string& uri, HttpRequestHandler handler);
  int port() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace chessrl::metrics
