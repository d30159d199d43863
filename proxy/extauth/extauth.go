// Package extauth is the Caddy HTTP handler `kengine_ext_auth`: Gateway API external
// authorization over HTTP (HTTPExternalAuthFilter, protocol HTTP) for the Kengine/Caddy proxy,
// used as a listener's pre-routing filter (Listener.filters.requests, GatewayListenerFilters).
//
// Stock Caddy's forward_auth (reverse_proxy + handle_response) cannot do what the filter
// requires: it forwards every client header and the method rewritten to GET, and copies only
// response headers it names (the filter copies every one when allowedResponseHeaders is
// empty). This handler asks the authorization server and, on 200, lets the request continue
// down the route with the granted headers; any other answer goes back to the client as is.
//
// Config (JSON, as the controller emits it):
//
//	{"handler": "kengine_ext_auth",
//	 "dial": ["10.244.0.7:9000"],
//	 "path_prefix": "/auth",
//	 "allowed_request_headers": ["X-Tenant"],
//	 "allowed_response_headers": ["X-User"],
//	 "max_body_bytes": 0, "body_timeout": "10s", "timeout": "10s", "status_on_error": 403,
//	 "egress_guard": {"deny": ["10.96.0.0/12"]}}
//
// One path for everyone: before anything else, the request's path becomes the path routing
// matches on (Caddy's path matchers clean the percent-decoded path: %2e%2e is "..", %2F is "/",
// then "//", "/./" and "/../" are resolved, a trailing slash kept), written in its canonical
// escaping. So `/public/../admin`, `/public/%2e%2e/admin` and `/public%2F..%2Fadmin` are asked
// as `/admin`, routed as `/admin` and sent to the backend as `/admin`; an encoded slash inside
// a segment reaches the backend decoded, as routing saw it.
//
// The authorization request has the client request's method, the path prefix followed by that
// path and the query, its Host, and only these headers: Authorization and the allowed
// request headers (HTTPAuthConfig.allowedHeaders), plus a Content-Length that counts the
// body bytes sent: the first max_body_bytes of the client's body (ForwardBody.maxSize,
// truncated beyond it), none when it is 0. The client's body stays whole for the backend.
// max_body_bytes is at most 16 MiB (Validate), which bounds the memory one request holds; the
// client must send those bytes (or its whole body, if shorter) within body_timeout (default
// 10s), or it gets 408 Request Timeout and its connection is closed. Across every handler of
// the process, the bodies held stay under ProcessMaxBodyBytes (256 MiB): a request that finds
// no room is answered 503 with Retry-After, before its body is read.
//
// A 200 answer grants. With allowed_response_headers, the client's own copies of those headers
// are removed from the request first, then the answer's values of them are copied: a client
// cannot send `X-User: admin` past an authorization server that sets no X-User. With an empty
// list, every header of the answer is granted (replacing the request's of that name), except
// Host and :authority, which a pre-routing filter must not change, hop-by-hop headers, and the
// headers that describe the answer's own body: Content-Length, Content-Type, Content-Encoding,
// Date, Server; the set of granted names is then not known in advance, so no client header is
// removed beforehand (only those the answer sets are replaced). Then the next handler (the
// listener's route matching) runs. Any other status is a refusal: that status, the answer's
// headers and body go to the client. An authorization server that cannot be reached or does not
// answer within the timeout (default 10s), that has no endpoints, or whose destination the
// egress guard refuses (package internal/egress; logged), is a refusal with
// status_on_error (default 403, as Envoy's ext_authz).
//
// With `"mode": "ingress-nginx"` the handler asks as ingress-nginx's auth-url does instead
// (nginx.go): an Ingress's authorization server written for ingress-nginx keeps working.
package extauth

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"

	"kengine.io/gateway/proxy/internal/egress"
	"kengine.io/gateway/proxy/internal/outbound"
)

func init() {
	caddy.RegisterModule(ExtAuth{})
}

// MaxBodyBytesCeiling is the most of a client's body max_body_bytes may forward (16 MiB, the
// class limit's maximum in KengineParameters spec.limits.externalAuthMaxBodyBytes).
const MaxBodyBytesCeiling = 16 << 20

// ProcessMaxBodyBytes bounds the client bodies every kengine_ext_auth handler of the process
// holds at once (each request's, up to max_body_bytes, until the request ends).
const ProcessMaxBodyBytes = 256 << 20

var processBodyBytes = outbound.NewBudget(ProcessMaxBodyBytes)

// ExtAuth is the handler.
type ExtAuth struct {
	// Endpoints (host:port) of the authorization server; one is picked per request.
	Dial                   []string `json:"dial"`
	PathPrefix             string   `json:"path_prefix,omitempty"`
	AllowedRequestHeaders  []string `json:"allowed_request_headers,omitempty"`
	AllowedResponseHeaders []string `json:"allowed_response_headers,omitempty"`
	MaxBodyBytes           int64    `json:"max_body_bytes,omitempty"`
	// How long the client may take to send the first max_body_bytes of its body (default 10s).
	BodyTimeout   caddy.Duration `json:"body_timeout,omitempty"`
	Timeout       caddy.Duration `json:"timeout,omitempty"`
	StatusOnError int            `json:"status_on_error,omitempty"`
	// EgressGuard, when present, checks the authorization server's address at dial time.
	EgressGuard *egress.Config `json:"egress_guard,omitempty"`
	// Mode "ingress-nginx" (nginx.go) asks as ingress-nginx's auth-url does, at Path with Host;
	// empty: Gateway API's HTTPExternalAuthFilter, as above.
	Mode string `json:"mode,omitempty"`
	Path string `json:"path,omitempty"`
	Host string `json:"host,omitempty"`

	client *http.Client
	logger *zap.Logger
}

// CaddyModule returns the module's information.
func (ExtAuth) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.handlers.kengine_ext_auth",
		New: func() caddy.Module { return new(ExtAuth) },
	}
}

// Provision sets defaults and the HTTP client.
func (a *ExtAuth) Provision(ctx caddy.Context) error {
	a.logger = ctx.Logger()
	if a.Timeout == 0 {
		a.Timeout = caddy.Duration(10 * time.Second)
	}
	if a.StatusOnError == 0 {
		a.StatusOnError = http.StatusForbidden
		if a.Mode == ModeIngressNginx {
			a.StatusOnError = http.StatusInternalServerError
		}
	}
	if a.BodyTimeout == 0 {
		a.BodyTimeout = caddy.Duration(10 * time.Second)
	}
	var guard *egress.Guard
	if a.EgressGuard != nil {
		var err error
		if guard, err = egress.New(*a.EgressGuard, a.logger); err != nil {
			return err
		}
	}
	a.client = outbound.Client(time.Duration(a.Timeout), 64, guard)
	return nil
}

// Validate refuses negative limits, a max_body_bytes above the ceiling, a status_on_error that
// is no error and a relative prefix. No endpoints is valid (the authorization Service has no
// ready pod): every request is refused with status_on_error.
func (a *ExtAuth) Validate() error {
	if a.MaxBodyBytes < 0 || a.Timeout < 0 || a.BodyTimeout < 0 {
		return fmt.Errorf("max_body_bytes, timeout and body_timeout must not be negative")
	}
	if a.MaxBodyBytes > MaxBodyBytesCeiling {
		return fmt.Errorf("max_body_bytes %d is above the ceiling of %d (16 MiB)", a.MaxBodyBytes, MaxBodyBytesCeiling)
	}
	if a.StatusOnError < 0 || a.StatusOnError > 599 || (a.StatusOnError != 0 && a.StatusOnError < 400) {
		return fmt.Errorf("status_on_error %d is not an error status", a.StatusOnError)
	}
	if a.PathPrefix != "" && !strings.HasPrefix(a.PathPrefix, "/") {
		return fmt.Errorf("path_prefix %q does not start with /", a.PathPrefix)
	}
	switch a.Mode {
	case "":
		if a.Path != "" || a.Host != "" {
			return fmt.Errorf("path and host belong to mode %q", ModeIngressNginx)
		}
	case ModeIngressNginx:
		if !strings.HasPrefix(a.Path, "/") {
			return fmt.Errorf("path %q does not start with /", a.Path)
		}
		if a.PathPrefix != "" || a.MaxBodyBytes != 0 || len(a.AllowedRequestHeaders) > 0 {
			return fmt.Errorf("mode %q sends the client's headers and no body to path: path_prefix, max_body_bytes and allowed_request_headers do not apply", ModeIngressNginx)
		}
		if strings.ContainsAny(a.Host, " /\r\n") {
			return fmt.Errorf("host %q is not a host", a.Host)
		}
	default:
		return fmt.Errorf("unknown mode %q", a.Mode)
	}
	return nil
}

// Cleanup closes idle connections to the authorization server.
func (a *ExtAuth) Cleanup() error {
	if a.client != nil {
		a.client.CloseIdleConnections()
	}
	return nil
}

// ServeHTTP asks the authorization server; on 200 the request continues with the granted
// headers, otherwise the server's answer (or status_on_error) is the response.
func (a *ExtAuth) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	cleanRequestPath(r)
	if len(a.Dial) == 0 {
		w.WriteHeader(a.StatusOnError)
		return nil
	}
	if a.Mode == ModeIngressNginx {
		return a.serveNginx(w, r, next)
	}
	var body []byte
	if a.MaxBodyBytes > 0 && r.Body != nil && r.Body != http.NoBody {
		// Bodies read for authorization are held until the request ends (the backend gets
		// them back), under one budget for the whole proxy: past it the request waits for
		// nothing and is answered 503.
		held := a.MaxBodyBytes
		if !processBodyBytes.Reserve(held) {
			a.logger.Debug("bodies held for authorization fill the proxy's budget", zap.Int64("process_max_body_bytes", ProcessMaxBodyBytes))
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusServiceUnavailable)
			return nil
		}
		defer func() { processBodyBytes.Release(held) }()
		// The backend gets back exactly what was read followed by the rest.
		read, rest, err := outbound.ReadPrefix(r.Body, a.MaxBodyBytes, time.Duration(a.BodyTimeout))
		r.Body = rest
		processBodyBytes.Release(held - int64(len(read)))
		held = int64(len(read))
		if errors.Is(err, outbound.ErrBodyTimeout) {
			// The request ends here: a past read deadline ends the read still under way, and
			// the connection is not reused.
			_ = http.NewResponseController(w).SetReadDeadline(time.Now())
			if r.ProtoMajor == 1 {
				w.Header().Set("Connection", "close")
			}
			a.logger.Debug("request body not received within body_timeout", zap.Duration("body_timeout", time.Duration(a.BodyTimeout)))
			w.WriteHeader(http.StatusRequestTimeout)
			return nil
		}
		if err != nil {
			return caddyhttp.Error(http.StatusBadRequest, err)
		}
		body = read
	}
	req, err := a.authRequest(r, body)
	res, done := a.ask(w, req, err)
	if res == nil {
		return nil
	}
	defer done()
	if res.StatusCode != http.StatusOK {
		outbound.RemoveHopByHop(res.Header)
		res.Header.Del("Content-Length")
		for name, values := range res.Header {
			w.Header()[name] = values
		}
		w.WriteHeader(res.StatusCode)
		_, _ = io.Copy(w, res.Body)
		return nil
	}
	a.grant(r.Header, res.Header)
	return next.ServeHTTP(w, r)
}

// cleanRequestPath makes the request's path the one routing matches on (Caddy's path and
// path_regexp matchers: the decoded path cleaned, slashes merged, a trailing slash kept),
// in canonical escaping, so that the authorization server, routing and the backend see one
// path.
func cleanRequestPath(r *http.Request) {
	p := r.URL.Path
	if !strings.HasPrefix(p, "/") {
		return
	}
	cleaned := caddyhttp.CleanPath(p, true)
	if cleaned == p && r.URL.RawPath == "" {
		return
	}
	r.URL.Path = cleaned
	r.URL.RawPath = ""
	if strings.HasPrefix(r.RequestURI, "/") {
		r.RequestURI = r.URL.RequestURI()
	}
}

// ask sends the authorization request (or takes the error of making it): nil when the server
// cannot be asked, the refusal with status_on_error written; otherwise its answer and what
// ends it (the rest of its body drained, up to 64 KiB, so the connection can be reused).
func (a *ExtAuth) ask(w http.ResponseWriter, req *http.Request, err error) (*http.Response, func()) {
	var res *http.Response
	if err == nil {
		res, err = a.client.Do(req)
	}
	if err != nil {
		a.logger.Debug("authorization server unreachable", zap.Error(err))
		w.WriteHeader(a.StatusOnError)
		return nil, nil
	}
	return res, func() {
		_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10))
		_ = res.Body.Close()
	}
}

func (a *ExtAuth) authRequest(r *http.Request, body []byte) (*http.Request, error) {
	dial := a.Dial[rand.IntN(len(a.Dial))]
	target := strings.TrimSuffix(a.PathPrefix, "/") + r.URL.RequestURI()
	// The request's URI is already escaped: parsing keeps its escaping (RawPath).
	out, err := http.NewRequestWithContext(context.WithoutCancel(r.Context()), r.Method, "http://"+dial+target, nil)
	if err != nil {
		return nil, err
	}
	out.Host = r.Host
	out.Header = http.Header{}
	copyHeader(out.Header, r.Header, "Authorization")
	for _, name := range a.AllowedRequestHeaders {
		if isAuthority(name) {
			continue
		}
		copyHeader(out.Header, r.Header, name)
	}
	out.ContentLength = int64(len(body))
	out.Body = http.NoBody
	if len(body) > 0 {
		out.Body = io.NopCloser(bytes.NewReader(body))
	}
	return out, nil
}

func copyHeader(dst, src http.Header, name string) {
	if values := src.Values(name); len(values) > 0 {
		dst[http.CanonicalHeaderKey(name)] = append([]string(nil), values...)
	}
}

// grant copies the granted response headers into the request's (see the package doc).
func (a *ExtAuth) grant(request, response http.Header) {
	if len(a.AllowedResponseHeaders) > 0 {
		for _, name := range a.AllowedResponseHeaders {
			if isAuthority(name) {
				continue
			}
			// Only the authorization server may set these: the client's own copies go.
			request.Del(name)
			copyHeader(request, response, name)
		}
		return
	}
	outbound.RemoveHopByHop(response)
	for name, values := range response {
		if isAuthority(name) || ownBody[http.CanonicalHeaderKey(name)] {
			continue
		}
		request[http.CanonicalHeaderKey(name)] = append([]string(nil), values...)
	}
}

func isAuthority(name string) bool {
	return strings.EqualFold(name, "Host") || strings.EqualFold(name, ":authority")
}

// ownBody are the headers of the authorization answer that describe that answer itself, not
// a grant: copied onto the client's request they would misdescribe its body.
var ownBody = map[string]bool{"Content-Length": true, "Content-Type": true,
	"Content-Encoding": true, "Date": true, "Server": true}

var (
	_ caddy.Provisioner           = (*ExtAuth)(nil)
	_ caddy.Validator             = (*ExtAuth)(nil)
	_ caddy.CleanerUpper          = (*ExtAuth)(nil)
	_ caddyhttp.MiddlewareHandler = (*ExtAuth)(nil)
)
