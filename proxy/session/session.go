// Package session is the reverse_proxy selection policy `kengine_session`: Gateway API session
// persistence (GEP-1619, a route rule's or an XBackend's `sessionPersistence`) by cookie or by
// header. Stock Caddy's `cookie` policy covers a cookie on path "/" whose only lifetime is
// Max-Age; it has no header persistence (its `header` policy hashes a header the client
// chose and never tells the client anything), no cookie path and no absolute timeout for a
// session cookie. This policy does all of them.
//
// Config (JSON, as the controller emits it):
//
//	{"policy": "kengine_session", "mode": "cookie", "name": "sticky", "path": "/app",
//	 "max_age": "5m", "timeout": "1h", "same_site": "Strict", "secret": "…",
//	 "fallback": {"policy": "weighted_round_robin", "weights": [7, 3]}}
//
// A request without a valid token gets an upstream from the fallback policy (default
// `random`), and the response carries a new token naming it: a `Set-Cookie` (mode "cookie":
// HttpOnly, SameSite `same_site` (default Lax), Secure on TLS connections and always with
// SameSite=None, which browsers drop otherwise, Path `path` or "/", Max-Age `max_age` when
// set) or the response header `name` (mode "header"). A request whose token (the cookie
// or the request header `name`) names an available upstream goes to it; in header mode the
// response repeats the token. A token is `<issued, unix seconds>.<hex HMAC-SHA256(secret,
// dial + "|" + issued)>`: it names the upstream without showing its address, and with
// `timeout` set a token older than that is ignored (a new session starts), which is how a
// session cookie gets an absolute lifetime without Expires or Max-Age.
package session

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp/reverseproxy"
)

func init() {
	caddy.RegisterModule(Session{})
}

// Session is the selection policy.
type Session struct {
	// "cookie" or "header".
	Mode string `json:"mode"`
	// The cookie's or header's name.
	Name string `json:"name"`
	// The cookie's Path attribute (cookie mode; default "/").
	Path string `json:"path,omitempty"`
	// The cookie's Max-Age (cookie mode; none: a session cookie).
	MaxAge caddy.Duration `json:"max_age,omitempty"`
	// The cookie's SameSite attribute: "Lax" (default), "Strict" or "None" (cookie mode).
	SameSite string `json:"same_site,omitempty"`
	// Tokens older than this are ignored (none: no limit).
	Timeout caddy.Duration `json:"timeout,omitempty"`
	// Key of the tokens' HMAC.
	Secret string `json:"secret,omitempty"` //nolint:gosec // config, as Caddy's cookie policy
	// The policy that picks an upstream for a new session (default random).
	FallbackRaw json.RawMessage `json:"fallback,omitempty" caddy:"namespace=http.reverse_proxy.selection_policies inline_key=policy"`

	fallback reverseproxy.Selector
	now      func() time.Time
}

// CaddyModule returns the Caddy module information.
func (Session) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.reverse_proxy.selection_policies.kengine_session",
		New: func() caddy.Module { return new(Session) },
	}
}

// Provision checks the config and loads the fallback policy.
func (s *Session) Provision(ctx caddy.Context) error {
	if s.Mode != "cookie" && s.Mode != "header" {
		return fmt.Errorf("mode must be \"cookie\" or \"header\", got %q", s.Mode)
	}
	if s.Name == "" {
		return fmt.Errorf("name is required")
	}
	if s.Mode == "header" && (s.Path != "" || s.MaxAge != 0 || s.SameSite != "") {
		return fmt.Errorf("path, max_age and same_site are cookie settings (mode is header)")
	}
	if _, ok := sameSiteModes[s.SameSite]; !ok {
		return fmt.Errorf("same_site must be \"Lax\", \"Strict\" or \"None\", got %q", s.SameSite)
	}
	if s.MaxAge < 0 || s.Timeout < 0 {
		return fmt.Errorf("max_age and timeout must not be negative")
	}
	if s.FallbackRaw == nil {
		s.FallbackRaw = caddyconfig.JSONModuleObject(reverseproxy.RandomSelection{}, "policy", "random", nil)
	}
	mod, err := ctx.LoadModule(s, "FallbackRaw")
	if err != nil {
		return fmt.Errorf("loading fallback selection policy: %v", err)
	}
	s.fallback = mod.(reverseproxy.Selector)
	return nil
}

func (s *Session) clock() time.Time {
	if s.now != nil {
		return s.now()
	}
	return time.Now()
}

// token names upstream dial, issued at unix second `issued`.
func (s *Session) token(dial string, issued int64) string {
	return strconv.FormatInt(issued, 10) + "." + s.mac(dial, issued)
}

func (s *Session) mac(dial string, issued int64) string {
	h := hmac.New(sha256.New, []byte(s.Secret))
	h.Write([]byte(dial + "|" + strconv.FormatInt(issued, 10)))
	return hex.EncodeToString(h.Sum(nil))
}

// presented is the token the request carries, or "".
func (s *Session) presented(req *http.Request) string {
	if s.Mode == "header" {
		return req.Header.Get(s.Name)
	}
	c, err := req.Cookie(s.Name)
	if err != nil {
		return ""
	}
	return c.Value
}

// sameSiteModes are the same_site values; none is Lax.
var sameSiteModes = map[string]http.SameSite{
	"":       http.SameSiteLaxMode,
	"Lax":    http.SameSiteLaxMode,
	"Strict": http.SameSiteStrictMode,
	"None":   http.SameSiteNoneMode,
}

// Select returns the session's upstream, or starts a session on the fallback's choice.
func (s *Session) Select(pool reverseproxy.UpstreamPool, req *http.Request, w http.ResponseWriter) *reverseproxy.Upstream {
	if up, tok := s.resume(pool, req); up != nil {
		if s.Mode == "header" && w != nil {
			w.Header().Set(s.Name, tok)
		}
		return up
	}
	up := s.fallback.Select(pool, req, w)
	if up == nil || w == nil {
		return up
	}
	tok := s.token(up.Dial, s.clock().Unix())
	if s.Mode == "header" {
		w.Header().Set(s.Name, tok)
		return up
	}
	c := &http.Cookie{
		Name:     s.Name,
		Value:    tok,
		Path:     s.Path,
		HttpOnly: true,
		SameSite: sameSiteModes[s.SameSite],
		// Browsers drop a SameSite=None cookie without Secure.
		Secure: req.TLS != nil || s.SameSite == "None",
	}
	if c.Path == "" {
		c.Path = "/"
	}
	if s.MaxAge > 0 {
		c.MaxAge = int(time.Duration(s.MaxAge).Seconds())
	}
	http.SetCookie(w, c)
	return up
}

// resume finds the available upstream the request's token names, if it is still valid.
func (s *Session) resume(pool reverseproxy.UpstreamPool, req *http.Request) (*reverseproxy.Upstream, string) {
	tok := s.presented(req)
	at, sum, ok := strings.Cut(tok, ".")
	if !ok {
		return nil, ""
	}
	issued, err := strconv.ParseInt(at, 10, 64)
	if err != nil {
		return nil, ""
	}
	if s.Timeout > 0 && s.clock().Sub(time.Unix(issued, 0)) > time.Duration(s.Timeout) {
		return nil, ""
	}
	for _, up := range pool {
		if up.Available() && hmac.Equal([]byte(s.mac(up.Dial, issued)), []byte(sum)) {
			return up, tok
		}
	}
	return nil, ""
}

var (
	_ caddy.Provisioner     = (*Session)(nil)
	_ reverseproxy.Selector = (*Session)(nil)
)
