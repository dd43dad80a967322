{{/*
Helpers shared by every template. They are written for `template` (not
`include`) and return one line each (labels as a YAML flow mapping), so
they render the same in Helm and in the suite's Go-template renderer.
*/}}

{{- define "iggy.name" -}}
{{- .Values.nameOverride | default .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "iggy.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else if contains (.Values.nameOverride | default .Chart.Name) .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name (.Values.nameOverride | default .Chart.Name) | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "iggy.selectorLabels" -}}
{app.kubernetes.io/name: {{ .Values.nameOverride | default .Chart.Name | trunc 63 | trimSuffix "-" }}, app.kubernetes.io/instance: {{ .Release.Name }}}
{{- end -}}

{{- define "iggy.labels" -}}
{app.kubernetes.io/name: {{ .Values.nameOverride | default .Chart.Name | trunc 63 | trimSuffix "-" }}, app.kubernetes.io/instance: {{ .Release.Name }}, app.kubernetes.io/managed-by: {{ .Release.Service }}}
{{- end -}}

{{- define "iggy.secretName" -}}
{{- if .Values.auth.existingSecret -}}
{{- .Values.auth.existingSecret -}}
{{- else -}}
{{- template "iggy.fullname" . -}}-root
{{- end -}}
{{- end -}}

{{- define "iggy.advertisedAddress" -}}
{{- if .Values.advertisedAddress -}}
{{- .Values.advertisedAddress -}}
{{- else -}}
{{- template "iggy.fullname" . -}}.{{ .Release.Namespace }}.svc.{{ .Values.clusterDomain }}
{{- end -}}
{{- end -}}
