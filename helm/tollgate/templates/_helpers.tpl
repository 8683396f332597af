{{/* Names, labels and shared fragments. */}}

{{- define "tollgate.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "tollgate.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* A component's name: <fullname>-<component>, within 63 characters. */}}
{{- define "tollgate.componentName" -}}
{{- printf "%s-%s" (include "tollgate.fullname" .root | trunc (int (sub 62 (len .component))) | trimSuffix "-") .component -}}
{{- end -}}

{{- define "tollgate.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/name: {{ include "tollgate.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: tollgate
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* Selector labels of one component: {root, component}. */}}
{{- define "tollgate.selectorLabels" -}}
app.kubernetes.io/name: {{ include "tollgate.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "tollgate.componentLabels" -}}
{{ include "tollgate.labels" .root }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "tollgate.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{- define "tollgate.serviceAccountName" -}}
{{- if .root.Values.serviceAccount.create -}}
{{- include "tollgate.componentName" . -}}
{{- else -}}
default
{{- end -}}
{{- end -}}

{{- define "tollgate.redisName" -}}
{{- include "tollgate.componentName" (dict "root" . "component" "redis") -}}
{{- end -}}

{{/* The Redis URL environment variable {root, name}: from the external Secret, the external URL, or the bundled Redis. */}}
{{- define "tollgate.redisEnv" -}}
{{- $v := .root.Values -}}
- name: {{ .name }}
{{- if $v.redis.external.existingSecret }}
  valueFrom:
    secretKeyRef:
      name: {{ $v.redis.external.existingSecret }}
      key: {{ $v.redis.external.existingSecretKey }}
{{- else if $v.redis.external.url }}
  valueFrom:
    secretKeyRef:
      name: {{ include "tollgate.componentName" (dict "root" .root "component" "redis-url") }}
      key: url
{{- else }}
  value: {{ include "tollgate.bundledRedisUrl" .root | quote }}
{{- end }}
{{- end -}}

{{/* The bundled Redis by its cluster DNS name(s): the one server, or the Sentinels of the HA set. */}}
{{- define "tollgate.bundledRedisUrl" -}}
{{- $name := include "tollgate.redisName" . -}}
{{- if .Values.redis.sentinel.enabled -}}
{{- $hosts := list -}}
{{- range $i := until (int .Values.redis.sentinel.replicas) -}}
{{- $hosts = append $hosts (printf "%s-%d.%s-headless.%s.svc.%s:26379" $name $i $name $.Release.Namespace $.Values.redis.sentinel.clusterDomain) -}}
{{- end -}}
{{- printf "redis+sentinel://%s/%s" (join "," $hosts) .Values.redis.sentinel.primaryName -}}
{{- else -}}
{{- printf "redis://%s.%s.svc:6379" $name .Release.Namespace -}}
{{- end -}}
{{- end -}}

{{- define "tollgate.bundledRedis" -}}
{{- if and (not .Values.redis.external.url) (not .Values.redis.external.existingSecret) -}}true{{- end -}}
{{- end -}}

{{/* The pod's own name and namespace, for leader election identity and the namespace it writes to. */}}
{{- define "tollgate.podEnv" -}}
- name: POD_NAME
  valueFrom:
    fieldRef:
      fieldPath: metadata.name
- name: POD_NAMESPACE
  valueFrom:
    fieldRef:
      fieldPath: metadata.namespace
{{- end -}}

{{- define "tollgate.scrapeAnnotations" -}}
{{- if .root.Values.metrics.scrapeAnnotations }}
prometheus.io/scrape: "true"
prometheus.io/port: {{ .port | quote }}
prometheus.io/path: /metrics
{{- end }}
{{- end -}}

{{/* The Redis URL injected sidecars use, from any namespace (empty: the operator's own, from its Secret). */}}
{{- define "tollgate.sidecarRedisUrl" -}}
{{- if .Values.sidecar.redisUrl -}}
{{ .Values.sidecar.redisUrl }}
{{- else if (include "tollgate.bundledRedis" .) -}}
{{ include "tollgate.bundledRedisUrl" . }}
{{- end -}}
{{- end -}}

{{- define "tollgate.webhookName" -}}
{{- include "tollgate.componentName" (dict "root" . "component" "webhook") -}}
{{- end -}}

{{- define "tollgate.grantKeySecret" -}}
{{- include "tollgate.componentName" (dict "root" . "component" "grant-key") -}}
{{- end -}}

{{/* Who may reach the bundled Redis (NetworkPolicy ingress peers): this release's gateway and
operator, the members of an HA set among themselves, and the guarded pods' sidecars, which read
the key index from any namespace. */}}
{{- define "tollgate.redisPeers" -}}
- podSelector:
    matchExpressions:
      - { key: app.kubernetes.io/instance, operator: In, values: [{{ .Release.Name | quote }}] }
      - { key: app.kubernetes.io/component, operator: In, values: [gateway, operator, redis] }
{{- if .Values.sidecar.webhook.enabled }}
- namespaceSelector: {}
  podSelector:
    matchLabels:
      tollgate.dev/inject: "true"
{{- end }}
{{- end -}}
