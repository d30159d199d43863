// Package deadline is the Caddy HTTP handler `kengine_deadline`: Gateway API HTTPRoute
// `timeouts.request` over a whole exchange, retries included. Stock Caddy bounds one attempt
// (reverse_proxy `response_header_timeout`) and when retries may start (`try_duration`), but
// an attempt started before try_duration ends may run past it and its answer (for example the
// backend's last 500) is then returned. This handler gives the rest of the route a context
// that ends after `timeout`; when it has ended and the route has written no response, the
// client gets 504 Gateway Timeout, whatever the route's handlers returned.
//
// Config (JSON, as the controller emits it):
//
//	{"handler": "kengine_deadline", "timeout": "500ms"}
package deadline

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
)

func init() {
	caddy.RegisterModule(Deadline{})
}

// Deadline is the handler.
type Deadline struct {
	// The whole exchange's limit; required, > 0.
	Timeout caddy.Duration `json:"timeout"`
}

// CaddyModule returns the module's information.
func (Deadline) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.handlers.kengine_deadline",
		New: func() caddy.Module { return new(Deadline) },
	}
}

// Validate refuses a missing or non-positive timeout.
func (d *Deadline) Validate() error {
	if d.Timeout <= 0 {
		return fmt.Errorf("kengine_deadline: timeout must be > 0, got %v", time.Duration(d.Timeout))
	}
	return nil
}

// written records whether a response has been started.
type written struct {
	*caddyhttp.ResponseWriterWrapper
	started bool
}

func (w *written) WriteHeader(code int) {
	// 1xx are informational: the final response is still to come.
	if code >= 200 {
		w.started = true
	}
	w.ResponseWriterWrapper.WriteHeader(code)
}

func (w *written) Write(b []byte) (int, error) {
	w.started = true
	return w.ResponseWriterWrapper.Write(b)
}

// Unwrap lets http.ResponseController reach the underlying writer (flush, hijack).
func (w *written) Unwrap() http.ResponseWriter { return w.ResponseWriterWrapper }

// ServeHTTP runs the rest of the route under the deadline.
func (d Deadline) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	ctx, cancel := context.WithTimeout(r.Context(), time.Duration(d.Timeout))
	defer cancel()
	ww := &written{ResponseWriterWrapper: &caddyhttp.ResponseWriterWrapper{ResponseWriter: w}}
	err := next.ServeHTTP(ww, r.WithContext(ctx))
	if errors.Is(ctx.Err(), context.DeadlineExceeded) && r.Context().Err() == nil && !ww.started {
		return caddyhttp.Error(http.StatusGatewayTimeout, fmt.Errorf("request timeout %v exceeded", time.Duration(d.Timeout)))
	}
	return err
}

var (
	_ caddy.Validator             = (*Deadline)(nil)
	_ caddyhttp.MiddlewareHandler = (*Deadline)(nil)
)
