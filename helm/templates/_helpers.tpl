{{/*
Names, labels and the pieces every component's pods share. Helpers of one
component are in its folder (redis/_redis.tpl, auth/_auth.tpl, ...), the
monitoring switches in _monitoring.tpl, the value checks in _validate.tpl.
Most helpers take a dict: (dict "root" $ "component" "replay").
*/}}

{{/* The chart's name (app.kubernetes.io/name). */}}
{{- define "chess-rl.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
F, the prefix of every object: fullnameOverride; else the release name when it
contains the chart name; else <release>-<chart name>. At most 45 characters, so
that the longest derived name (F-trainer-headless) stays a valid 63-character
DNS label; a longer one stops the render with a message rather than being cut.
*/}}
{{- define "chess-rl.fullname" -}}
{{- $name := "" -}}
{{- if .Values.fullnameOverride -}}
{{- $name = .Values.fullnameOverride -}}
{{- else -}}
{{- $chart := default .Chart.Name .Values.nameOverride -}}
{{- if contains $chart .Release.Name -}}
{{- $name = .Release.Name -}}
{{- else -}}
{{- $name = printf "%s-%s" .Release.Name $chart -}}
{{- end -}}
{{- end -}}
{{- $name = $name | trimSuffix "-" -}}
{{- if gt (len $name) 45 -}}
{{- fail (printf "the objects' prefix %q is %d characters; at most 45 fit (F-trainer-headless must be a 63-character DNS label): set fullnameOverride or use a shorter release name" $name (len $name)) -}}
{{- end -}}
{{- $name -}}
{{- end -}}

{{/* F-<component>: (dict "root" $ "component" "replay") */}}
{{- define "chess-rl.componentName" -}}
{{- printf "%s-%s" (include "chess-rl.fullname" .root) .component -}}
{{- end -}}

{{- define "chess-rl.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Selector labels: name + instance + component. */}}
{{- define "chess-rl.selectorLabels" -}}
app.kubernetes.io/name: {{ include "chess-rl.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{/* Every object's labels; component optional (dict "root" $ "component" "x"). */}}
{{- define "chess-rl.labels" -}}
helm.sh/chart: {{ include "chess-rl.chart" .root }}
app.kubernetes.io/name: {{ include "chess-rl.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
{{- if .component }}
app.kubernetes.io/component: {{ .component }}
{{- end }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
app.kubernetes.io/part-of: chess-rl
{{- with .root.Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* Labels that select every pod of this release (any component). */}}
{{- define "chess-rl.releaseSelector" -}}
app.kubernetes.io/name: {{ include "chess-rl.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/*
An image reference: (dict "root" $ "image" .Values.x.image "default" .Values.image)
registry: global.imageRegistry, else the component's, else the default's;
repository and pullPolicy: the component's, else the default's; tag: the
component's, else the default's, else the chart's appVersion; a digest wins
over the tag.
*/}}
{{- define "chess-rl.image" -}}
{{- $img := .image | default dict -}}
{{- $def := .default | default dict -}}
{{- $registry := .root.Values.global.imageRegistry | default $img.registry | default $def.registry | default "" -}}
{{- $repository := $img.repository | default $def.repository -}}
{{- if not $repository -}}
{{- fail "an image has no repository: set image.repository or the component's image.repository" -}}
{{- end -}}
{{- $tag := $img.tag | default $def.tag | default .root.Chart.AppVersion | toString -}}
{{- $digest := $img.digest | default $def.digest | default "" -}}
{{- $ref := $repository -}}
{{- if $registry -}}
{{- $ref = printf "%s/%s" (trimSuffix "/" $registry) $repository -}}
{{- end -}}
{{- if $digest -}}
{{- printf "%s@%s" $ref $digest -}}
{{- else -}}
{{- printf "%s:%s" $ref $tag -}}
{{- end -}}
{{- end -}}

{{/* pullPolicy: (dict "image" .Values.x.image "default" .Values.image) */}}
{{- define "chess-rl.pullPolicy" -}}
{{- $img := .image | default dict -}}
{{- $def := .default | default dict -}}
{{- $img.pullPolicy | default $def.pullPolicy | default "IfNotPresent" -}}
{{- end -}}

{{/* imagePullSecrets of the pod spec: global.imagePullSecrets, names or {name: x}. */}}
{{- define "chess-rl.imagePullSecrets" -}}
{{- with .Values.global.imagePullSecrets }}
imagePullSecrets:
{{- range . }}
{{- if kindIs "string" . }}
  - name: {{ . }}
{{- else }}
  - name: {{ .name }}
{{- end }}
{{- end }}
{{- end }}
{{- end -}}

{{/* ServiceAccount name: (dict "root" $ "component" "replay" "values" .Values.replay) */}}
{{- define "chess-rl.serviceAccountName" -}}
{{- $sa := .values.serviceAccount | default dict -}}
{{- if $sa.create -}}
{{- $sa.name | default (include "chess-rl.componentName" .) -}}
{{- else -}}
{{- $sa.name | default "default" -}}
{{- end -}}
{{- end -}}

{{/*
The pod annotations every chess-rl pod gets: the user's, checksums, and the
plain Prometheus scrape hints. Without "config" (the viewer has no config file)
no checksum/config, and the text starts with a newline: trim it.
(dict "root" $ "values" .Values.x "config" <rendered configmap> "secret" <bool> "metricsPort" 9100)
*/}}
{{- define "chess-rl.podAnnotations" -}}
{{- if hasKey . "config" -}}
checksum/config: {{ .config | sha256sum }}
{{- end }}
{{- if .secret }}
checksum/secret: {{ include "chess-rl.redis.secretChecksum" .root }}
{{- end }}
{{- if and .metricsPort .root.Values.monitoring.podAnnotations }}
prometheus.io/scrape: "true"
prometheus.io/port: {{ .metricsPort | quote }}
prometheus.io/path: /metrics
{{- end }}
{{- with .values.podAnnotations }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/*
Topology spread constraints with the component's selector filled in where a
constraint has no labelSelector. (dict "root" $ "component" "x" "list" [...])
*/}}
{{- define "chess-rl.topologySpreadConstraints" -}}
{{- $out := list -}}
{{- range .list -}}
{{- $c := deepCopy . -}}
{{- if not (hasKey $c "labelSelector") -}}
{{- $_ := set $c "labelSelector" (dict "matchLabels" (include "chess-rl.selectorLabels" (dict "root" $.root "component" $.component) | fromYaml)) -}}
{{- end -}}
{{- $out = append $out $c -}}
{{- end -}}
{{- with $out }}
topologySpreadConstraints:
{{ toYaml . | indent 2 }}
{{- end }}
{{- end -}}

{{/*
The scheduling and identity part of a pod spec shared by every component.
(dict "root" $ "component" "x" "values" .Values.x "extraTolerations" [...])
*/}}
{{- define "chess-rl.podCommon" -}}
serviceAccountName: {{ include "chess-rl.serviceAccountName" . }}
automountServiceAccountToken: false
enableServiceLinks: false
{{- include "chess-rl.imagePullSecrets" .root }}
{{- with .values.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- with .values.podSecurityContext }}
securityContext:
{{ toYaml . | indent 2 }}
{{- end }}
{{- with .values.nodeSelector }}
nodeSelector:
{{ toYaml . | indent 2 }}
{{- end }}
{{- $tolerations := concat (.values.tolerations | default list) (.extraTolerations | default list) }}
{{- with $tolerations }}
tolerations:
{{ toYaml . | indent 2 }}
{{- end }}
{{- with .values.affinity }}
affinity:
{{ toYaml . | indent 2 }}
{{- end }}
{{- include "chess-rl.topologySpreadConstraints" (dict "root" .root "component" .component "list" .values.topologySpreadConstraints) }}
{{- end -}}

{{/* A container's securityContext, image and pull policy. (dict "root" $ "values" .Values.x) */}}
{{- define "chess-rl.containerImage" -}}
image: {{ include "chess-rl.image" (dict "root" .root "image" .values.image "default" .root.Values.image) | quote }}
imagePullPolicy: {{ include "chess-rl.pullPolicy" (dict "image" .values.image "default" .root.Values.image) }}
{{- end -}}

{{/* The GPU toleration a gpu.enabled component adds. */}}
{{- define "chess-rl.gpuTolerations" -}}
{{- $gpu := .gpu | default dict -}}
{{- if and $gpu.enabled $gpu.tolerate -}}
{{- list (dict "key" ($gpu.resourceName | default "nvidia.com/gpu") "operator" "Exists" "effect" "NoSchedule") | toJson -}}
{{- else -}}
[]
{{- end -}}
{{- end -}}

{{/*
Container resources, with the GPU added to requests and limits when
gpu.enabled. (dict "values" .Values.x)
*/}}
{{- define "chess-rl.resources" -}}
{{- $res := deepCopy (.values.resources | default dict) -}}
{{- $gpu := .values.gpu | default dict -}}
{{- if $gpu.enabled -}}
{{- $name := $gpu.resourceName | default "nvidia.com/gpu" -}}
{{- $limits := $res.limits | default dict -}}
{{- $requests := $res.requests | default dict -}}
{{- $_ := set $limits $name ($gpu.count | default 1) -}}
{{- $_ := set $requests $name ($gpu.count | default 1) -}}
{{- $_ := set $res "limits" $limits -}}
{{- $_ := set $res "requests" $requests -}}
{{- end -}}
{{- if $res -}}
resources:
{{ toYaml $res | indent 2 }}
{{- else -}}
resources: {}
{{- end -}}
{{- end -}}

{{/* The volumes every chess-rl container has: its config and a writable /tmp. */}}
{{- define "chess-rl.baseVolumeMounts" -}}
- name: config
  mountPath: /etc/chessrl
  readOnly: true
- name: tmp
  mountPath: /tmp
{{- end -}}

{{/* (dict "root" $ "component" "x" "values" .Values.x) */}}
{{- define "chess-rl.baseVolumes" -}}
- name: config
  configMap:
    name: {{ include "chess-rl.componentName" . }}
- name: tmp
  emptyDir:
    sizeLimit: {{ .values.tmpSizeLimit | default "256Mi" }}
{{- end -}}

{{/*
A probe: the chart's handler with the component's timings (the values' probe
blocks hold only timings and `enabled`).
(dict "probe" .Values.x.livenessProbe "handler" (dict "httpGet" (dict "path" "/healthz" "port" "metrics")))
*/}}
{{- define "chess-rl.probe" -}}
{{- $p := deepCopy (.probe | default dict) -}}
{{- $_ := unset $p "enabled" -}}
{{- toYaml (merge (deepCopy .handler) $p) -}}
{{- end -}}

{{/* ---------- Configuration of the chess-rl binaries ---------- */}}

{{/*
The config.yaml of a component: its `config:` map as YAML.
chess-rl.validateValues.config refuses keys the chart already passes as flags.
(.Values.x.config)
*/}}
{{- define "chess-rl.configYaml" -}}
{{- if . -}}
{{- toYaml . -}}
{{- else -}}
{}
{{- end -}}
{{- end -}}

{{/* The flattened keys of a map, one per line: {redis: {host: x}} -> redis-host. */}}
{{- define "chess-rl.flatKeys" -}}
{{- range $k, $v := .map -}}
{{- $key := ternary $k (printf "%s-%s" $.prefix $k) (eq $.prefix "") -}}
{{- if kindIs "map" $v -}}
{{- include "chess-rl.flatKeys" (dict "prefix" $key "map" $v) -}}
{{- else -}}
{{- printf "%s\n" $key -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
Check (chess-rl.validateValues): a component's config may not set a key the
chart passes itself as a flag (chess-rl.<component>.reservedKeys): a flag beats
the config file, so the key would be silently ignored. Nested maps count
flattened with '-', as the binaries read them. One line per such key.
*/}}
{{- define "chess-rl.validateValues.config" -}}
{{- range $c := list "replay" "selfplay" "trainer" "evaluator" -}}
{{- $v := index $.Values $c -}}
{{- if or (ne $c "evaluator") $v.enabled -}}
{{- $reserved := include (printf "chess-rl.%s.reservedKeys" $c) $ | fromJsonArray -}}
{{- range include "chess-rl.flatKeys" (dict "prefix" "" "map" ($v.config | default dict)) | splitList "\n" -}}
{{- if and . (has . $reserved) }}
{{ printf "%s.config sets %q, which the chart passes itself as --%s (a flag beats the config file, so the key would be ignored): use the chart's value for it (see values.yaml) instead" $c . . }}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* ---------- PodDisruptionBudget ---------- */}}

{{/* (dict "root" $ "component" "x" "pdb" .Values.x.pdb) */}}
{{- define "chess-rl.pdb" -}}
{{- if .pdb.enabled }}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: {{ include "chess-rl.componentName" . }}
  namespace: {{ .root.Release.Namespace }}
  labels:
    {{- include "chess-rl.labels" . | nindent 4 }}
spec:
  {{- if not (kindIs "invalid" .pdb.minAvailable) }}
  minAvailable: {{ .pdb.minAvailable }}
  {{- else }}
  maxUnavailable: {{ .pdb.maxUnavailable | default 1 }}
  {{- end }}
  {{- with .pdb.unhealthyPodEvictionPolicy }}
  unhealthyPodEvictionPolicy: {{ . }}
  {{- end }}
  selector:
    matchLabels:
      {{- include "chess-rl.selectorLabels" . | nindent 6 }}
{{- end }}
{{- end -}}

{{/* ---------- ServiceAccount and storage ---------- */}}

{{/* (dict "root" $ "component" "x" "values" .Values.x) */}}
{{- define "chess-rl.serviceAccount" -}}
{{- $sa := .values.serviceAccount | default dict -}}
{{- if $sa.create }}
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: {{ include "chess-rl.serviceAccountName" . }}
  namespace: {{ .root.Release.Namespace }}
  labels:
    {{- include "chess-rl.labels" . | nindent 4 }}
  {{- with $sa.annotations }}
  annotations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
automountServiceAccountToken: false
{{- end }}
{{- end -}}

{{/* storageClassName of a persistence block: "" omits it (the default class), "-" sets "". */}}
{{- define "chess-rl.storageClass" -}}
{{- if eq (toString .storageClass) "-" -}}
storageClassName: ""
{{- else if .storageClass -}}
storageClassName: {{ .storageClass | quote }}
{{- end -}}
{{- end -}}
