package routetable

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	_ "github.com/caddyserver/caddy/v2/modules/standard"
)

// probe is a test handler that keeps a goroutine for its lifetime, as reverse_proxy does, so
// a leaked module shows in probeLive and in runtime.NumGoroutine. It answers with its tag;
// "fail" makes its provisioning fail; "block" makes each request wait on blockers[block].
type probe struct {
	Tag   string `json:"tag"`
	Fail  bool   `json:"fail,omitempty"`
	Block string `json:"block,omitempty"`

	stop chan struct{}
}

var (
	probeLive atomic.Int64
	blockers  sync.Map // name → chan struct{}
)

func init() { caddy.RegisterModule(probe{}) }

func (probe) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{ID: "http.handlers.kengine_rt_probe", New: func() caddy.Module { return new(probe) }}
}

func (p *probe) Provision(caddy.Context) error {
	if p.Fail {
		return errors.New("probe refuses to provision")
	}
	stop := make(chan struct{})
	p.stop = stop
	probeLive.Add(1)
	go func() { <-stop }()
	return nil
}

func (p *probe) Cleanup() error {
	if p.stop != nil {
		close(p.stop)
		p.stop = nil
		probeLive.Add(-1)
	}
	return nil
}

func (p *probe) ServeHTTP(w http.ResponseWriter, _ *http.Request, _ caddyhttp.Handler) error {
	if p.Block != "" {
		ch, _ := blockers.Load(p.Block)
		<-ch.(chan struct{})
	}
	w.Header().Set("X-Tag", p.Tag)
	_, err := io.WriteString(w, p.Tag)
	return err
}

// probeRoutes is a host's route list answering with tag.
func probeRoutes(tag string) string {
	return fmt.Sprintf(`[{"handle":[{"handler":"kengine_rt_probe","tag":%q}]}]`, tag)
}

func testContext(t testing.TB) caddy.Context {
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	t.Cleanup(cancel)
	return ctx
}

// newHandler provisions a handler with the given key → route list JSON.
func newHandler(t testing.TB, ctx caddy.Context, id string, hosts map[string]string) *Handler {
	t.Helper()
	h := &Handler{ID: id, Hosts: map[string]json.RawMessage{}}
	for k, v := range hosts {
		h.Hosts[k] = json.RawMessage(v)
	}
	if err := h.Provision(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Cleanup() })
	return h
}

var notFound = caddyhttp.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) error {
	w.WriteHeader(http.StatusNotFound)
	_, err := io.WriteString(w, "next")
	return err
})

// serve sends one request for host through the handler; the answer's body ("next": no entry).
func serve(t testing.TB, h *Handler, host string) string {
	return serveURL(t, h, "http://"+host+"/")
}

// serveURL is serve for a whole URL.
func serveURL(t testing.TB, h *Handler, url string) string {
	w := httptest.NewRecorder()
	r := httptest.NewRequest(http.MethodGet, url, nil)
	r = caddyhttp.PrepareRequest(r, caddy.NewReplacer(), w, &caddyhttp.Server{})
	if err := h.ServeHTTP(w, r, notFound); err != nil {
		t.Errorf("ServeHTTP(%s): %v", url, err)
	}
	return w.Body.String()
}

// admin sends one admin API request; the status and the body.
func admin(t testing.TB, method, path, body string, header ...string) (int, string) {
	t.Helper()
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Set(header[i], header[i+1])
	}
	w := httptest.NewRecorder()
	if err := serveAdmin(w, r); err != nil {
		var apiErr caddy.APIError
		if !errors.As(err, &apiErr) {
			t.Fatalf("%s %s: not an APIError: %v", method, path, err)
		}
		return apiErr.HTTPStatus, apiErr.Err.Error()
	}
	return w.Code, w.Body.String()
}

func tableInfo(t testing.TB, id string) Info {
	t.Helper()
	code, body := admin(t, http.MethodGet, AdminPrefix+id, "")
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", id, code, body)
	}
	var i Info
	if err := json.Unmarshal([]byte(body), &i); err != nil {
		t.Fatal(err)
	}
	return i
}

func TestDeltasChangeOneHostAndReleaseReplacedGenerations(t *testing.T) {
	base := probeLive.Load()
	h := newHandler(t, testContext(t), "deltas", map[string]string{
		"a.test": probeRoutes("a0"), "b.test": probeRoutes("b0"), "*.wild.test": probeRoutes("w0"),
	})
	if got := serve(t, h, "a.test"); got != "a0" {
		t.Fatalf("a.test answered %q", got)
	}
	if got := serve(t, h, "x.y.wild.test:8080"); got != "w0" {
		t.Fatalf("x.y.wild.test answered %q", got)
	}
	if code, body := admin(t, http.MethodPut, AdminPrefix+"deltas/hosts/c.test", probeRoutes("c1")); code != 200 {
		t.Fatalf("PUT c.test: %d %s", code, body)
	}
	if code, body := admin(t, http.MethodDelete, AdminPrefix+"deltas/hosts/a.test", ""); code != 200 {
		t.Fatalf("DELETE a.test: %d %s", code, body)
	}
	for host, want := range map[string]string{"a.test": "next", "b.test": "b0", "c.test": "c1", "q.wild.test": "w0"} {
		if got := serve(t, h, host); got != want {
			t.Errorf("%s answered %q, want %q", host, got, want)
		}
	}
	// The config's generation still serves b and the wildcard: its three probes live on.
	if n := probeLive.Load() - base; n != 4 {
		t.Errorf("%d probes live, want 4 (the config's 3 and c's)", n)
	}
	batch := fmt.Sprintf(`{"hosts":{"b.test":%s,"*.wild.test":null},"label":"rev-2"}`, probeRoutes("b2"))
	if code, body := admin(t, http.MethodPost, AdminPrefix+"deltas", batch); code != 200 {
		t.Fatalf("POST batch: %d %s", code, body)
	}
	if n := probeLive.Load() - base; n != 2 {
		t.Errorf("%d probes live after the config's last hosts were replaced, want 2 (b2, c1)", n)
	}
	i := tableInfo(t, "deltas")
	if i.Version != 4 || i.Hosts != 2 || i.Label != "rev-2" {
		t.Errorf("info %+v, want version 4, 2 hosts, label rev-2", i)
	}
	if got := serve(t, h, "q.wild.test"); got != "next" {
		t.Errorf("deleted wildcard still answers %q", got)
	}
	_ = h.Cleanup()
	if n := probeLive.Load() - base; n != 0 {
		t.Errorf("%d probes live after Cleanup", n)
	}
	if code, _ := admin(t, http.MethodGet, AdminPrefix+"deltas", ""); code != http.StatusNotFound {
		t.Errorf("GET of an unloaded table: %d, want 404", code)
	}
}

// The table hash is the documented formula over what was sent, whatever the order of changes.
func TestHashIsComputableFromWhatWasSent(t *testing.T) {
	newHandler(t, testContext(t), "hash", map[string]string{"a.test": probeRoutes("a")})
	admin(t, http.MethodPut, AdminPrefix+"hash/hosts/*", probeRoutes("any"))
	admin(t, http.MethodPut, AdminPrefix+"hash/hosts/b.test", "[\n "+probeRoutes("b")[1:]) // whitespace does not count
	admin(t, http.MethodDelete, AdminPrefix+"hash/hosts/a.test", "")
	admin(t, http.MethodPut, AdminPrefix+"hash/hosts/a.test", probeRoutes("a"))
	var acc [32]byte
	for k, v := range map[string]string{"a.test": probeRoutes("a"), "b.test": probeRoutes("b"), "*": probeRoutes("any")} {
		_, compact, err := decodeRoutes([]byte(v))
		if err != nil {
			t.Fatal(err)
		}
		xorInto(&acc, keyHash(k, sha256.Sum256(compact)))
	}
	if got, want := tableInfo(t, "hash").Hash, fmt.Sprintf("%x", acc); got != want {
		t.Errorf("hash %s, want %s", got, want)
	}
}

func TestRefusedDeltaLeavesTheTableAsItWas(t *testing.T) {
	base := probeLive.Load()
	h := newHandler(t, testContext(t), "refuse", map[string]string{"a.test": probeRoutes("a0")})
	before := tableInfo(t, "refuse")
	failing := `[{"handle":[{"handler":"kengine_rt_probe","tag":"x","fail":true}]}]`
	refused := []struct {
		method, path, body string
		code               int
	}{
		{"POST", "refuse", fmt.Sprintf(`{"hosts":{"a.test":%s,"b.test":%s}}`, probeRoutes("a1"), failing), 400},
		{"PUT", "refuse/hosts/a.test", `[{"handle":[{"handler":"no_such_handler"}]}]`, 400},
		{"PUT", "refuse/hosts/a.test", `[{"handle":[{"handler":"kengine_rt_probe","tag":"a1","unknown_field":1}]}]`, 400},
		{"PUT", "refuse/hosts/a.test", `{"not":"a list"}`, 400},
		{"PUT", "refuse/hosts/a.test", `[{"match":[{"path_regexp":{"pattern":"("}}],"handle":[]}]`, 400},
		{"PUT", "refuse/hosts/a.*.test", probeRoutes("a1"), 400},
		{"PUT", "refuse/hosts/a.test", "null", 400},
		{"POST", "refuse", `{"hosts":{"a.test":[]},"extra":true}`, 400},
		{"POST", "refuse", fmt.Sprintf(`{"hosts":{"A.test":%s,"a.test":%s}}`, probeRoutes("a1"), probeRoutes("a2")), 400},
		{"PUT", "refuse/hosts/a.test", "[" + strings.Repeat(" ", MaxHostBodyBytes) + "]", 413},
		{"PUT", "nosuchtable/hosts/a.test", probeRoutes("a1"), 404},
		{"PATCH", "refuse", "", 405},
	}
	for _, c := range refused {
		code, body := admin(t, c.method, AdminPrefix+c.path, c.body)
		if code != c.code {
			t.Errorf("%s %s: %d %s, want %d", c.method, c.path, code, body, c.code)
		}
	}
	code, _ := admin(t, http.MethodPut, AdminPrefix+"refuse/hosts/a.test", probeRoutes("a1"), "If-Match", `"0000"`)
	if code != http.StatusPreconditionFailed {
		t.Errorf("PUT with a stale If-Match: %d, want 412", code)
	}
	if after := tableInfo(t, "refuse"); after != before {
		t.Errorf("refused deltas changed the table: %+v → %+v", before, after)
	}
	if got := serve(t, h, "a.test"); got != "a0" {
		t.Errorf("a.test answers %q after refused deltas", got)
	}
	if got := serve(t, h, "b.test"); got != "next" {
		t.Errorf("b.test of a refused batch answers %q", got)
	}
	if n := probeLive.Load() - base; n != 1 {
		t.Errorf("%d probes live, want 1: a refused batch's modules must be cleaned up", n)
	}
	code, body := admin(t, http.MethodPut, AdminPrefix+"refuse/hosts/a.test", probeRoutes("a1"), "If-Match", `"`+before.Hash+`"`)
	if code != http.StatusOK || serve(t, h, "a.test") != "a1" {
		t.Errorf("PUT with the current If-Match: %d %s", code, body)
	}
}

// A request holds its snapshot: the modules it runs are cleaned up only after it is done.
func TestInFlightRequestKeepsItsGeneration(t *testing.T) {
	base := probeLive.Load()
	gate := make(chan struct{})
	blockers.Store("inflight", gate)
	h := newHandler(t, testContext(t), "inflight", map[string]string{
		"a.test": `[{"handle":[{"handler":"kengine_rt_probe","tag":"a0","block":"inflight"}]}]`,
	})
	done := make(chan string)
	go func() { done <- serve(t, h, "a.test") }()
	// Wait until the request holds the snapshot (2 references: current + the request).
	for h.t.cur.Load().refs.Load() != 2 {
		runtime.Gosched()
	}
	if code, body := admin(t, http.MethodPut, AdminPrefix+"inflight/hosts/a.test", probeRoutes("a1")); code != 200 {
		t.Fatalf("PUT: %d %s", code, body)
	}
	if got := serve(t, h, "a.test"); got != "a1" {
		t.Errorf("a new request answered %q, want a1", got)
	}
	if n := probeLive.Load() - base; n != 2 {
		t.Errorf("%d probes live while the old request runs, want 2", n)
	}
	close(gate)
	if got := <-done; got != "a0" {
		t.Errorf("the in-flight request answered %q, want a0", got)
	}
	if n := probeLive.Load() - base; n != 1 {
		t.Errorf("%d probes live after the old request finished, want 1", n)
	}
}

// Concurrent requests during swaps of the whole table: a reader's snapshot is always one batch
// (every host has the same tag), every request answers, and tags never go back.
func TestSwapIsAtomicUnderConcurrentRequests(t *testing.T) {
	const hosts, batches = 40, 100
	base := probeLive.Load()
	batch := func(k int) map[string]string {
		m := map[string]string{}
		for i := range hosts {
			m[fmt.Sprintf("h%d.test", i)] = probeRoutes(fmt.Sprint(k))
		}
		return m
	}
	h := newHandler(t, testContext(t), "atomic", batch(0))
	var stop atomic.Bool
	var wg sync.WaitGroup
	var problems atomic.Int64
	for reader := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			last := 0
			for i := 0; !stop.Load(); i++ {
				if reader%2 == 0 {
					s := h.t.acquire()
					tags := map[string]bool{}
					for _, e := range s.exact {
						tags[e.routes[0].Handlers[0].(*probe).Tag] = true
					}
					s.release()
					if len(tags) != 1 || len(s.exact) != hosts {
						problems.Add(1)
						t.Errorf("a snapshot with %d hosts and tags %v", len(s.exact), tags)
						return
					}
					continue
				}
				var k int
				got := serve(t, h, fmt.Sprintf("h%d.test", i%hosts))
				if _, err := fmt.Sscan(got, &k); err != nil || k < last {
					problems.Add(1)
					t.Errorf("answer %q after %d", got, last)
					return
				}
				last = k
			}
		}()
	}
	for k := 1; k <= batches && problems.Load() == 0; k++ {
		hostsJSON := map[string]json.RawMessage{}
		for key, v := range batch(k) {
			hostsJSON[key] = json.RawMessage(v)
		}
		b, _ := json.Marshal(Batch{Hosts: hostsJSON, Replace: true})
		if code, msg := admin(t, http.MethodPost, AdminPrefix+"atomic", string(b)); code != 200 {
			t.Fatalf("batch %d: %d %s", k, code, msg)
		}
	}
	stop.Store(true)
	wg.Wait()
	if n := probeLive.Load() - base; n != hosts {
		t.Errorf("%d probes live after %d batches, want %d (the last batch's)", n, batches, hosts)
	}
}

// heapAndGoroutines after a full GC.
func heapAndGoroutines() (uint64, int) {
	var m runtime.MemStats
	for range 3 {
		runtime.GC()
	}
	runtime.ReadMemStats(&m)
	return m.HeapAlloc, runtime.NumGoroutine()
}

// 10,000 single-host updates leave no module, goroutine or heap behind; Cleanup releases all.
func TestNoLeakOver10000Updates(t *testing.T) {
	const hosts, updates = 100, 10_000
	base := probeLive.Load()
	initial := map[string]string{}
	for i := range hosts {
		initial[fmt.Sprintf("h%d.test", i)] = probeRoutes("0")
	}
	h := newHandler(t, testContext(t), "leak", initial)
	heap0, g0 := heapAndGoroutines()
	for u := 1; u <= updates; u++ {
		host := fmt.Sprintf("h%d.test", u%hosts)
		routes := fmt.Sprintf(`[{"match":[{"path":["/*"]}],"handle":[{"handler":"headers","response":{"set":{"X-U":["%d"]}}},{"handler":"kengine_rt_probe","tag":"%d"}]}]`, u, u)
		if code, body := admin(t, http.MethodPut, AdminPrefix+"leak/hosts/"+host, routes); code != 200 {
			t.Fatalf("update %d: %d %s", u, code, body)
		}
	}
	heap1, g1 := heapAndGoroutines()
	t.Logf("after %d updates: heap %d → %d bytes, goroutines %d → %d", updates, heap0, heap1, g0, g1)
	if n := probeLive.Load() - base; n < hosts || n > 2*hosts+provisionedSlack {
		t.Errorf("%d probes live, want %d to %d", n, hosts, 2*hosts+provisionedSlack)
	}
	if n := len(h.t.cur.Load().live); n > maxGenerations {
		t.Errorf("%d generations live, want at most %d", n, maxGenerations)
	}
	for i := range hosts {
		if got, want := serve(t, h, fmt.Sprintf("h%d.test", i)), fmt.Sprint(updates-(updates-i)%hosts); got != want {
			t.Fatalf("h%d.test answers %q after the updates (merged generations), want %q", i, got, want)
		}
	}
	if g1 > g0+hosts+provisionedSlack {
		t.Errorf("goroutines %d → %d", g0, g1)
	}
	if heap1 > heap0+8<<20 {
		t.Errorf("heap grew by %d bytes over %d updates", heap1-heap0, updates)
	}
	_ = h.Cleanup()
	_, g2 := heapAndGoroutines()
	if n := probeLive.Load() - base; n != 0 || g2 > g0-hosts+2 {
		t.Errorf("after Cleanup: %d probes live, goroutines %d (before the updates %d, with %d probes)", n, g2, g0, hosts)
	}
}

// Deltas go to the newest handler of an id; when it is cleaned up (e.g. its config failed to
// load), the older one gets them again. One config may not use an id twice.
func TestRegistryFollowsConfigLoads(t *testing.T) {
	oldCfg, newCfg := testContext(t), testContext(t)
	older := newHandler(t, oldCfg, "reg", map[string]string{"a.test": probeRoutes("old")})
	newer := newHandler(t, newCfg, "reg", map[string]string{"a.test": probeRoutes("new")})
	admin(t, http.MethodPut, AdminPrefix+"reg/hosts/b.test", probeRoutes("b"))
	if serve(t, newer, "b.test") != "b" || serve(t, older, "b.test") != "next" {
		t.Error("the delta did not go to the newest handler only")
	}
	dup := &Handler{ID: "reg", Hosts: map[string]json.RawMessage{}}
	if err := dup.Provision(newCfg); err == nil {
		t.Error("a second handler with the same id in one config was accepted")
	}
	_ = dup.Cleanup()
	_ = newer.Cleanup()
	admin(t, http.MethodPut, AdminPrefix+"reg/hosts/c.test", probeRoutes("c"))
	if serve(t, older, "c.test") != "c" {
		t.Error("after the newer handler's cleanup, deltas do not reach the older one")
	}
	if serve(t, newer, "a.test") != "next" {
		t.Error("a cleaned-up handler still serves its table")
	}
}
