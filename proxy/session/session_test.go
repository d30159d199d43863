package session

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp/reverseproxy"
)

func pool(n int) reverseproxy.UpstreamPool {
	p := make(reverseproxy.UpstreamPool, n)
	for i := range p {
		p[i] = &reverseproxy.Upstream{Host: new(reverseproxy.Host), Dial: "10.0.0." + string(rune('1'+i)) + ":80"}
	}
	return p
}

func provisioned(t *testing.T, cfg string) *Session {
	t.Helper()
	s := new(Session)
	if err := json.Unmarshal([]byte(cfg), s); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	t.Cleanup(cancel)
	if err := s.Provision(ctx); err != nil {
		t.Fatal(err)
	}
	return s
}

// do runs one selection; with cookie set, the request carries that cookie.
func do(s *Session, p reverseproxy.UpstreamPool, cookie *http.Cookie, header string) (*reverseproxy.Upstream, *httptest.ResponseRecorder) {
	req := httptest.NewRequest("GET", "http://x/app/a", nil)
	if cookie != nil {
		req.AddCookie(cookie)
	}
	if header != "" {
		req.Header.Set("X-Session", header)
	}
	w := httptest.NewRecorder()
	return s.Select(p, req, w), w
}

func setCookie(t *testing.T, w *httptest.ResponseRecorder) *http.Cookie {
	t.Helper()
	cs := w.Result().Cookies()
	if len(cs) != 1 {
		t.Fatalf("want one Set-Cookie, got %v", w.Header().Values("Set-Cookie"))
	}
	return cs[0]
}

func TestCookieSticksToTheFirstChoice(t *testing.T) {
	s := provisioned(t, `{"mode":"cookie","name":"sticky","path":"/app","secret":"k"}`)
	p := pool(5)
	first, w := do(s, p, nil, "")
	c := setCookie(t, w)
	if c.Name != "sticky" || c.Path != "/app" || !c.HttpOnly || c.MaxAge != 0 {
		t.Fatalf("cookie %+v", c)
	}
	if strings.Contains(c.Value, "10.0.0.") {
		t.Fatalf("token shows the address: %q", c.Value)
	}
	for i := 0; i < 100; i++ {
		up, w := do(s, p, &http.Cookie{Name: "sticky", Value: c.Value}, "")
		if up != first {
			t.Fatalf("request %d went to %s, session is on %s", i, up.Dial, first.Dial)
		}
		if len(w.Header().Values("Set-Cookie")) != 0 {
			t.Fatalf("a resumed session got a new cookie")
		}
	}
}

func TestNewSessionsFollowTheFallback(t *testing.T) {
	s := provisioned(t, `{"mode":"cookie","name":"s","fallback":{"policy":"first"}}`)
	p := pool(3)
	for i := 0; i < 10; i++ {
		if up, _ := do(s, p, nil, ""); up != p[0] {
			t.Fatalf("fallback first: got %s", up.Dial)
		}
	}
}

func TestForgedOrForeignTokensStartANewSession(t *testing.T) {
	s := provisioned(t, `{"mode":"cookie","name":"s","secret":"k","fallback":{"policy":"first"}}`)
	other := provisioned(t, `{"mode":"cookie","name":"s","secret":"other"}`)
	p := pool(3)
	foreign := other.token(p[2].Dial, time.Now().Unix())
	for _, v := range []string{"garbage", "1.abc", foreign, s.token("10.9.9.9:80", 1)} {
		up, w := do(s, p, &http.Cookie{Name: "s", Value: v}, "")
		if up != p[0] || len(w.Header().Values("Set-Cookie")) != 1 {
			t.Fatalf("token %q: upstream %s, cookies %v", v, up.Dial, w.Header().Values("Set-Cookie"))
		}
	}
}

func TestPermanentCookieHasMaxAge(t *testing.T) {
	s := provisioned(t, `{"mode":"cookie","name":"s","max_age":"5m"}`)
	_, w := do(s, pool(2), nil, "")
	if c := setCookie(t, w); c.MaxAge != 300 || c.Path != "/" {
		t.Fatalf("cookie %+v", c)
	}
}

func TestSameSite(t *testing.T) {
	for _, tc := range []struct {
		cfg    string
		tls    bool
		want   http.SameSite
		secure bool
	}{
		{`{"mode":"cookie","name":"s"}`, false, http.SameSiteLaxMode, false},
		{`{"mode":"cookie","name":"s"}`, true, http.SameSiteLaxMode, true},
		{`{"mode":"cookie","name":"s","same_site":"Lax"}`, false, http.SameSiteLaxMode, false},
		{`{"mode":"cookie","name":"s","same_site":"Strict"}`, false, http.SameSiteStrictMode, false},
		{`{"mode":"cookie","name":"s","same_site":"Strict"}`, true, http.SameSiteStrictMode, true},
		// Browsers drop SameSite=None without Secure: it is Secure on plain HTTP too.
		{`{"mode":"cookie","name":"s","same_site":"None"}`, false, http.SameSiteNoneMode, true},
	} {
		s := provisioned(t, tc.cfg)
		req := httptest.NewRequest("GET", "http://x/", nil)
		if tc.tls {
			req = httptest.NewRequest("GET", "https://x/", nil)
		}
		w := httptest.NewRecorder()
		s.Select(pool(2), req, w)
		c := setCookie(t, w)
		if c.SameSite != tc.want || c.Secure != tc.secure {
			t.Errorf("%s (tls %v): %q", tc.cfg, tc.tls, w.Header().Get("Set-Cookie"))
		}
	}
}

func TestTimeoutEndsTheSession(t *testing.T) {
	s := provisioned(t, `{"mode":"cookie","name":"s","timeout":"1h","fallback":{"policy":"round_robin"}}`)
	now := time.Unix(1_800_000_000, 0)
	s.now = func() time.Time { return now }
	p := pool(4)
	first, w := do(s, p, nil, "")
	c := setCookie(t, w)
	now = now.Add(59 * time.Minute)
	if up, _ := do(s, p, c, ""); up != first {
		t.Fatalf("within the timeout: %s, want %s", up.Dial, first.Dial)
	}
	now = now.Add(2 * time.Minute)
	_, w = do(s, p, c, "")
	if len(w.Header().Values("Set-Cookie")) != 1 {
		t.Fatal("an expired session did not start a new one")
	}
}

func TestHeaderModeAnswersAndReadsTheHeader(t *testing.T) {
	s := provisioned(t, `{"mode":"header","name":"X-Session","secret":"k"}`)
	p := pool(5)
	first, w := do(s, p, nil, "")
	tok := w.Header().Get("X-Session")
	if tok == "" || len(w.Header().Values("Set-Cookie")) != 0 {
		t.Fatalf("header mode: token %q, cookies %v", tok, w.Header().Values("Set-Cookie"))
	}
	for i := 0; i < 100; i++ {
		up, w := do(s, p, nil, tok)
		if up != first || w.Header().Get("X-Session") != tok {
			t.Fatalf("request %d: %s (want %s), header %q", i, up.Dial, first.Dial, w.Header().Get("X-Session"))
		}
	}
}

func TestProvisionRefusesBadConfig(t *testing.T) {
	for _, cfg := range []string{
		`{"mode":"query","name":"s"}`,
		`{"mode":"cookie"}`,
		`{"mode":"header","name":"X","path":"/a"}`,
		`{"mode":"cookie","name":"s","max_age":"-1s"}`,
		`{"mode":"cookie","name":"s","same_site":"lax"}`,
		`{"mode":"cookie","name":"s","same_site":"Default"}`,
		`{"mode":"header","name":"X","same_site":"Strict"}`,
	} {
		s := new(Session)
		if err := json.Unmarshal([]byte(cfg), s); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
		if err := s.Provision(ctx); err == nil {
			t.Errorf("%s: provisioned", cfg)
		}
		cancel()
	}
}
