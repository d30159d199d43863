// Package mirror is the Caddy HTTP handler `kengine_mirror`: Gateway API RequestMirror for
// the Kengine/Caddy proxy. Stock Caddy has no request mirroring (docs/features.md); this handler
// sends a copy of each request (or a fraction of them) to other backends and ignores their
// answers, then lets the request continue down the route unchanged.
//
// Config (JSON, as the controller emits it):
//
//	{"handler": "kengine_mirror",
//	 "targets": [{"dial": ["10.244.0.7:3000"], "numerator": 1, "denominator": 2}],
//	 "max_body_bytes": 1048576, "body_timeout": "10s", "max_in_flight": 256, "timeout": "10s",
//	 "egress_guard": {"deny": ["10.96.0.0/12"]}}
//
// A target without numerator/denominator gets every request; otherwise each request is
// mirrored to it with probability numerator/denominator, independently per target. The copy
// has the request's method, path and query, Host and headers as they are when the handler
// runs (after the route's request header filters and rewrites), minus hop-by-hop headers,
// and its body. The original request is never affected: mirrors' answers and errors are
// dropped.
//
// Bounds: each copy under way (from before its body is read until its answer is drained, at
// most `timeout`, default 10s) takes one of max_in_flight slots (default 256), and the slots
// are taken BEFORE the body is read: a request that finds none free is not mirrored and its
// body is not read here. The body is then read up to max_body_bytes (default 1 MiB) within
// body_timeout (default 10s); a larger body, or one the client does not send in time, is not
// mirrored (the request goes on with its whole body). So the bodies held for copies never
// exceed max_in_flight × max_body_bytes per handler, and a client trickling its body holds a
// slot for at most body_timeout. Across every handler of the process, the bodies held for
// copies (reserved at max_body_bytes while read, then at their real size until the last copy
// of the request is sent) stay under ProcessMaxBodyBytes (64 MiB): however many routes
// mirror, a request that finds no room is served unmirrored and its body is not read here.
//
// With egress_guard (package internal/egress), each copy's destination is
// resolved and checked at dial time; a refused one is logged and the copy dropped.
package mirror

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"

	"kengine.io/gateway/proxy/internal/egress"
	"kengine.io/gateway/proxy/internal/outbound"
)

func init() {
	caddy.RegisterModule(Mirror{})
}

// Target is one mirror backend: its endpoints (host:port) and the share of requests it gets.
type Target struct {
	Dial        []string `json:"dial"`
	Numerator   int      `json:"numerator,omitempty"`
	Denominator int      `json:"denominator,omitempty"`
}

// Mirror is the handler.
type Mirror struct {
	Targets      []Target `json:"targets,omitempty"`
	MaxBodyBytes int64    `json:"max_body_bytes,omitempty"`
	// Timeout of one mirrored request (default 10s).
	Timeout caddy.Duration `json:"timeout,omitempty"`
	// At most this many mirrored requests under way at once (default 256); more are dropped.
	MaxInFlight int64 `json:"max_in_flight,omitempty"`
	// How long the client may take to send the body to mirror (default 10s).
	BodyTimeout caddy.Duration `json:"body_timeout,omitempty"`
	// EgressGuard, when present, checks each copy's destination at dial time.
	EgressGuard *egress.Config `json:"egress_guard,omitempty"`

	client   *http.Client
	logger   *zap.Logger
	inFlight *atomic.Int64
}

// CaddyModule returns the module's information.
func (Mirror) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.handlers.kengine_mirror",
		New: func() caddy.Module { return new(Mirror) },
	}
}

// Provision sets defaults and the HTTP client.
func (m *Mirror) Provision(ctx caddy.Context) error {
	m.logger = ctx.Logger()
	m.inFlight = new(atomic.Int64)
	if m.MaxBodyBytes == 0 {
		m.MaxBodyBytes = 1 << 20
	}
	if m.MaxInFlight == 0 {
		m.MaxInFlight = 256
	}
	if m.Timeout == 0 {
		m.Timeout = caddy.Duration(10 * time.Second)
	}
	if m.BodyTimeout == 0 {
		m.BodyTimeout = caddy.Duration(10 * time.Second)
	}
	var guard *egress.Guard
	if m.EgressGuard != nil {
		var err error
		if guard, err = egress.New(*m.EgressGuard, m.logger); err != nil {
			return err
		}
	}
	m.client = outbound.Client(time.Duration(m.Timeout), 16, guard)
	return nil
}

// Validate refuses targets without endpoints and shares outside [0, 1].
func (m *Mirror) Validate() error {
	if m.MaxBodyBytes < 0 || m.MaxInFlight < 0 || m.Timeout < 0 || m.BodyTimeout < 0 {
		return fmt.Errorf("max_body_bytes, max_in_flight, timeout and body_timeout must not be negative")
	}
	for i, t := range m.Targets {
		if len(t.Dial) == 0 {
			return fmt.Errorf("targets[%d]: no dial address", i)
		}
		if t.Denominator < 0 || t.Numerator < 0 || (t.Denominator > 0 && t.Numerator > t.Denominator) {
			return fmt.Errorf("targets[%d]: share %d/%d is not in [0, 1]", i, t.Numerator, t.Denominator)
		}
	}
	return nil
}

// Cleanup closes idle connections to the mirrors.
func (m *Mirror) Cleanup() error {
	if m.client != nil {
		m.client.CloseIdleConnections()
	}
	return nil
}

func (t Target) chosen() bool {
	if t.Denominator == 0 {
		return true
	}
	return rand.IntN(t.Denominator) < t.Numerator
}

// ServeHTTP mirrors the request to the chosen targets, then calls the next handler.
func (m *Mirror) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	// Slots first: a request that finds none free is not mirrored and its body not read here.
	var chosen []Target
	for _, t := range m.Targets {
		if t.chosen() && m.acquire() {
			chosen = append(chosen, t)
		}
	}
	if len(chosen) == 0 {
		return next.ServeHTTP(w, r)
	}
	var body []byte
	held := int64(0)
	if r.Body != nil && r.Body != http.NoBody {
		// Read at most MaxBodyBytes+1: a larger body is not mirrored, and the original request
		// gets back exactly what was read followed by the rest.
		held = m.MaxBodyBytes + 1
		if !processBodyBytes.Reserve(held) {
			m.inFlight.Add(-int64(len(chosen)))
			m.logger.Debug("mirrored bodies fill the proxy's budget: not mirrored", zap.Int64("process_max_body_bytes", ProcessMaxBodyBytes))
			return next.ServeHTTP(w, r)
		}
		read, rest, err := outbound.ReadPrefix(r.Body, m.MaxBodyBytes+1, time.Duration(m.BodyTimeout))
		r.Body = rest
		switch {
		case errors.Is(err, outbound.ErrBodyTimeout):
			processBodyBytes.Release(held)
			m.inFlight.Add(-int64(len(chosen)))
			m.logger.Debug("request body not received within body_timeout: not mirrored", zap.Duration("body_timeout", time.Duration(m.BodyTimeout)))
			return next.ServeHTTP(w, r)
		case err != nil:
			processBodyBytes.Release(held)
			m.inFlight.Add(-int64(len(chosen)))
			return caddyhttp.Error(http.StatusBadRequest, err)
		case int64(len(read)) > m.MaxBodyBytes:
			processBodyBytes.Release(held)
			m.inFlight.Add(-int64(len(chosen)))
			m.logger.Debug("request body too large to mirror", zap.Int64("max_body_bytes", m.MaxBodyBytes))
			return next.ServeHTTP(w, r)
		}
		// Held from now on at its real size, until the request's last copy is sent.
		processBodyBytes.Release(held - int64(len(read)))
		held = int64(len(read))
		body = read
	}
	copies := new(atomic.Int64)
	copies.Store(int64(len(chosen)))
	for _, t := range chosen {
		dial := t.Dial[rand.IntN(len(t.Dial))]
		out := r.Clone(context.WithoutCancel(r.Context()))
		out.RequestURI = ""
		out.URL.Scheme = "http"
		out.URL.Host = dial
		out.Host = r.Host
		outbound.RemoveHopByHop(out.Header)
		out.Body = io.NopCloser(bytes.NewReader(body))
		out.ContentLength = int64(len(body))
		if body == nil {
			out.Body = http.NoBody
		}
		go func() {
			m.send(out)
			if copies.Add(-1) == 0 {
				processBodyBytes.Release(held)
			}
		}()
	}
	return next.ServeHTTP(w, r)
}

// ProcessMaxBodyBytes bounds the request bodies every kengine_mirror handler of the process
// holds for copies at once.
const ProcessMaxBodyBytes = 64 << 20

var processBodyBytes = outbound.NewBudget(ProcessMaxBodyBytes)

// acquire takes one of the max_in_flight slots, if one is free.
func (m *Mirror) acquire() bool {
	if m.inFlight.Add(1) > m.MaxInFlight {
		m.inFlight.Add(-1)
		m.logger.Debug("too many mirrored requests under way: not mirrored", zap.Int64("max_in_flight", m.MaxInFlight))
		return false
	}
	return true
}

func (m *Mirror) send(req *http.Request) {
	defer m.inFlight.Add(-1)
	res, err := m.client.Do(req)
	if err != nil {
		// A refused destination is logged by the guard as a warning.
		m.logger.Debug("mirror request failed", zap.String("mirror", req.URL.Host), zap.Error(err))
		return
	}
	_, _ = io.Copy(io.Discard, res.Body)
	_ = res.Body.Close()
}

var (
	_ caddy.Provisioner           = (*Mirror)(nil)
	_ caddy.Validator             = (*Mirror)(nil)
	_ caddy.CleanerUpper          = (*Mirror)(nil)
	_ caddyhttp.MiddlewareHandler = (*Mirror)(nil)
)
