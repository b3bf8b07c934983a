package config

import (
	"fmt"
	"net/url"
	"os"
	"strings"
)

// historyDatabase reads [history] url and its password (password_env,
// password_file, or the URL's own) into h; the password is kept out of h.URL and
// out of every error. def tells which keys the file sets; at names path:line of a
// key. It returns the warnings (a password written in the file).
func historyDatabase(f fileHistory, h *HistoryConfig, def func(...string) bool, at func(int, string) string) ([]string, error) {
	bad := func(key, format string, a ...any) error {
		return fmt.Errorf("%s: history.%s: %s", at(-1, "history."+key), key, fmt.Sprintf(format, a...))
	}
	if !def("history", "url") {
		for _, k := range []string{"password_env", "password_file"} {
			if def("history", k) {
				return nil, bad(k, "is the password of a PostgreSQL store: set url too (the embedded store in dir has none)")
			}
		}
		return nil, nil
	}
	u, err := url.Parse(f.URL)
	if err != nil || u.Scheme != "postgres" && u.Scheme != "postgresql" || u.Host == "" || u.Opaque != "" {
		return nil, bad("url", "%q is not a PostgreSQL URL (want postgres://user@host:port/database, the password in password_env)", RedactURL(f.URL))
	}
	pw, literal := u.User.Password()
	switch {
	case literal && (f.PasswordEnv != "" || f.PasswordFile != ""):
		return nil, bad("url", "the URL has a password and so has password_env or password_file: set only one")
	case f.PasswordEnv != "" && f.PasswordFile != "":
		return nil, bad("password_env", "set only one of password_env and password_file")
	}
	if q := u.Query(); q.Has("password") {
		return nil, bad("url", "the URL has a password parameter: put the password in the environment variable password_env names")
	}
	for _, k := range []string{"dir", "max_size"} {
		if def("history", k) && !(k == "dir" && f.Dir == "off") {
			why := "the store is the database url names"
			if k == "max_size" {
				why = "a PostgreSQL store is bounded by max_age alone (it drops whole days); size it on the database side"
			}
			return nil, bad(k, "does not apply with url: %s", why)
		}
	}
	if u.User != nil {
		u.User = url.User(u.User.Username())
	}
	h.URL, h.Dir, h.MaxSize = u.String(), "", 0
	var warns []string
	switch {
	case literal:
		h.Password, h.PasswordLiteral = pw, true
		warns = append(warns, fmt.Sprintf("%s: history.url: literal password in the config file; prefer password_env or password_file", at(-1, "history.url")))
	case f.PasswordEnv != "":
		v, ok := os.LookupEnv(f.PasswordEnv)
		if !ok {
			return nil, bad("password_env", "environment variable %s is not set", f.PasswordEnv)
		}
		h.Password, h.PasswordEnv = v, f.PasswordEnv
	case f.PasswordFile != "":
		v, err := readSecret(f.PasswordFile)
		if err != nil {
			return nil, bad("password_file", "%v", err)
		}
		h.Password, h.PasswordFile = v, f.PasswordFile
	}
	return warns, nil
}

// RedactURL is s with the password of its user info replaced by "xxxxx" (or s
// cut at its first '@' when it does not parse).
func RedactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		if i := strings.LastIndex(s, "@"); i >= 0 {
			if j := strings.Index(s, "://"); j >= 0 && j < i {
				return s[:j+3] + "xxxxx" + s[i:]
			}
			return "xxxxx" + s[i:]
		}
		return s
	}
	return u.Redacted()
}
