package extauth

// The ingress-nginx mode (`"mode": "ingress-nginx"`): the `nginx.ingress.kubernetes.io/auth-url`
// annotation of an Ingress, done as ingress-nginx's auth_request does it, so that the
// authorization servers written for it (oauth2-proxy's /oauth2/auth, for one) keep working:
//
//   - the authorization request is a GET, without a body, to `path` exactly (the annotation's
//     URL path and query), with `host` as its Host;
//   - it carries the client's headers (hop-by-hop ones and the body's own left out) and
//     X-Original-URL, X-Original-Method, X-Auth-Request-Redirect, X-Forwarded-Host,
//     X-Forwarded-Proto, and X-Real-IP and X-Forwarded-For set to the client's address (the
//     client's own copies of these are replaced);
//   - a 2xx answer grants: only the allowed_response_headers (the annotation
//     auth-response-headers) are copied into the request, the client's own copies of them
//     removed first; without the list nothing is copied;
//   - 401 and 403 go back to the client with that status (and, for 401, the answer's
//     WWW-Authenticate); any other answer, or none, is a 500.

import (
	"context"
	"math/rand/v2"
	"net"
	"net/http"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"kengine.io/gateway/proxy/internal/outbound"
)

// ModeIngressNginx selects the ingress-nginx auth_request behaviour.
const ModeIngressNginx = "ingress-nginx"

// bodyHeaders describe the client's body, which the authorization request does not carry.
var bodyHeaders = []string{"Content-Length", "Content-Type", "Content-Encoding", "Transfer-Encoding", "Expect"}

// forwardedHeaders are set by the proxy: the client's own copies are never sent.
var forwardedHeaders = []string{"X-Original-Url", "X-Original-Method", "X-Auth-Request-Redirect",
	"X-Forwarded-Host", "X-Forwarded-Proto", "X-Real-Ip", "X-Forwarded-For"}

func (a *ExtAuth) nginxRequest(r *http.Request) (*http.Request, error) {
	dial := a.Dial[rand.IntN(len(a.Dial))]
	out, err := http.NewRequestWithContext(context.WithoutCancel(r.Context()), http.MethodGet, "http://"+dial+a.Path, nil)
	if err != nil {
		return nil, err
	}
	out.Host = a.Host
	out.Header = r.Header.Clone()
	outbound.RemoveHopByHop(out.Header)
	for _, name := range append(bodyHeaders, forwardedHeaders...) {
		out.Header.Del(name)
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	out.Header.Set("X-Original-URL", scheme+"://"+r.Host+r.URL.RequestURI())
	out.Header.Set("X-Original-Method", r.Method)
	out.Header.Set("X-Auth-Request-Redirect", r.URL.RequestURI())
	out.Header.Set("X-Forwarded-Host", r.Host)
	out.Header.Set("X-Forwarded-Proto", scheme)
	if ip, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		out.Header.Set("X-Real-IP", ip)
		out.Header.Set("X-Forwarded-For", ip)
	}
	out.ContentLength = 0
	out.Body = http.NoBody
	return out, nil
}

func (a *ExtAuth) serveNginx(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	req, err := a.nginxRequest(r)
	res, done := a.ask(w, req, err)
	if res == nil {
		return nil
	}
	defer done()
	if !nginxAnswer(w, res) {
		return nil
	}
	a.nginxGrant(r.Header, res.Header)
	return next.ServeHTTP(w, r)
}

// nginxAnswer is what the client gets for a refusing answer (ok: the answer grants).
func nginxAnswer(w http.ResponseWriter, res *http.Response) (ok bool) {
	switch {
	case res.StatusCode >= 200 && res.StatusCode < 300:
		return true
	case res.StatusCode == http.StatusUnauthorized:
		if v := res.Header.Values("WWW-Authenticate"); len(v) > 0 {
			w.Header()["Www-Authenticate"] = append([]string(nil), v...)
		}
		w.WriteHeader(http.StatusUnauthorized)
	case res.StatusCode == http.StatusForbidden:
		w.WriteHeader(http.StatusForbidden)
	default:
		w.WriteHeader(http.StatusInternalServerError)
	}
	return false
}

// nginxGrant copies only the allowed answer headers (none without a list).
func (a *ExtAuth) nginxGrant(request, response http.Header) {
	for _, name := range a.AllowedResponseHeaders {
		if isAuthority(name) {
			continue
		}
		request.Del(name)
		copyHeader(request, response, name)
	}
}
