package admin

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"sync"

	"github.com/redlockctl/redlockctl/internal/config"
)

// auditMu serialises audit writes inside this process; across processes each line is
// one write(2) on an O_APPEND file, which the kernel does not interleave.
var auditMu sync.Mutex

// AppendAudit appends r as one JSON line to the file at path (created 0600 when
// missing) and fsyncs it. The line is written with a single write call on a file opened O_APPEND, so
// concurrent writers, in this process or others, never interleave within a line. An
// empty path writes nothing. The line holds lock values and per-master outcomes only:
// ActionResult has no field that can carry a password.
func AppendAudit(path string, r ActionResult) error {
	if path == "" {
		return nil
	}
	line, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("audit log %s: %w", path, err)
	}
	line = append(line, '\n')
	auditMu.Lock()
	defer auditMu.Unlock()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	n, err := f.Write(line)
	if err == nil && n < len(line) {
		err = fmt.Errorf("short write (%d of %d bytes)", n, len(line))
	}
	if err == nil {
		err = f.Sync() // on disk before the caller goes on (and sends a command)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("audit log %s: %w", path, err)
	}
	return nil
}

// AuditPath returns where cfg's admin actions are written ("" when the config says
// none, audit_log = "off" or --no-audit), creating the default path's directory
// (0700). A configured path is never created for: a missing directory is an error at
// the first write, so nothing is sent.
func AuditPath(cfg *config.Config) (string, error) {
	if !cfg.AuditLogDefault {
		return cfg.AuditLog, nil
	}
	if cfg.AuditLog == "" {
		return "", errors.New("no audit log: no home directory for the default one; set audit_log (or audit_log = \"off\", --no-audit)")
	}
	if err := os.MkdirAll(filepath.Dir(cfg.AuditLog), 0o700); err != nil {
		return "", fmt.Errorf("audit log %s: %w", cfg.AuditLog, err)
	}
	return cfg.AuditLog, nil
}

// CheckAudit opens cfg's audit log for appending and closes it: what an action does
// before it sends anything, for callers that write their own lines (run). The error
// wraps ErrAudit.
func CheckAudit(cfg *config.Config) error {
	path, err := AuditPath(cfg)
	if err == nil && path != "" {
		var f *os.File
		if f, err = os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600); err == nil {
			err = f.Close()
		}
	}
	if err != nil {
		return fmt.Errorf("%w (%s)", ErrAudit, cfg.Scrub(err.Error()))
	}
	return nil
}

// Operator returns "user@host" for the audit log: the OS user (or $USER) and the host
// name, "unknown" for a part that cannot be found.
func Operator() string {
	name := ""
	if u, err := user.Current(); err == nil {
		name = u.Username
	}
	if name == "" {
		name = os.Getenv("USER")
	}
	if name == "" {
		name = "unknown"
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown"
	}
	return strings.ReplaceAll(name, "@", "_") + "@" + host
}
