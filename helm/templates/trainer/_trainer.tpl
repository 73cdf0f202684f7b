{{/* The headless Service of the trainer ranks (MASTER_ADDR's domain). */}}
{{- define "chess-rl.trainer.headless" -}}
{{- printf "%s-trainer-headless" (include "chess-rl.fullname" .) -}}
{{- end -}}

{{/* The config keys the chart passes to chessrl-trainer as flags (a JSON list; chess-rl.validateValues.config). */}}
{{- define "chess-rl.trainer.reservedKeys" -}}
{{- concat (list "config" "replay" "metrics-listen" "device" "mixed-precision" "checkpoint-dir" "rendezvous-timeout" "collective-timeout" "master-addr" "master-port") (include "chess-rl.security.flags" (dict "root" . "role" "trainer") | fromJsonArray) | toJson -}}
{{- end -}}

{{/* ---------- Checks (chess-rl.validateValues): a message naming the value, or nothing ---------- */}}

{{- define "chess-rl.validateValues.trainer.mixedPrecision" -}}
{{- if and .Values.trainer.mixedPrecision (not .Values.trainer.gpu.enabled) -}}
trainer.mixedPrecision=true needs trainer.gpu.enabled=true (bf16 autocast and TF32 are CUDA only)
{{- end -}}
{{- end -}}

{{- define "chess-rl.validateValues.trainer.persistence" -}}
{{- if and .Values.trainer.persistence.existingClaim (not .Values.trainer.persistence.enabled) -}}
trainer.persistence.existingClaim is set but trainer.persistence.enabled=false: turn persistence on to use the claim
{{- end -}}
{{- end -}}

{{- define "chess-rl.validateValues.trainer.ports" -}}
{{- if eq (int .Values.trainer.ports.metrics) (int .Values.trainer.ports.rendezvous) -}}
{{- printf "trainer.ports.metrics and trainer.ports.rendezvous are both %v: they must differ" .Values.trainer.ports.metrics -}}
{{- end -}}
{{- end -}}
