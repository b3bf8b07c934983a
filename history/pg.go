package history

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/redlockctl/redlockctl/internal/config"
)

// The PostgreSQL store. Several recorders (the serve replicas of one fleet, or the
// exporters of many) write to one database and every reader sees one history.
//
//   - redlockctl_lifecycles: the ended lifecycles, partitioned by the UTC day of
//     their end (redlockctl_lifecycles_YYYYMMDD); max_age drops whole days. As in
//     the embedded store, each carries its duration class (the bit length of the
//     hold in µs): an index on (class, ended_at) answers --at (and one on
//     (resource, class, ended_at) a resource's); a partial index on the end time of
//     every end but a release answers --expired; one on (key, value, ended_at)
//     finds another writer's record of the same lifecycle.
//   - redlockctl_open: the lifecycles held, per writer, until they end.
//   - redlockctl_spans: sessions and feed gaps per writer (rewritten as they
//     grow); redlockctl_marks: the other marks.
//
// One lifecycle recorded by two writers is stored once. Its identity is its key
// and value and its time: two writers' records of one key and value acquired
// within PGOptions.Tolerance of each other are one lifecycle, and so are two that
// overlap (widened by the tolerance) where a writer did not see the acquisition
// (it started later, or a gap hid it). A value is unique to one acquisition in
// this library and most others; a library that reuses a value (an owner-only
// value) reuses it only after the key was deleted, and its next acquisition is
// seen again. Of two records of one lifecycle, the one that saw more is kept: an
// acquisition seen beats one unseen, a known end beats unknown (the first written,
// between equals). No unique index can say "within a tolerance" (a key of time
// buckets splits at their edges, and one on a partitioned table must hold the day,
// which splits at midnight), so writers take turns: each write holds a
// transaction-level advisory lock, and its rows go in with one INSERT ... SELECT
// FROM unnest(...) WHERE NOT EXISTS (a record of the same lifecycle as good)
// beside a DELETE of the records of the same lifecycles it outranks.

// pgMin and pgMax stand for no bound on a time (inside PostgreSQL's range).
var (
	pgMin = time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)
	pgMax = time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)
)

// PG defaults.
const (
	// DefaultTolerance is how far apart two writers may date one lifecycle: both
	// date it from their own feed (a feed gives an event up to about half a second
	// after the change), and the hosts' clocks differ.
	DefaultTolerance = time.Second
	// PGWriteTimeout bounds every write, trim and the schema's creation.
	PGWriteTimeout = 10 * time.Second
	// PGQueryTimeout bounds every query.
	PGQueryTimeout = 30 * time.Second
	// pgStale is how long a writer's session may go unwritten before another
	// settles what it left open (a live one writes every FlushEvery).
	pgStale = 10 * time.Second
	// pgLock is the advisory lock writers take turns on ("rlkh").
	pgLock = 0x726c6b68
)

// PGOptions are a PostgreSQL store's options.
type PGOptions struct {
	MaxAge    time.Duration // 0: DefaultMaxAge; whole days go, so up to a day more stays
	ReadOnly  bool          // queries only: the schema must exist
	Tolerance time.Duration // 0: DefaultTolerance
	// WriteTimeout and QueryTimeout bound each call; 0: PGWriteTimeout,
	// PGQueryTimeout.
	WriteTimeout, QueryTimeout time.Duration
}

// PG is a history store in a PostgreSQL database (Backend), shared by any number of
// writers. Each PG is one writer: its sessions, gaps and held lifecycles are its
// own.
type PG struct {
	pool     *pgxpool.Pool
	opts     PGOptions
	where    string // the URL without its password
	password string
	writer   int64
}

// OpenPG connects to the database at rawURL (its password, if any, in password:
// a URL's own password is taken too, and never shown) and, unless o.ReadOnly,
// creates the schema it lacks.
func OpenPG(rawURL, password string, o PGOptions) (*PG, error) {
	if o.MaxAge == 0 {
		o.MaxAge = DefaultMaxAge
	}
	if o.Tolerance == 0 {
		o.Tolerance = DefaultTolerance
	}
	if o.WriteTimeout == 0 {
		o.WriteTimeout = PGWriteTimeout
	}
	if o.QueryTimeout == 0 {
		o.QueryTimeout = PGQueryTimeout
	}
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme != "postgres" && u.Scheme != "postgresql" || u.Host == "" {
		return nil, fmt.Errorf("history: %q is not a PostgreSQL URL (want postgres://user@host:port/database)", config.RedactURL(rawURL))
	}
	if pw, ok := u.User.Password(); ok {
		if password == "" {
			password = pw
		}
		u.User = url.User(u.User.Username())
	}
	p := &PG{opts: o, where: u.String(), password: password, writer: rand.Int64()}
	cfg, err := pgxpool.ParseConfig(u.String())
	if err != nil {
		return nil, p.wrap(err)
	}
	if password != "" {
		cfg.ConnConfig.Password = password
	}
	cfg.MaxConns = 4
	// Its queries are index range reads that return many rows: JIT compiling them
	// (on by default where PostgreSQL is built with LLVM, past jit_above_cost) cost
	// more than it saved, 0.2 s a query of 90k rows.
	cfg.ConnConfig.RuntimeParams["jit"] = "off"
	if cfg.ConnConfig.ConnectTimeout == 0 || cfg.ConnConfig.ConnectTimeout > o.WriteTimeout {
		cfg.ConnConfig.ConnectTimeout = o.WriteTimeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.WriteTimeout)
	defer cancel()
	if p.pool, err = pgxpool.NewWithConfig(ctx, cfg); err != nil {
		return nil, p.wrap(err)
	}
	if err := p.pool.Ping(ctx); err != nil {
		p.pool.Close()
		return nil, p.wrap(err)
	}
	if o.ReadOnly {
		var have bool
		if err := p.pool.QueryRow(ctx, "SELECT to_regclass('redlockctl_lifecycles') IS NOT NULL").Scan(&have); err != nil {
			p.pool.Close()
			return nil, p.wrap(err)
		}
		if !have {
			p.pool.Close()
			return nil, p.wrap(errors.New("no history here yet: no serve has recorded to this database"))
		}
		return p, nil
	}
	if err := p.tx(ctx, func(tx pgx.Tx) error { _, err := tx.Exec(ctx, pgSchema); return err }); err != nil {
		p.pool.Close()
		return nil, err
	}
	return p, nil
}

// wrap names the database in err, and keeps the password out of it.
func (p *PG) wrap(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if len(p.password) >= 3 {
		msg = strings.ReplaceAll(msg, p.password, "xxxxx")
	}
	return fmt.Errorf("history: postgres %s: %s", p.where, msg)
}

// Where is the database's URL, without its password.
func (p *PG) Where() string { return p.where }

// Close closes the connections.
func (p *PG) Close() error { p.pool.Close(); return nil }

// tx runs fn in a transaction holding the writers' advisory lock.
func (p *PG) tx(ctx context.Context, fn func(pgx.Tx) error) error {
	if p.opts.ReadOnly {
		return errors.New("history: the store is open read-only")
	}
	err := pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", int64(pgLock)); err != nil {
			return err
		}
		return fn(tx)
	})
	return p.wrap(err)
}

const pgSchema = `
CREATE TABLE IF NOT EXISTS redlockctl_lifecycles (
	resource text NOT NULL, key text NOT NULL, value text NOT NULL, owner text NOT NULL,
	library text NOT NULL, scope text NOT NULL, masters integer NOT NULL, quorum integer NOT NULL,
	acquired_at timestamptz NOT NULL, unseen boolean NOT NULL, ended_at timestamptz NOT NULL,
	"end" text NOT NULL, ttl_ms bigint NOT NULL, margin_ms double precision, extensions integer NOT NULL,
	audit text, class smallint NOT NULL, writer bigint NOT NULL
) PARTITION BY RANGE (ended_at);
CREATE INDEX IF NOT EXISTS redlockctl_lifecycles_held ON redlockctl_lifecycles (class, ended_at);
CREATE INDEX IF NOT EXISTS redlockctl_lifecycles_resource ON redlockctl_lifecycles (resource, class, ended_at);
CREATE INDEX IF NOT EXISTS redlockctl_lifecycles_key ON redlockctl_lifecycles (key, value, ended_at);
CREATE INDEX IF NOT EXISTS redlockctl_lifecycles_ends ON redlockctl_lifecycles (ended_at) WHERE "end" <> 'released';
CREATE TABLE IF NOT EXISTS redlockctl_open (
	resource text NOT NULL, key text NOT NULL, value text NOT NULL, owner text NOT NULL,
	library text NOT NULL, scope text NOT NULL, masters integer NOT NULL, quorum integer NOT NULL,
	acquired_at timestamptz NOT NULL, unseen boolean NOT NULL, ttl_ms bigint NOT NULL, extensions integer NOT NULL,
	writer bigint NOT NULL, PRIMARY KEY (writer, key, value)
);
CREATE TABLE IF NOT EXISTS redlockctl_spans (
	writer bigint NOT NULL, kind text NOT NULL, master text NOT NULL, at timestamptz NOT NULL,
	"to" timestamptz, text text NOT NULL, PRIMARY KEY (writer, kind, master, at)
);
CREATE TABLE IF NOT EXISTS redlockctl_marks (
	id bigserial PRIMARY KEY, writer bigint NOT NULL, kind text NOT NULL, at timestamptz NOT NULL,
	"to" timestamptz, master text NOT NULL, resource text NOT NULL, code text NOT NULL, text text NOT NULL
);
CREATE INDEX IF NOT EXISTS redlockctl_marks_at ON redlockctl_marks (at);
`

// pgDay is the partition of the lifecycles that ended on t's UTC day.
func pgDay(t time.Time) (name string, from, to time.Time) {
	from = t.UTC().Truncate(24 * time.Hour)
	return "redlockctl_lifecycles_" + from.Format("20060102"), from, from.Add(24 * time.Hour)
}

// pgReleasedClasses bound the partitions of a day's released lifecycles, by
// duration class: under 65 ms, 0.5 s, 4 s, 33 s, 4.5 min, and longer.
var pgReleasedClasses = []int{17, 20, 23, 26, 29}

// pgCreateDay creates the partition of t's day when there is none, and returns its
// name. A day is partitioned by end: its released lifecycles by duration class,
// the rest (expired, force-released, evicted, unknown) in one table. Each table
// holds its rows in the order they ended, so the holders at an instant of the
// long classes (the many, at 5,000 lifecycles a second: held minutes, they end
// over the next minutes among the short ones) lie on a few pages of their own
// table, not one page each; and --expired reads its own table, where every row is
// one it may return.
func pgCreateDay(ctx context.Context, tx pgx.Tx, t time.Time) (string, error) {
	name, from, to := pgDay(t)
	var have bool
	if err := tx.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", name).Scan(&have); err != nil || have {
		return name, err
	}
	stmts := []string{
		fmt.Sprintf(`CREATE TABLE %s PARTITION OF redlockctl_lifecycles FOR VALUES FROM ('%s') TO ('%s') PARTITION BY LIST ("end")`,
			name, from.Format(time.RFC3339), to.Format(time.RFC3339)),
		fmt.Sprintf(`CREATE TABLE %s_other PARTITION OF %s DEFAULT`, name, name),
		fmt.Sprintf(`CREATE TABLE %s_released PARTITION OF %s FOR VALUES IN ('released') PARTITION BY RANGE (class)`, name, name),
	}
	lo := "MINVALUE"
	for i := 0; i <= len(pgReleasedClasses); i++ {
		hi := "MAXVALUE"
		if i < len(pgReleasedClasses) {
			hi = fmt.Sprint(pgReleasedClasses[i])
		}
		stmts = append(stmts, fmt.Sprintf(`CREATE TABLE %s_released_%d PARTITION OF %s_released FOR VALUES FROM (%s) TO (%s)`, name, i, name, lo, hi))
		lo = hi
	}
	for _, q := range stmts {
		if _, err := tx.Exec(ctx, q); err != nil {
			return name, err
		}
	}
	return name, nil
}

// lifecycleCols are the columns of a lifecycle, in the order of lifecycleArgs.
const lifecycleCols = `resource, key, value, owner, library, scope, masters, quorum, acquired_at, unseen, ended_at, "end", ttl_ms, margin_ms, extensions, audit`

// unnestLifecycles is the rows of lifecycleArgs ($1..$17) as table t, with rk: how
// much the record saw (2: its acquisition, 1: its end).
const unnestLifecycles = `SELECT t.*, ` + pgRank + ` AS rk FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[],
	$7::int[], $8::int[], $9::timestamptz[], $10::bool[], $11::timestamptz[], $12::text[], $13::bigint[], $14::float8[], $15::int[], $16::text[], $17::smallint[])
	AS t(` + lifecycleCols + `, class)`

const pgRank = `(CASE WHEN unseen THEN 0 ELSE 2 END + CASE WHEN "end" = 'unknown' THEN 0 ELSE 1 END)`

// pgSame is true of a stored record l of another writer and a new one t of the same
// lifecycle ($18: the tolerance in µs; $19: the writer): the same key and value,
// acquired within the tolerance of each other, or, where either writer did not
// see the acquisition, held over spans that overlap, widened by the tolerance (the
// two writers' clocks and feeds date the same instant apart). (A writer's own records are
// distinct lifecycles: its recorder paired them. A value reused by its library
// after a release is a new lifecycle, however soon.)
const pgSame = `l.key = t.key AND l.value = t.value AND l.writer <> $19
	AND l.ended_at >= t.acquired_at - $18 * interval '1 microsecond'
	AND (NOT l.unseen AND NOT t.unseen AND l.acquired_at BETWEEN t.acquired_at - $18 * interval '1 microsecond' AND t.acquired_at + $18 * interval '1 microsecond'
		OR (l.unseen OR t.unseen) AND l.acquired_at <= t.ended_at + $18 * interval '1 microsecond')`

const pgInsertEnded = `WITH t AS (` + unnestLifecycles + `),
outranked AS (
	DELETE FROM redlockctl_lifecycles l USING t WHERE ` + pgSame + ` AND ` + lRank + ` < t.rk
)
INSERT INTO redlockctl_lifecycles (` + lifecycleCols + `, class, writer)
SELECT ` + lifecycleCols + `, class, $19 FROM t
WHERE NOT EXISTS (SELECT 1 FROM redlockctl_lifecycles l WHERE ` + pgSame + ` AND ` + lRank + ` >= t.rk)`

const lRank = `(CASE WHEN l.unseen THEN 0 ELSE 2 END + CASE WHEN l."end" = 'unknown' THEN 0 ELSE 1 END)`

// lifecycleArgs are ls as arrays, one per column of lifecycleCols, then their
// duration classes (see classOf).
func lifecycleArgs(ls []Lifecycle) []any {
	n := len(ls)
	res, key, val, owner, lib, scope, end, audit := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]*string, n)
	masters, quorum, ext := make([]int32, n), make([]int32, n), make([]int32, n)
	acq, ended := make([]time.Time, n), make([]*time.Time, n)
	unseen := make([]bool, n)
	ttl := make([]int64, n)
	margin := make([]*float64, n)
	class := make([]int16, n)
	for i := range ls {
		l := &ls[i]
		res[i], key[i], val[i], owner[i], lib[i], scope[i], end[i] = l.Resource, l.Key, l.Value, l.Owner, l.Library, l.Scope, l.End
		masters[i], quorum[i], ext[i] = int32(l.Masters), int32(l.Quorum), int32(l.Extensions)
		acq[i], unseen[i], ttl[i], margin[i] = l.AcquiredAt.Truncate(time.Microsecond), l.Unseen, max(l.TTLMs, 0), l.MarginMs
		if l.End != Held {
			e := l.EndedAt.Truncate(time.Microsecond)
			if acq[i].After(e) { // as the embedded store keeps it: held for no time
				acq[i] = e
			}
			ended[i] = &e
			class[i] = int16(classOf(e.Sub(acq[i]).Microseconds()))
		}
		if len(l.Audit) > 0 {
			a := string(l.Audit)
			audit[i] = &a
		}
	}
	return []any{res, key, val, owner, lib, scope, masters, quorum, acq, unseen, ended, end, ttl, margin, ext, audit, class}
}

// scanLifecycle reads a row of lifecycleCols.
func scanLifecycle(rows pgx.CollectableRow) (Lifecycle, error) {
	var l Lifecycle
	var masters, quorum, ext int32
	var ended *time.Time
	var audit *string
	err := rows.Scan(&l.Resource, &l.Key, &l.Value, &l.Owner, &l.Library, &l.Scope, &masters, &quorum,
		&l.AcquiredAt, &l.Unseen, &ended, &l.End, &l.TTLMs, &l.MarginMs, &ext, &audit)
	l.Masters, l.Quorum, l.Extensions = int(masters), int(quorum), int(ext)
	if ended != nil {
		l.EndedAt = *ended
	}
	if audit != nil {
		l.Audit = []byte(*audit)
	}
	return l, err
}

// Write stores b in one transaction: when it returns nil, the database has it.
func (p *PG) Write(b Batch) error {
	ctx, cancel := context.WithTimeout(context.Background(), p.opts.WriteTimeout)
	defer cancel()
	return p.tx(ctx, func(tx pgx.Tx) error { return p.write(ctx, tx, p.writer, b) })
}

func (p *PG) write(ctx context.Context, tx pgx.Tx, writer int64, b Batch) error {
	for _, l := range b.Ended {
		if l.End == Held {
			return fmt.Errorf("lifecycle of %s ended without an end", l.Key)
		}
	}
	if err := p.insertEnded(ctx, tx, b.Ended, writer); err != nil {
		return err
	}
	if len(b.Closed) > 0 {
		keys, vals := make([]string, len(b.Closed)), make([]string, len(b.Closed))
		for i, l := range b.Closed {
			keys[i], vals[i] = l.Key, l.Value
		}
		if _, err := tx.Exec(ctx, `DELETE FROM redlockctl_open o USING unnest($1::text[], $2::text[]) AS c(key, value)
			WHERE o.writer = $3 AND o.key = c.key AND o.value = c.value`, keys, vals, writer); err != nil {
			return err
		}
	}
	if len(b.Open) > 0 {
		args := append(lifecycleArgs(b.Open), writer)
		if _, err := tx.Exec(ctx, `WITH t AS (`+unnestLifecycles+`)
			INSERT INTO redlockctl_open (resource, key, value, owner, library, scope, masters, quorum, acquired_at, unseen, ttl_ms, extensions, writer)
			SELECT resource, key, value, owner, library, scope, masters, quorum, acquired_at, unseen, ttl_ms, extensions, $18 FROM t
			ON CONFLICT (writer, key, value) DO UPDATE SET resource = excluded.resource, owner = excluded.owner, library = excluded.library,
				scope = excluded.scope, masters = excluded.masters, quorum = excluded.quorum, acquired_at = excluded.acquired_at,
				unseen = excluded.unseen, ttl_ms = excluded.ttl_ms, extensions = excluded.extensions`, args...); err != nil {
			return err
		}
	}
	var mk, mm, mr, mc, mt []string
	var ma []time.Time
	var mto []*time.Time
	for _, m := range b.Marks {
		var to *time.Time
		if !m.To.IsZero() {
			t := m.To
			to = &t
		}
		switch m.Kind {
		case MarkGap, MarkSession:
			if _, err := tx.Exec(ctx, `INSERT INTO redlockctl_spans (writer, kind, master, at, "to", text) VALUES ($1, $2, $3, $4, $5, $6)
				ON CONFLICT (writer, kind, master, at) DO UPDATE SET "to" = excluded."to", text = excluded.text`,
				writer, m.Kind, m.Master, m.At, to, m.Text); err != nil {
				return err
			}
		default:
			mk, ma, mto, mm, mr, mc, mt = append(mk, m.Kind), append(ma, m.At), append(mto, to), append(mm, m.Master), append(mr, m.Resource), append(mc, m.Code), append(mt, m.Text)
		}
	}
	if len(mk) > 0 {
		if _, err := tx.Exec(ctx, `INSERT INTO redlockctl_marks (writer, kind, at, "to", master, resource, code, text)
			SELECT $1, * FROM unnest($2::text[], $3::timestamptz[], $4::timestamptz[], $5::text[], $6::text[], $7::text[], $8::text[])`,
			writer, mk, ma, mto, mm, mr, mc, mt); err != nil {
			return err
		}
	}
	return nil
}

// insertEnded stores ended lifecycles as writer's, once whoever else recorded them
// (see the top of this file), in the partitions of their days, created as needed.
func (p *PG) insertEnded(ctx context.Context, tx pgx.Tx, ended []Lifecycle, writer int64) error {
	if len(ended) == 0 {
		return nil
	}
	days := map[string]time.Time{}
	for _, l := range ended {
		name, from, _ := pgDay(l.EndedAt)
		days[name] = from
	}
	for _, from := range days {
		if _, err := pgCreateDay(ctx, tx, from); err != nil {
			return err
		}
	}
	// A batch is a few thousand rows against a day of millions: probe the
	// (key, value, ended_at) index per row, rather than hash a partition whole
	// (what the planner picks while the day is young: three times the CPU).
	if _, err := tx.Exec(ctx, "SET LOCAL enable_hashjoin = off; SET LOCAL enable_mergejoin = off"); err != nil {
		return err
	}
	args := append(lifecycleArgs(ended), p.opts.Tolerance.Microseconds(), writer)
	_, err := tx.Exec(ctx, pgInsertEnded, args...)
	return err
}

// settle ends, unknown at their last write, what earlier sessions of this writer
// and writers that stopped writing (pgStale) left open.
func (p *PG) settle(now time.Time) error { return p.settleWriters(now, true) }

func (p *PG) settleWriters(now time.Time, self bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), p.opts.WriteTimeout)
	defer cancel()
	return p.tx(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT s.writer, max(coalesce(s."to", s.at)) FROM redlockctl_spans s WHERE s.kind = 'session'
			GROUP BY s.writer HAVING (s.writer = $1 AND $2 OR s.writer <> $1 AND max(coalesce(s."to", s.at)) < $3)
			AND (EXISTS (SELECT 1 FROM redlockctl_open o WHERE o.writer = s.writer)
				OR EXISTS (SELECT 1 FROM redlockctl_spans g WHERE g.writer = s.writer AND g.kind = 'gap' AND g."to" IS NULL))`,
			p.writer, self, now.Add(-pgStale))
		if err != nil {
			return err
		}
		type writerEnd struct {
			writer int64
			end    time.Time
		}
		ws, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (writerEnd, error) {
			var w writerEnd
			return w, r.Scan(&w.writer, &w.end)
		})
		if err != nil {
			return err
		}
		for _, w := range ws {
			end := w.end
			if end.After(now) {
				end = now
			}
			rows, err := tx.Query(ctx, `SELECT resource, key, value, owner, library, scope, masters, quorum, acquired_at, unseen,
				NULL::timestamptz, '', ttl_ms, NULL::float8, extensions, NULL::text FROM redlockctl_open WHERE writer = $1`, w.writer)
			if err != nil {
				return err
			}
			opens, err := pgx.CollectRows(rows, scanLifecycle)
			if err != nil {
				return err
			}
			for i := range opens {
				l := &opens[i]
				if l.AcquiredAt.After(end) {
					l.AcquiredAt = end
				}
				l.End, l.EndedAt = Unknown, end
			}
			if err := p.insertEnded(ctx, tx, opens, w.writer); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `DELETE FROM redlockctl_open WHERE writer = $1`, w.writer); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `UPDATE redlockctl_spans SET "to" = greatest(at, $2) WHERE writer = $1 AND kind = 'gap' AND "to" IS NULL`, w.writer, end); err != nil {
				return err
			}
		}
		return nil
	})
}

// Trim settles what stopped writers left open, then drops the days that ended
// more than MaxAge before now (whole partitions), and the marks as old. The
// lifecycles a day held are counted from PostgreSQL's statistics of it (exactly
// when it has none yet).
func (p *PG) Trim(now time.Time) (Trimmed, error) {
	var t Trimmed
	if err := p.settleWriters(now, false); err != nil {
		return t, err
	}
	cut := now.Add(-p.opts.MaxAge)
	ctx, cancel := context.WithTimeout(context.Background(), p.opts.WriteTimeout)
	defer cancel()
	err := p.tx(ctx, func(tx pgx.Tx) error {
		// A day's rows: its own statistics, or its partitions' (-1: never analysed).
		rows, err := tx.Query(ctx, `SELECT c.relname, CASE WHEN c.relkind = 'p' THEN coalesce((SELECT sum(greatest(l.reltuples, 0))
				FROM pg_partition_tree(c.oid) t JOIN pg_class l ON l.oid = t.relid WHERE t.isleaf), 0) ELSE c.reltuples END
			FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
			WHERE i.inhparent = 'redlockctl_lifecycles'::regclass ORDER BY c.relname`)
		if err != nil {
			return err
		}
		type part struct {
			name string
			rows float32
		}
		parts, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (part, error) {
			var pt part
			return pt, r.Scan(&pt.name, &pt.rows)
		})
		if err != nil {
			return err
		}
		for _, pt := range parts {
			day, err := time.Parse("20060102", strings.TrimPrefix(pt.name, "redlockctl_lifecycles_"))
			if err != nil || day.Add(24*time.Hour).After(cut) {
				continue
			}
			n := int64(pt.rows)
			if pt.rows <= 0 {
				if err := tx.QueryRow(ctx, "SELECT count(*) FROM "+pgx.Identifier{pt.name}.Sanitize()).Scan(&n); err != nil {
					return err
				}
			}
			if _, err := tx.Exec(ctx, "DROP TABLE "+pgx.Identifier{pt.name}.Sanitize()); err != nil {
				return err
			}
			t.Lifecycles += int(n)
			t.Before = day.Add(24 * time.Hour)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM redlockctl_marks WHERE coalesce("to", at) < $1`, cut); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `DELETE FROM redlockctl_spans WHERE "to" < $1`, cut)
		return err
	})
	return t, err
}

// Used returns the bytes the store's tables and indexes take.
func (p *PG) Used() (int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), p.opts.QueryTimeout)
	defer cancel()
	var n int64
	err := p.pool.QueryRow(ctx, `SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint FROM pg_class c
		WHERE c.relkind = 'r' AND c.relname LIKE 'redlockctl\_%' AND c.relnamespace = current_schema()::regnamespace`).Scan(&n)
	return n, p.wrap(err)
}

// pgOpenHeld selects the held lifecycles ($1: acquired by then; $2: the instant
// their writer's session must reach, or NULL; $3: exact resources, or NULL; $4: the
// tolerance, µs): one record per lifecycle (the one that saw its acquisition),
// none that another writer has ended.
const pgOpenHeld = `SELECT DISTINCT ON (o.key, o.value) o.resource, o.key, o.value, o.owner, o.library, o.scope, o.masters, o.quorum,
	o.acquired_at, o.unseen, NULL::timestamptz, '', o.ttl_ms, NULL::float8, o.extensions, NULL::text
	FROM redlockctl_open o
	WHERE o.acquired_at <= $1 AND ($3::text[] IS NULL OR o.resource = ANY($3))
	AND ($2::timestamptz IS NULL OR $2 <= (SELECT max(s."to") FROM redlockctl_spans s WHERE s.writer = o.writer AND s.kind = 'session'))
	AND NOT EXISTS (SELECT 1 FROM redlockctl_lifecycles l WHERE l.key = o.key AND l.value = o.value
		AND l.ended_at >= o.acquired_at - $4 * interval '1 microsecond'
		AND (NOT l.unseen AND NOT o.unseen AND l.acquired_at BETWEEN o.acquired_at - $4 * interval '1 microsecond' AND o.acquired_at + $4 * interval '1 microsecond'
			OR l.unseen OR o.unseen))
	ORDER BY o.key, o.value, o.unseen, o.acquired_at`

// pgHeldAt selects the ended lifecycles held at $1 (of the resources $2, or
// NULL: any), as the embedded store finds them: a lifecycle of duration class c
// (held less than 2^c µs) held at t ended within (t, t+2^c), so each class reads
// only the index entries of that span (OFFSET 0 keeps the planner from turning
// the 65 index ranges into one scan of every lifecycle that ended after t).
const pgHeldAt = `SELECT l.* FROM generate_series(0, 64) AS c(n), LATERAL (
	SELECT ` + lifecycleCols + ` FROM redlockctl_lifecycles
	WHERE class = c.n AND ended_at > $1::timestamptz
	AND ended_at < $1::timestamptz + CASE WHEN c.n >= 45 THEN interval '1000 years' ELSE (1::bigint << c.n) * interval '1 microsecond' END
	AND acquired_at <= $1::timestamptz AND ($2::text[] IS NULL OR resource = ANY($2)) OFFSET 0) l`

// exactResources returns sel's resources for SQL's = ANY, or nil (NULL) when one
// is a glob or there are none: those are matched after.
func exactResources(sel *Select) []string {
	if sel.hashes() == nil {
		return nil
	}
	return sel.Resources
}

// At returns the lifecycles sel selects that were held at t, or why that is
// unknown: an instant no session covered, or one inside a feed gap of every writer
// recording then.
func (p *PG) At(sel Select, t time.Time) (Answer, error) {
	a := Answer{At: t, Holders: []Lifecycle{}}
	ctx, cancel := context.WithTimeout(context.Background(), p.opts.QueryTimeout)
	defer cancel()
	why, err := p.unknownAt(ctx, t)
	if err != nil || why != "" {
		a.Unknown = why
		return a, p.wrap(err)
	}
	t = t.Truncate(time.Microsecond)
	res := exactResources(&sel)
	var held lifecycles
	keep := func(l Lifecycle) {
		if (len(sel.Resources) == 0 || matchResource(sel.Resources, l.Resource)) && match(sel.Query, &l, "held") {
			held.push(l)
		}
	}
	rows, err := p.pool.Query(ctx, pgHeldAt, t, res)
	if err == nil {
		err = eachRow(rows, keep)
	}
	if err == nil {
		rows, err = p.pool.Query(ctx, pgOpenHeld, t, t, res, p.opts.Tolerance.Microseconds())
		if err == nil {
			err = eachRow(rows, keep)
		}
	}
	a.Holders = held.sorted(0)
	return a, p.wrap(err)
}

// eachRow calls fn with each row of lifecycleCols. The rows are read from their
// raw values (pgx's Scan, one scan plan and one string per column, cost about
// twice as much for the tens of thousands of rows a listing returns): the names,
// which repeat from row to row, are made strings once per query.
func eachRow(rows pgx.Rows, fn func(Lifecycle)) error {
	defer rows.Close()
	d := rowDecoder{names: map[string]string{}}
	for rows.Next() {
		l, err := d.decode(rows)
		if err != nil {
			return err
		}
		fn(l)
	}
	return rows.Err()
}

// rowDecoder reads rows of lifecycleCols from their raw values where pgx gave
// them in the formats it knows (text, and binary for the rest), else through
// Scan.
type rowDecoder struct {
	checked, raw bool
	names        map[string]string // a name's string, made once
	last         [16]string        // each column's last name
	margins      []float64         // where MarginMs point, allocated a slab at a time
}

// pgY2K is PostgreSQL's epoch of timestamps (2000-01-01 UTC), in µs since Unix's.
const pgY2K = 946_684_800 * 1_000_000

func (d *rowDecoder) decode(rows pgx.Rows) (Lifecycle, error) {
	if !d.checked {
		d.checked, d.raw = true, rawLifecycleColumns(rows.FieldDescriptions())
	}
	if !d.raw {
		return scanLifecycle(rows)
	}
	v := rows.RawValues()
	var l Lifecycle
	var err error
	l.Resource, l.Key, l.Value = d.name(0, v[0]), d.name(1, v[1]), string(v[2])
	l.Owner, l.Library, l.Scope = d.name(3, v[3]), d.name(4, v[4]), d.name(5, v[5])
	l.Masters, l.Quorum = int(int32(be32(v[6], &err))), int(int32(be32(v[7], &err)))
	l.AcquiredAt = pgTime(v[8], &err)
	l.Unseen = len(v[9]) == 1 && v[9][0] != 0
	if v[10] != nil {
		l.EndedAt = pgTime(v[10], &err)
	}
	l.End = d.name(11, v[11])
	l.TTLMs = int64(be64(v[12], &err))
	if v[13] != nil {
		if len(d.margins) == 0 {
			d.margins = make([]float64, 1024)
		}
		m := &d.margins[0]
		d.margins = d.margins[1:]
		*m = math.Float64frombits(be64(v[13], &err))
		l.MarginMs = m
	}
	l.Extensions = int(int32(be32(v[14], &err)))
	if v[15] != nil {
		l.Audit = []byte(string(v[15]))
	}
	if err != nil || v[9] == nil || v[8] == nil {
		return l, fmt.Errorf("a lifecycle row: %v", cmpOr(fmt.Sprint(err), "a NULL where none can be"))
	}
	return l, nil
}

// rawLifecycleColumns says whether rows of lifecycleCols come in the types and
// formats rowDecoder reads.
func rawLifecycleColumns(fds []pgconn.FieldDescription) bool {
	want := []uint32{pgtype.TextOID, pgtype.TextOID, pgtype.TextOID, pgtype.TextOID, pgtype.TextOID, pgtype.TextOID,
		pgtype.Int4OID, pgtype.Int4OID, pgtype.TimestamptzOID, pgtype.BoolOID, pgtype.TimestamptzOID, pgtype.TextOID,
		pgtype.Int8OID, pgtype.Float8OID, pgtype.Int4OID, pgtype.TextOID}
	if len(fds) != len(want) {
		return false
	}
	for i, fd := range fds {
		if fd.DataTypeOID != want[i] || want[i] != pgtype.TextOID && fd.Format != pgtype.BinaryFormatCode {
			return false
		}
	}
	return true
}

// name is b, column col's, as a string, the same string for the same bytes within
// a query (the column's last one is tried first: the library, scope and end repeat).
func (d *rowDecoder) name(col int, b []byte) string {
	if s := d.last[col]; s == string(b) {
		return s
	}
	s, ok := d.names[string(b)]
	if !ok {
		s = string(b)
		if len(d.names) < 1<<16 {
			d.names[s] = s
		}
	}
	d.last[col] = s
	return s
}

func be32(b []byte, err *error) uint32 {
	if len(b) != 4 {
		*err = fmt.Errorf("%d bytes for an int4", len(b))
		return 0
	}
	return binary.BigEndian.Uint32(b)
}

func be64(b []byte, err *error) uint64 {
	if len(b) != 8 {
		*err = fmt.Errorf("%d bytes for an 8-byte value", len(b))
		return 0
	}
	return binary.BigEndian.Uint64(b)
}

// pgTime is a binary timestamptz, as pgx reads it (local time).
func pgTime(b []byte, err *error) time.Time {
	us := int64(be64(b, err))
	if us == math.MaxInt64 || us == math.MinInt64 {
		*err = errors.New("an infinite timestamp")
		return time.Time{}
	}
	us += pgY2K
	return time.Unix(us/1_000_000, us%1_000_000*1000)
}

// pgSpan is a session or a gap of one writer.
type pgSpan struct {
	writer int64
	Mark
}

func (p *PG) spans(ctx context.Context, where string, args ...any) ([]pgSpan, error) {
	rows, err := p.pool.Query(ctx, `SELECT writer, kind, master, at, "to", text FROM redlockctl_spans WHERE `+where+` ORDER BY at, master, writer`, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (pgSpan, error) {
		var s pgSpan
		var to *time.Time
		err := r.Scan(&s.writer, &s.Kind, &s.Master, &s.At, &to, &s.Text)
		if to != nil {
			s.To = *to
		}
		return s, err
	})
}

// unknownAt says why t cannot be answered, as the embedded store says it; with
// several writers, t is known when one writer's session covered it outside its
// gaps.
func (p *PG) unknownAt(ctx context.Context, t time.Time) (string, error) {
	sessions, err := p.spans(ctx, "kind = 'session'")
	if err != nil {
		return "", err
	}
	at := us(t)
	covering := map[int64]bool{}
	var before, after *Mark
	for i := range sessions {
		m := &sessions[i].Mark
		switch {
		case us(m.At) <= at && at <= us(m.To):
			covering[sessions[i].writer] = true
		case us(m.To) < at:
			if before == nil || m.To.After(before.To) {
				before = m
			}
		case after == nil:
			after = m
		}
	}
	if len(covering) == 0 {
		switch {
		case before != nil && after != nil:
			return fmt.Sprintf("nothing recorded from %s to %s (the recorder was not running)", stamp(before.To), stamp(after.At)), nil
		case before != nil:
			return fmt.Sprintf("nothing recorded after %s (the latest record)", stamp(before.To)), nil
		case after != nil:
			return fmt.Sprintf("nothing recorded before %s (the first record)", stamp(after.At)), nil
		}
		return "nothing recorded: the store is empty", nil
	}
	gaps, err := p.spans(ctx, `kind = 'gap' AND at <= $1 AND ("to" IS NULL OR "to" >= $2)`, fromUs(at), fromUs(at))
	if err != nil {
		return "", err
	}
	blind := map[int64]bool{}
	var out []string
	for _, g := range gaps {
		if !covering[g.writer] || us(g.At) > at || !g.To.IsZero() && at > us(g.To) {
			continue
		}
		blind[g.writer] = true
		to := "now (still cut)"
		if !g.To.IsZero() {
			to = stamp(g.To)
		}
		s := fmt.Sprintf("feed gap from %s to %s on %s", stamp(g.At), to, g.Master)
		if g.Text != "" {
			s += " (" + g.Text + ")"
		}
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	if len(blind) < len(covering) {
		return "", nil // a writer saw everything then
	}
	return strings.Join(out, "; "), nil
}

// Lifecycles returns the lifecycles f selects, in the order they were acquired,
// with the gaps and the times nothing recorded within the window.
func (p *PG) Lifecycles(f Filter, now time.Time) (Result, error) {
	res := Result{Lifecycles: []Lifecycle{}}
	ctx, cancel := context.WithTimeout(context.Background(), p.opts.QueryTimeout)
	defer cancel()
	since, until := pgMin, pgMax
	if !f.Since.IsZero() {
		since = f.Since
	}
	if !f.Until.IsZero() {
		until = f.Until
	}
	longer := f.LongerThan.Microseconds()
	exact := exactResources(&f.Select)
	var kept lifecycles
	keep := func(l Lifecycle) {
		start, end := us(l.AcquiredAt), us(l.EndedAt)
		if l.End == Held {
			end = us(now)
		}
		if start > us(until) || end < us(since) || longer > 0 && end-start <= longer {
			return
		}
		if f.Ends != nil && !slices.Contains(f.Ends, l.End) {
			return
		}
		if len(f.Resources) > 0 && !matchResource(f.Resources, l.Resource) || !match(f.Query, &l, cmpOr(l.End, "held")) {
			return
		}
		kept.push(l)
	}
	var ends []string
	if f.Ends != nil {
		ends = append([]string{}, f.Ends...)
	}
	// Where the database selects exactly what keep keeps (no glob, no filter
	// language), it returns only the first Limit+1 in the order of the answer: the
	// rest would be decoded here to be cut (a million expired in a day, for the
	// first 100,000). The held ones, from redlockctl_open, are merged after.
	q := `SELECT ` + lifecycleCols + ` FROM redlockctl_lifecycles
		WHERE ended_at >= $1 AND acquired_at <= $2 AND ($3::text[] IS NULL OR "end" = ANY($3))
		AND ($4::bigint <= 0 OR ended_at - acquired_at > $4 * interval '1 microsecond')
		AND ($5::text[] IS NULL OR resource = ANY($5))`
	args := []any{since, until, ends, longer, exact}
	if f.Limit > 0 && f.Query.Empty() && (len(f.Resources) == 0 || exact != nil) {
		q += ` ORDER BY acquired_at, key COLLATE "C", value COLLATE "C" LIMIT $6`
		args = append(args, f.Limit+1)
	}
	rows, err := p.pool.Query(ctx, q, args...)
	if err == nil {
		err = eachRow(rows, keep)
	}
	if err == nil && (f.Ends == nil || slices.Contains(f.Ends, Held)) {
		rows, err = p.pool.Query(ctx, pgOpenHeld, until, nil, exact, p.opts.Tolerance.Microseconds())
		if err == nil {
			err = eachRow(rows, keep)
		}
	}
	if err == nil {
		res.Gaps, err = p.gapsWithin(ctx, since, until, !f.Since.IsZero())
	}
	res.Lifecycles = kept.sorted(0)
	if f.Limit > 0 && len(res.Lifecycles) > f.Limit {
		res.Lifecycles, res.Truncated = res.Lifecycles[:f.Limit], true
	}
	return res, p.wrap(err)
}

// gapsWithin returns the gaps that overlap [since, until] and the spans no
// session covered there (sessions of all writers merged).
func (p *PG) gapsWithin(ctx context.Context, since, until time.Time, bounded bool) ([]Mark, error) {
	gaps, err := p.spans(ctx, `kind = 'gap' AND at <= $1 AND ("to" IS NULL OR "to" >= $2)`, until, since)
	if err != nil {
		return nil, err
	}
	var out []Mark
	for _, g := range gaps {
		out = append(out, g.Mark)
	}
	sessions, err := p.spans(ctx, "kind = 'session'")
	if err != nil {
		return nil, err
	}
	var merged []Mark
	for _, s := range sessions { // ordered by their start
		if n := len(merged); n > 0 && !s.At.After(merged[n-1].To) {
			if s.To.After(merged[n-1].To) {
				merged[n-1].To = s.To
			}
			continue
		}
		merged = append(merged, s.Mark)
	}
	for i, m := range merged {
		if i == 0 && bounded && since.Before(m.At) {
			out = append(out, Mark{Kind: "not-recorded", At: since, To: m.At, Text: "nothing recorded before the first session"})
		}
		if i > 0 && !merged[i-1].To.After(until) && !m.At.Before(since) {
			out = append(out, Mark{Kind: "not-recorded", At: merged[i-1].To, To: m.At, Text: "the recorder was not running"})
		}
	}
	slices.SortFunc(out, func(a, b Mark) int { return a.At.Compare(b.At) })
	return out, nil
}

// Marks returns the marks from since to until (zero: unbounded), in time order,
// every writer's.
func (p *PG) Marks(since, until time.Time) ([]Mark, error) {
	lo, hi := pgMin, pgMax
	if !since.IsZero() {
		lo = since
	}
	if !until.IsZero() {
		hi = until
	}
	ctx, cancel := context.WithTimeout(context.Background(), p.opts.QueryTimeout)
	defer cancel()
	rows, err := p.pool.Query(ctx, `SELECT kind, at, "to", master, resource, code, text FROM (
		SELECT kind, at, "to", master, '' AS resource, '' AS code, text, CASE kind WHEN 'gap' THEN 0 ELSE 1 END AS o, 0::bigint AS id FROM redlockctl_spans
		UNION ALL SELECT kind, at, "to", master, resource, code, text, 2, id FROM redlockctl_marks) m
		WHERE at <= $2 AND (at >= $1 OR "to" >= $1) ORDER BY at, o, master, id`, lo, hi)
	if err != nil {
		return nil, p.wrap(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Mark, error) {
		var m Mark
		var to *time.Time
		err := r.Scan(&m.Kind, &m.At, &to, &m.Master, &m.Resource, &m.Code, &m.Text)
		if to != nil {
			m.To = *to
		}
		return m, err
	})
	if out == nil {
		out = []Mark{}
	}
	return out, p.wrap(err)
}

// Do answers req (now: what "still held" is measured to).
func (p *PG) Do(req Request, now time.Time) (Response, error) { return do(p, req, now) }
