package config

import (
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
)

// Master entry kinds: what a [[masters]] entry names. Each entry is exactly one of them,
// and each counts as ONE Redlock instance whatever it stands for.
const (
	KindAddr     = "addr"     // a plain server at Addr
	KindSentinel = "sentinel" // a Sentinel-managed group: Sentinels + MasterName
	KindCluster  = "cluster"  // a whole Redis Cluster reached through the Cluster seeds
)

// Kind says which of the three forms the entry has (KindAddr, KindSentinel,
// KindCluster).
func (m MasterConfig) Kind() string {
	switch {
	case len(m.Sentinels) > 0:
		return KindSentinel
	case len(m.Cluster) > 0:
		return KindCluster
	}
	return KindAddr
}

// Where describes where the entry's master is found, without any secret: its address,
// "sentinel NAME (a,b,c)" or "cluster (a,b)".
func (m MasterConfig) Where() string {
	switch m.Kind() {
	case KindSentinel:
		return "sentinel " + m.MasterName + " (" + strings.Join(m.Sentinels, ",") + ")"
	case KindCluster:
		return "cluster (" + strings.Join(m.Cluster, ",") + ")"
	}
	return m.Addr
}

// readSecret reads a password file, without its trailing newline. Its error names the
// file and the reason, never the content.
func readSecret(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		var pe *os.PathError
		reason := err.Error()
		if errors.As(err, &pe) {
			reason = pe.Err.Error()
		}
		return "", fmt.Errorf("cannot read %s: %s", path, reason)
	}
	pw := strings.TrimRight(string(b), "\r\n")
	if strings.ContainsAny(pw, "\r\n") {
		// Never quote the file: its lines may be secrets.
		return "", fmt.Errorf("%s holds more than one line: a password file holds the password alone, on one line", path)
	}
	return pw, nil
}

// checkForm checks and copies the entry's form (addr, sentinels + master_name, or
// cluster) into m. at(i, key) names path:line of masters[i]'s key.
func checkForm(i int, fm fileMaster, m *MasterConfig, at func(int, string) string) error {
	bad := func(key, format string, a ...any) error {
		return fmt.Errorf("%s: masters[%d]%s: %s", at(i, key), i, keySuffix(key), fmt.Sprintf(format, a...))
	}
	forms := []string{}
	if fm.Addr != "" {
		forms = append(forms, "addr")
	}
	if fm.Sentinels != nil {
		forms = append(forms, "sentinels")
	}
	if fm.Cluster != nil {
		forms = append(forms, "cluster")
	}
	if len(forms) > 1 {
		return bad(forms[1], "%s and %s both set: an entry is exactly one of addr, sentinels + master_name, or cluster", forms[0], forms[1])
	}
	sentinelOnly := map[string]bool{
		"master_name": fm.MasterName != "", "sentinel_username": fm.SentinelUsername != "",
		"sentinel_password_env": fm.SentinelPasswordEnv != "", "sentinel_password_file": fm.SentinelPasswordFile != "",
	}
	if fm.SentinelPassword != "" {
		return bad("sentinel_password", "a literal sentinel password is not accepted: use sentinel_password_env or sentinel_password_file")
	}
	if fm.Sentinels == nil {
		for _, key := range []string{"master_name", "sentinel_username", "sentinel_password_env", "sentinel_password_file"} {
			if sentinelOnly[key] {
				return bad(key, "%s is set without sentinels (a Sentinel group needs sentinels = [\"host:port\", ...] and master_name)", key)
			}
		}
	}
	list := func(key string, addrs []string) ([]string, error) {
		if len(addrs) == 0 {
			return nil, bad(key, "empty list (want at least one \"host:port\")")
		}
		seen := map[string]bool{}
		for _, a := range addrs {
			a = strings.TrimSpace(a)
			if a == "" {
				return nil, bad(key, "empty address in the list")
			}
			if _, port, err := net.SplitHostPort(a); err != nil || port == "" {
				return nil, bad(key, "%q is not host:port", a)
			}
			if seen[a] {
				return nil, bad(key, "%q is listed twice", a)
			}
			seen[a] = true
		}
		return slices.Clone(addrs), nil
	}
	var err error
	switch {
	case fm.Sentinels != nil:
		if m.Sentinels, err = list("sentinels", *fm.Sentinels); err != nil {
			return err
		}
		if strings.TrimSpace(fm.MasterName) == "" {
			return bad("sentinels", "sentinels without master_name (the name the sentinels monitor the group by)")
		}
		m.MasterName, m.SentinelUsername = fm.MasterName, fm.SentinelUsername
		switch {
		case fm.SentinelPasswordEnv != "" && fm.SentinelPasswordFile != "":
			return bad("sentinel_password_env", "set only one of sentinel_password_env, sentinel_password_file")
		case fm.SentinelPasswordEnv != "":
			v, ok := os.LookupEnv(fm.SentinelPasswordEnv)
			if !ok {
				return bad("sentinel_password_env", "environment variable %s is not set", fm.SentinelPasswordEnv)
			}
			m.SentinelPassword, m.SentinelPasswordEnv = v, fm.SentinelPasswordEnv
			m.SecretEnv = append(m.SecretEnv, fm.SentinelPasswordEnv)
		case fm.SentinelPasswordFile != "":
			if m.SentinelPassword, err = readSecret(fm.SentinelPasswordFile); err != nil {
				return bad("sentinel_password_file", "%v", err)
			}
			m.SentinelPasswordFile = fm.SentinelPasswordFile
		}
	case fm.Cluster != nil:
		if m.Cluster, err = list("cluster", *fm.Cluster); err != nil {
			return err
		}
		if fm.DB != 0 {
			return bad("db", "db = %d with cluster: a Redis Cluster has only db 0", fm.DB)
		}
	}
	return nil
}

func keySuffix(key string) string {
	if key == "" {
		return ""
	}
	return "." + key
}

// endpoints lists the addresses an entry connects to (addr, each sentinel, each
// cluster seed), for the duplicate check.
func (m MasterConfig) endpoints() []string {
	switch m.Kind() {
	case KindSentinel:
		return m.Sentinels
	case KindCluster:
		return m.Cluster
	}
	return []string{m.Addr}
}

// checkTopologies reports two entries that reach the same group or cluster: a sentinel
// entry whose master_name and a sentinel match another's, a cluster seed listed by
// another entry, a sentinel address used as a plain master's address.
func (c *Config) checkTopologies(where func(i int, key string) string) error {
	owner := map[string]int{} // endpoint (and master name for sentinels) -> entry
	for i, m := range c.Masters {
		if m.Kind() == KindAddr {
			continue
		}
		key := "cluster"
		if m.Kind() == KindSentinel {
			key = "sentinels"
		}
		for _, e := range m.endpoints() {
			id := e
			if m.Kind() == KindSentinel {
				id = e + "/" + m.MasterName
			}
			if j, dup := owner[id]; dup && j != i {
				return fmt.Errorf("%s: masters[%d].%s: %s is also in masters[%d]: the same group or cluster would be counted twice", where(i, key), i, key, e, j)
			}
			owner[id] = i
		}
	}
	for i, m := range c.Masters {
		if m.Kind() != KindAddr {
			continue
		}
		for j, o := range c.Masters {
			if o.Kind() == KindAddr {
				continue
			}
			if slices.Contains(o.endpoints(), m.Addr) {
				what := "a cluster seed"
				if o.Kind() == KindSentinel {
					what = "a sentinel"
				}
				return fmt.Errorf("%s: masters[%d].addr: %s is %s in masters[%d]", where(i, "addr"), i, m.Addr, what, j)
			}
		}
	}
	return nil
}
