package routetable

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"

	"github.com/caddyserver/caddy/v2"
)

// AdminPrefix is where the route tables are in the admin API.
const AdminPrefix = "/kengine/route-tables/"

// Body limits: one host's route list, and a batch.
const (
	MaxHostBodyBytes  = 4 << 20
	MaxBatchBodyBytes = 64 << 20
)

// Admin is the admin API of the route tables (module admin.api.kengine_route_tables):
//
//	GET    /kengine/route-tables/                    → [Info, ...]
//	GET    /kengine/route-tables/<id>                → Info
//	POST   /kengine/route-tables/<id>                ← Batch  → Info   (one atomic swap)
//	GET    /kengine/route-tables/<id>/hosts          → {"<key>": "<hex sha-256 of its JSON>"}
//	PUT    /kengine/route-tables/<id>/hosts/<key>    ← [route, ...] → Info
//	DELETE /kengine/route-tables/<id>/hosts/<key>    → Info
//
// A change that does not decode or provision answers 400 and leaves the table as it was; an
// If-Match header (the table hash, quoted or not) that does not match answers 412.
type Admin struct{}

// CaddyModule returns the module's information.
func (Admin) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "admin.api.kengine_route_tables",
		New: func() caddy.Module { return new(Admin) },
	}
}

// Routes returns the admin routes.
func (Admin) Routes() []caddy.AdminRoute {
	return []caddy.AdminRoute{{Pattern: AdminPrefix, Handler: caddy.AdminHandlerFunc(serveAdmin)}}
}

// Info describes a table's current state.
type Info struct {
	ID string `json:"id"`
	// Version counts the changes applied since the handler was provisioned (1: the config's table).
	Version uint64 `json:"version"`
	// Hash is the XOR of SHA-256("<key> <hex SHA-256 of the key's compact route JSON>") over keys.
	Hash  string `json:"hash"`
	Hosts int    `json:"hosts"`
	Label string `json:"label,omitempty"`
}

// Batch is the body of POST /kengine/route-tables/<id>: key → route list (null deletes the
// key); replace drops every key not named; label is kept and returned by GET (e.g. the
// controller's revision).
type Batch struct {
	Hosts   map[string]json.RawMessage `json:"hosts"`
	Replace bool                       `json:"replace,omitempty"`
	Label   *string                    `json:"label,omitempty"`
}

func info(id string, s *snapshot) Info {
	return Info{ID: id, Version: s.version, Hash: s.hash(), Hosts: s.size(), Label: s.label}
}

func apiError(status int, err error) error {
	return caddy.APIError{HTTPStatus: status, Err: err}
}

func serveAdmin(w http.ResponseWriter, r *http.Request) error {
	rest := strings.TrimPrefix(r.URL.EscapedPath(), AdminPrefix)
	if rest == "" {
		if r.Method != http.MethodGet {
			return apiError(http.StatusMethodNotAllowed, fmt.Errorf("method %s not allowed", r.Method))
		}
		return writeJSON(w, allInfo())
	}
	// Segments are percent-decoded one by one: an id may contain "/" (as "%2F").
	escapedID, escapedSub, _ := strings.Cut(rest, "/")
	id, err1 := url.PathUnescape(escapedID)
	sub, err2 := url.PathUnescape(escapedSub)
	if err := errors.Join(err1, err2); err != nil {
		return apiError(http.StatusBadRequest, err)
	}
	t := lookupTable(id)
	if t == nil {
		return apiError(http.StatusNotFound, fmt.Errorf("no route table %q", id))
	}
	switch {
	case sub == "":
		switch r.Method {
		case http.MethodGet:
			return withSnapshot(w, t, func(s *snapshot) any { return info(id, s) })
		case http.MethodPost:
			var b Batch
			if err := readJSON(r, MaxBatchBodyBytes, &b); err != nil {
				return err
			}
			c, err := decodeHosts(b.Hosts, true)
			if err != nil {
				return apiError(http.StatusBadRequest, err)
			}
			c.Replace, c.Label = b.Replace, b.Label
			return applyAndAnswer(w, r, t, c)
		}
	case sub == "hosts":
		if r.Method == http.MethodGet {
			return withSnapshot(w, t, func(s *snapshot) any {
				sums := make(map[string]string, s.size())
				for _, k := range s.keys() {
					p, _ := parsePattern(k)
					sums[k] = fmt.Sprintf("%x", s.get(p).sum)
				}
				return sums
			})
		}
	case strings.HasPrefix(sub, "hosts/"):
		key := strings.TrimPrefix(sub, "hosts/")
		switch r.Method {
		case http.MethodPut:
			var raw json.RawMessage
			if err := readJSON(r, MaxHostBodyBytes, &raw); err != nil {
				return err
			}
			c, err := decodeHosts(map[string]json.RawMessage{key: raw}, false)
			if err != nil {
				return apiError(http.StatusBadRequest, err)
			}
			return applyAndAnswer(w, r, t, c)
		case http.MethodDelete:
			c, err := decodeHosts(map[string]json.RawMessage{key: json.RawMessage("null")}, true)
			if err != nil {
				return apiError(http.StatusBadRequest, err)
			}
			return applyAndAnswer(w, r, t, c)
		}
	default:
		return apiError(http.StatusNotFound, fmt.Errorf("no such path %q", r.URL.Path))
	}
	return apiError(http.StatusMethodNotAllowed, fmt.Errorf("method %s not allowed on %s", r.Method, r.URL.Path))
}

func allInfo() []Info {
	registry.Lock()
	ids := make([]string, 0, len(registry.m))
	for id := range registry.m {
		ids = append(ids, id)
	}
	registry.Unlock()
	sort.Strings(ids)
	out := make([]Info, 0, len(ids))
	for _, id := range ids {
		if t := lookupTable(id); t != nil {
			if s := t.acquire(); s != nil {
				out = append(out, info(id, s))
				s.release()
			}
		}
	}
	return out
}

func withSnapshot(w http.ResponseWriter, t *table, f func(*snapshot) any) error {
	s := t.acquire()
	if s == nil {
		return apiError(http.StatusConflict, errClosed)
	}
	defer s.release()
	return writeJSON(w, f(s))
}

func applyAndAnswer(w http.ResponseWriter, r *http.Request, t *table, c Change) error {
	c.IfMatch = strings.Trim(r.Header.Get("If-Match"), `"`)
	s, err := t.apply(c)
	switch {
	case errors.Is(err, errClosed):
		return apiError(http.StatusConflict, err)
	case errors.Is(err, errPrecondition):
		return apiError(http.StatusPreconditionFailed, err)
	case err != nil:
		return apiError(http.StatusBadRequest, err)
	}
	return writeJSON(w, info(t.id, s))
}

// readJSON decodes a body of at most limit bytes (413 above it, 400 when it does not decode).
func readJSON(r *http.Request, limit int64, v any) error {
	body, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	if err != nil {
		return apiError(http.StatusBadRequest, err)
	}
	if int64(len(body)) > limit {
		return apiError(http.StatusRequestEntityTooLarge, fmt.Errorf("body larger than %d bytes", limit))
	}
	if err := caddy.StrictUnmarshalJSON(body, v); err != nil {
		return apiError(http.StatusBadRequest, fmt.Errorf("decoding body: %w", err))
	}
	return nil
}

func writeJSON(w http.ResponseWriter, v any) error {
	w.Header().Set("Content-Type", "application/json")
	return json.NewEncoder(w).Encode(v)
}

// Interface guard
var _ caddy.AdminRouter = Admin{}
