package config

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// IsURL reports whether s is a redis:// or rediss:// URL rather than host:port.
func IsURL(s string) bool {
	return strings.HasPrefix(s, "redis://") || strings.HasPrefix(s, "rediss://")
}

// FromURL reads a master from redis://[user[:password]@]host[:port][/db] (rediss:// for
// TLS), the form redis-cli, go-redis, redis-py and node-redis take. The master's name
// and address are host:port: the password is never part of either, nor of any error
// (which quotes the URL with the password replaced by xxxxx).
func FromURL(s string) (MasterConfig, error) {
	u, err := url.Parse(s)
	if err != nil {
		// url's error quotes the input: name the problem without it.
		return MasterConfig{}, fmt.Errorf("not a valid redis:// URL (want redis://[user:password@]host:port[/db])")
	}
	show := u.Redacted()
	m := MasterConfig{TLS: u.Scheme == "rediss"}
	if u.Opaque != "" || u.Host == "" {
		return m, fmt.Errorf("%q: no host (want redis://[user:password@]host:port[/db])", show)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return m, fmt.Errorf("%q: query options are not supported: set them in the config file", show)
	}
	host, port := u.Hostname(), u.Port()
	if port == "" {
		port = DefaultPort
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		return m, fmt.Errorf("%q: bad port", show)
	}
	m.Addr = net.JoinHostPort(host, port)
	m.Name = m.Addr
	if u.User != nil {
		m.Username = u.User.Username()
		m.Password, _ = u.User.Password()
	}
	if db := strings.Trim(u.Path, "/"); db != "" {
		n, err := strconv.Atoi(db)
		if err != nil || n < 0 {
			return m, fmt.Errorf("%q: the path must be a database number, such as /0", show)
		}
		m.DB = n
	}
	return m, nil
}

// DefaultPort is the port of a --masters entry that names none, as redis-cli's.
const DefaultPort = "6379"

// fromArg reads one --masters entry: host[:port] (port 6379 when left out, as redis-cli
// and every client take it), or a redis:// or rediss:// URL.
func fromArg(i int, a string) (MasterConfig, error) {
	if !IsURL(a) {
		a = withPort(a)
		return MasterConfig{Name: a, Addr: a}, nil
	}
	m, err := FromURL(a)
	if err != nil {
		return m, fmt.Errorf("--masters: entry %d: %v", i+1, err)
	}
	return m, nil
}

// fromFileURL fills m from a [[masters]] entry whose addr is a URL. The URL's parts may
// not also be set by their own keys; a password in it is a literal password in the
// file (warned about, as password = "...").
func fromFileURL(i int, fm fileMaster, m *MasterConfig, passwordSet bool) error {
	u, err := FromURL(fm.Addr)
	if err != nil {
		return err
	}
	switch {
	case u.Password != "" && passwordSet:
		return fmt.Errorf("the URL has a password and so does the entry: set only one")
	case u.Username != "" && fm.Username != "":
		return fmt.Errorf("the URL has a user and so does the entry's username: set only one")
	case u.DB != 0 && fm.DB != 0:
		return fmt.Errorf("the URL has a database and so does the entry's db: set only one")
	}
	m.Addr, m.TLS = u.Addr, m.TLS || u.TLS
	if m.Name == "" {
		m.Name = u.Addr
	}
	if u.Username != "" {
		m.Username = u.Username
	}
	if u.Password != "" {
		m.Password, m.PasswordLiteral = u.Password, true
	}
	if u.DB != 0 {
		m.DB = u.DB
	}
	return nil
}

// withPort returns host:port as given, or host with DefaultPort when it has no port
// (an IPv6 address alone, bracketed or not, as well).
func withPort(a string) string {
	if _, _, err := net.SplitHostPort(a); err == nil {
		return a
	}
	host := strings.TrimSuffix(strings.TrimPrefix(a, "["), "]")
	if strings.Contains(host, ":") && net.ParseIP(host) == nil {
		return a // not host alone: the address check names what is wrong
	}
	return net.JoinHostPort(host, DefaultPort)
}
