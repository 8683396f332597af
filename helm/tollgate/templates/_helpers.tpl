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

{{/*
The Redis URL environment variable {root, name, user}: from the external Secret, the external URL,
or the bundled Redis as the component's own ACL user (`user`: operator or gateway), its password
read from the auth Secret and put into the URL by Kubernetes ($(VAR)), never written in the spec.
*/}}
{{- define "tollgate.redisEnv" -}}
{{- $v := .root.Values -}}
{{- if $v.redis.external.existingSecret }}
- name: {{ .name }}
  valueFrom:
    secretKeyRef:
      name: {{ $v.redis.external.existingSecret }}
      key: {{ $v.redis.external.existingSecretKey }}
{{- else if $v.redis.external.url }}
- name: {{ .name }}
  valueFrom:
    secretKeyRef:
      name: {{ include "tollgate.componentName" (dict "root" .root "component" "redis-url") }}
      key: url
{{- else }}
{{- include "tollgate.redisPasswordEnv" (dict "root" .root "user" .user) }}
- name: {{ .name }}
  value: {{ include "tollgate.bundledRedisUrl" (dict "root" .root "user" .user "password" "$(TOLLGATE_REDIS_PASSWORD)" "sentinelPassword" "$(TOLLGATE_REDIS_SENTINEL_PASSWORD)") | quote }}
{{- end }}
{{- end -}}

{{/* TOLLGATE_REDIS_PASSWORD (and with Sentinel TOLLGATE_REDIS_SENTINEL_PASSWORD) of the bundled Redis's user {root, user}. */}}
{{- define "tollgate.redisPasswordEnv" -}}
- name: TOLLGATE_REDIS_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ include "tollgate.redisAuthSecret" .root }}
      key: {{ .user }}
{{- if .root.Values.redis.sentinel.enabled }}
- name: TOLLGATE_REDIS_SENTINEL_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ include "tollgate.redisAuthSecret" .root }}
      key: sentinel-client
{{- end }}
{{- end -}}

{{/* The bundled Redis by its cluster DNS name(s), as ACL user {root, user, password, sentinelPassword}. */}}
{{- define "tollgate.bundledRedisUrl" -}}
{{- $r := .root -}}
{{- $name := include "tollgate.redisName" $r -}}
{{- $auth := printf "tollgate-%s:%s@" .user .password -}}
{{- if $r.Values.redis.sentinel.enabled -}}
{{- $hosts := list -}}
{{- range $i := until (int $r.Values.redis.sentinel.replicas) -}}
{{- $hosts = append $hosts (printf "%s-%d.%s-headless.%s.svc.%s:26379" $name $i $name $r.Release.Namespace $r.Values.redis.sentinel.clusterDomain) -}}
{{- end -}}
{{- printf "redis+sentinel://%s%s/%s?sentinelUsername=tollgate-client&sentinelPassword=%s" $auth (join "," $hosts) $r.Values.redis.sentinel.primaryName .sentinelPassword -}}
{{- else -}}
{{- printf "redis://%s%s.%s.svc:6379" $auth $name $r.Release.Namespace -}}
{{- end -}}
{{- end -}}

{{/* Every password of the bundled Redis's users, as the nodes' start scripts read them (PASSWORD_<user>). */}}
{{- define "tollgate.redisNodePasswords" -}}
{{- range $u := list "operator" "gateway" "sidecar" "replication" "sentinel" "sentinel-client" }}
- name: PASSWORD_{{ $u | replace "-" "_" }}
  valueFrom:
    secretKeyRef: { name: {{ include "tollgate.redisAuthSecret" $ }}, key: {{ $u }} }
{{- end }}
{{- end -}}

{{- define "tollgate.redisAuthSecret" -}}
{{- include "tollgate.componentName" (dict "root" . "component" "redis-auth") -}}
{{- end -}}

{{/*
The bundled Redis's ACL users, one line each without its password (the start script adds it).
Each may do what its component needs and no more (docs/install.md, "Redis users"):
- operator: the index, the routes and every tg:* key (it rebuilds them), the channels.
- gateway: the same key space (it writes the index for the keys its API makes, and counters).
- sidecar: reads the index, the routes and the marker; writes only counters and spent grant ids,
  each kind with only the commands that kind takes (a selector each: no SET over a counter, no
  string over a hash, HSET only on a key's own usage record, for its last use: the per-minute and
  per-hour figures take HINCRBY alone, so they hold integers and nothing larger); listens to the invalidation channels and publishes nothing. Everything else is refused, so a
  team that reads its sidecar's password can mint, widen, reroute or flush nothing.
- replication: what a replica needs of its primary; sentinel: what a Sentinel needs of the nodes.
*/}}
{{- define "tollgate.redisAclRules" -}}
operator: "~tg:* resetchannels &tg:events:* -@all +@read +@write +@keyspace +@string +@hash +@sortedset +@set +@list +@scripting +@pubsub +@transaction +@connection -@dangerous +info +scan +time"
gateway: "~tg:* resetchannels &tg:events:* -@all +@read +@write +@keyspace +@string +@hash +@sortedset +@set +@list +@scripting +@pubsub +@transaction +@connection -@dangerous +info +scan +time"
sidecar: "%R~tg:key:* %R~tg:route:* %R~tg:index:built resetchannels &tg:events:key-changes &tg:events:route-changes -@all +ping +info +time +client|setname +select +quit +get +mget +multi +exec +discard +subscribe +unsubscribe (~tg:grant:used:* +set) (~tg:rl:* +incr +expire) (~tg:usage:* +hincrby +expire +zincrby +zremrangebyrank) (~tg:usage:[0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f] +hset) (~tg:model-usage:* +hincrby +expire) (~tg:sidecar-load:* +hset +pexpire) (%W~tg:audit:sidecar +rpush)"
replication: "-@all +psync +replconf +ping"
sentinel: "resetchannels &__sentinel__:hello -@all +multi +slaveof +replicaof +ping +exec +subscribe +config|rewrite +role +publish +info +client|setname +client|kill +script|kill"
{{- end -}}

{{- define "tollgate.bundledRedis" -}}
{{- if and (not .Values.redis.external.url) (not .Values.redis.external.existingSecret) -}}true{{- end -}}
{{- end -}}

{{/* The pod's own name and namespace, for leader election identity and the namespace it writes to. */}}
{{- /* OpenTelemetry's standard variables, from .Values.tracing: none when no endpoint is set. */ -}}
{{- define "tollgate.tracingEnv" -}}
{{- with .Values.tracing.endpoint }}
- name: OTEL_EXPORTER_OTLP_ENDPOINT
  value: {{ . | quote }}
- name: OTEL_EXPORTER_OTLP_PROTOCOL
  value: {{ $.Values.tracing.protocol | quote }}
- name: OTEL_TRACES_SAMPLER
  value: parentbased_traceidratio
- name: OTEL_TRACES_SAMPLER_ARG
  value: {{ $.Values.tracing.sampleRatio | quote }}
{{- end }}
{{- end -}}

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

{{/*
The Redis URL injected sidecars use, from any namespace: the given one, or the bundled Redis as
the sidecar user, its password from the Secret the operator puts in the pod's namespace.
*/}}
{{- define "tollgate.sidecarRedisUrl" -}}
{{- if .Values.sidecar.redisUrl -}}
{{ .Values.sidecar.redisUrl }}
{{- else if (include "tollgate.bundledRedis" .) -}}
{{ include "tollgate.bundledRedisUrl" (dict "root" . "user" "sidecar" "password" "$(TOLLGATE_REDIS_PASSWORD)" "sentinelPassword" "$(TOLLGATE_REDIS_SENTINEL_PASSWORD)") }}
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
