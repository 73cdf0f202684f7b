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

{{/* ---------- selfplay.autoscaling: self-play that follows the trainer ---------- */}}

{{/*
The control law, written once: a PromQL expression whose value r is the factor by
which the self-play pods should change (an HPA with target value 1 sets
ceil(ready pods × r), unless r is within its 10% tolerance of 1).
  A = max(chessrl_trainer_samples_per_second)  the trainer's appetite: samples per
      second while it steps, all ranks (every rank reports the global figure)
  P = sum(rate(chessrl_selfplay_positions_total[rateWindow]))  positions self-play
      makes per second
  C = max(chessrl_trainer_max_reuse)  the trainer's --max-reuse cap (0: none)
  D = A / P  the demanded reuse: what the trainer's reuse would be if it never waited
      for data
r = D / (band.target × C) while D is outside [band.low × C, band.high × C], P > 0 and
C > 0; exactly 1 otherwise (inside the band, or no trainer series, no positions, no
cap), so that nothing moves on what is not known.
(dict "root" $ "matchers" "<PromQL label matchers>"); matchers defaults to this
release's series (chess-rl.selfplay.scaleMatchers). prometheus-adapter's rule passes
"<<.LabelMatchers>>", which the adapter fills in per HPA.
*/}}
{{- define "chess-rl.selfplay.scaleQuery" -}}
{{- $a := .root.Values.selfplay.autoscaling -}}
{{- $m := .matchers | default (include "chess-rl.selfplay.scaleMatchers" .root) -}}
{{- $A := printf "(max(rate(chessrl_trainer_samples_total{%s}[%s])) / (max(rate(chessrl_trainer_step_seconds_total{%s}[%s])) > 0) or max(chessrl_trainer_samples_per_second{%s}))" $m $a.rateWindow $m $a.rateWindow $m -}}
{{- $P := printf "sum(rate(chessrl_selfplay_positions_total{%s}[%s]))" $m $a.rateWindow -}}
{{- $C := printf "max(chessrl_trainer_max_reuse{%s})" $m -}}
{{- $D := printf "(%s / %s)" $A $P -}}
(
  {{ $D }} / ({{ $a.band.target }} * {{ $C }})
    and on() ({{ $D }} > {{ $a.band.high }} * {{ $C }} or {{ $D }} < {{ $a.band.low }} * {{ $C }})
    and on() ({{ $P }} > 0)
    and on() ({{ $C }} > 0)
)
or on() vector(1)
{{- end -}}

{{/* The label matchers of this release's series, as the PodMonitors label them. */}}
{{- define "chess-rl.selfplay.scaleMatchers" -}}
namespace="{{ .Release.Namespace }}",app_kubernetes_io_instance="{{ .Release.Name }}"
{{- end -}}

{{/* The external metric the provider hpa reads, served by prometheus-adapter. */}}
{{- define "chess-rl.selfplay.scaleMetric" -}}chessrl_selfplay_scale_ratio{{- end -}}

{{/*
Which autoscaler object renders: "keda" (enabled, provider keda, and the cluster
serves keda.sh/v1alpha1), "hpa" (enabled, provider hpa), else nothing. Enabled with
provider keda but without the API is refused by chess-rl.validateValues.selfplay.autoscaling.api.
*/}}
{{- define "chess-rl.selfplay.autoscaler" -}}
{{- $a := .Values.selfplay.autoscaling -}}
{{- if $a.enabled -}}
{{- if eq $a.provider "hpa" -}}hpa
{{- else if and (eq $a.provider "keda") (.Capabilities.APIVersions.Has "keda.sh/v1alpha1") -}}keda
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The HPA's behavior (autoscaling/v2 HorizontalPodAutoscalerBehavior) from the values. */}}
{{- define "chess-rl.selfplay.autoscalingBehavior" -}}
{{- $out := dict -}}
{{- range $dir, $v := .Values.selfplay.autoscaling.behavior -}}
{{- $rules := dict "stabilizationWindowSeconds" $v.stabilizationWindowSeconds -}}
{{- with $v.policies }}{{ $_ := set $rules "policies" . }}{{ end -}}
{{- $_ := set $out $dir $rules -}}
{{- end -}}
{{- toYaml $out -}}
{{- end -}}

{{/*
prometheus-adapter's externalRules entry that serves chess-rl.selfplay.scaleMetric with
the same query, for any release: the HPA's selector (app_kubernetes_io_instance) and
its namespace become <<.LabelMatchers>>. Discovered through self-play's series.
*/}}
{{- define "chess-rl.selfplay.adapterRule" -}}
- seriesQuery: 'chessrl_selfplay_positions_total{namespace!="",app_kubernetes_io_instance!=""}'
  resources:
    overrides:
      namespace: {resource: namespace}
  name:
    matches: ^chessrl_selfplay_positions_total$
    as: {{ include "chess-rl.selfplay.scaleMetric" . }}
  metricsQuery: |
    {{- include "chess-rl.selfplay.scaleQuery" (dict "root" . "matchers" "<<.LabelMatchers>>") | nindent 4 }}
{{- end -}}

{{- define "chess-rl.validateValues.selfplay.autoscaling.api" -}}
{{- $a := .Values.selfplay.autoscaling -}}
{{- if and $a.enabled (eq $a.provider "keda") (not (.Capabilities.APIVersions.Has "keda.sh/v1alpha1")) -}}
selfplay.autoscaling.enabled=true with provider keda needs KEDA's keda.sh/v1alpha1 API, which this cluster does not serve (the pods would not be scaled): install KEDA, or render with --api-versions keda.sh/v1alpha1, or set selfplay.autoscaling.provider=hpa
{{- end -}}
{{- end -}}

{{- define "chess-rl.validateValues.selfplay.autoscaling.band" -}}
{{- $b := .Values.selfplay.autoscaling.band -}}
{{- if not (and (lt (float64 $b.low) (float64 $b.target)) (lt (float64 $b.target) (float64 $b.high))) -}}
{{- printf "selfplay.autoscaling.band must have low < target < high (fractions of the trainer's --max-reuse): low=%v, target=%v, high=%v" $b.low $b.target $b.high -}}
{{- end -}}
{{- end -}}

{{- define "chess-rl.validateValues.selfplay.autoscaling.replicas" -}}
{{- $a := .Values.selfplay.autoscaling -}}
{{- $problems := list -}}
{{- if gt (int $a.minReplicas) (int $a.maxReplicas) -}}
{{- $problems = append $problems (printf "selfplay.autoscaling.minReplicas=%v is above selfplay.autoscaling.maxReplicas=%v" $a.minReplicas $a.maxReplicas) -}}
{{- end -}}
{{- if and (eq $a.provider "hpa") (eq (int $a.minReplicas) 0) -}}
{{- $problems = append $problems "selfplay.autoscaling.minReplicas=0 needs provider keda: a HorizontalPodAutoscaler's minReplicas is at least 1" -}}
{{- end -}}
{{- join "\n" $problems -}}
{{- end -}}
