package kubernetes

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/redlockctl/redlockctl/inspect/export"
	"github.com/redlockctl/redlockctl/internal/config"
)

type meta struct {
	Name   string            `yaml:"name"`
	Labels map[string]string `yaml:"labels"`
}

type object struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   meta   `yaml:"metadata"`
}

type probe struct {
	HTTPGet struct {
		Path string `yaml:"path"`
		Port string `yaml:"port"`
	} `yaml:"httpGet"`
}

type container struct {
	Name  string   `yaml:"name"`
	Image string   `yaml:"image"`
	Args  []string `yaml:"args"`
	Ports []struct {
		Name          string `yaml:"name"`
		ContainerPort int    `yaml:"containerPort"`
	} `yaml:"ports"`
	StartupProbe    *probe `yaml:"startupProbe"`
	ReadinessProbe  *probe `yaml:"readinessProbe"`
	LivenessProbe   *probe `yaml:"livenessProbe"`
	SecurityContext struct {
		AllowPrivilegeEscalation *bool `yaml:"allowPrivilegeEscalation"`
		ReadOnlyRootFilesystem   bool  `yaml:"readOnlyRootFilesystem"`
		Capabilities             struct {
			Drop []string `yaml:"drop"`
		} `yaml:"capabilities"`
	} `yaml:"securityContext"`
	VolumeMounts []struct {
		Name      string `yaml:"name"`
		MountPath string `yaml:"mountPath"`
		ReadOnly  bool   `yaml:"readOnly"`
	} `yaml:"volumeMounts"`
}

type deployment struct {
	Spec struct {
		Replicas int `yaml:"replicas"`
		Strategy struct {
			Type string `yaml:"type"`
		} `yaml:"strategy"`
		Selector struct {
			MatchLabels map[string]string `yaml:"matchLabels"`
		} `yaml:"selector"`
		Template struct {
			Metadata meta `yaml:"metadata"`
			Spec     struct {
				SecurityContext struct {
					RunAsNonRoot bool `yaml:"runAsNonRoot"`
					RunAsUser    int  `yaml:"runAsUser"`
				} `yaml:"securityContext"`
				Containers []container `yaml:"containers"`
				Volumes    []struct {
					Name      string `yaml:"name"`
					ConfigMap *struct {
						Name string `yaml:"name"`
					} `yaml:"configMap"`
					Secret *struct {
						SecretName string `yaml:"secretName"`
					} `yaml:"secret"`
					PersistentVolumeClaim *struct {
						ClaimName string `yaml:"claimName"`
					} `yaml:"persistentVolumeClaim"`
				} `yaml:"volumes"`
			} `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

type service struct {
	Spec struct {
		Selector map[string]string `yaml:"selector"`
		Ports    []struct {
			Name       string `yaml:"name"`
			Port       int    `yaml:"port"`
			TargetPort string `yaml:"targetPort"`
		} `yaml:"ports"`
	} `yaml:"spec"`
}

type serviceMonitor struct {
	Spec struct {
		Selector struct {
			MatchLabels map[string]string `yaml:"matchLabels"`
		} `yaml:"selector"`
		Endpoints []struct {
			Port string `yaml:"port"`
			Path string `yaml:"path"`
		} `yaml:"endpoints"`
	} `yaml:"spec"`
}

type data struct {
	Data       map[string]string `yaml:"data"`
	StringData map[string]string `yaml:"stringData"`
}

// manifest is one YAML document of one file.
type manifest struct {
	file string
	object
	node *yaml.Node
}

func (m manifest) decode(t *testing.T, v any) {
	t.Helper()
	if err := m.node.Decode(v); err != nil {
		t.Fatalf("%s (%s %s): %v", m.file, m.Kind, m.Metadata.Name, err)
	}
}

// load parses every YAML document of every *.yaml file here.
func load(t *testing.T) []manifest {
	t.Helper()
	files, _ := filepath.Glob("*.yaml")
	if len(files) < 8 {
		t.Fatalf("%d manifests here; want at least 8", len(files))
	}
	var all []manifest
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(b))
		for {
			var n yaml.Node
			if err := dec.Decode(&n); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			m := manifest{file: f, node: &n}
			m.decode(t, &m.object)
			all = append(all, m)
		}
	}
	return all
}

// one returns the only manifest of kind (and name, if given).
func one(t *testing.T, all []manifest, kind, name string) manifest {
	t.Helper()
	var found []manifest
	for _, m := range all {
		if m.Kind == kind && (name == "" || m.Metadata.Name == name) {
			found = append(found, m)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d manifests of kind %s %q; want 1", len(found), kind, name)
	}
	return found[0]
}

// Each file holds one object of the expected kind and API, labelled as the others,
// and the kustomization lists every file.
func TestManifestKinds(t *testing.T) {
	want := map[string]string{
		"kustomization.yaml":     "kustomize.config.k8s.io/v1beta1 Kustomization",
		"configmap.yaml":         "v1 ConfigMap",
		"secret.yaml":            "v1 Secret",
		"deployment.yaml":        "apps/v1 Deployment",
		"pvc.yaml":               "v1 PersistentVolumeClaim",
		"service.yaml":           "v1 Service",
		"servicemonitor.yaml":    "monitoring.coreos.com/v1 ServiceMonitor",
		"prometheusrule.yaml":    "monitoring.coreos.com/v1 PrometheusRule",
		"grafana-dashboard.yaml": "v1 ConfigMap",
	}
	all := load(t)
	got := map[string]string{}
	for _, m := range all {
		if _, dup := got[m.file]; dup {
			t.Errorf("%s holds more than one object", m.file)
		}
		got[m.file] = m.APIVersion + " " + m.Kind
		if m.Kind != "Kustomization" && m.Metadata.Labels["app.kubernetes.io/name"] != "redlockctl" {
			t.Errorf("%s: %s %s lacks the label app.kubernetes.io/name: redlockctl", m.file, m.Kind, m.Metadata.Name)
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("manifests:\n got %v\nwant %v", got, want)
	}
	var k struct {
		Resources []string `yaml:"resources"`
	}
	one(t, all, "Kustomization", "").decode(t, &k)
	var others []string
	for f := range want {
		if f != "kustomization.yaml" {
			others = append(others, f)
		}
	}
	slices.Sort(others)
	slices.Sort(k.Resources)
	if !slices.Equal(k.Resources, others) {
		t.Errorf("kustomization.yaml resources %v; want %v", k.Resources, others)
	}
}

// The Deployment runs the released image as the Dockerfile's unprivileged user, with
// the config and passwords mounted, and probes the port and path serve answers on.
func TestDeployment(t *testing.T) {
	all := load(t)
	var d deployment
	one(t, all, "Deployment", "redlockctl").decode(t, &d)
	pod := d.Spec.Template.Spec
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers; want 1", len(pod.Containers))
	}
	c := pod.Containers[0]
	if repo, tag, _ := strings.Cut(c.Image, ":"); repo != releasedImage(t) || !regexp.MustCompile(`^\d+\.\d+\.\d+$`).MatchString(tag) {
		t.Errorf("image %q: want %s:X.Y.Z, the image goreleaser publishes", c.Image, releasedImage(t))
	}
	if len(c.Args) == 0 || c.Args[0] != "serve" {
		t.Errorf("args %q: want serve ...", c.Args)
	}
	port := fmt.Sprint(export.DefaultPort)
	if len(c.Ports) != 1 || c.Ports[0].ContainerPort != export.DefaultPort || c.Ports[0].Name != "http-metrics" {
		t.Errorf("ports %+v: want http-metrics %s", c.Ports, port)
	}
	if l := flagValue(c.Args, "--listen"); l != ":"+port {
		t.Errorf("--listen %q: want :%s, the container port", l, port)
	}
	for name, p := range map[string]*probe{"startup": c.StartupProbe, "readiness": c.ReadinessProbe, "liveness": c.LivenessProbe} {
		if p == nil || p.HTTPGet.Path != "/healthz" || p.HTTPGet.Port != "http-metrics" {
			t.Errorf("%s probe %+v: want GET /healthz on http-metrics", name, p)
		}
	}
	sc := c.SecurityContext
	if !pod.SecurityContext.RunAsNonRoot || pod.SecurityContext.RunAsUser != imageUser(t) || !sc.ReadOnlyRootFilesystem ||
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || !slices.Equal(sc.Capabilities.Drop, []string{"ALL"}) {
		t.Errorf("security context: pod %+v, container %+v; want non-root user %d, read-only root, no escalation, no capabilities",
			pod.SecurityContext, sc, imageUser(t))
	}
	for k, v := range d.Spec.Selector.MatchLabels {
		if d.Spec.Template.Metadata.Labels[k] != v {
			t.Errorf("the selector's %s=%s is not on the pod template", k, v)
		}
	}
	if d.Spec.Replicas != 1 {
		t.Errorf("%d replicas: want 1 (each replica polls the masters and exports every series)", d.Spec.Replicas)
	}
	mounts := mountPaths(t, all)
	if got, want := flagValue(c.Args, "--config"), mounts["redlockctl-config"]+"/config.toml"; got != want {
		t.Errorf("--config %q: want %q (the ConfigMap's config.toml where it is mounted)", got, want)
	}
	if mounts["redlockctl-passwords"] == "" {
		t.Errorf("the Secret redlockctl-passwords is not mounted")
	}
}

// mountPaths maps the name of each ConfigMap, Secret and claim the Deployment's
// container mounts to its mount path; every mount but the claim's is read-only.
func mountPaths(t *testing.T, all []manifest) map[string]string {
	t.Helper()
	var d deployment
	one(t, all, "Deployment", "redlockctl").decode(t, &d)
	pod := d.Spec.Template.Spec
	mounts := map[string]string{}
	for _, v := range pod.Volumes {
		for _, m := range pod.Containers[0].VolumeMounts {
			if m.Name != v.Name {
				continue
			}
			if !m.ReadOnly && v.PersistentVolumeClaim == nil {
				t.Errorf("volume %s is mounted writable", m.Name)
			}
			switch {
			case v.PersistentVolumeClaim != nil:
				mounts[v.PersistentVolumeClaim.ClaimName] = m.MountPath
			case v.ConfigMap != nil:
				mounts[v.ConfigMap.Name] = m.MountPath
			case v.Secret != nil:
				mounts[v.Secret.SecretName] = m.MountPath
			}
		}
	}
	return mounts
}

// The ConfigMap's config is one the binary loads, its password files are the Secret's
// keys where the Deployment mounts them, and it is read-only.
func TestConfigAndSecret(t *testing.T) {
	all := load(t)
	var cm, sec data
	one(t, all, "ConfigMap", "redlockctl-config").decode(t, &cm)
	one(t, all, "Secret", "redlockctl-passwords").decode(t, &sec)
	mount := mountPaths(t, all)["redlockctl-passwords"] + "/"
	text := cm.Data["config.toml"]
	if !strings.Contains(text, mount) {
		t.Fatalf("config.toml names no password_file under %s:\n%s", mount, text)
	}
	path := writeMounted(t, text, mount, sec.StringData)
	cfg, warns, err := config.Load(path)
	if err != nil {
		t.Fatalf("the ConfigMap's config.toml does not load (password files from the Secret): %v", err)
	}
	if len(warns) > 0 || !cfg.ReadOnly || len(cfg.Masters) != len(sec.StringData) || len(cfg.Masters)%2 != 1 {
		t.Errorf("config: warnings %q, read_only %v, %d masters for %d passwords; want no warning, read-only, an odd number of masters with a password each",
			warns, cfg.ReadOnly, len(cfg.Masters), len(sec.StringData))
	}
	for _, m := range cfg.Masters {
		if m.Password != "change-me" {
			t.Errorf("master %s: password not read from the Secret's file", m.Name)
		}
	}
}

// serve records its history on the claim redlockctl-history, mounted writable where
// the config's [history] dir is, large enough for max_size; the pod is replaced,
// not rolled, since one process has the store open at a time.
func TestHistoryVolume(t *testing.T) {
	all := load(t)
	var d deployment
	one(t, all, "Deployment", "redlockctl").decode(t, &d)
	var pvc struct {
		Spec struct {
			AccessModes []string `yaml:"accessModes"`
			Resources   struct {
				Requests map[string]string `yaml:"requests"`
			} `yaml:"resources"`
		} `yaml:"spec"`
	}
	one(t, all, "PersistentVolumeClaim", "redlockctl-history").decode(t, &pvc)
	mount := mountPaths(t, all)["redlockctl-history"]
	if mount == "" {
		t.Fatal("the claim redlockctl-history is not mounted")
	}
	var cm data
	one(t, all, "ConfigMap", "redlockctl-config").decode(t, &cm)
	path := filepath.Join(t.TempDir(), "config.toml")
	// The password files are the Secret's (TestConfigAndSecret): here only [history] counts.
	text := regexp.MustCompile(`(?m)^password_file = .*$`).ReplaceAllString(cm.Data["config.toml"], "")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, _, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(cfg.History.Dir, mount+"/") {
		t.Errorf("[history] dir %q: want a directory on the claim, under %s", cfg.History.Dir, mount)
	}
	size, err := config.ParseSize(strings.TrimSuffix(pvc.Spec.Resources.Requests["storage"], "i") + "iB")
	if err != nil || size < cfg.History.MaxSize {
		t.Errorf("the claim requests %q: want at least max_size %d bytes (%v)", pvc.Spec.Resources.Requests["storage"], cfg.History.MaxSize, err)
	}
	if !slices.Equal(pvc.Spec.AccessModes, []string{"ReadWriteOnce"}) || d.Spec.Strategy.Type != "Recreate" {
		t.Errorf("claim access %v, strategy %q: want ReadWriteOnce and Recreate", pvc.Spec.AccessModes, d.Spec.Strategy.Type)
	}
}

// The ConfigMap's commented [history] url, uncommented as it says (dir and max_size
// removed, the Secret's key history uncommented), is a config the binary loads: a
// PostgreSQL store whose password comes from the Secret's file, not from the config.
func TestHistoryDatabaseFromTheSecret(t *testing.T) {
	all := load(t)
	var cm data
	one(t, all, "ConfigMap", "redlockctl-config").decode(t, &cm)
	mount := mountPaths(t, all)["redlockctl-passwords"] + "/"
	text := cm.Data["config.toml"]
	uncomment := regexp.MustCompile(`(?m)^# (url|password_file) = (.*)$`)
	if n := len(uncomment.FindAllString(text, -1)); n != 2 {
		t.Fatalf("config.toml has %d commented url and password_file lines, want 2:\n%s", n, text)
	}
	text = uncomment.ReplaceAllString(text, "$1 = $2")
	text = regexp.MustCompile(`(?m)^(dir|max_size) = .*$`).ReplaceAllString(text, "")
	if !strings.Contains(text, "password_file = \""+mount+"history\"") {
		t.Fatalf("the history password_file is not the Secret's key history under %s:\n%s", mount, text)
	}
	raw, err := os.ReadFile("secret.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var sec data
	if err := yaml.Unmarshal(regexp.MustCompile(`(?m)^  # (history: .*)$`).ReplaceAll(raw, []byte("  $1")), &sec); err != nil {
		t.Fatal(err)
	}
	if _, ok := sec.StringData["history"]; !ok {
		t.Fatalf("secret.yaml has no commented key history: %v", sec.StringData)
	}
	path := writeMounted(t, text, mount, sec.StringData)
	cfg, warns, err := config.Load(path)
	if err != nil {
		t.Fatalf("config.toml with [history] url uncommented does not load: %v", err)
	}
	h := cfg.History
	if len(warns) > 0 || !strings.HasPrefix(h.URL, "postgres://") || h.Password != "change-me" || h.PasswordLiteral || h.PasswordFile != filepath.Join(filepath.Dir(path), "history") || h.Dir != "" {
		t.Errorf("[history]: url %q, password from the file %v (%q), literal %v, dir %q, warnings %q; want a postgres URL, the password from the Secret's file, no dir, no warning",
			h.URL, h.Password == "change-me", h.PasswordFile, h.PasswordLiteral, h.Dir, warns)
	}
}

// The Service is the scrape job the shipped alerts watch; the ServiceMonitor scrapes
// its port.
func TestServiceAndServiceMonitor(t *testing.T) {
	all := load(t)
	var d deployment
	var s service
	var sm serviceMonitor
	one(t, all, "Deployment", "redlockctl").decode(t, &d)
	svc := one(t, all, "Service", "")
	svc.decode(t, &s)
	one(t, all, "ServiceMonitor", "redlockctl").decode(t, &sm)
	if !strings.Contains(string(export.Alerts()), `up{job="`+svc.Metadata.Name+`"}`) {
		t.Errorf("Service %s: the shipped alerts watch another job", svc.Metadata.Name)
	}
	for k, v := range s.Spec.Selector {
		if d.Spec.Template.Metadata.Labels[k] != v {
			t.Errorf("the Service selects %s=%s, which the pods lack", k, v)
		}
	}
	if len(s.Spec.Ports) != 1 || s.Spec.Ports[0].Port != export.DefaultPort || s.Spec.Ports[0].TargetPort != "http-metrics" {
		t.Errorf("Service ports %+v: want %d to http-metrics", s.Spec.Ports, export.DefaultPort)
	}
	for k, v := range sm.Spec.Selector.MatchLabels {
		if svc.Metadata.Labels[k] != v {
			t.Errorf("the ServiceMonitor selects %s=%s, which the Service lacks", k, v)
		}
	}
	if len(sm.Spec.Endpoints) != 1 || sm.Spec.Endpoints[0].Port != s.Spec.Ports[0].Name || sm.Spec.Endpoints[0].Path != "/metrics" {
		t.Errorf("ServiceMonitor endpoints %+v: want /metrics on %s", sm.Spec.Endpoints, s.Spec.Ports[0].Name)
	}
}

// The committed PrometheusRule and dashboard ConfigMap are what the binary prints
// (make docs writes them), and hold the shipped rules and dashboard.
func TestGeneratedUpToDate(t *testing.T) {
	for file, want := range map[string][]byte{
		"prometheusrule.yaml":    export.PrometheusRule(),
		"grafana-dashboard.yaml": export.DashboardConfigMap(),
	} {
		got, err := os.ReadFile(file)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("deploy/kubernetes/%s is stale or missing: run make docs", file)
		}
	}
	all := load(t)
	var rule struct {
		Spec struct {
			Groups any `yaml:"groups"`
		} `yaml:"spec"`
	}
	var rules struct {
		Groups any `yaml:"groups"`
	}
	one(t, all, "PrometheusRule", "redlockctl").decode(t, &rule)
	if err := yaml.Unmarshal(export.Alerts(), &rules); err != nil {
		t.Fatal(err)
	}
	if rules.Groups == nil || !reflect.DeepEqual(rule.Spec.Groups, rules.Groups) {
		t.Errorf("the PrometheusRule's groups differ from the rules file's")
	}
	var dash data
	one(t, all, "ConfigMap", "redlockctl-dashboard").decode(t, &dash)
	if dash.Data["redlockctl.json"] != string(export.Dashboard()) {
		t.Errorf("the dashboard ConfigMap's redlockctl.json differs from the shipped dashboard")
	}
}

// flagValue is the value after name in args ("" if absent).
func flagValue(args []string, name string) string {
	if i := slices.Index(args, name); i >= 0 && i+1 < len(args) {
		return args[i+1]
	}
	return ""
}

// releasedImage is the image goreleaser publishes (.goreleaser.yaml, dockers_v2).
func releasedImage(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", ".goreleaser.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var g struct {
		Dockers []struct {
			Images []string `yaml:"images"`
		} `yaml:"dockers_v2"`
	}
	if err := yaml.Unmarshal(b, &g); err != nil || len(g.Dockers) != 1 || len(g.Dockers[0].Images) != 1 {
		t.Fatalf(".goreleaser.yaml: want one dockers_v2 entry with one image (%v)", err)
	}
	return g.Dockers[0].Images[0]
}

// imageUser is the numeric user the Dockerfile runs as.
func imageUser(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^USER (\d+):\d+$`).FindSubmatch(b)
	if m == nil {
		t.Fatal("Dockerfile: no USER uid:gid line")
	}
	var uid int
	fmt.Sscan(string(m[1]), &uid)
	if uid == 0 {
		t.Fatal("Dockerfile: runs as root")
	}
	return uid
}

// writeMounted writes the Secret's keys as files into a temporary directory and the
// config text, its mount path pointed there, beside them; it returns the config's path.
func writeMounted(t *testing.T, text, mount string, keys map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for key, pw := range keys {
		if err := os.WriteFile(filepath.Join(dir, key), []byte(pw+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(path, []byte(strings.ReplaceAll(text, mount, dir+"/")), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
