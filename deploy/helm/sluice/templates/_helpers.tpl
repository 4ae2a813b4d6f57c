{{/*
The prefix of every object's name: the release's name when it says sluice
(release "sluice" gives sluice-gateway, sluice-consumer, as the kustomize
base names them), else release-sluice.
*/}}
{{- define "sluice.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 50 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* Labels of a component's objects and pods; the selectors take name and component. */}}
{{- define "sluice.selector" -}}
app.kubernetes.io/name: sluice
app.kubernetes.io/component: {{ . }}
{{- end -}}

{{- define "sluice.podLabels" -}}
{{ include "sluice.selector" . }}
app.kubernetes.io/part-of: sluice
{{- end -}}

{{/* Object labels: the pods' and Helm's own (metadata only, so that a new chart version does not roll the pods). */}}
{{- define "sluice.labels" -}}
{{ include "sluice.podLabels" .component }}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version | replace "+" "_" }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
{{- end -}}

{{- define "sluice.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{/* The restricted Pod Security Standard's container securityContext. */}}
{{- define "sluice.containerSecurityContext" -}}
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
privileged: false
capabilities:
  drop: [ALL]
seccompProfile:
  type: RuntimeDefault
{{- end -}}
