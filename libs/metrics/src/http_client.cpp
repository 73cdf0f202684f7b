#include "chessrl/metrics/http_client.h"

#include <civetweb.h>

#include <mutex>

namespace chessrl::metrics {

Result<HttpReply> http_get(const std::string& host, int port, const std::string& path,
                           std::chrono::milliseconds timeout, std::size_t max_bytes) {
  static std::once_flag init;
  std::call_once(init, [] { mg_init_library(0); });
  const std::string where = "http://" +
                            (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" +
                            std::to_string(port) + path;
  char error[256] = "";
  mg_connection* conn = mg_connect_client(host.c_str(), port, 0, error, sizeof error);
  if (conn == nullptr) return fail(where + ": " + (error[0] ? error : "cannot connect"));
  struct Close {
    mg_connection* conn;
    ~Close() { mg_close_connection(conn); }
  } close{conn};
  if (mg_printf(conn, "GET %s HTTP/1.0\r\nHost: %s\r\n\r\n", path.c_str(), host.c_str()) <= 0)
    return fail(where + ": cannot send the request");
  if (mg_get_response(conn, error, sizeof error, static_cast<int>(timeout.count())) < 0)
    return fail(where + ": " + (error[0] ? error : "no reply in time"));
  const mg_response_info* info = mg_get_response_info(conn);
  if (info == nullptr) return fail(where + ": not an HTTP reply");
  if (info->content_length > 0 && static_cast<std::size_t>(info->content_length) > max_bytes)
    return fail(where + ": the body is " + std::to_string(info->content_length) +
                " bytes, more than " + std::to_string(max_bytes));
  HttpReply reply;
  reply.status = info->status_code;
  char buffer[16384];
  for (;;) {
    const int n = mg_read(conn, buffer, sizeof buffer);
    // Without a Content-Length the body ends when the server closes, which
    // civetweb's client may report as an error (civetweb's own 404 page does this).
    if (n < 0 && info->content_length >= 0)
      return fail(where + ": the connection failed while reading");
    if (n <= 0) break;
    if (reply.body.size() + static_cast<std::size_t>(n) > max_bytes)
      return fail(where + ": the body is more than " + std::to_string(max_bytes) + " bytes");
    reply.body.append(buffer, static_cast<std::size_t>(n));
  }
  return reply;
}

}  // namespace chessrl::metrics
