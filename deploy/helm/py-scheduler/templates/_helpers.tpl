{{/* Chart name, truncated to the 63 characters a label value allows. */}}
{{- define "py-scheduler.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Object name: the release name if it already contains the chart name, else <release>-<chart>. */}}
{{- define "py-scheduler.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "py-scheduler.selectorLabels" -}}
app.kubernetes.io/name: {{ include "py-scheduler.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: scheduler
{{- end }}

{{- define "py-scheduler.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/name: {{ include "py-scheduler.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "py-scheduler.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "py-scheduler.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "py-scheduler.leaseName" -}}
{{- $name := default (include "py-scheduler.fullname" .) .Values.leaderElection.resourceName }}
{{- if eq $name "kube-scheduler" }}
{{- fail "leaderElection.resourceName must not be kube-scheduler: the two schedulers would share one lease" }}
{{- end }}
{{- $name }}
{{- end }}

{{- define "py-scheduler.image" -}}
{{- $tag := default .Chart.AppVersion .Values.image.tag }}
{{- if .Values.image.digest }}
{{- printf "%s:%s@%s" .Values.image.repository $tag .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository $tag }}
{{- end }}
{{- end }}

{{/* The KubeSchedulerConfiguration, as YAML. Null values are left out, so py-scheduler defaults them. */}}
{{- define "py-scheduler.config" -}}
{{- $cfg := dict "apiVersion" "kubescheduler.config.k8s.io/v1" "kind" "KubeSchedulerConfiguration" }}
{{- $sc := .Values.schedulerConfig }}
{{- range $key := list "percentageOfNodesToScore" "podInitialBackoffSeconds" "podMaxBackoffSeconds" "parallelism" }}
{{- if not (kindIs "invalid" (index $sc $key)) }}
{{- $_ := set $cfg $key (index $sc $key) }}
{{- end }}
{{- end }}
{{- $conn := dict }}
{{- range $key, $value := $sc.clientConnection }}
{{- if not (kindIs "invalid" $value) }}
{{- $_ := set $conn $key $value }}
{{- end }}
{{- end }}
{{- if $conn }}
{{- $_ := set $cfg "clientConnection" $conn }}
{{- end }}
{{- $le := .Values.leaderElection }}
{{- if $le.enabled }}
{{- $_ := set $cfg "leaderElection" (dict "leaderElect" true "leaseDuration" $le.leaseDuration "renewDeadline" $le.renewDeadline "retryPeriod" $le.retryPeriod "resourceName" (include "py-scheduler.leaseName" .) "resourceNamespace" $le.resourceNamespace) }}
{{- else }}
{{- $_ := set $cfg "leaderElection" (dict "leaderElect" false) }}
{{- end }}
{{- $_ := set $cfg "profiles" (include "py-scheduler.profiles" . | fromYamlArray) }}
{{- if .Values.extenders }}
{{- $_ := set $cfg "extenders" .Values.extenders }}
{{- end }}
{{- toYaml $cfg }}
{{- end }}

{{/* The profiles: .Values.profiles, then one per enabled policy (docs/capacity-scheduling.md). */}}
{{- define "py-scheduler.profiles" -}}
{{- $profiles := list }}
{{- range .Values.profiles }}
{{- $profiles = append $profiles . }}
{{- end }}
{{- $p := .Values.policies }}
{{- with $p.capacityScheduling }}
{{- if .enabled }}
{{- $only := list (dict "name" "CapacityScheduling") }}
{{- $plugins := dict "multiPoint" (dict "enabled" $only) "postFilter" (dict "enabled" $only "disabled" (list (dict "name" "*"))) }}
{{- $profiles = append $profiles (dict "schedulerName" .schedulerName "plugins" $plugins) }}
{{- end }}
{{- end }}
{{- with $p.preemptionToleration }}
{{- if .enabled }}
{{- $plugins := dict "postFilter" (dict "enabled" (list (dict "name" "PreemptionToleration")) "disabled" (list (dict "name" "DefaultPreemption"))) }}
{{- $profile := dict "schedulerName" .schedulerName "plugins" $plugins }}
{{- if .args }}
{{- $_ := set $profile "pluginConfig" (list (dict "name" "PreemptionToleration" "args" .args)) }}
{{- end }}
{{- $profiles = append $profiles $profile }}
{{- end }}
{{- end }}
{{- with $p.nodeResourcesAllocatable }}
{{- if .enabled }}
{{- $plugins := dict "score" (dict "enabled" (list (dict "name" "NodeResourcesAllocatable" "weight" .weight))) }}
{{- $profile := dict "schedulerName" .schedulerName "plugins" $plugins }}
{{- if .args }}
{{- $_ := set $profile "pluginConfig" (list (dict "name" "NodeResourcesAllocatable" "args" .args)) }}
{{- end }}
{{- $profiles = append $profiles $profile }}
{{- end }}
{{- end }}
{{- with $p.nodeResourceTopologyMatch }}
{{- if .enabled }}
{{- $name := "NodeResourceTopologyMatch" }}
{{- $plugins := dict "filter" (dict "enabled" (list (dict "name" $name))) "score" (dict "enabled" (list (dict "name" $name "weight" .weight))) }}
{{- /* The reserve-side caches hear of placements at Reserve, Unreserve and PostBind. */}}
{{- $args := .args | default dict }}
{{- if or (gt (int (default 0 $args.cacheResyncPeriodSeconds)) 0) $args.discardReservedNodes }}
{{- $_ := set $plugins "reserve" (dict "enabled" (list (dict "name" $name))) }}
{{- $_ := set $plugins "postBind" (dict "enabled" (list (dict "name" $name))) }}
{{- end }}
{{- $profile := dict "schedulerName" .schedulerName "plugins" $plugins }}
{{- if .args }}
{{- $_ := set $profile "pluginConfig" (list (dict "name" $name "args" .args)) }}
{{- end }}
{{- $profiles = append $profiles $profile }}
{{- end }}
{{- end }}
{{- range $key, $plugin := dict "targetLoadPacking" "TargetLoadPacking" "loadVariationRiskBalancing" "LoadVariationRiskBalancing" "lowRiskOverCommitment" "LowRiskOverCommitment" }}
{{- with index $p $key }}
{{- if .enabled }}
{{- $plugins := dict "score" (dict "enabled" (list (dict "name" $plugin "weight" .weight))) }}
{{- if eq $plugin "LowRiskOverCommitment" }}
{{- $_ := set $plugins "preScore" (dict "enabled" (list (dict "name" $plugin))) }}
{{- end }}
{{- $profile := dict "schedulerName" .schedulerName "plugins" $plugins }}
{{- if .args }}
{{- $_ := set $profile "pluginConfig" (list (dict "name" $plugin "args" .args)) }}
{{- end }}
{{- $profiles = append $profiles $profile }}
{{- end }}
{{- end }}
{{- end }}
{{- toYaml $profiles }}
{{- end }}
