{{/* replay's gRPC address for the other components: F-replay:50051. */}}
{{- define "chess-rl.replay.address" -}}
{{- printf "%s:%v" (include "chess-rl.componentName" (dict "root" . "component" "replay")) .Values.replay.ports.grpc -}}
{{- end -}}

{{/* The config keys the chart passes to chessrl-replay as flags (a JSON list; chess-rl.validateValues.config). */}}
{{- define "chess-rl.replay.reservedKeys" -}}
{{- concat (list "config" "listen" "metrics-listen" "models-http-listen" "models-http-public" "store" "redis-host" "redis-port" "redis-shards" "redis-password") (include "chess-rl.security.flags" (dict "root" . "role" "replay") | fromJsonArray) | toJson -}}
{{- end -}}

{{/* ---------- Checks (chess-rl.validateValues): a message naming the value, or nothing ---------- */}}

{{- define "chess-rl.validateValues.replay.ports" -}}
{{- if eq (int .Values.replay.ports.grpc) (int .Values.replay.ports.metrics) -}}
{{- printf "replay.ports.grpc and replay.ports.metrics are both %v: they must differ" .Values.replay.ports.grpc -}}
{{- else if and .Values.replay.modelsHttp.enabled (has (int .Values.replay.ports.models) (list (int .Values.replay.ports.grpc) (int .Values.replay.ports.metrics) (int .Values.replay.ports.probes))) -}}
{{- printf "replay.ports.models is %v, a port replay already uses (grpc, metrics or probes): they must differ" .Values.replay.ports.models -}}
{{- end -}}
{{- end -}}
