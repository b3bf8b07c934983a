// Package kubernetes holds the manifests that run `redlockctl serve` on Kubernetes
// (kubectl apply -k deploy/kubernetes) and the test that keeps them consistent with
// each other, with the binary (the generated PrometheusRule and dashboard ConfigMap,
// the config the binary loads, the port and probes it serves) and with the release
// (the image goreleaser publishes, the user the Dockerfile runs as). It has no code.
package kubernetes
