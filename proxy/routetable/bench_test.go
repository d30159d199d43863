package routetable

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
)

// benchRoutes is one host's route list in the shape the controller renders (precedence-ordered
// rules that set the backend var, then the listener's terminal 404), with a path match.
func benchRoutes(i int) string {
	return fmt.Sprintf(`[{"group":"l0","match":[{"path":["/api/v%d*"]}],"handle":[{"handler":"vars","kengine_backend":"b%d"}]},`+
		`{"group":"l0","handle":[{"handler":"vars","kengine_backend":"b%d"}]},`+
		`{"group":"l0","terminal":true,"handle":[{"handler":"static_response","status_code":404}]}]`, i%7, i%100, i%100)
}

const defaultRoutes = `[{"terminal":true,"handle":[{"handler":"static_response","status_code":404}]}]`

func benchHandler(b *testing.B, id string, n int) *Handler {
	hosts := map[string]string{AnyHost: defaultRoutes, "*.wild.bench.local": benchRoutes(0)}
	for i := range n {
		hosts[fmt.Sprintf("r%d.bench.local", i)] = benchRoutes(i)
	}
	return newHandler(b, testContext(b), id, hosts)
}

type discard struct{ h http.Header }

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) Write(p []byte) (int, error) { return len(p), nil }
func (d *discard) WriteHeader(int)             {}

func benchServe(b *testing.B, h caddyhttp.MiddlewareHandler, host string) {
	w := &discard{h: http.Header{}}
	r := httptest.NewRequest(http.MethodGet, "http://"+host+"/api/v3/items", nil)
	r = caddyhttp.PrepareRequest(r, caddy.NewReplacer(), w, &caddyhttp.Server{})
	groups := r.Context().Value(caddy.CtxKey("route_group"))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		// The route groups a request satisfied are per request.
		if g, ok := groups.(map[string]struct{}); ok {
			clear(g)
		}
		if err := h.ServeHTTP(w, r, notFound); err != nil {
			b.Fatal(err)
		}
	}
}

// A request for a host no route names, among 3,000 routes (the default entry answers 404).
func BenchmarkUnknownHost3000(b *testing.B) {
	benchServe(b, benchHandler(b, "bench-unknown", 3000), "nobody.example.org")
}

func BenchmarkKnownHost3000(b *testing.B) {
	benchServe(b, benchHandler(b, "bench-known", 3000), "r1234.bench.local")
}

func BenchmarkWildcardHost3000(b *testing.B) {
	benchServe(b, benchHandler(b, "bench-wild", 3000), "a.b.wild.bench.local")
}

// For comparison, stock Caddy's shape: one subroute per host behind a host matcher, walked in
// a line, the unknown host reaching the terminal 404 at the end.
func BenchmarkUnknownHost3000LinearForComparison(b *testing.B) {
	var sb strings.Builder
	sb.WriteString("[")
	for i := range 3000 {
		fmt.Fprintf(&sb, `{"group":"listeners","match":[{"host":["r%d.bench.local"]}],"handle":[{"handler":"subroute","routes":%s}]},`, i, benchRoutes(i))
	}
	sb.WriteString(`{"terminal":true,"handle":[{"handler":"static_response","status_code":404}]}]`)
	sr := &caddyhttp.Subroute{}
	if err := json.Unmarshal([]byte(sb.String()), &sr.Routes); err != nil {
		b.Fatal(err)
	}
	if err := sr.Provision(testContext(b)); err != nil {
		b.Fatal(err)
	}
	benchServe(b, sr, "nobody.example.org")
}

func benchAdmin(b *testing.B, method, path, body string) {
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	w := httptest.NewRecorder()
	if err := serveAdmin(w, r); err != nil {
		b.Fatal(err)
	}
}

// One host's delta in a 3,000-host table through the admin handler: decode, provision, swap.
func BenchmarkPutOneHostIn3000(b *testing.B) {
	benchHandler(b, "bench-put", 3000)
	body := benchRoutes(42)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		benchAdmin(b, http.MethodPut, fmt.Sprintf("%sbench-put/hosts/r%d.bench.local", AdminPrefix, i%3000), body)
		i++
	}
}

// The swap alone (an empty route list to provision): copy-on-write of a 3,000-host table,
// with the generation merges it triggers.
func BenchmarkSwapOneHostIn3000(b *testing.B) {
	h := benchHandler(b, "bench-swap", 3000)
	routes := caddyhttp.RouteList{}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		key := fmt.Sprintf("r%d.bench.local", i%3000)
		c := Change{Hosts: map[string]*caddyhttp.RouteList{key: &routes}, compact: map[string][]byte{key: []byte("[]")}}
		if _, err := h.t.apply(c); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// A batch replacing all 3,000 hosts (decode + provision of 9,000 routes + one swap).
func BenchmarkBatchReplace3000(b *testing.B) {
	benchHandler(b, "bench-batch", 3000)
	hosts := map[string]json.RawMessage{}
	for i := range 3000 {
		hosts[fmt.Sprintf("r%d.bench.local", i)] = json.RawMessage(benchRoutes(i + 1))
	}
	body, _ := json.Marshal(Batch{Hosts: hosts, Replace: true})
	b.ReportAllocs()
	for b.Loop() {
		benchAdmin(b, http.MethodPost, AdminPrefix+"bench-batch", string(body))
	}
}
