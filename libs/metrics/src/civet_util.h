// What the Exposer (exposer.cpp) and HttpServer (http_server.cpp) share on
// civetweb: a listener, its port, a quick close, and the handler that serves
// an HttpRequestHandler. Private to libs/metrics.
#pragma once

#include <CivetServer.h>

#include <memory>
#include <string>
#include <vector>

#include "chessrl/metrics/http_server.h"

namespace chessrl::metrics::civet {

// A civetweb server on `address` ("host:port") with `threads` workers, or
// chessrl::Error "<what>: cannot listen on <address>: ...".
std::unique_ptr<CivetServer> listen_on(const std::string& address, int threads, int timeout_ms,
                                       int queue, const std::string& what);
// The bound port (useful with port 0); 0 when there is none.
int bound_port(CivetServer& server);
// Closes the servers (null ones skipped) without civetweb's wait of up to 2 s
// per server for its master thread's poll of the listening sockets: a thread
// connects to their ports every 10 ms until they are closed. `ports` are
// theirs, in the same order.
void close_quickly(const std::vector<CivetServer*>& servers, const std::vector<int>& ports);

// GET and HEAD call the function; every other method is refused with 405.
class FunctionHandler final : public CivetHandler {
 public:
  explicit FunctionHandler(HttpRequestHandler handler) : handler_(std::move(handler)) {}
  bool handleGet(CivetServer*, mg_connection* conn) override { return serve(conn, true); }
  bool handleHead(CivetServer*, mg_connection* conn) override { return serve(conn, false); }
  bool handlePost(CivetServer*, mg_connection* conn) override { return refuse(conn); }
  bool handlePut(CivetServer*, mg_connection* conn) override { return refuse(conn); }
  bool handleDelete(CivetServer*, mg_connection* conn) override { return refuse(conn); }
  bool handlePatch(CivetServer*, mg_connection* conn) override { return refuse(conn); }
  bool handleOptions(CivetServer*, mg_connection* conn) override { return refuse(conn); }

 private:
  bool serve(mg_connection* conn, bool with_body);
  static bool refuse(mg_connection* conn);
  HttpRequestHandler handler_;
};

}  // namespace chessrl::metrics::civet
