package history

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/redlockctl/redlockctl/inspect"
)

// Request is one history question, as the history command asks it of a store or
// of serve's /api/v1/history.
type Request struct {
	Resources []string // resource names or globs; none: every resource
	Filter    string   // the filter language (inspect.ParseQuery)
	// At asks who held what at that instant; otherwise the lifecycles held at some
	// instant from Since to Until (zero: unbounded) are listed.
	At           time.Time
	Since, Until time.Time
	Ends         []string      // only these ends (Held: not ended)
	LongerThan   time.Duration // only those held longer
	Limit        int           // at most this many lifecycles; 0: DefaultLimit
}

// DefaultLimit is how many lifecycles a listing returns at most unless told.
const DefaultLimit = 100000

// Response is the answer to a Request: Answer for one at an instant, Result for
// a listing.
type Response struct {
	Answer *Answer `json:"answer,omitempty"`
	Result *Result `json:"result,omitempty"`
}

// Do answers req from s (now: what "still held" is measured to).
func (s *Store) Do(req Request, now time.Time) (Response, error) { return do(s, req, now) }

// do answers req from b.
func do(b Backend, req Request, now time.Time) (Response, error) {
	q, err := inspect.ParseQuery(req.Filter)
	if err != nil {
		return Response{}, fmt.Errorf("filter: %v", err)
	}
	sel := Select{Resources: req.Resources, Query: q}
	if !req.At.IsZero() {
		a, err := b.At(sel, req.At)
		return Response{Answer: &a}, err
	}
	limit := req.Limit
	if limit <= 0 {
		limit = DefaultLimit
	}
	r, err := b.Lifecycles(Filter{Select: sel, Since: req.Since, Until: req.Until, Ends: req.Ends, LongerThan: req.LongerThan, Limit: limit}, now)
	return Response{Result: &r}, err
}

// Values returns req as URL query parameters (times in RFC 3339).
func (req Request) Values() url.Values {
	v := url.Values{}
	for _, r := range req.Resources {
		v.Add("resource", r)
	}
	set := func(k, s string) {
		if s != "" {
			v.Set(k, s)
		}
	}
	tm := func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format(time.RFC3339Nano)
	}
	set("filter", req.Filter)
	set("at", tm(req.At))
	set("since", tm(req.Since))
	set("until", tm(req.Until))
	set("end", strings.Join(req.Ends, ","))
	if req.LongerThan > 0 {
		v.Set("longer_than", req.LongerThan.String())
	}
	if req.Limit > 0 {
		v.Set("limit", strconv.Itoa(req.Limit))
	}
	return v
}

// ParseRequest reads a Request from URL query parameters (see Values).
func ParseRequest(v url.Values) (Request, error) {
	req := Request{Resources: v["resource"], Filter: v.Get("filter")}
	tm := func(k string, dst *time.Time) error {
		if s := v.Get(k); s != "" {
			t, err := time.Parse(time.RFC3339Nano, s)
			if err != nil {
				return fmt.Errorf("%s: %q is not an RFC 3339 time", k, s)
			}
			*dst = t
		}
		return nil
	}
	if err := errors.Join(tm("at", &req.At), tm("since", &req.Since), tm("until", &req.Until)); err != nil {
		return req, err
	}
	if e := v.Get("end"); e != "" {
		for _, end := range strings.Split(e, ",") {
			if _, err := endCode(end); err != nil {
				return req, fmt.Errorf("end: %q is not one of released, expired, force-released, evicted, unknown", end)
			}
			req.Ends = append(req.Ends, end)
		}
	}
	if s := v.Get("longer_than"); s != "" {
		d, err := ParseDuration(s)
		if err != nil {
			return req, fmt.Errorf("longer_than: %v", err)
		}
		req.LongerThan = d
	}
	if s := v.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return req, fmt.Errorf("limit: %q is not a count", s)
		}
		req.Limit = n
	}
	return req, nil
}

// Handler serves GET /api/v1/history: a Request in the query (see Values), the
// Response as JSON; a bad request is a 400 with the reason as text.
func Handler(s Backend) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, err := ParseRequest(r.URL.Query())
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		resp, err := s.Do(req, time.Now())
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(resp)
	})
}

// Path is where serve answers history requests.
const Path = "/api/v1/history"

// Ask sends req to the serve at base (http[s]://host:port) through client.
func Ask(ctx context.Context, client *http.Client, base string, req Request) (Response, error) {
	u, err := url.Parse(base)
	if err != nil || u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return Response{}, fmt.Errorf("--server %q: want http://host:port or https://host:port", base)
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + Path
	u.RawQuery = req.Values().Encode()
	hr, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return Response{}, err
	}
	if u.User != nil {
		pw, _ := u.User.Password()
		hr.SetBasicAuth(u.User.Username(), pw)
		hr.URL.User = nil
	}
	res, err := client.Do(hr)
	if err != nil {
		return Response{}, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(res.Body, 4096))
		return Response{}, fmt.Errorf("%s: %s: %s", u.Redacted(), res.Status, strings.TrimSpace(string(b)))
	}
	var resp Response
	if err := json.NewDecoder(res.Body).Decode(&resp); err != nil {
		return Response{}, fmt.Errorf("%s: %v", u.Redacted(), err)
	}
	return resp, nil
}
