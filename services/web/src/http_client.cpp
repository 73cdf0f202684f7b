#include "http_client.h"

#include <arpa/inet.h>
#include <civetweb.h>
#include <netdb.h>
#include <sys/socket.h>

#include <algorithm>
#include <mutex>

namespace chessrl::web_service {

Result<std::string> http_get(const std::string& host, int port, const std::string& path,
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
  if (mg_printf(conn, "GET %s HTTP/1.0\r\nHost: %s\r\nAccept: application/json\r\n\r\n",
                path.c_str(), host.c_str()) <= 0)
    return fail(where + ": cannot send the request");
  if (mg_get_response(conn, error, sizeof error, static_cast<int>(timeout.count())) < 0)
    return fail(where + ": " + (error[0] ? error : "no response"));
  const mg_response_info* info = mg_get_response_info(conn);
  if (info == nullptr) return fail(where + ": no response");
  if (info->status_code != 200)
    return fail(where + ": HTTP " + std::to_string(info->status_code));
  if (info->content_length > 0 && static_cast<std::size_t>(info->content_length) > max_bytes)
    return fail(where + ": the body is " + std::to_string(info->content_length) +
                " bytes, more than " + std::to_string(max_bytes));
  std::string body;
  char buffer[16384];
  for (;;) {
    const int n = mg_read(conn, buffer, sizeof buffer);
    if (n < 0) return fail(where + ": the connection failed while reading");
    if (n == 0) break;
    if (body.size() + static_cast<std::size_t>(n) > max_bytes)
      return fail(where + ": the body is more than " + std::to_string(max_bytes) + " bytes");
    body.append(buffer, static_cast<std::size_t>(n));
  }
  return body;
}

Result<std::vector<std::string>> resolve_all(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &found);
  if (rc != 0) return fail(host + ": " + ::gai_strerror(rc));
  std::vector<std::string> addresses;
  for (const addrinfo* a = found; a != nullptr; a = a->ai_next) {
    char text[INET6_ADDRSTRLEN] = "";
    const void* raw =
        a->ai_family == AF_INET
            ? static_cast<const void*>(&reinterpret_cast<const sockaddr_in*>(a->ai_addr)->sin_addr)
            : static_cast<const void*>(&reinterpret_cast<const sockaddr_in6*>(a->ai_addr)->sin6_addr);
    if (::inet_ntop(a->ai_family, raw, text, sizeof text) == nullptr) continue;
    if (std::find(addresses.begin(), addresses.end(), text) == addresses.end())
      addresses.emplace_back(text);
  }
  ::freeaddrinfo(found);
  if (addresses.empty()) return fail(host + ": no address");
  return addresses;
}

}  // namespace chessrl::web_service
