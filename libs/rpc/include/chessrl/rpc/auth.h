// Bearer tokens for the replay service and model registry.
//
// Each caller role has its own token: self-play pushes games, the trainer
// samples them and publishes models, the evaluator sets the best version;
// all three may read (stats, model info, model bytes, the watch stream).
// A client sends its token as gRPC metadata `authorization: Bearer <token>`;
// the server checks it before it touches the store: no token or an unknown
// one is UNAUTHENTICATED, a known token calling what its role may not is
// PERMISSION_DENIED, and in both cases nothing changes. Giving several roles
// the same token grants that token the union of their rights.
//
// Where tokens come from (never a command line, where `ps` shows them):
// - a server: a directory holding one file per role (`selfplay`, `trainer`,
//   `evaluator`: a Kubernetes Secret mounted as a volume has this shape), or
//   the variables CHESSRL_TOKEN_SELFPLAY, _TRAINER, _EVALUATOR;
// - a client: a file (--token-file) or the variable CHESSRL_TOKEN.
// A server with no token at all runs open (and its binary says so loudly).
#pragma once

#include <grpcpp/server_context.h>
#include <grpcpp/support/status.h>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "chessrl/core/result.h"

namespace chessrl::rpc {

enum class Role : std::uint8_t { kSelfplay, kTrainer, kEvaluator };
inline constexpr std::array<Role, 3> kAllRoles = {Role::kSelfplay, Role::kTrainer,
                                                  Role::kEvaluator};
// "selfplay", "trainer", "evaluator": the role's file name and label.
std::string_view role_name(Role role);

// What a call does, as far as authorization goes.
enum class Action : std::uint8_t {
  kRead,
  kPushGames,
  kSample,
  kPublishModel,
  kSetBest,
  kLeaseModel,  // hold a version back from pruning (the evaluator, while it gates it)
};
std::string_view action_name(Action action);  // "read", "push games", ...
// Whether `role` may do `action`.
bool role_may(Role role, Action action);

// The shortest token accepted (bytes): shorter ones are refused as guessable.
inline constexpr std::size_t kMinTokenBytes = 16;

// A token as read from a file or variable: surrounding whitespace (a trailing
// newline) stripped; refused, naming `source`, when empty, shorter than
// kMinTokenBytes, or holding anything but printable ASCII (metadata values
// must be), e.g. "--token-file /run/token: the token is 5 bytes; at least 16".
Result<std::string> clean_token(std::string text, const std::string& source);
// Reads and cleans the token in `path` (errors name `option` and the path).
Result<std::string> read_token_file(const std::string& path, const std::string& option);

// A client's token: the file when `token_file` is set, else the variable
// CHESSRL_TOKEN, else none (an empty string).
Result<std::string> client_token(const std::string& token_file);

// The metadata key and value a client adds to every call.
inline constexpr const char* kAuthorizationKey = "authorization";
std::string bearer(const std::string& token);

class ServerAuth {
 public:
  ServerAuth() = default;  // open: every call allowed

  // From `dir` (files selfplay, trainer, evaluator; a missing file leaves that
  // role without a token, so its calls are refused) when `dir` is not empty,
  // else from CHESSRL_TOKEN_SELFPLAY/_TRAINER/_EVALUATOR. An unreadable or
  // bad file, or a directory with none of the three, is an error naming it.
  static Result<ServerAuth> load(const std::string& dir);

  void add(Role role, std::string token);
  bool enabled() const { return !tokens_.empty(); }
  // The roles that have a token, e.g. "selfplay, trainer, evaluator".
  std::string roles() const;

  // OK when the call's metadata carries a token whose role may do `action`
  // (always OK when not enabled). Otherwise UNAUTHENTICATED (no token, not
  // a bearer token, an unknown token) or PERMISSION_DENIED (the token's
  // roles may not do `action`), with a message starting with `method`.
  grpc::Status check(const grpc::ServerContext& context, Action action, const char* method) const;
  // The same for a token given directly (nullopt: none was sent).
  grpc::Status check_token(std::optional<std::string_view> authorization, Action action,
                           const char* method) const;

 private:
  struct Entry {
    std::string token;
    std::uint8_t roles = 0;  // bit (1 << Role)
  };
  std::vector<Entry> tokens_;
};

}  // namespace chessrl::rpc
