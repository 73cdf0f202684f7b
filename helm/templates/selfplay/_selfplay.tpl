{{/* The config keys the chart passes to chessrl-selfplay as flags (a JSON list; chess-rl.validateValues.config). */}}
{{- define "chess-rl.selfplay.reservedKeys" -}}
{{- concat (list "config" "replay" "metrics-listen" "device" "precision" "replica") (include "chess-rl.security.flags" (dict "root" . "role" "selfplay") | fromJsonArray) | toJson -}}
{{- end -}}

{{/* ---------- Checks (chess-rl.validateValues): a message naming the value, or nothing ---------- */}}

{{- define "chess-rl.validateValues.selfplay.precision" -}}
{{- $v := .Values.selfplay -}}
{{- if and (ne $v.precision "fp32") (not $v.gpu.enabled) -}}
{{- printf "selfplay.precision=%s needs selfplay.gpu.enabled=true (fp16 and bf16 run on CUDA only)" $v.precision -}}
{{- end -}}
{{- end -}}
