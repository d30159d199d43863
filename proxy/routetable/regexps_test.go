package routetable

import (
	"net/http/httptest"
	"reflect"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
)

// compiled is the address of a provisioned matcher's compiled regular expression.
func compiled(re *caddyhttp.MatchRegexp) uintptr {
	return reflect.ValueOf(re).Elem().FieldByName("compiled").Pointer()
}

// Matchers with the same config share one compiled regular expression after sharedRegexps,
// across routes, matcher kinds and subroutes; a different name or pattern keeps its own; and
// they match (and set their placeholders) as before.
func TestSharedRegexpsShareByConfig(t *testing.T) {
	const raw = `[
	 {"match":[{"path_regexp":{"pattern":"^/a(/.*)?$"}}]},
	 {"match":[{"path_regexp":{"pattern":"^/a(/.*)?$"},"header_regexp":{"X-A":{"pattern":"^/a(/.*)?$"}}}]},
	 {"match":[{"path_regexp":{"name":"p","pattern":"^/a(/.*)?$"}}]},
	 {"match":[{"path_regexp":{"pattern":"^/b$"}}]},
	 {"handle":[{"handler":"subroute","routes":[{"match":[{"vars_regexp":{"v":{"pattern":"^/a(/.*)?$"}}}]}]}]}
	]`
	var routes caddyhttp.RouteList
	if err := caddy.StrictUnmarshalJSON([]byte(raw), &routes); err != nil {
		t.Fatal(err)
	}
	if err := routes.Provision(testContext(t)); err != nil {
		t.Fatal(err)
	}
	sharedRegexps{}.routes(routes)

	path := func(i int) *caddyhttp.MatchRegexp {
		for _, m := range routes[i].MatcherSets[0] {
			if p, ok := m.(*caddyhttp.MatchPathRE); ok {
				return &p.MatchRegexp
			}
		}
		t.Fatalf("route %d has no path_regexp", i)
		return nil
	}
	var header *caddyhttp.MatchRegexp
	for _, m := range routes[1].MatcherSets[0] {
		if h, ok := m.(*caddyhttp.MatchHeaderRE); ok {
			header = (*h)["X-A"]
		}
	}
	vars := (*routes[4].Handlers[0].(*caddyhttp.Subroute).Routes[0].MatcherSets[0][0].(*caddyhttp.MatchVarsRE))["v"]

	first := compiled(path(0))
	if first == 0 {
		t.Fatal("not compiled")
	}
	for name, re := range map[string]*caddyhttp.MatchRegexp{"same pattern": path(1), "header_regexp": header, "subroute's vars_regexp": vars} {
		if compiled(re) != first {
			t.Errorf("%s: own compiled regexp, want the shared one", name)
		}
	}
	if compiled(path(2)) == first || compiled(path(3)) == first {
		t.Error("another name or pattern shares the regexp")
	}
	if path(2).Name != "p" || path(3).Pattern != "^/b$" {
		t.Error("config changed")
	}

	for _, c := range []struct {
		path string
		want bool
	}{{"/a", true}, {"/a/x", true}, {"/ab", false}} {
		r := httptest.NewRequest("GET", c.path, nil)
		repl := caddy.NewReplacer()
		for i := range 3 {
			if got := path(i).Match(r.URL.Path, repl); got != c.want {
				t.Errorf("route %d %s: %v, want %v", i, c.path, got, c.want)
			}
		}
		if c.path == "/a/x" {
			if v, _ := repl.GetString("http.regexp.p.1"); v != "/x" {
				t.Errorf("named capture: %q, want /x", v)
			}
		}
	}
}
