package inspect

import (
	"encoding/base64"
	"encoding/json"
	"unicode/utf8"
)

// MarshalJSON writes the node; a value that is not valid UTF-8 is also given in full
// as standard base64 in "value_b64" ("value" then carries a display form in which
// invalid bytes are U+FFFD), so binary values survive JSON without loss.
func (n Node) MarshalJSON() ([]byte, error) {
	type plain Node
	if utf8.ValidString(n.Value) {
		return json.Marshal(plain(n))
	}
	return json.Marshal(struct {
		plain
		ValueB64 string `json:"value_b64"`
	}{plain(n), base64.StdEncoding.EncodeToString([]byte(n.Value))})
}

// MarshalJSON writes the resource; "resource", "key" and "value" that are not valid
// UTF-8 are also given in full as base64 in "resource_b64", "key_b64", "value_b64".
func (r Resource) MarshalJSON() ([]byte, error) {
	type plain Resource
	if r.Anomalies == nil {
		r.Anomalies = []Anomaly{}
	}
	if r.Nodes == nil {
		r.Nodes = []Node{}
	}
	if utf8.ValidString(r.Resource) && utf8.ValidString(r.Key) && utf8.ValidString(r.Value) {
		return json.Marshal(plain(r))
	}
	return json.Marshal(struct {
		plain
		ResourceB64 string `json:"resource_b64,omitempty"`
		KeyB64      string `json:"key_b64,omitempty"`
		ValueB64    string `json:"value_b64,omitempty"`
	}{plain(r), b64IfInvalid(r.Resource), b64IfInvalid(r.Key), b64IfInvalid(r.Value)})
}

// MarshalJSON writes the master with an empty (not null) findings list.
func (m Master) MarshalJSON() ([]byte, error) {
	type plain Master
	if m.Findings == nil {
		m.Findings = []Finding{}
	}
	return json.Marshal(plain(m))
}

func b64IfInvalid(s string) string {
	if utf8.ValidString(s) {
		return ""
	}
	return base64.StdEncoding.EncodeToString([]byte(s))
}
