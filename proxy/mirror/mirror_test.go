package mirror

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"kengine.io/gateway/proxy/internal/caddytest"
	"kengine.io/gateway/proxy/internal/egress"
)

type seen struct {
	method, path, host, header, body string
}

func mirrorServer(t *testing.T) (string, chan seen) {
	t.Helper()
	got := make(chan seen, 1024)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- seen{r.Method, r.URL.RequestURI(), r.Host, r.Header.Get("X-Test"), string(b)}
		w.WriteHeader(http.StatusTeapot) // ignored by the mirror
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://"), got
}

func provisioned(t *testing.T, m *Mirror) *Mirror { return caddytest.Provisioned(t, m) }

func serve(t *testing.T, m *Mirror, body string) (int, string) {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "http://app.example.com/path?q=1", strings.NewReader(body))
	req.Header.Set("X-Test", "yes")
	rec := httptest.NewRecorder()
	var nextBody string
	next := caddyhttp.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
		b, _ := io.ReadAll(r.Body)
		nextBody = string(b)
		w.WriteHeader(http.StatusOK)
		return nil
	})
	if err := m.ServeHTTP(rec, req, next); err != nil {
		t.Fatal(err)
	}
	return rec.Code, nextBody
}

func TestMirrorsEveryRequestAndLeavesTheOriginalAlone(t *testing.T) {
	addr1, got1 := mirrorServer(t)
	addr2, got2 := mirrorServer(t)
	m := provisioned(t, &Mirror{Targets: []Target{{Dial: []string{addr1}}, {Dial: []string{addr2}}}})
	code, body := serve(t, m, "payload")
	if code != http.StatusOK || body != "payload" {
		t.Fatalf("original request: got %d %q, want 200 \"payload\"", code, body)
	}
	for i, ch := range []chan seen{got1, got2} {
		select {
		case s := <-ch:
			want := seen{"POST", "/path?q=1", "app.example.com", "yes", "payload"}
			if s != want {
				t.Fatalf("mirror %d saw %+v, want %+v", i, s, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("mirror %d got nothing", i)
		}
	}
	// The body held for the two copies is given back once both are sent.
	deadline := time.Now().Add(10 * time.Second)
	for processBodyBytes.Used() != 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := processBodyBytes.Used(); n != 0 {
		t.Fatalf("mirrored bodies still hold %d bytes of the process budget", n)
	}
}

func TestFractionZeroNeverMirrorsAndLargeBodiesAreNotMirrored(t *testing.T) {
	addr, got := mirrorServer(t)
	m := provisioned(t, &Mirror{Targets: []Target{{Dial: []string{addr}, Numerator: 0, Denominator: 1}}})
	for range 20 {
		serve(t, m, "x")
	}
	big := provisioned(t, &Mirror{Targets: []Target{{Dial: []string{addr}}}, MaxBodyBytes: 4})
	code, body := serve(t, big, "too large")
	if code != http.StatusOK || body != "too large" {
		t.Fatalf("original request: got %d %q", code, body)
	}
	select {
	case s := <-got:
		t.Fatalf("nothing should be mirrored, saw %+v", s)
	case <-time.After(500 * time.Millisecond):
	}
}

func TestValidateRefusesBadShares(t *testing.T) {
	for _, m := range []*Mirror{
		{Targets: []Target{{}}},
		{Targets: []Target{{Dial: []string{"a:1"}, Numerator: 3, Denominator: 2}}},
	} {
		if m.Validate() == nil {
			t.Fatalf("%+v: expected an error", m.Targets)
		}
	}
}

func TestHopByHopHeadersStayOnTheClientsConnection(t *testing.T) {
	got := make(chan http.Header, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Clone()
	}))
	t.Cleanup(srv.Close)
	m := provisioned(t, &Mirror{Targets: []Target{{Dial: []string{strings.TrimPrefix(srv.URL, "http://")}}}})
	req := httptest.NewRequest(http.MethodGet, "http://app.example.com/", nil)
	req.Header.Set("Connection", "X-Per-Hop")
	req.Header.Set("X-Per-Hop", "1")
	req.Header.Set("Proxy-Authorization", "secret")
	req.Header.Set("X-End-To-End", "kept")
	next := caddyhttp.HandlerFunc(func(http.ResponseWriter, *http.Request) error { return nil })
	if err := m.ServeHTTP(httptest.NewRecorder(), req, next); err != nil {
		t.Fatal(err)
	}
	select {
	case h := <-got:
		if h.Get("X-Per-Hop") != "" || h.Get("Proxy-Authorization") != "" || h.Get("X-End-To-End") != "kept" {
			t.Fatalf("mirror saw headers %v", h)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("mirror got nothing")
	}
	if req.Header.Get("X-Per-Hop") != "1" {
		t.Fatal("the original request's headers were changed")
	}
}

func TestFractionMirrorsAboutThatShare(t *testing.T) {
	addr, got := mirrorServer(t)
	const n = 400
	m := provisioned(t, &Mirror{Targets: []Target{{Dial: []string{addr}, Numerator: 1, Denominator: 2}}})
	m.MaxInFlight = n
	for range n {
		serve(t, m, "")
	}
	// Binomial(400, 1/2): standard deviation 10; accept ±6 of them.
	count := 0
	deadline := time.After(20 * time.Second)
	for {
		select {
		case <-got:
			count++
			continue
		case <-time.After(time.Second):
		case <-deadline:
		}
		break
	}
	if count < 140 || count > 260 {
		t.Fatalf("mirrored %d of %d requests at 1/2", count, n)
	}
}

// bodyProbe is a request body that records whether it was read before the next handler ran.
type bodyProbe struct {
	io.Reader
	readBeforeNext *bool
	nextRan        *bool
}

func (b bodyProbe) Read(p []byte) (int, error) {
	if !*b.nextRan {
		*b.readBeforeNext = true
	}
	return b.Reader.Read(p)
}

func (bodyProbe) Close() error { return nil }

// With every slot taken, the request is not mirrored and its body is not read by the mirror.
func TestInFlightLimitIsCheckedBeforeTheBodyIsRead(t *testing.T) {
	addr, got := mirrorServer(t)
	m := provisioned(t, &Mirror{Targets: []Target{{Dial: []string{addr}}}, MaxInFlight: 2})
	m.inFlight.Store(2)
	var readBeforeNext, nextRan bool
	req := httptest.NewRequest(http.MethodPost, "http://app.example.com/", nil)
	req.Body = bodyProbe{strings.NewReader("payload"), &readBeforeNext, &nextRan}
	var nextBody string
	next := caddyhttp.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
		nextRan = true
		b, _ := io.ReadAll(r.Body)
		nextBody = string(b)
		return nil
	})
	if err := m.ServeHTTP(httptest.NewRecorder(), req, next); err != nil {
		t.Fatal(err)
	}
	if readBeforeNext || nextBody != "payload" || m.inFlight.Load() != 2 {
		t.Fatalf("read before next %v, next got %q, in flight %d", readBeforeNext, nextBody, m.inFlight.Load())
	}
	// A free slot again: the same request is mirrored.
	m.inFlight.Store(1)
	if code, body := serve(t, m, "payload"); code != http.StatusOK || body != "payload" {
		t.Fatalf("original: %d %q", code, body)
	}
	if s := <-got; s.body != "payload" {
		t.Fatalf("mirror saw %+v", s)
	}
}

// A body the client does not send within body_timeout is not mirrored; its slot is given back
// at once and the original request still gets the whole body.
func TestSlowBodyIsNotMirroredAndReachesTheBackendWhole(t *testing.T) {
	addr, _ := mirrorServer(t)
	m := provisioned(t, &Mirror{Targets: []Target{{Dial: []string{addr}}, {Dial: []string{addr}}}, BodyTimeout: caddy.Duration(time.Millisecond)})
	pr, pw := io.Pipe()
	req := httptest.NewRequest(http.MethodPost, "http://app.example.com/", pr)
	var nextBody string
	var inFlightAtNext int64
	next := caddyhttp.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
		inFlightAtNext = m.inFlight.Load()
		go func() {
			_, _ = io.WriteString(pw, "late ")
			_, _ = io.WriteString(pw, "body")
			_ = pw.Close()
		}()
		b, _ := io.ReadAll(r.Body)
		nextBody = string(b)
		return nil
	})
	if err := m.ServeHTTP(httptest.NewRecorder(), req, next); err != nil {
		t.Fatal(err)
	}
	if inFlightAtNext != 0 || nextBody != "late body" {
		t.Fatalf("in flight %d when the route went on, next got %q", inFlightAtNext, nextBody)
	}
}

// With egress_guard, a copy to a loopback mirror is refused: the mirror sees no connection.
func TestEgressGuardDropsCopiesToRefusedDestinations(t *testing.T) {
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	addr := strings.TrimPrefix(srv.URL, "http://")
	_, port, _ := net.SplitHostPort(addr)
	guarded := provisioned(t, &Mirror{
		Targets:     []Target{{Dial: []string{addr}}, {Dial: []string{"localhost:" + port}}, {Dial: []string{"[::ffff:127.0.0.1]:" + port}}},
		EgressGuard: &egress.Config{},
	})
	if code, body := serve(t, guarded, "payload"); code != http.StatusOK || body != "payload" {
		t.Fatalf("original: %d %q", code, body)
	}
	// The copies end (refused at dial) and give their slots back.
	for guarded.inFlight.Load() != 0 {
		time.Sleep(time.Millisecond)
	}
	if n := conns.Load(); n != 0 {
		t.Fatalf("the loopback mirror accepted %d connections", n)
	}
	// The control: without the guard the same mirror is reached.
	open := provisioned(t, &Mirror{Targets: []Target{{Dial: []string{addr}}}})
	serve(t, open, "payload")
	for open.inFlight.Load() != 0 {
		time.Sleep(time.Millisecond)
	}
	if conns.Load() == 0 {
		t.Fatal("the unguarded copy made no connection")
	}
}

func TestValidateRefusesNegativeBodyTimeout(t *testing.T) {
	if (&Mirror{BodyTimeout: -1}).Validate() == nil {
		t.Fatal("negative body_timeout accepted")
	}
}

// The process-wide body budget: reservations beyond ProcessMaxBodyBytes are refused whatever
// handler asks, and released bytes are free again.
func TestProcessBodyBudget(t *testing.T) {
	if !processBodyBytes.Reserve(ProcessMaxBodyBytes - 10) {
		t.Fatal("an empty budget refused a reservation within it")
	}
	if processBodyBytes.Reserve(11) {
		t.Fatal("a reservation past the budget was granted")
	}
	if !processBodyBytes.Reserve(10) {
		t.Fatal("the budget's last bytes were refused")
	}
	processBodyBytes.Release(ProcessMaxBodyBytes)
	if processBodyBytes.Used() != 0 {
		t.Fatalf("budget holds %d after release", processBodyBytes.Used())
	}
}
