{{/* The headless Service of the trainer ranks (MASTER_ADDR's domain). */}}
{{- define "chess-rl.trainer.headless" -}}
{{- printf "%s-trainer-headless" (include "chess-rl.fullname" .) -}}
{{- end -}}

{{/* The config keys the chart passes to chessrl-trainer as flags (a JSON list; chess-rl.validateValues.config). */}}
{{- define "chess-rl.trainer.reservedKeys" -}}
{{- concat (list "config" "replay" "metrics-listen" "device" "mixed-precision" "checkpoint-dir" "rendezvous-timeout" "collective-timeout" "master-addr" "master-port") (include "chess-rl.security.flags" (dict "root" . "role" "trainer") | fromJsonArray) | toJson -}}
{{- end -}}

{{/* The Volcano PodGroup of the ranks (trainer/podgroup.yaml): F-trainer. */}}
{{- define "chess-rl.trainer.podGroup" -}}
{{- include "chess-rl.componentName" (dict "root" . "component" "trainer") -}}
{{- end -}}

{{/* The ranks' schedulerName: trainer.schedulerName, else volcano with Volcano's gang, else none (the default scheduler). */}}
{{- define "chess-rl.trainer.schedulerName" -}}
{{- $v := .Values.trainer -}}
{{- $v.schedulerName | default (ternary "volcano" "" $v.gangScheduling.volcano.enabled) -}}
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

{{- define "chess-rl.validateValues.trainer.gangScheduling" -}}
{{- $vc := .Values.trainer.gangScheduling.volcano -}}
{{- if $vc.enabled -}}
{{- if not (.Capabilities.APIVersions.Has "scheduling.volcano.sh/v1beta1") }}
trainer.gangScheduling.volcano.enabled=true needs the scheduling.volcano.sh/v1beta1 API (Volcano's PodGroup CRD), which the cluster does not serve: install Volcano first, or turn it off (helm template: --api-versions scheduling.volcano.sh/v1beta1)
{{- end -}}
{{- if hasKey (.Values.trainer.podAnnotations | default dict) "scheduling.k8s.io/group-name" }}
trainer.podAnnotations sets scheduling.k8s.io/group-name, which trainer.gangScheduling.volcano.enabled=true sets itself to the PodGroup {{ include "chess-rl.trainer.podGroup" . }}: remove it
{{- end -}}
{{- else if $vc.queue }}
trainer.gangScheduling.volcano.queue is set but trainer.gangScheduling.volcano.enabled=false: turn the PodGroup on to use the queue, or remove it
{{- end -}}
{{- end -}}
