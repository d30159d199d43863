// Package listener registers two Caddy networks whose TCP listeners keep one kernel socket
// per address across config reloads: `kengine-http` for HTTP(S) servers and `kengine-tcp`
// for caddy-l4 servers.
//
// Stock Caddy (2.11, Unix) binds every new config's listeners with SO_REUSEPORT and closes
// the previous config's sockets once the new config runs: a connection still queued in a
// closing socket is reset, so every reload loses a few new connections. Here the socket
// outlives the configs. A process-wide pool holds one real listener per address, with one
// goroutine accepting from it and handing each connection to the newest open config's
// listener (a "view"). Closing a view (the old config stopping) never closes the socket
// while another view uses it; a connection on its way to a view that closes goes to the
// next one. The socket closes when its last view has been closed for Linger (a config that
// stops a listener and starts it again keeps it).
//
// One more loss is Go's HTTP server's: a connection it accepted but whose first request it
// had not read when its config began to stop is closed unanswered (net/http returns from
// the connection when it finds itself shutting down after reading a request). On
// `kengine-http`, a connection that the server closes without having written a byte, after
// its view closed, is not closed: it goes back to the socket, with the bytes the old server
// had read replayed first, and the new config's server answers it.
//
// That cannot help a TLS connection (the server has written its handshake), so a new view of
// an address waits, before it returns, until every TLS connection the older views handed out
// has settled: its server has begun to answer the client's first request (the first
// application-data record after the handshake; tlsAtRisk says how that is told from outside
// net/http), or it closed, or it is TLSSettle old. New connections already go to the new
// view meanwhile (they queue until its server accepts); with handshakes of a millisecond
// the wait is about as long. Only a client that stalls before its first request for longer
// than TLSSettle (a preconnected browser socket, a slow handshake on a saturated machine) can
// still be cut by a reload, and each reload waits at most TLSSettle for such clients.
//
// Addresses look like stock ones with the network name in front:
//
//	"listen": ["kengine-http/:8080"]    (HTTP and HTTPS servers)
//	"listen": ["kengine-tcp/:9000"]     (caddy-l4 servers: TLS, TCP routes)
//
// Caddy's shutdown delay applies only to listeners that close (caddy.ListenerUsage); the pool
// counts its views there too, so a reload is not delayed and a process exit still is.
package listener

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	_ "unsafe" // go:linkname, below

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"golang.org/x/sys/unix"
)

const (
	// HTTPNetwork is for HTTP(S) servers: persistent sockets, and connections an old
	// config's server dropped unanswered are served by the new one.
	HTTPNetwork = "kengine-http"
	// TCPNetwork is for caddy-l4 servers: persistent sockets.
	TCPNetwork = "kengine-tcp"
)

// Linger is how long a socket stays open after its last view closed.
var Linger = 2 * time.Second

// maxRescues bounds how often one connection is handed on after a server dropped it.
const maxRescues = 3

// maxReplay bounds the bytes kept per connection for a replay (a request's head).
const maxReplay = 64 << 10

func init() {
	caddy.RegisterNetwork(HTTPNetwork, listenFunc(true))
	caddy.RegisterNetwork(TCPNetwork, listenFunc(false))
}

// listenerPool is Caddy's count of the configs using each listener address, read by
// caddy.ListenerUsage (the HTTP app's shutdown delay). Caddy counts only the sockets it
// binds itself; no exported function adds to it.
//
//go:linkname listenerPool github.com/caddyserver/caddy/v2.listenerPool
var listenerPool *caddy.UsagePool

func listenFunc(rescue bool) caddy.ListenerFunc {
	return func(ctx context.Context, network, host, portRange string, portOffset uint, cfg net.ListenConfig) (any, error) {
		na, err := caddy.ParseNetworkAddress(caddy.JoinNetworkAddress(network, host, portRange))
		if err != nil {
			return nil, err
		}
		if portOffset >= na.PortRangeSize() {
			return nil, fmt.Errorf("%s: port offset %d outside the range %s", network, portOffset, portRange)
		}
		address := na.JoinHostPort(portOffset)
		return acquire(ctx, network, address, cfg, rescue, rescue && servesTLS(ctx, network, address))
	}
}

// servesTLS: the HTTP app that is starting this listener will terminate TLS on it (a server
// listening here has TLS connection policies and the port is not the app's HTTP port, as
// Caddy's HTTP app decides before it wraps the listener in tls.NewListener). So a socket's
// first clients are waited for (tlsAtRisk) before any of them has sent a byte; when the socket
// learnt it only from a client's first byte, a reload in its first moments cut every
// handshake in flight.
func servesTLS(ctx context.Context, network, address string) bool {
	cctx, ok := ctx.(caddy.Context)
	if !ok {
		return false
	}
	appAny, err := cctx.AppIfConfigured("http")
	if err != nil {
		return false
	}
	app, ok := appAny.(*caddyhttp.App)
	if !ok {
		return false
	}
	host, portText, err := net.SplitHostPort(address)
	if err != nil {
		return false
	}
	port, err := strconv.ParseUint(portText, 10, 32)
	if err != nil {
		return false
	}
	httpPort := app.HTTPPort
	if httpPort == 0 {
		httpPort = caddyhttp.DefaultHTTPPort
	}
	if int(port) == httpPort {
		return false
	}
	for _, srv := range app.Servers {
		if len(srv.TLSConnPolicies) == 0 {
			continue
		}
		for _, l := range srv.Listen {
			na, err := caddy.ParseNetworkAddress(l)
			if err == nil && na.Network == network && na.Host == host &&
				uint(port) >= na.StartPort && uint(port) <= na.EndPort {
				return true
			}
		}
	}
	return false
}

// socket is one real listener shared by every view of its address.
type socket struct {
	address string
	ln      net.Listener
	// done is closed when the socket is closed or can no longer accept; err says why.
	done chan struct{}
	err  error
	// sawTLS: the socket serves HTTPS (a config said so, or a client started a TLS
	// handshake here).
	sawTLS atomic.Bool

	// Guarded by mu:
	views   []*view       // open views, oldest first
	changed chan struct{} // closed (and replaced) whenever views changes
	linger  *time.Timer   // running while views is empty
}

var (
	mu      sync.Mutex
	sockets = map[string]*socket{}
)

// acquire returns a new view of the socket at address, binding it if needed; tls: its
// config serves HTTPS there (servesTLS).
func acquire(ctx context.Context, network, address string, cfg net.ListenConfig, rescue, tls bool) (net.Listener, error) {
	v, older, err := newView(ctx, network, address, cfg, rescue, tls)
	if err != nil {
		return nil, err
	}
	// New connections go to v from now on; let those the older views took settle.
	waitSettled(ctx, older)
	return v, nil
}

// newView registers a new view of the socket at address (binding it if needed) and returns
// the views that were open before it.
func newView(ctx context.Context, network, address string, cfg net.ListenConfig, rescue, tls bool) (*view, []*view, error) {
	mu.Lock()
	defer mu.Unlock()
	s := sockets[address]
	if s != nil {
		select {
		case <-s.done:
			// It failed (accept error); a new one replaces it.
			delete(sockets, address)
			s = nil
		default:
		}
	}
	if s == nil {
		// SO_REUSEPORT, as Caddy's own sockets have: a config that moves an address from
		// "tcp" to our network binds while the stock socket is still open.
		control := cfg.Control
		cfg.Control = func(network, addr string, c syscall.RawConn) error {
			if control != nil {
				if err := control(network, addr, c); err != nil {
					return err
				}
			}
			var serr error
			if err := c.Control(func(fd uintptr) {
				serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1)
			}); err != nil {
				return err
			}
			return serr
		}
		ln, err := cfg.Listen(ctx, "tcp", address)
		if err != nil {
			return nil, nil, err
		}
		s = &socket{address: address, ln: ln, done: make(chan struct{}), changed: make(chan struct{})}
		sockets[address] = s
		go s.pump()
	}
	if s.linger != nil {
		s.linger.Stop()
		s.linger = nil
	}
	if tls {
		s.sawTLS.Store(true)
	}
	v := &view{
		s: s, network: network, rescue: rescue,
		in: make(chan net.Conn), closed: make(chan struct{}), open: map[*conn]time.Time{},
	}
	older := append([]*view(nil), s.views...)
	s.views = append(s.views, v)
	s.notifyLocked()
	if listenerPool != nil {
		listenerPool.LoadOrStore(poolKey(network, address), nil)
	}
	return v, older, nil
}

func poolKey(network, address string) string { return network + "/" + address }

func (s *socket) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// release removes a closed view; the socket closes after Linger without views.
func (s *socket) release(v *view) {
	mu.Lock()
	defer mu.Unlock()
	if listenerPool != nil {
		_, _ = listenerPool.Delete(poolKey(v.network, s.address))
	}
	for i, o := range s.views {
		if o == v {
			s.views = append(s.views[:i:i], s.views[i+1:]...)
			break
		}
	}
	s.notifyLocked()
	if len(s.views) > 0 {
		return
	}
	var t *time.Timer
	t = time.AfterFunc(Linger, func() {
		mu.Lock()
		defer mu.Unlock()
		if s.linger != t {
			return // a view arrived meanwhile
		}
		s.linger = nil
		if sockets[s.address] == s {
			delete(sockets, s.address)
		}
		s.closeLocked(net.ErrClosed)
	})
	s.linger = t
}

// closeLocked closes the socket once; done tells the pump, the views and hand-offs.
func (s *socket) closeLocked(why error) {
	select {
	case <-s.done:
		return
	default:
	}
	s.err = why
	close(s.done)
	_ = s.ln.Close()
}

// pump accepts from the kernel socket and hands each connection to a view.
func (s *socket) pump() {
	var delay time.Duration
	for {
		c, err := s.ln.Accept()
		if err != nil {
			select {
			case <-s.done:
				return
			default:
			}
			// Temporary (e.g. out of file descriptors): wait and retry, as net/http does.
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, syscall.EMFILE) ||
				errors.Is(err, syscall.ENFILE) || errors.Is(err, syscall.ECONNABORTED) {
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				time.Sleep(delay)
				continue
			}
			mu.Lock()
			s.closeLocked(fmt.Errorf("%s: accept: %w", s.address, err))
			mu.Unlock()
			return
		}
		delay = 0
		s.handOff(c)
	}
}

// handOff gives c to the newest open view as soon as it accepts (to the next newest if that
// one closes first), or closes c when the socket closes.
func (s *socket) handOff(c net.Conn) {
	for {
		mu.Lock()
		var v *view
		if n := len(s.views); n > 0 {
			v = s.views[n-1]
		}
		changed := s.changed
		mu.Unlock()
		var in chan net.Conn // nil (never ready) without a view
		if v != nil {
			in = v.in
		}
		select {
		case in <- c:
			return
		case <-changed:
		case <-s.done:
			_ = c.Close()
			return
		}
	}
}

// view is one config's listener on a shared socket.
type view struct {
	s       *socket
	network string
	rescue  bool
	in      chan net.Conn
	closed  chan struct{}
	once    sync.Once

	openMu sync.Mutex
	open   map[*conn]time.Time // connections handed out and not closed (HTTP views), when
}

func (v *view) Accept() (net.Conn, error) {
	select {
	case <-v.closed:
		return nil, net.ErrClosed
	default:
	}
	select {
	case c := <-v.in:
		select {
		case <-v.closed:
			// Closed while it arrived: another view serves it.
			go v.s.handOff(c)
			return nil, net.ErrClosed
		default:
		}
		if !v.rescue {
			return c, nil
		}
		rescues := 0
		if r, ok := c.(*replayConn); ok {
			rescues = r.rescues
		}
		wrapped := &conn{Conn: c, view: v, rescues: rescues, first: -1}
		// Registered only while v is the newest view, under the lock newView takes: a newer
		// view's waitSettled lists every connection an older view took.
		mu.Lock()
		newest := len(v.s.views) > 0 && v.s.views[len(v.s.views)-1] == v
		if newest {
			v.openMu.Lock()
			v.open[wrapped] = time.Now()
			v.openMu.Unlock()
		}
		mu.Unlock()
		if !newest {
			// A newer view arrived while c was on its way here (handOff's select took
			// this view's channel): it serves c.
			go v.s.handOff(c)
			return v.Accept()
		}
		return wrapped, nil
	case <-v.closed:
		return nil, net.ErrClosed
	case <-v.s.done:
		mu.Lock()
		err := v.s.err
		mu.Unlock()
		return nil, err
	}
}

// Close stops this view; the socket stays open while other views use it.
func (v *view) Close() error {
	first := false
	v.once.Do(func() {
		first = true
		close(v.closed)
	})
	if !first {
		return net.ErrClosed
	}
	v.s.release(v)
	return nil
}

func (v *view) isClosed() bool {
	select {
	case <-v.closed:
		return true
	default:
		return false
	}
}

func (v *view) Addr() net.Addr { return v.s.ln.Addr() }

// conn is a connection handed out by an HTTP view: until the server writes to it, it keeps
// what the server read, so that a server dropping it unanswered can hand it on.
type conn struct {
	net.Conn
	view    *view
	rescues int

	mu       sync.Mutex
	read     []byte
	answered bool // the server wrote (or the replay buffer overflowed): no hand-on
	closed   bool
	first    int // the first byte the client sent, -1 before any
	// The TLS records the client sent and the server wrote, while the handshake lasts.
	fromClient, toClient records
	// tlsRead: when the server read the client's first request (zero before; see
	// tlsAtRisk); readAgain: it began another read after that; tlsAnswered: it wrote to the
	// client after that read began; touched: its latest call on the connection.
	tlsRead     time.Time
	readAgain   bool
	tlsAnswered bool
	touched     time.Time
}

func (c *conn) Read(p []byte) (int, error) {
	c.mu.Lock()
	c.touched = time.Now()
	if !c.tlsRead.IsZero() {
		c.readAgain = true
	}
	c.mu.Unlock()
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.mu.Lock()
		c.touched = time.Now()
		if c.first < 0 {
			c.first = int(p[0])
			if c.first == tlsRecordHandshake {
				c.view.s.sawTLS.Store(true)
			}
		}
		if c.first == tlsRecordHandshake && c.tlsRead.IsZero() {
			c.fromClient.see(p[:n])
			// Decided when the client's record arrives: later server records (the answer)
			// must not change it.
			need := 1
			if c.toClient.appData > 0 {
				need = 2
			}
			if c.fromClient.appData >= need {
				c.tlsRead = time.Now()
			}
		}
		if !c.answered {
			if len(c.read)+n > maxReplay {
				c.answered, c.read = true, nil
			} else {
				c.read = append(c.read, p[:n]...)
			}
		}
		c.mu.Unlock()
	}
	return n, err
}

func (c *conn) Write(p []byte) (int, error) {
	c.mu.Lock()
	c.answered, c.read = true, nil
	c.touched = time.Now()
	if c.first == tlsRecordHandshake {
		if c.readAgain {
			c.tlsAnswered = true
		} else if c.tlsRead.IsZero() {
			c.toClient.see(p)
		}
	}
	c.mu.Unlock()
	return c.Conn.Write(p)
}

// SetDeadline, SetReadDeadline and SetWriteDeadline note the server's activity (tlsAtRisk).
func (c *conn) SetDeadline(t time.Time) error {
	c.touch()
	return c.Conn.SetDeadline(t)
}

func (c *conn) SetReadDeadline(t time.Time) error {
	c.touch()
	return c.Conn.SetReadDeadline(t)
}

func (c *conn) SetWriteDeadline(t time.Time) error {
	c.touch()
	return c.Conn.SetWriteDeadline(t)
}

func (c *conn) touch() {
	c.mu.Lock()
	c.touched = time.Now()
	c.mu.Unlock()
}

// CloseWrite keeps TCP half-close available to the server (net/http uses it).
func (c *conn) CloseWrite() error {
	c.mu.Lock()
	c.answered, c.read = true, nil
	c.mu.Unlock()
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

func (c *conn) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return net.ErrClosed
	}
	c.closed = true
	unanswered := !c.answered && c.rescues < maxRescues
	read := c.read
	c.read = nil
	c.mu.Unlock()
	c.view.openMu.Lock()
	delete(c.view.open, c)
	c.view.openMu.Unlock()
	if !unanswered {
		return c.Conn.Close()
	}
	if c.view.isClosed() {
		c.handOn(read)
		return nil
	}
	// net/http marks itself shutting down (and drops connections it then reads a request
	// from) just before it closes its listeners: wait a little for the view to close before
	// deciding that the server meant it.
	go func() {
		t := time.NewTimer(shutdownWindow)
		defer t.Stop()
		select {
		case <-c.view.closed:
			c.handOn(read)
		case <-t.C:
			_ = c.Conn.Close()
		}
	}()
	return nil
}

// shutdownWindow is how long an unanswered connection closed by its server waits for the
// server's view to close (see conn.Close).
const shutdownWindow = 500 * time.Millisecond

// handOn gives a connection its stopping server dropped unanswered to the next view, whose
// server reads the same bytes and answers.
func (c *conn) handOn(read []byte) {
	_ = c.Conn.SetDeadline(time.Time{})
	go c.view.s.handOff(&replayConn{Conn: c.Conn, pending: read, rescues: c.rescues + 1})
}

// replayConn returns pending before reading from the connection.
type replayConn struct {
	net.Conn
	pending []byte
	rescues int
	mu      sync.Mutex
}

func (r *replayConn) Read(p []byte) (int, error) {
	r.mu.Lock()
	if len(r.pending) > 0 {
		n := copy(p, r.pending)
		r.pending = r.pending[n:]
		r.mu.Unlock()
		return n, nil
	}
	r.mu.Unlock()
	return r.Conn.Read(p)
}

func (r *replayConn) CloseWrite() error {
	if cw, ok := r.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// Sockets lists the addresses with an open socket and their open views (for tests).
func Sockets() map[string]int {
	mu.Lock()
	defer mu.Unlock()
	out := make(map[string]int, len(sockets))
	for a, s := range sockets {
		select {
		case <-s.done:
		default:
			out[a] = len(s.views)
		}
	}
	return out
}
