{{/*
The objects of one component, each from (dict "root" $ "c" $c): helm/halo renders them for every
component it runs (templates/component.yaml), helm/halo-service for its one service.
*/}}

{{- define "halo.deployment" -}}
{{- $root := .root }}{{ $c := .c }}
{{- $ctx := dict "root" $root "name" $c.name "version" $c.tag }}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ $c.fullname }}
  labels:
    {{- include "halo.labels" $ctx | nindent 4 }}
spec:
  {{- if not $c.autoscaling.enabled }}
  replicas: {{ $c.replicas }}
  {{- end }}
  revisionHistoryLimit: 5
  strategy:
    {{- toYaml $c.strategy | nindent 4 }}
  selector:
    matchLabels:
      {{- include "halo.selectorLabels" $ctx | nindent 6 }}
  template:
    metadata:
      labels:
        {{- include "halo.podLabels" $ctx | nindent 8 }}
        {{- with $c.podLabels }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
        {{- with include "halo.meshLabels" $root }}
        {{- . | nindent 8 }}
        {{- end }}
      {{- $annotations := merge (dict) (default (dict) $c.podAnnotations) (fromYaml (include "halo.meshAnnotations" $root)) }}
      {{- if $root.Values.metrics.scrapeAnnotations }}
      {{- /* Every process serves Prometheus' format at /metrics (docs/operations.md). */}}
      {{- $_ := set $annotations "prometheus.io/scrape" "true" }}
      {{- $_ := set $annotations "prometheus.io/port" (toString ($c.metricsPort | default $c.httpPort)) }}
      {{- $_ := set $annotations "prometheus.io/path" "/metrics" }}
      {{- end }}
      {{- with $c.secretChecksum }}
      {{- /* A changed chart Secret (a rotated JWT secret, a new database URL) rolls the pods. */}}
      {{- $_ := set $annotations "checksum/secret" . }}
      {{- end }}
      {{- with $annotations }}
      annotations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
    spec:
      {{- include "halo.podSpecCommon" . | trim | nindent 6 }}
      terminationGracePeriodSeconds: {{ $c.terminationGracePeriodSeconds }}
      {{- with $c.priorityClassName }}
      priorityClassName: {{ . }}
      {{- end }}
      {{- with $c.affinity }}
      affinity:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with include "halo.topologySpread" . }}
      topologySpreadConstraints:
        {{- . | nindent 8 }}
      {{- end }}
      {{- with $c.initContainers }}
      initContainers:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      containers:
        - name: {{ $c.name }}
          image: {{ include "halo.image" . | quote }}
          imagePullPolicy: {{ $root.Values.image.pullPolicy }}
          ports:
            - name: http
              containerPort: {{ $c.httpPort }}
              protocol: TCP
            {{- if $c.grpcPort }}
            - name: grpc
              containerPort: {{ $c.grpcPort }}
              protocol: TCP
            {{- end }}
            {{- if $c.metricsPort }}
            - name: metrics
              containerPort: {{ $c.metricsPort }}
              protocol: TCP
            {{- end }}
          {{- with include "halo.envFrom" $c | trim }}{{ . | nindent 10 }}{{ end }}
          env:
            {{- include "halo.env" (dict "root" $root "c" $c "secret" (include "halo.secretName" $root)) | trim | nindent 12 }}
          # Start-up may include migrations: up to failureThreshold × periodSeconds before liveness counts.
          startupProbe:
            httpGet:
              path: /healthz
              port: http
            {{- toYaml $c.probes.startup | nindent 12 }}
          # Liveness: the process answers. gRPC servers are asked over gRPC (grpc.health.v1 on the
          # port peers use), the gateway over HTTP.
          livenessProbe:
            {{- if $c.grpcPort }}
            grpc:
              port: {{ $c.grpcPort }}
            {{- else }}
            httpGet:
              path: /healthz
              port: http
            {{- end }}
            {{- toYaml $c.probes.liveness | nindent 12 }}
          # Readiness: /readyz pings the real dependencies (PostgreSQL, Redis; the gateway: its
          # supergraph) and fails as soon as shutdown starts, so endpoints drain first.
          readinessProbe:
            httpGet:
              path: /readyz
              port: http
            {{- toYaml $c.probes.readiness | nindent 12 }}
          lifecycle:
            preStop:
              # Endpoints are removed asynchronously: keep serving a moment before SIGTERM.
              exec:
                command: ["sleep", "{{ $c.preStopSleepSeconds }}"]
          resources:
            {{- toYaml $c.resources | nindent 12 }}
          securityContext:
            {{- toYaml $c.securityContext | nindent 12 }}
          volumeMounts:
            - name: tmp
              mountPath: /tmp
            {{- range $c.mounts }}
            - name: {{ .name }}
              mountPath: {{ .mountPath }}
              readOnly: true
            {{- end }}
            {{- with $c.extraVolumeMounts }}
            {{- toYaml . | nindent 12 }}
            {{- end }}
        {{- with $c.extraContainers }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      volumes:
        # The root filesystem is read-only; Node and its libraries may still write temp files.
        - name: tmp
          emptyDir:
            sizeLimit: 64Mi
        {{- range $c.mounts }}
        # No subPath: kubelet swaps the mounted files atomically when the ConfigMap changes.
        - name: {{ .name }}
          configMap:
            name: {{ .configMap }}
        {{- end }}
        {{- with $c.extraVolumes }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
{{- end }}

{{- define "halo.service" -}}
{{- $c := .c }}
{{- $ctx := dict "root" .root "name" $c.name "version" $c.tag }}
apiVersion: v1
kind: Service
metadata:
  name: {{ $c.fullname }}
  labels:
    {{- include "halo.labels" $ctx | nindent 4 }}
  {{- with $c.serviceAnnotations }}
  annotations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
spec:
  type: {{ $c.serviceType | default "ClusterIP" }}
  selector:
    {{- include "halo.selectorLabels" $ctx | nindent 4 }}
  ports:
    - name: http
      port: {{ $c.httpPort }}
      targetPort: http
      protocol: TCP
    {{- if $c.grpcPort }}
    # Plaintext HTTP/2 (h2c): how a mesh recognises gRPC.
    - name: grpc
      port: {{ $c.grpcPort }}
      targetPort: grpc
      protocol: TCP
      appProtocol: kubernetes.io/h2c
    {{- end }}
    {{- if $c.metricsPort }}
    # Prometheus' /metrics, for a ServiceMonitor; the Ingress routes to `http` only.
    - name: metrics
      port: {{ $c.metricsPort }}
      targetPort: metrics
      protocol: TCP
    {{- end }}
{{- end }}

{{- define "halo.hpa" -}}
{{- $c := .c }}
{{- $ctx := dict "root" .root "name" $c.name "version" $c.tag }}
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: {{ $c.fullname }}
  labels:
    {{- include "halo.labels" $ctx | nindent 4 }}
spec:
  scaleTargetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: {{ $c.fullname }}
  minReplicas: {{ $c.autoscaling.minReplicas }}
  maxReplicas: {{ $c.autoscaling.maxReplicas }}
  metrics:
    - type: Resource
      resource:
        name: cpu
        target:
          type: Utilization
          averageUtilization: {{ $c.autoscaling.targetCPUUtilizationPercentage }}
    {{- with $c.autoscaling.targetMemoryUtilizationPercentage }}
    - type: Resource
      resource:
        name: memory
        target:
          type: Utilization
          averageUtilization: {{ . }}
    {{- end }}
{{- end }}

{{- define "halo.pdb" -}}
{{- $c := .c }}
{{- $ctx := dict "root" .root "name" $c.name "version" $c.tag }}
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: {{ $c.fullname }}
  labels:
    {{- include "halo.labels" $ctx | nindent 4 }}
spec:
  {{- if hasKey $c.podDisruptionBudget "minAvailable" }}
  minAvailable: {{ $c.podDisruptionBudget.minAvailable }}
  {{- else }}
  maxUnavailable: {{ $c.podDisruptionBudget.maxUnavailable }}
  {{- end }}
  selector:
    matchLabels:
      {{- include "halo.selectorLabels" $ctx | nindent 6 }}
{{- end }}

{{/*
Who may open a connection to a component's pods: the rules come from the chart
(halo.ingressRules), which knows the component's callers. Kubelet probes are not subject to
NetworkPolicy.
*/}}
{{- define "halo.networkPolicy" -}}
{{- $c := .c }}
{{- $ctx := dict "root" .root "name" $c.name "version" $c.tag }}
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: {{ $c.fullname }}
  labels:
    {{- include "halo.labels" $ctx | nindent 4 }}
spec:
  podSelector:
    matchLabels:
      {{- include "halo.selectorLabels" $ctx | nindent 6 }}
  policyTypes:
    - Ingress
  ingress:
    {{- include "halo.ingressRules" . | trim | nindent 4 }}
    {{- with $c.networkPolicyExtraIngress }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
{{- end }}

{{/*
One ingress rule: peers (components by name, whichever release runs them) on ports.
(dict "root" $ "names" (list "gateway") "ports" (list "http"))
*/}}
{{- define "halo.peerRule" -}}
- from:
    {{- range .names }}
    - podSelector:
        matchLabels:
          {{- include "halo.peerLabels" (dict "root" $.root "name" .) | nindent 10 }}
    {{- end }}
  ports:
    {{- range .ports }}
    - port: {{ . }}
      protocol: TCP
    {{- end }}
{{- end }}

{{/* Whoever scrapes /metrics, on the port it is on (the gateway's `metrics`, a service's `http`). (dict "root" $ "c" $c "scraper" <networkPolicy.metricsScraper>) */}}
{{- define "halo.scraperRule" -}}
{{- $s := .scraper }}
{{- if $s.enabled -}}
- from:
    - namespaceSelector:
        {{- toYaml ($s.namespaceSelector | default (dict)) | nindent 8 }}
      {{- with $s.podSelector }}
      podSelector:
        {{- toYaml . | nindent 8 }}
      {{- end }}
  ports:
    - port: {{ ternary "metrics" "http" (not (empty .c.metricsPort)) }}
      protocol: TCP
{{- end }}
{{- end }}

{{/* The pre-install/pre-upgrade migration Job of a service with a database. */}}
{{- define "halo.migrationJob" -}}
{{- $root := .root }}{{ $c := .c }}
{{- $job := printf "%s-migrate" $c.name }}
{{- $ctx := dict "root" $root "name" $job "version" $c.tag }}
apiVersion: batch/v1
kind: Job
metadata:
  name: {{ printf "%s-migrate" $c.fullname | trunc 63 | trimSuffix "-" }}
  labels:
    {{- include "halo.labels" $ctx | nindent 4 }}
  annotations:
    helm.sh/hook: pre-install,pre-upgrade
    helm.sh/hook-weight: "0"
    helm.sh/hook-delete-policy: before-hook-creation,hook-succeeded
spec:
  backoffLimit: {{ $root.Values.migrations.backoffLimit }}
  activeDeadlineSeconds: {{ $root.Values.migrations.activeDeadlineSeconds }}
  template:
    metadata:
      # Not the component's selector labels: a migration pod must never join its Service.
      labels:
        {{- include "halo.podLabels" $ctx | nindent 8 }}
    spec:
      {{- include "halo.podSpecCommon" (dict "root" $root "c" $c "hook" true) | trim | nindent 6 }}
      restartPolicy: Never
      containers:
        - name: migrate
          image: {{ include "halo.image" . | quote }}
          imagePullPolicy: {{ $root.Values.image.pullPolicy }}
          {{- with include "halo.envFrom" $c | trim }}{{ . | nindent 10 }}{{ end }}
          env:
            {{- include "halo.env" (dict "root" $root "c" $c "secret" (include "halo.hookSecretName" $root) "hook" true "extra" (dict "HALO_MIGRATE_ONLY" "true")) | trim | nindent 12 }}
          resources:
            {{- toYaml $c.resources | nindent 12 }}
          securityContext:
            {{- toYaml $c.securityContext | nindent 12 }}
          volumeMounts:
            - name: tmp
              mountPath: /tmp
            {{- with $c.extraVolumeMounts }}
            {{- toYaml . | nindent 12 }}
            {{- end }}
      volumes:
        - name: tmp
          emptyDir:
            sizeLimit: 64Mi
        {{- with $c.extraVolumes }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
{{- end }}

{{/*
The post-install/post-upgrade Job that publishes a service's contract to the registry: the
service's own image with HALO_PUBLISH_CONTRACT_ONLY=true posts its subgraph SDL and REST routes
with its service token (SERVICE_SIGNING_KEY) and exits; non-zero (refused by the registry's check,
or the registry unreachable) fails the release. Post hooks run once the release's objects exist
and, with `helm upgrade --wait`, once its pods are ready: the gateway switches to the new contract
only when pods that serve it are up. (dict "root" $ "c" $c "registryUrl" <env entry> "publicUrl" <url>)
*/}}
{{- define "halo.publishJob" -}}
{{- $root := .root }}{{ $c := .c }}
{{- $job := printf "%s-publish" $c.name }}
{{- $ctx := dict "root" $root "name" $job "version" $c.tag }}
{{- $extra := dict "HALO_PUBLISH_CONTRACT_ONLY" "true" "REGISTRY_URL" .registryUrl "SERVICE_PUBLIC_URL" .publicUrl }}
{{- with $root.Values.publish.acknowledge }}{{ $_ := set $extra "REGISTRY_PUBLISH_ACKNOWLEDGE" . }}{{ end }}
apiVersion: batch/v1
kind: Job
metadata:
  name: {{ printf "%s-publish" $c.fullname | trunc 63 | trimSuffix "-" }}
  labels:
    {{- include "halo.labels" $ctx | nindent 4 }}
  annotations:
    helm.sh/hook: post-install,post-upgrade
    helm.sh/hook-weight: "0"
    helm.sh/hook-delete-policy: before-hook-creation,hook-succeeded
spec:
  backoffLimit: {{ $root.Values.publish.backoffLimit }}
  activeDeadlineSeconds: {{ $root.Values.publish.activeDeadlineSeconds }}
  template:
    metadata:
      # Not the component's selector labels: it must never join its Service. The registry's
      # NetworkPolicy admits pods of this component label.
      labels:
        {{- include "halo.podLabels" $ctx | nindent 8 }}
    spec:
      {{- include "halo.podSpecCommon" (dict "root" $root "c" $c) | trim | nindent 6 }}
      restartPolicy: Never
      containers:
        - name: publish
          image: {{ include "halo.image" . | quote }}
          imagePullPolicy: {{ $root.Values.image.pullPolicy }}
          {{- with include "halo.envFrom" $c | trim }}{{ . | nindent 10 }}{{ end }}
          env:
            {{- include "halo.env" (dict "root" $root "c" $c "secret" (include "halo.secretName" $root) "publish" true "extra" $extra) | trim | nindent 12 }}
          resources:
            requests:
              cpu: 50m
              memory: 128Mi
            limits:
              memory: 256Mi
          securityContext:
            {{- toYaml $c.securityContext | nindent 12 }}
          volumeMounts:
            - name: tmp
              mountPath: /tmp
            {{- with $c.extraVolumeMounts }}
            {{- toYaml . | nindent 12 }}
            {{- end }}
      volumes:
        - name: tmp
          emptyDir:
            sizeLimit: 64Mi
        {{- with $c.extraVolumes }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
{{- end }}

{{/*
A Prometheus Operator ServiceMonitor for one component: its Service's port that serves /metrics
(the gateway's `metrics`, a service's `http`).
*/}}
{{- define "halo.serviceMonitor" -}}
{{- $c := .c }}
{{- $sm := .root.Values.metrics.serviceMonitor }}
{{- $ctx := dict "root" .root "name" $c.name "version" $c.tag }}
apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata:
  name: {{ $c.fullname }}
  labels:
    {{- include "halo.labels" $ctx | nindent 4 }}
    {{- with $sm.labels }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
spec:
  selector:
    matchLabels:
      {{- include "halo.selectorLabels" $ctx | nindent 6 }}
  endpoints:
    - port: {{ ternary "metrics" "http" (not (empty $c.metricsPort)) }}
      path: /metrics
      scheme: http
      interval: {{ $sm.interval }}
      {{- with $sm.scrapeTimeout }}
      scrapeTimeout: {{ . }}
      {{- end }}
{{- end }}

{{/*
A post-delete hook that deletes the hook copy of the Secret (`secret`) on `helm uninstall`: Helm
never deletes hook objects with the release, and one left by a failed hook (Helm versions that do
not clean earlier hooks on failure) would keep database credentials in the namespace. Its pod
runs `image` (a Halo image: Node's fetch against the API server with its own token, allowed to
delete that one Secret and nothing else), then Helm deletes it and its RBAC objects.
(dict "root" $ "c" $c "secret" <name> "name" <the objects' name>)
*/}}
{{- define "halo.hookSecretCleanup" -}}
{{- $root := .root }}{{ $c := .c }}
{{- $ctx := dict "root" $root "name" "hook-cleanup" "version" $c.tag }}
{{- $annotations := dict "helm.sh/hook" "post-delete" "helm.sh/hook-delete-policy" "before-hook-creation,hook-succeeded" }}
apiVersion: v1
kind: ServiceAccount
metadata:
  name: {{ .name }}
  labels:
    {{- include "halo.labels" $ctx | nindent 4 }}
  annotations:
    {{- toYaml (merge (dict "helm.sh/hook-weight" "-5") $annotations) | nindent 4 }}
automountServiceAccountToken: false
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: {{ .name }}
  labels:
    {{- include "halo.labels" $ctx | nindent 4 }}
  annotations:
    {{- toYaml (merge (dict "helm.sh/hook-weight" "-5") $annotations) | nindent 4 }}
rules:
  - apiGroups: [""]
    resources: ["secrets"]
    resourceNames: [{{ .secret | quote }}]
    verbs: ["delete"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: {{ .name }}
  labels:
    {{- include "halo.labels" $ctx | nindent 4 }}
  annotations:
    {{- toYaml (merge (dict "helm.sh/hook-weight" "-5") $annotations) | nindent 4 }}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: {{ .name }}
subjects:
  - kind: ServiceAccount
    name: {{ .name }}
    namespace: {{ $root.Release.Namespace }}
---
apiVersion: batch/v1
kind: Job
metadata:
  name: {{ .name }}
  labels:
    {{- include "halo.labels" $ctx | nindent 4 }}
  annotations:
    {{- toYaml (merge (dict "helm.sh/hook-weight" "0") $annotations) | nindent 4 }}
spec:
  backoffLimit: 2
  activeDeadlineSeconds: 120
  template:
    metadata:
      labels:
        {{- include "halo.podLabels" $ctx | nindent 8 }}
    spec:
      serviceAccountName: {{ .name }}
      # The one pod with a token: it may delete the hook Secret and nothing else (the Role above).
      automountServiceAccountToken: true
      {{- with $root.Values.imagePullSecrets }}
      imagePullSecrets:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      securityContext:
        {{- toYaml $c.podSecurityContext | nindent 8 }}
      restartPolicy: Never
      containers:
        - name: cleanup
          image: {{ include "halo.image" . | quote }}
          imagePullPolicy: {{ $root.Values.image.pullPolicy }}
          command:
            - node
            - -e
            - |
              const dir = '/var/run/secrets/kubernetes.io/serviceaccount';
              const token = require('node:fs').readFileSync(dir + '/token', 'utf8');
              const url = 'https://kubernetes.default.svc/api/v1/namespaces/' + process.env.NAMESPACE + '/secrets/' + process.env.SECRET;
              fetch(url, { method: 'DELETE', headers: { authorization: 'Bearer ' + token } }).then(
                (res) => { console.log('DELETE secret ' + process.env.SECRET + ': ' + res.status); process.exit(res.ok || res.status === 404 ? 0 : 1); },
                (err) => { console.error(err); process.exit(1); });
          env:
            - name: NAMESPACE
              value: {{ $root.Release.Namespace | quote }}
            - name: SECRET
              value: {{ .secret | quote }}
            # The API server's certificate is signed by the cluster's CA.
            - name: NODE_EXTRA_CA_CERTS
              value: /var/run/secrets/kubernetes.io/serviceaccount/ca.crt
          resources:
            requests:
              cpu: 10m
              memory: 64Mi
            limits:
              memory: 128Mi
          securityContext:
            {{- toYaml $c.securityContext | nindent 12 }}
{{- end }}
