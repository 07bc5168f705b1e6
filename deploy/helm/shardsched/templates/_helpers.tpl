{{/* Labels of every object: deploy/'s part-of (its kustomization adds it), and Helm's own. */}}
{{- define "shardsched.labels" -}}
app.kubernetes.io/part-of: shardsched
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* The labels of one component's objects (its name first, as deploy/ has it). */}}
{{- define "shardsched.componentLabels" -}}
app.kubernetes.io/name: {{ .name }}
{{ include "shardsched.labels" .root }}
{{- end -}}

{{/* The configuration file: values.config with the counts and the security section the
     chart's own values give. */}}
{{- define "shardsched.config" -}}
{{- $cfg := deepCopy .Values.config -}}
{{- $_ := set $cfg "apiVersion" "shardsched.io/v1alpha1" -}}
{{- $_ := set $cfg "kind" "ShardschedConfiguration" -}}
{{- $_ := set $cfg.shards "count" (int .Values.shards.replicas) -}}
{{- $_ := set $cfg.binders "count" (int .Values.binders.partitions) -}}
{{- $mode := .Values.security.mode -}}
{{- if eq $mode "token" -}}
{{- $_ := set $cfg "security" (merge (dict "mode" "token" "tokenFile" "/etc/shardsched/security/token") (default (dict) $cfg.security)) -}}
{{- else if eq $mode "mtls" -}}
{{- $_ := set $cfg "security" (merge (dict "mode" "mtls" "caFile" "/etc/shardsched/security/ca.crt" "certFile" "/etc/shardsched/security/tls.crt" "keyFile" "/etc/shardsched/security/tls.key") (default (dict) $cfg.security)) -}}
{{- else if ne $mode "none" -}}
{{- fail (printf "security.mode: must be none, token or mtls, got %q" $mode) -}}
{{- end -}}
{{- if and (ne $mode "none") (not .Values.security.secretName) -}}
{{- fail (printf "security.secretName: is required with security.mode %s" $mode) -}}
{{- end -}}
{{- toYaml $cfg -}}
{{- end -}}

{{/* One component's workload: a StatefulSet or Deployment. Parameters: root, kind, role
     (dispatcher, shard, binder), name, replicas, values (its section: resources), port,
     metricsPort, idEnv (the name of the variable holding its --id) and idField (where the
     downward API takes it from), extra (a dict merged into the spec: serviceName and the
     like), automount (dispatcher only, as deploy/). */}}
{{- define "shardsched.workload" -}}
{{- $root := .root -}}
apiVersion: apps/v1
kind: {{ .kind }}
metadata:
  name: {{ .name }}
  namespace: {{ $root.Release.Namespace }}
  labels:
    {{- include "shardsched.componentLabels" (dict "name" .name "root" $root) | nindent 4 }}
spec:
  {{- with .extra }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
  replicas: {{ .replicas }}
  selector: {matchLabels: {app.kubernetes.io/name: {{ .name }}}}
  template:
    metadata:
      labels: {app.kubernetes.io/name: {{ .name }}}
      annotations:
        checksum/config: {{ include "shardsched.config" $root | sha256sum }}
    spec:
      serviceAccountName: {{ .name }}
      priorityClassName: {{ $root.Values.priorityClassName }}
      {{- if .automount }}
      automountServiceAccountToken: true
      {{- end }}
      securityContext:
        runAsNonRoot: true
        runAsUser: 65532
        runAsGroup: 65532
        seccompProfile: {type: RuntimeDefault}
      affinity:
        podAntiAffinity:
          preferredDuringSchedulingIgnoredDuringExecution:
          - weight: 100
            podAffinityTerm:
              topologyKey: kubernetes.io/hostname
              labelSelector: {matchLabels: {app.kubernetes.io/name: {{ .name }}}}
      containers:
      - name: {{ .role }}
        image: {{ printf "%s:%s" $root.Values.image.repository $root.Values.image.tag | quote }}
        {{- with $root.Values.image.pullPolicy }}
        imagePullPolicy: {{ . }}
        {{- end }}
        command: [python, -m, {{ .role }}]
        args: [--config, /etc/shardsched/config.yaml, --id, $({{ .idEnv }}), --host, $(POD_IP),
               --port, {{ .port | quote }}, --metrics-port, {{ .metricsPort | quote }}]
        env:
        - name: POD_IP
          valueFrom: {fieldRef: {fieldPath: status.podIP}}
        - name: {{ .idEnv }}
          valueFrom: {fieldRef: {fieldPath: {{ .idField | quote }}}}
        ports:
        - {name: grpc, containerPort: {{ .port }}}
        - {name: metrics, containerPort: {{ .metricsPort }}}
        readinessProbe:
          httpGet: {path: /readyz, port: metrics}
          periodSeconds: 5
        livenessProbe:
          httpGet: {path: /livez, port: metrics}
          periodSeconds: 10
          timeoutSeconds: 5
          failureThreshold: 3
        resources:
          {{- toYaml .values.resources | nindent 10 }}
        securityContext:
          allowPrivilegeEscalation: false
          readOnlyRootFilesystem: true
          capabilities: {drop: [ALL]}
        volumeMounts:
        - {name: config, mountPath: /etc/shardsched, readOnly: true}
        - {name: tmp, mountPath: /tmp}
        {{- if ne $root.Values.security.mode "none" }}
        - {name: security, mountPath: /etc/shardsched/security, readOnly: true}
        {{- end }}
      volumes:
      - name: config
        configMap: {name: shardsched-config}
      - name: tmp
        emptyDir: {medium: Memory, sizeLimit: 16Mi}
      {{- if ne $root.Values.security.mode "none" }}
      - name: security
        secret: {secretName: {{ $root.Values.security.secretName }}, defaultMode: 0400}
      {{- end }}
---
apiVersion: v1
kind: Service
metadata:
  name: {{ .name }}
  namespace: {{ $root.Release.Namespace }}
  labels:
    {{- include "shardsched.componentLabels" (dict "name" .name "root" $root) | nindent 4 }}
spec:
  clusterIP: None
  selector: {app.kubernetes.io/name: {{ .name }}}
  ports:
  - {name: grpc, port: {{ .port }}, targetPort: grpc}
  - {name: metrics, port: {{ .metricsPort }}, targetPort: metrics}
{{- end -}}
