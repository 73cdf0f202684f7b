// A model registry that never answers (and SilentServer, below, which takes
// no call of any service): a gRPC server on a loopback port the
// kernel picks that completes the HTTP/2 handshake (so a client's connect
// timeout never fires) and then holds every call until release(), the call's
// deadline or its cancellation, answering UNAVAILABLE. For tests of what a
// service does while a registry call hangs (trainer_fault_test,
// evaluator_test).
#pragma once

#include <memory>
#include <string>

namespace grpc {
class AsyncGenericService;
class Server;
class ServerCompletionQueue;
}

namespace chessrl::testing {

class HangingRegistry {
 public:
  // Starts the server; throws chessrl::Error when it cannot.
  HangingRegistry();
  // release(), then shutdown().
  ~HangingRegistry();
  HangingRegistry(const HangingRegistry&) = delete;
  HangingRegistry& operator=(const HangingRegistry&) = delete;

  int port() const { return port_; }
  // "127.0.0.1:<port>", for the options that take an address.
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  // Calls received so far (every method counts).
  int calls() const;
  // Every held call answers now, and every later one at once.
  void release();
  // release(), then stops the server (at most 2 s for calls in flight).
  void shutdown();

 private:
  class Service;
  std::unique_ptr<Service> service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
};

// A gRPC server on a loopback port the kernel picks whose generic service
// never takes a call: every call of every service waits until its deadline or
// cancellation (a replay pod gone quiet).
class SilentServer {
 public:
  // Starts the server; throws chessrl::Error when it cannot.
  SilentServer();
  ~SilentServer();  // shuts the server and its queue down
  SilentServer(const SilentServer&) = delete;
  SilentServer& operator=(const SilentServer&) = delete;

  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

 private:
  std::unique_ptr<grpc::AsyncGenericService> service_;
  std::unique_ptr<grpc::ServerCompletionQueue> cq_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
};

}  // namespace chessrl::testing
