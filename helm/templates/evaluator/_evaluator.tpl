{{/* The config keys the chart passes to chessrl-evaluator as flags (a JSON list; chess-rl.validateValues.config). */}}
{{- define "chess-rl.evaluator.reservedKeys" -}}
{{- concat (list "config" "registry" "metrics-listen" "state-dir" "engine") (include "chess-rl.security.flags" (dict "root" . "role" "evaluator") | fromJsonArray) | toJson -}}
{{- end -}}
