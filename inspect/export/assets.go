package export

import (
	"bytes"
	_ "embed"
	"strings"
)

//go:embed alerts.yml
var alerts []byte

//go:embed dashboard.json
var dashboard []byte

// Alerts returns the Prometheus rules file shipped with the binary (YAML). Its
// expressions use only the metrics of Names.
func Alerts() []byte { return append([]byte(nil), alerts...) }

// Dashboard returns the Grafana dashboard shipped with the binary (JSON). Its queries
// use only the metrics of Names.
func Dashboard() []byte { return append([]byte(nil), dashboard...) }

const prometheusRuleHead = `# The redlockctl alert rules as a Prometheus Operator PrometheusRule:
# redlockctl serve --print-alerts -o prometheusrule
# RedlockExporterDown reads up{job="redlockctl"}: the job a ServiceMonitor scraping the
# Service named redlockctl gives. Add the labels your Prometheus' ruleSelector wants.
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata:
  name: redlockctl
  labels:
    app.kubernetes.io/name: redlockctl
spec:
`

// PrometheusRule returns the rules of Alerts as a Prometheus Operator PrometheusRule
// (monitoring.coreos.com/v1) named redlockctl: the rules file's groups, as written,
// under spec.
func PrometheusRule() []byte {
	_, groups, _ := bytes.Cut(alerts, []byte("\ngroups:\n"))
	var b strings.Builder
	b.WriteString(prometheusRuleHead)
	b.WriteString("  groups:\n")
	indent(&b, string(groups), "  ")
	return []byte(b.String())
}

const dashboardConfigMapHead = `# The redlockctl Grafana dashboard as a ConfigMap for Grafana's dashboard sidecar (the
# grafana_dashboard label, as kube-prometheus-stack's Grafana looks for it):
# redlockctl serve --print-dashboard -o configmap
apiVersion: v1
kind: ConfigMap
metadata:
  name: redlockctl-dashboard
  labels:
    app.kubernetes.io/name: redlockctl
    grafana_dashboard: "1"
data:
  redlockctl.json: |
`

// DashboardConfigMap returns Dashboard as a Kubernetes ConfigMap named
// redlockctl-dashboard, labelled for Grafana's dashboard sidecar, holding
// redlockctl.json.
func DashboardConfigMap() []byte {
	var b strings.Builder
	b.WriteString(dashboardConfigMapHead)
	indent(&b, string(dashboard), "    ")
	return []byte(b.String())
}

// indent writes text to b with every non-empty line indented by prefix.
func indent(b *strings.Builder, text, prefix string) {
	for line := range strings.Lines(text) {
		if strings.TrimSpace(line) != "" {
			b.WriteString(prefix)
		}
		b.WriteString(line)
	}
}
