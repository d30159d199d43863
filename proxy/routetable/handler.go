// Package routetable is the Caddy HTTP handler `kengine_route_table`: a server's HTTP route
// table indexed by host, changed per host over the admin API without re-provisioning the
// config. See README.md for the API and the lifetimes.
//
// Config (JSON, as a controller renders it; each key's value is the ordered route list Caddy
// runs for that host, the JSON of a `subroute`'s "routes"):
//
//	{"handler": "kengine_route_table", "id": "default/gw/http-80",
//	 "hosts": {"foo.example.com": [...], "*.example.com": [...], "*": [...]}}
//
// A request's Host (port removed, case-insensitive) picks one list: the exact key, else the
// longest wildcard suffix ("*.example.com" matches a.example.com and a.b.example.com, not
// example.com), else "*"; the list then runs like a subroute and continues with the next
// handler unless a route is terminal. No key matched: the next handler runs.
//
// "backends" (optional) maps a backend id to the handler that proxies to it: when the host's
// list has run without answering and set the variable kengine_backend to one of those ids,
// that handler answers. This is the shared dispatch of docs/bench.md done by one map lookup,
// inside the one route Caddy's traffic metrics instrument, instead of top-level routes with a
// `vars` matcher each, tried in a line and instrumented a second time.
package routetable

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
)

func init() {
	caddy.RegisterModule(Handler{})
	caddy.RegisterModule(Admin{})
}

// Handler is the route-table handler.
type Handler struct {
	// ID names the table in the admin API (/kengine/route-tables/<id>); unique per config.
	ID string `json:"id"`
	// Hosts is the initial table: key → ordered route list.
	Hosts map[string]json.RawMessage `json:"hosts,omitempty"`
	// Backends maps a backend id (a value of BackendVar) to the JSON of the handler that
	// proxies to it; provisioned with the config, not per table generation.
	Backends map[string]json.RawMessage `json:"backends,omitempty"`

	t        *table
	backends map[string]caddyhttp.Handler
}

// BackendVar is the request variable the host lists' `vars` handlers name a backend by.
const BackendVar = "kengine_backend"

// CaddyModule returns the module's information.
func (Handler) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.handlers.kengine_route_table",
		New: func() caddy.Module { return new(Handler) },
	}
}

// Provision provisions the initial table in its own generation and registers the table under
// its id, so deltas reach it.
func (h *Handler) Provision(ctx caddy.Context) error {
	if err := checkID(h.ID); err != nil {
		return err
	}
	change, err := decodeHosts(h.Hosts, false)
	if err != nil {
		return err
	}
	if err := h.provisionBackends(ctx); err != nil {
		return err
	}
	// Every generation derives from base, never from ctx itself: caddy.NewContext's cancel
	// runs the *parent's* OnCancel functions, and ctx's are the config's. base has none, and
	// is never cancelled for the same reason (its context.Context ends with the config's).
	base, _ := caddy.NewContext(ctx)
	t := &table{id: h.ID, base: base}
	if _, err := t.apply(change); err != nil {
		return err
	}
	if err := register(h.ID, ctx.Context, t); err != nil {
		t.close()
		return err
	}
	h.t = t
	h.Hosts = nil // provisioned; Caddy keeps the config's bytes itself
	return nil
}

// provisionBackends loads each backend's handler as a terminal route without metrics (the
// table's own route is the one Caddy times), compiled once.
func (h *Handler) provisionBackends(ctx caddy.Context) error {
	if len(h.Backends) == 0 {
		return nil
	}
	h.backends = make(map[string]caddyhttp.Handler, len(h.Backends))
	for id, raw := range h.Backends {
		route := caddyhttp.Route{HandlersRaw: []json.RawMessage{raw}, Terminal: true}
		if err := route.Provision(ctx, nil); err != nil {
			return fmt.Errorf("backend %q: %w", id, err)
		}
		h.backends[id] = route.Compile(nil)
	}
	h.Backends = nil
	return nil
}

// dispatch is the handler after the host's list: the backend the list named, else next.
type dispatch struct {
	backends map[string]caddyhttp.Handler
	next     caddyhttp.Handler
}

func (d dispatch) ServeHTTP(w http.ResponseWriter, r *http.Request) error {
	if id, ok := caddyhttp.GetVar(r.Context(), BackendVar).(string); ok {
		if b := d.backends[id]; b != nil {
			return b.ServeHTTP(w, r)
		}
	}
	return d.next.ServeHTTP(w, r)
}

// Cleanup unregisters the table and retires it: each generation is cleaned up once the
// requests still running on it are done.
func (h *Handler) Cleanup() error {
	if h.t != nil {
		unregister(h.ID, h.t)
		h.t.close()
	}
	return nil
}

// ServeHTTP runs the route list of the request's host, holding the table snapshot (and so
// every module in it) until the request is done.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	s := h.t.acquire()
	if s == nil {
		return next.ServeHTTP(w, r)
	}
	defer s.release()
	e := s.lookup(r.Host)
	if e == nil {
		return next.ServeHTTP(w, r)
	}
	if h.backends != nil {
		next = dispatch{h.backends, next}
	}
	return e.routes.Compile(next).ServeHTTP(w, r)
}

func checkID(id string) error {
	if id == "" {
		return errors.New("id is required")
	}
	for _, c := range id {
		if c < '!' || c > '~' {
			return fmt.Errorf("id %q: printable ASCII only, no spaces", id)
		}
	}
	return nil
}

// decodeHosts parses key → route list JSON (strictly, as Caddy parses configs); JSON null
// deletes the key when allowDelete, and is refused otherwise.
func decodeHosts(hosts map[string]json.RawMessage, allowDelete bool) (Change, error) {
	c := Change{Hosts: make(map[string]*caddyhttp.RouteList, len(hosts)), compact: make(map[string][]byte, len(hosts))}
	for k, raw := range hosts {
		if _, err := parsePattern(k); err != nil {
			return Change{}, err
		}
		if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
			if !allowDelete {
				return Change{}, fmt.Errorf("host %q: null route list", k)
			}
			c.Hosts[k] = nil
			continue
		}
		routes, compact, err := decodeRoutes(raw)
		if err != nil {
			return Change{}, fmt.Errorf("host %q: %w", k, err)
		}
		c.Hosts[k] = &routes
		c.compact[k] = compact
	}
	return c, nil
}

// decodeRoutes parses one host's route list, and returns its compact JSON too.
func decodeRoutes(raw []byte) (caddyhttp.RouteList, []byte, error) {
	var routes caddyhttp.RouteList
	if err := caddy.StrictUnmarshalJSON(raw, &routes); err != nil {
		return nil, nil, fmt.Errorf("decoding route list: %w", err)
	}
	if routes == nil {
		return nil, nil, errors.New("route list must be a JSON array")
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, raw); err != nil {
		return nil, nil, err
	}
	return routes, compact.Bytes(), nil
}

// The registry maps a table id to the tables provisioned under it, newest last: while a config
// load replaces a config, the old and the new handler both exist; deltas go to the newest,
// and if the new config fails to load, its Cleanup hands the id back to the old one.
var registry = struct {
	sync.Mutex
	m map[string][]registration
}{m: map[string][]registration{}}

type registration struct {
	t *table
	// owner is the config's context: two handlers of one config may not share an id.
	owner context.Context
}

func register(id string, owner context.Context, t *table) error {
	registry.Lock()
	defer registry.Unlock()
	for _, r := range registry.m[id] {
		if r.owner == owner {
			return fmt.Errorf("id %q: another kengine_route_table of this config has it", id)
		}
	}
	registry.m[id] = append(registry.m[id], registration{t, owner})
	return nil
}

func unregister(id string, t *table) {
	registry.Lock()
	defer registry.Unlock()
	regs := registry.m[id]
	for i, r := range regs {
		if r.t == t {
			regs = append(regs[:i:i], regs[i+1:]...)
			break
		}
	}
	if len(regs) == 0 {
		delete(registry.m, id)
	} else {
		registry.m[id] = regs
	}
}

// lookupTable is the newest table registered under id.
func lookupTable(id string) *table {
	registry.Lock()
	defer registry.Unlock()
	regs := registry.m[id]
	if len(regs) == 0 {
		return nil
	}
	return regs[len(regs)-1].t
}

// Interface guards
var (
	_ caddy.Provisioner           = (*Handler)(nil)
	_ caddy.CleanerUpper          = (*Handler)(nil)
	_ caddyhttp.MiddlewareHandler = (*Handler)(nil)
)
