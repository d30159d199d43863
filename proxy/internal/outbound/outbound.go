// Package outbound holds what our handlers share for the requests they send on their own,
// beside the proxied one (mirror copies, authorization checks): their HTTP client (behind the
// egress guard when the handler has one), the bounded read of the client's body they copy, and
// the removal of hop-by-hop headers (RFC 9110 §7.6.1), which belong to one connection, not to
// a message passed on over another.
package outbound

import (
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"kengine.io/gateway/proxy/internal/egress"
)

// HopByHop are the hop-by-hop headers named by the RFC (and the obsolete Proxy-Connection).
var HopByHop = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

// RemoveHopByHop deletes the hop-by-hop headers and those the Connection header names.
func RemoveHopByHop(h http.Header) {
	for _, v := range h.Values("Connection") {
		for _, name := range strings.Split(v, ",") {
			if name = strings.TrimSpace(name); name != "" {
				h.Del(name)
			}
		}
	}
	for _, name := range HopByHop {
		h.Del(name)
	}
}

// Client sends requests with this overall timeout, dials within 3 s (through guard when it is
// not nil), uses no forward proxy, keeps maxIdlePerHost idle connections per host and never
// follows a redirect (the answer is the redirect).
func Client(timeout time.Duration, maxIdlePerHost int, guard *egress.Guard) *http.Client {
	dial := (&net.Dialer{Timeout: 3 * time.Second}).DialContext
	if guard != nil {
		dial = guard.DialContext
	}
	return &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			DialContext:         dial,
			MaxIdleConnsPerHost: maxIdlePerHost,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// ErrBodyTimeout is ReadPrefix's error when the client did not send the bytes in time.
var ErrBodyTimeout = errors.New("request body not received in time")

// ReadPrefix reads the first limit bytes of body (all of it when shorter), waiting at most
// timeout for them. It returns the bytes read and the body to hand on in place of body: those
// bytes followed by the rest, exactly as the client sends them. At most limit bytes are held.
//
// On timeout it returns ErrBodyTimeout and no bytes; the read goes on in the background and
// the returned body hands over its bytes once it ends, so the body stays whole for whoever
// reads it next. The caller that gives up on the request instead can end that read by setting
// a past read deadline on the connection (http.ResponseController).
func ReadPrefix(body io.ReadCloser, limit int64, timeout time.Duration) ([]byte, io.ReadCloser, error) {
	type result struct {
		data []byte
		err  error
	}
	done := make(chan result, 1)
	go func() {
		data, err := io.ReadAll(io.LimitReader(body, limit))
		done <- result{data, err}
	}()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case res := <-done:
		return res.data, replay(res.data, res.err, body), res.err
	case <-timer.C:
		p := &pending{body: body}
		p.ready = func() {
			res := <-done
			p.r = replay(res.data, res.err, body)
		}
		return nil, p, ErrBodyTimeout
	}
}

// replay is data followed by the rest of body, or by err if reading body failed.
func replay(data []byte, err error, body io.ReadCloser) io.ReadCloser {
	rest := io.Reader(body)
	if err != nil {
		rest = errReader{err}
	}
	return struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(data), rest), body}
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// pending is a body whose first bytes are still being read in the background.
type pending struct {
	body  io.ReadCloser
	ready func()
	r     io.ReadCloser
}

func (p *pending) Read(b []byte) (int, error) {
	if p.r == nil {
		p.ready()
	}
	return p.r.Read(b)
}

func (p *pending) Close() error { return p.body.Close() }

// Budget bounds the bytes that every handler of one kind holds at once in the process (bodies
// read for mirror copies or authorization requests): a reservation that does not fit is
// refused and the caller serves the request without holding more.
type Budget struct {
	max  int64
	used atomic.Int64
}

// NewBudget is a budget of max bytes.
func NewBudget(max int64) *Budget { return &Budget{max: max} }

// Reserve takes n bytes if they fit.
func (b *Budget) Reserve(n int64) bool {
	if b.used.Add(n) > b.max {
		b.used.Add(-n)
		return false
	}
	return true
}

// Release gives back n bytes (negative n takes more, as when a reservation is adjusted to
// what was really read).
func (b *Budget) Release(n int64) { b.used.Add(-n) }

// Used is how many bytes are held now.
func (b *Budget) Used() int64 { return b.used.Load() }
