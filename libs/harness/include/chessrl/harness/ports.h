// Ports of child processes without bind-close-reuse. A chess-rl service told
// to listen on port 0 binds a port the kernel picks and names it in its ready
// file (--ready-file; libs/runtime's service_process.h): read_ready_file()
// reads it back. Other programs (Prometheus) say it only in their log:
// logged_port(). For the servers that cannot say (redis-server), pick_port()
// picks a number to try, and the caller starts again on another one on a
// collision. Used by `chessrl local` and the benches that start services.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace chessrl::harness {

// A service's ready file: {"pid": N, "ports": {"grpc": P, "metrics": P, ...}}.
struct ReadyFile {
  int pid = 0;
  std::map<std::string, int> ports;  // "grpc", "metrics", "http", "probe", "rendezvous"
  // The port named `name`; 0 when the file has none.
  int port(const std::string& name) const {
    const auto it = ports.find(name);
    return it == ports.end() ? 0 : it->second;
  }
};

// The ready file at `path`; nullopt while there is none (it is written whole
// and renamed into place, so a file that is there is complete) or when it is
// not such a JSON object.
std::optional<ReadyFile> read_ready_file(const std::string& path);

// The size of the file at `path` now, 0 when there is none: where the lines of
// a start about to begin will be in a log that earlier starts appended to.
std::uintmax_t log_size(const std::string& path);

// The text of the log at `path` from byte `from` on ("" when unreadable).
std::string log_since(const std::string& path, std::uintmax_t from);

// The number after the last `key` (e.g. "metrics on port ") in the log at
// `path` from byte `from` on (the last: a child started again since says it
// anew); nullopt while there is none.
std::optional<int> logged_port(const std::string& path, std::uintmax_t from,
                               const std::string& key);

// A port number to try for a server that cannot listen on port 0 and report
// it: random, below the kernel's ephemeral range (/proc/sys/net/ipv4/
// ip_local_port_range), so none of the ports the kernel hands out for port 0
// or outgoing connections; only a server that chose the same number itself
// can hold it, and then the caller tries another.
int pick_port();

// `argv` with the address after `flag` (`flag ADDR` or `flag=ADDR`) set to
// 127.0.0.1:`port`: a command line that started on port 0, pinned to the port
// the kernel chose, for the restarts.
std::vector<std::string> with_port(std::vector<std::string> argv, const std::string& flag,
                                   int port);

}  // namespace chessrl::harness
