{{/*
Helpers shared by helm/halo and helm/halo-service (README.md: what each chart must define).
`root` is the top-level context ($), `name` a component's name, `c` its effective settings.
*/}}

{{/* The application's name (the selector label app.kubernetes.io/name): halo in both charts. */}}
{{- define "halo.name" -}}
{{- default "halo" .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "halo.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* (dict "root" $ "name" "content") */}}
{{- define "halo.selectorLabels" -}}
app.kubernetes.io/name: {{ include "halo.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .name }}
{{- end }}

{{/*
Pod template labels. (dict "root" $ "name" "content" ["version" tag]); the version label is the
component's image tag. Nothing here depends on the chart's version: a chart bump rolls no pod.
`part-of` names the Halo installation (the platform release), whichever release runs the pod:
NetworkPolicies select peers across releases by it and the component.
*/}}
{{- define "halo.podLabels" -}}
{{ include "halo.selectorLabels" . }}
{{- with .version }}
app.kubernetes.io/version: {{ . | trunc 63 | quote }}
{{- end }}
app.kubernetes.io/part-of: {{ include "halo.platformName" .root }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
{{- end }}

{{/* Object labels: the pod labels and the chart (objects may change with the chart; pods do not). */}}
{{- define "halo.labels" -}}
helm.sh/chart: {{ include "halo.chart" .root }}
{{ include "halo.podLabels" . }}
{{- end }}

{{/* Selects one component's pods, whichever release runs them. (dict "root" $ "name" "payments") */}}
{{- define "halo.peerLabels" -}}
app.kubernetes.io/name: {{ include "halo.name" .root }}
app.kubernetes.io/part-of: {{ include "halo.platformName" .root }}
app.kubernetes.io/component: {{ .name }}
{{- end }}

{{/*
A deep merge that, unlike sprig's mergeOverwrite, lets `false`, 0 and "" override: maps are merged
key by key, anything else is replaced. (list base over) → JSON.
*/}}
{{- define "halo.merge" -}}
{{- $base := deepCopy (index . 0) }}
{{- range $k, $v := index . 1 }}
{{- if and (kindIs "map" $v) (kindIs "map" (index $base $k)) }}
{{- $_ := set $base $k (fromJson (include "halo.merge" (list (index $base $k) $v))) }}
{{- else }}
{{- $_ := set $base $k $v }}
{{- end }}
{{- end }}
{{- toJson $base }}
{{- end }}

{{/* (dict "root" $ "c" <the component's own values>) */}}
{{- define "halo.imageTag" -}}
{{- $image := default (dict) .c.image }}
{{- $image.tag | default .root.Values.image.tag | default .root.Chart.AppVersion | toString }}
{{- end }}

{{/* <registry>/<prefix>/<component>:<tag>, or the component's own image.repository. (dict "root" $ "c" $c) */}}
{{- define "halo.image" -}}
{{- $image := default (dict) .c.image }}
{{- $repository := $image.repository }}
{{- if not $repository }}
{{- $repository = list .root.Values.image.registry .root.Values.image.repositoryPrefix .c.name | compact | join "/" }}
{{- end }}
{{- printf "%s:%s" $repository .c.tag }}
{{- end }}

{{- define "halo.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "halo.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "halo.secretKeyRef" -}}
valueFrom:
  secretKeyRef:
    name: {{ .secret }}
    key: {{ .key }}
    {{- if .optional }}
    optional: true
    {{- end }}
{{- end }}

{{- define "halo.configMapKeyRef" -}}
valueFrom:
  configMapKeyRef:
    name: {{ .configMap }}
    key: {{ .key }}
    {{- if .optional }}
    optional: true
    {{- end }}
{{- end }}

{{/*
A component's environment as the container's `env`: what the chart derives (halo.derivedEnv:
ports, peers, secrets, keys), then the merged `env` map, then `extra`, sorted by name (so a
variable may use $(NAME) of one sorted before it). (dict "root" $ "c" $c "secret" <name> ["extra" <map>] ["hook" true])
*/}}
{{- define "halo.env" -}}
{{- $env := fromJson (include "halo.derivedEnv" .) }}
{{- range $vars := list (default (dict) .c.env) (default (dict) .extra) }}
{{- range $k, $v := $vars }}
{{- if kindIs "invalid" $v }}
{{- $_ := unset $env $k }}
{{- else if kindIs "map" $v }}
{{- $_ := set $env $k $v }}
{{- else }}
{{- $_ := set $env $k (dict "value" (toString $v)) }}
{{- end }}
{{- end }}
{{- end }}
{{- range $k := keys $env | sortAlpha }}
- name: {{ $k }}
{{- $v := index $env $k }}
{{- if hasKey $v "value" }}
  value: {{ $v.value | quote }}
{{- else }}
  {{- toYaml $v | nindent 2 }}
{{- end }}
{{- end }}
{{- end }}

{{/*
Pod-level settings shared by Deployments, hook Jobs and the test pod. (dict "root" $ "c" $c ["hook" true])
A pre-install hook runs before the release's ServiceAccount exists, so a hook pod uses the
namespace's default account unless the account is yours (serviceAccount.create=false).
*/}}
{{- define "halo.podSpecCommon" -}}
{{- if or (not .hook) (not .root.Values.serviceAccount.create) }}
serviceAccountName: {{ include "halo.serviceAccountName" .root }}
{{- end }}
automountServiceAccountToken: false
{{- with .root.Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
securityContext:
  {{- toYaml .c.podSecurityContext | nindent 2 }}
{{- with .c.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .c.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/* Labels and annotations a mesh needs on every pod (grpc.tls). (root) */}}
{{- define "halo.meshLabels" -}}
{{- if .Values.grpc.tls.enabled }}{{ with .Values.grpc.tls.podLabels }}{{ toYaml . }}{{ end }}{{ end }}
{{- end }}
{{- define "halo.meshAnnotations" -}}
{{- if .Values.grpc.tls.enabled }}{{ with .Values.grpc.tls.podAnnotations }}{{ toYaml . }}{{ end }}{{ end }}
{{- end }}

{{/* `envFrom:` of a component's containers (extraEnvFrom), or nothing. ($c) */}}
{{- define "halo.envFrom" -}}
{{- with .extraEnvFrom }}
envFrom:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/*
A Deployment's topologySpreadConstraints: spreadAcrossNodes (hostname, preferred), then the
component's own list; an entry without labelSelector selects the component's pods, so
`{maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: ScheduleAnyway}`
spreads it over zones. (dict "root" $ "c" $c)
*/}}
{{- define "halo.topologySpread" -}}
{{- $selector := dict "matchLabels" (fromYaml (include "halo.selectorLabels" (dict "root" .root "name" .c.name))) }}
{{- $constraints := list }}
{{- if .c.spreadAcrossNodes }}
{{- $constraints = append $constraints (dict "maxSkew" 1 "topologyKey" "kubernetes.io/hostname" "whenUnsatisfiable" "ScheduleAnyway" "labelSelector" $selector) }}
{{- end }}
{{- range .c.topologySpreadConstraints }}
{{- $t := deepCopy . }}
{{- if not (hasKey $t "labelSelector") }}{{ $_ := set $t "labelSelector" $selector }}{{ end }}
{{- $constraints = append $constraints $t }}
{{- end }}
{{- with $constraints }}{{ toYaml . }}{{ end }}
{{- end }}
