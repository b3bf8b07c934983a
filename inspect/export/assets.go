package export

import _ "embed"

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
