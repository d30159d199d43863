// The TLS side of a reload (see the package doc): a new view waits until the TLS connections
// of older views have settled, which it tells by following each connection's TLS record layer
// far enough to see the client's first request and the server's first answer to it.

package listener

import (
	"context"
	"time"
)

// TLSSettle bounds how long a new view waits for the TLS connections of older views to
// settle (see the package doc): connections older than that are no longer waited for.
var TLSSettle = 500 * time.Millisecond

// settlePoll is how often a new view looks again at the older views' TLS connections.
const settlePoll = 2 * time.Millisecond

// waitSettled returns when every TLS connection of the views has settled (see the package
// doc), or ctx ends. The views' connections are listed once: new ones go to the newer view.
func waitSettled(ctx context.Context, views []*view) {
	now := time.Now()
	var pending []*conn
	var ats []time.Time
	for _, o := range views {
		o.openMu.Lock()
		for c, at := range o.open {
			if now.Sub(at) < TLSSettle {
				pending, ats = append(pending, c), append(ats, at)
			}
		}
		o.openMu.Unlock()
	}
	var tick *time.Ticker
	for {
		now := time.Now()
		kept := 0
		for i, c := range pending {
			if now.Sub(ats[i]) < TLSSettle && c.tlsAtRisk() {
				pending[kept], ats[kept] = c, ats[i]
				kept++
			}
		}
		pending, ats = pending[:kept], ats[:kept]
		if len(pending) == 0 {
			return
		}
		if tick == nil {
			tick = time.NewTicker(settlePoll)
			defer tick.Stop()
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return
		}
	}
}

// tlsRecordHandshake opens every TLS connection (the ClientHello's record type).
const tlsRecordHandshake = 0x16

// tlsAtRisk: a reload now could cut this connection. Either the client started a TLS
// handshake and its server has not yet begun to answer the first request, or the client sent
// nothing yet on a socket that serves TLS. The first request is the application-data record
// after the client's Finished: the first the client sends in TLS 1.2; in TLS 1.3, where the
// server's own handshake is already application data, the second.
//
// The server has begun to answer when, after reading it, it began another read (net/http's
// background read, or the body) and then wrote; or when it has not touched the connection
// (read, write, deadline) for settleGrace since it read the request (a slow handler: by then
// it has parsed the request and no longer checks for a shutdown). The grace counts from the
// server's latest call, not from the read: on a busy machine the rest of the handshake, the
// decryption and the parse between the two can outlast the grace, while net/http's last call
// before its shutdown check (it sets the read deadline) comes just before it.
//
// Left open: a TLS 1.3 client that sends a certificate sends more application-data records
// before its Finished (Certificate, CertificateVerify), so its first request is taken to be
// read early. The server then writes its session tickets, which is why a write counts as the
// answer only after a further read began. The grace after the server's latest call covers a
// client that sends its request at once after the handshake, not one that waits longer than
// settleGrace.
func (c *conn) tlsAtRisk() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.first < 0 {
		return c.view.s.sawTLS.Load()
	}
	if c.first != tlsRecordHandshake || c.tlsAnswered {
		return false
	}
	return c.tlsRead.IsZero() || time.Since(c.touched) < settleGrace
}

// settleGrace is how long after its latest call on a connection whose first request it read
// a server is taken to have parsed the request (see tlsAtRisk).
const settleGrace = 50 * time.Millisecond

// tlsRecordAppData is the record type of application data (and, in TLS 1.3, of the
// handshake messages after the ServerHello).
const tlsRecordAppData = 0x17

// records follows the TLS record layer of one direction of a connection far enough to count
// whole application-data records (a 5-byte header: type, version, 2-byte length).
type records struct {
	header  [5]byte
	have    int // header bytes seen of the current record
	left    int // payload bytes of the current record still to come
	appData int // whole application-data records seen
	done    bool
}

// see consumes p. It stops counting after two application-data records (all tlsAtRisk needs)
// or at bytes that are not a TLS record header.
func (r *records) see(p []byte) {
	for len(p) > 0 && !r.done {
		if r.left > 0 {
			n := min(r.left, len(p))
			r.left -= n
			p = p[n:]
			if r.left == 0 && r.header[0] == tlsRecordAppData {
				r.appData++
				r.have = 0
				r.done = r.appData >= 2
			} else if r.left == 0 {
				r.have = 0
			}
			continue
		}
		n := copy(r.header[r.have:], p)
		r.have += n
		p = p[n:]
		if r.have < len(r.header) {
			return
		}
		if t := r.header[0]; t < 0x14 || t > 0x18 || r.header[1] != 3 {
			r.done = true // not TLS (or lost track): count no further
			return
		}
		r.left = int(r.header[3])<<8 | int(r.header[4])
		if r.left == 0 {
			if r.header[0] == tlsRecordAppData {
				r.appData++
				r.done = r.appData >= 2
			}
			r.have = 0
		}
	}
}
