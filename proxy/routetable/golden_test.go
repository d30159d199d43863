package routetable

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	_ "kengine.io/gateway/proxy/deadline"
	_ "kengine.io/gateway/proxy/extauth"
	"kengine.io/gateway/proxy/internal/caddytest"
	_ "kengine.io/gateway/proxy/mirror"
	_ "kengine.io/gateway/proxy/santls"
	_ "kengine.io/gateway/proxy/session"
)

// The controller's goldens (tests/golden/*.caddy.json) put a server's listeners in routes of
// group "listeners", each matching its hostname (host: exact; header_regexp on Host: wildcard;
// none: any) and holding the listener's rules in a subroute. wildcardHostPattern is the
// regular expression the controller renders for "*.<suffix>".
var wildcardHostPattern = regexp.MustCompile(`^\(\?i\)\^\[\^\.:\]\+\(\?:\\\.\[\^\.:\]\+\)\*\\\.(.+)\(\?::\[0-9\]\+\)\?\$$`)

type goldenRoute struct {
	Group  string            `json:"group"`
	Match  []json.RawMessage `json:"match"`
	Handle []struct {
		Handler string          `json:"handler"`
		Routes  json.RawMessage `json:"routes"`
	} `json:"handle"`
}

// tableOf turns a golden server's listener routes into table keys; ok is false when a route
// has a shape this test does not know.
func tableOf(routes []json.RawMessage) (map[string]string, []json.RawMessage, bool) {
	table := map[string]string{}
	var listeners []json.RawMessage
	for _, raw := range routes {
		var r goldenRoute
		if err := json.Unmarshal(raw, &r); err != nil {
			return nil, nil, false
		}
		if r.Group != "listeners" {
			continue
		}
		if len(r.Handle) != 1 || r.Handle[0].Handler != "subroute" || len(r.Match) > 1 {
			return nil, nil, false
		}
		listeners = append(listeners, raw)
		inner := string(r.Handle[0].Routes)
		var keys []string
		if len(r.Match) == 0 {
			keys = []string{AnyHost}
		} else {
			var m struct {
				Host        []string `json:"host"`
				HeaderRegex map[string]struct {
					Pattern string `json:"pattern"`
				} `json:"header_regexp"`
			}
			if err := json.Unmarshal(r.Match[0], &m); err != nil {
				return nil, nil, false
			}
			keys = m.Host
			if hr, ok := m.HeaderRegex["Host"]; ok && len(m.Host) == 0 {
				sub := wildcardHostPattern.FindStringSubmatch(hr.Pattern)
				if sub == nil {
					return nil, nil, false
				}
				keys = []string{"*." + strings.ReplaceAll(sub[1], `\.`, ".")}
			}
			if len(keys) == 0 {
				return nil, nil, false
			}
		}
		for _, k := range keys {
			if _, dup := table[k]; !dup { // the first listener of a host wins, as in the group
				table[k] = inner
			}
		}
	}
	return table, listeners, len(listeners) > 0
}

// linearOf turns a golden server's route table (the Bundled shape) back into the listener
// routes the other flavours render (the shape tableOf reads): one route of group "listeners"
// per key, most specific first (exact hosts, then wildcards by suffix length, then "*", as the
// translator orders listeners), matching its host as the controller does and holding the
// key's list in a subroute. ok is false when the server has no table.
func linearOf(routes []json.RawMessage) ([]json.RawMessage, bool) {
	for _, raw := range routes {
		var r struct {
			Handle []struct {
				Handler string                     `json:"handler"`
				Hosts   map[string]json.RawMessage `json:"hosts"`
			} `json:"handle"`
		}
		if err := json.Unmarshal(raw, &r); err != nil || len(r.Handle) != 1 || r.Handle[0].Handler != "kengine_route_table" {
			continue
		}
		keys := make([]string, 0, len(r.Handle[0].Hosts))
		for k := range r.Handle[0].Hosts {
			keys = append(keys, k)
		}
		rank := func(k string) int {
			switch {
			case k == AnyHost:
				return 0
			case strings.HasPrefix(k, "*."):
				return len(k)
			default:
				return 1 << 20
			}
		}
		sort.Slice(keys, func(i, j int) bool {
			if rank(keys[i]) != rank(keys[j]) {
				return rank(keys[i]) > rank(keys[j])
			}
			return keys[i] < keys[j]
		})
		var out []json.RawMessage
		for _, k := range keys {
			var match string
			switch {
			case k == AnyHost:
			case strings.HasPrefix(k, "*."):
				pattern := `(?i)^[^.:]+(?:\.[^.:]+)*` + strings.ReplaceAll(k[1:], ".", `\.`) + `(?::[0-9]+)?$`
				match = fmt.Sprintf(`,"match":[{"header_regexp":{"Host":{"pattern":%q}}}]`, pattern)
			default:
				match = fmt.Sprintf(`,"match":[{"host":[%q]}]`, k)
			}
			out = append(out, json.RawMessage(fmt.Sprintf(`{"group":"listeners","handle":[{"handler":"subroute","routes":%s}]%s}`, r.Handle[0].Hosts[k], match)))
		}
		return out, true
	}
	return nil, false
}

// outcome runs one request through h: the status, body and the backend the rules chose.
func outcome(t *testing.T, h caddyhttp.MiddlewareHandler, host, path string) string {
	w := httptest.NewRecorder()
	r := httptest.NewRequest(http.MethodGet, "http://"+host+path, nil)
	r = caddyhttp.PrepareRequest(r, caddy.NewReplacer(), w, &caddyhttp.Server{})
	var backend any = "-"
	next := caddyhttp.HandlerFunc(func(http.ResponseWriter, *http.Request) error {
		backend = caddyhttp.GetVar(r.Context(), "kengine_backend")
		return nil
	})
	err := h.ServeHTTP(w, r, next)
	return fmt.Sprintf("%d %q backend=%v err=%v", w.Code, w.Body.String(), backend, err)
}

// Differential test on the goldens: for each HTTP server, the listener routes as the
// controller renders them today (walked in a line) and the same rules in a route table answer
// every probe request alike.
func TestGoldenServersAnswerAlikeFromTheTable(t *testing.T) {
	files, _ := filepath.Glob("../../tests/golden/*.caddy.json")
	if len(files) == 0 {
		t.Fatal("no goldens found")
	}
	// Routes with reverse_proxy need a loaded config (they look up the tls app).
	if err := caddy.Load([]byte(fmt.Sprintf(`{"admin":{"listen":%q}}`, caddytest.AdminSocket(t).Listen)), true); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = caddy.Stop() }()
	compared := 0
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var gateways map[string]struct {
			Apps struct {
				HTTP struct {
					Servers map[string]struct {
						Routes []json.RawMessage `json:"routes"`
					} `json:"servers"`
				} `json:"http"`
			} `json:"apps"`
		}
		if err := json.Unmarshal(data, &gateways); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		for gw, cfg := range gateways {
			for name, srv := range cfg.Apps.HTTP.Servers {
				routes := srv.Routes
				if linear, ok := linearOf(routes); ok {
					routes = linear
				}
				table, listeners, ok := tableOf(routes)
				if !ok {
					continue
				}
				where := fmt.Sprintf("%s %s %s", filepath.Base(file), gw, name)
				ctx, cancel := caddy.NewContext(caddy.ActiveContext())
				defer cancel()
				linear := &caddyhttp.Subroute{}
				if err := json.Unmarshal([]byte("["+joinRaw(listeners)+"]"), &linear.Routes); err != nil {
					t.Fatalf("%s: %v", where, err)
				}
				if err := linear.Provision(ctx); err != nil {
					t.Errorf("%s: %v", where, err)
					continue
				}
				h := &Handler{ID: strings.ReplaceAll("golden "+where, " ", "|"), Hosts: map[string]json.RawMessage{}}
				for k, v := range table {
					h.Hosts[k] = json.RawMessage(v)
				}
				if err := h.Provision(ctx); err != nil {
					t.Fatalf("%s: %v", where, err)
				}
				var hosts []string
				for k := range table {
					switch {
					case k == AnyHost:
					case strings.HasPrefix(k, "*."):
						hosts = append(hosts, "x"+k[1:], "A.b"+strings.ToUpper(k[1:])+":8080", k[2:])
					default:
						hosts = append(hosts, k, strings.ToUpper(k)+":80", "x."+k)
					}
				}
				hosts = append(hosts, "unknown.invalid", "10.1.2.3")
				sort.Strings(hosts)
				for _, host := range hosts {
					for _, path := range []string{"/", "/all", "/all/x", "/api/v1", "/foo", "/bar"} {
						want, got := outcome(t, linear, host, path), outcome(t, h, host, path)
						if got != want {
							t.Errorf("%s: %s%s: table %s, linear %s", where, host, path, got, want)
						}
					}
				}
				_ = h.Cleanup()
				compared++
			}
		}
	}
	t.Logf("%d golden servers compared", compared)
	if compared < 10 {
		t.Errorf("only %d golden servers compared", compared)
	}
}

func joinRaw(raws []json.RawMessage) string {
	parts := make([]string, len(raws))
	for i, r := range raws {
		parts[i] = string(r)
	}
	return strings.Join(parts, ",")
}
