// Helpers the chessrl-replay handlers share (replay_service.cpp, model_*.cpp):
// a store failure as a grpc::Status, the token check of a callback method, and
// a handler body run so that no exception reaches gRPC and every call is
// counted and timed.
#pragma once

#include <chrono>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "chessrl/replay_service/replay_service.h"

namespace chessrl::replay_service::handler {

using grpc::Status;
using grpc::StatusCode;

inline Status unavailable(const std::string& what, const std::string& error) {
  return Status(StatusCode::UNAVAILABLE, what + ": " + error);
}

// A store failure as the code its kind calls for (docs/replay.md, "Status
// codes"): only UNAVAILABLE tells a client that trying again may help.
template <class T>
Status store_error(const std::string& what, const replay::StoreResult<T>& result) {
  switch (result.kind()) {
    case replay::StoreErrorKind::kDataLoss:
      return Status(StatusCode::DATA_LOSS, what + ": " + result.error());
    case replay::StoreErrorKind::kInvalidArgument:
      return Status(StatusCode::INVALID_ARGUMENT, what + ": " + result.error());
    case replay::StoreErrorKind::kUnavailable: break;
  }
  return unavailable(what, result.error());
}

// The token check of a callback method (GetModel, WatchModels): the bearer
// token of the call's metadata against `action`; OK when auth is off.
inline Status check_callback_token(const rpc::ServerAuth& auth,
                                   const grpc::CallbackServerContext& context,
                                   rpc::Action action, const char* method) {
  if (!auth.enabled()) return Status::OK;
  const auto& metadata = context.client_metadata();
  std::optional<std::string_view> token;
  if (auto found = metadata.find(rpc::kAuthorizationKey); found != metadata.end()) {
    token = std::string_view(found->second.data(), found->second.size());
  }
  return auth.check_token(token, action, method);
}

// Runs a handler body; an exception becomes INTERNAL instead of reaching gRPC.
template <class Body>
Status run_guarded(const char* rpc, Body&& body) {
  try {
    return body();
  } catch (const std::exception& e) {
    return Status(StatusCode::INTERNAL, std::string(rpc) + ": " + e.what());
  } catch (...) {
    return Status(StatusCode::INTERNAL, std::string(rpc) + ": unknown error");
  }
}

// run_guarded, and the call counted and timed in `metrics`.
template <class Body>
Status guarded(ReplayMetrics& metrics, const char* rpc, Body&& body, bool timed = true) {
  const auto start = std::chrono::steady_clock::now();
  Status status = run_guarded(rpc, std::forward<Body>(body));
  metrics.record_call(
      rpc, status.error_code(),
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), timed);
  return status;
}

// guarded(), the body run only once the call's token allows `action`; a
// refusal is counted and timed like any other answer.
template <class Body>
Status authorized(ReplayMetrics& metrics, const rpc::ServerAuth& auth,
                  const grpc::ServerContext& context, rpc::Action action, const char* rpc,
                  Body&& body, bool timed = true) {
  return guarded(
      metrics, rpc,
      [&]() -> Status {
        if (auto denied = auth.check(context, action, rpc); !denied.ok()) return denied;
        return body();
      },
      timed);
}

}  // namespace chessrl::replay_service::handler
