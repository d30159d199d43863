package mirror

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"kengine.io/gateway/proxy/internal/caddytest"
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
