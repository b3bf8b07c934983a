package export

import (
	"io"

	"github.com/redlockctl/redlockctl/inspect/report"
)

// serve's printed files, in their formats: --print-alerts as rules (the default) or
// prometheusrule, --print-dashboard as json (the default) or configmap.
func init() {
	report.Register(report.Format{Name: "rules",
		Alerts: &report.File{Help: "a rules file", Default: true, Write: writeFile(Alerts)}})
	report.Register(report.Format{Name: "prometheusrule",
		Alerts: &report.File{Help: "a Prometheus Operator PrometheusRule", Write: writeFile(PrometheusRule)}})
	report.Extend("json", func(f *report.Format) {
		f.Dashboard = &report.File{Default: true, Write: writeFile(Dashboard)}
	})
	report.Register(report.Format{Name: "configmap",
		Dashboard: &report.File{Help: "a ConfigMap for Grafana's dashboard sidecar", Write: writeFile(DashboardConfigMap)}})
}

// writeFile writes the file that file returns.
func writeFile(file func() []byte) func(io.Writer) error {
	return func(w io.Writer) error {
		_, err := w.Write(file())
		return err
	}
}
