package routetable

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
)

// AnyHost is the table key of the default entry: the routes for a Host that no exact or
// wildcard entry matches (a listener without hostname).
const AnyHost = "*"

// patternKind says how a table key matches a request's Host.
type patternKind int

const (
	exactHost patternKind = iota
	wildcardHost
	anyHost
)

// pattern is a parsed table key: an exact host ("foo.example.com"), a wildcard
// ("*.example.com", key "example.com": one or more labels before the suffix, never the suffix
// itself, as Gateway API hostnames match) or AnyHost.
type pattern struct {
	kind patternKind
	key  string
}

// parsePattern checks a table key and lower-cases it (hosts are case-insensitive).
func parsePattern(s string) (pattern, error) {
	if s == AnyHost {
		return pattern{kind: anyHost}, nil
	}
	h := strings.ToLower(s)
	kind := exactHost
	if rest, ok := strings.CutPrefix(h, "*."); ok {
		kind, h = wildcardHost, rest
	}
	if err := checkHostname(h); err != nil {
		return pattern{}, fmt.Errorf("host %q: %w", s, err)
	}
	return pattern{kind: kind, key: h}, nil
}

// checkHostname accepts DNS names (letters, digits, '-', '_', dot-separated non-empty
// labels) and IP literals (an IPv6 address without brackets); no port, no wildcard.
func checkHostname(h string) error {
	if h == "" || len(h) > 253 {
		return errors.New("must be 1 to 253 characters")
	}
	if strings.Contains(h, ":") {
		for _, c := range h {
			if !(c == ':' || c == '.' || ('0' <= c && c <= '9') || ('a' <= c && c <= 'f')) {
				return fmt.Errorf("IPv6 literal contains %q", c)
			}
		}
		return nil
	}
	for label := range strings.SplitSeq(h, ".") {
		if label == "" || len(label) > 63 {
			return errors.New("labels must be 1 to 63 characters")
		}
		for _, c := range label {
			if !(c == '-' || c == '_' || ('0' <= c && c <= '9') || ('a' <= c && c <= 'z')) {
				return fmt.Errorf("label %q contains %q (a wildcard is only allowed as a whole first label, \"*.\")", label, c)
			}
		}
	}
	return nil
}

// requestHost is the Host of a request as a table key: port and brackets removed, trailing dot
// dropped, lower-case (allocating only when the Host has upper-case letters).
func requestHost(h string) string {
	if strings.HasPrefix(h, "[") {
		if i := strings.IndexByte(h, ']'); i > 0 {
			h = h[1:i]
		}
	} else if i := strings.LastIndexByte(h, ':'); i >= 0 && strings.IndexByte(h, ':') == i {
		h = h[:i]
	}
	h = strings.TrimSuffix(h, ".")
	for i := 0; i < len(h); i++ {
		if 'A' <= h[i] && h[i] <= 'Z' {
			return strings.ToLower(h)
		}
	}
	return h
}

// entry is one host's provisioned route list, with the compact JSON it came from (to
// provision it again when generations are merged) and its SHA-256.
type entry struct {
	routes caddyhttp.RouteList
	raw    []byte
	sum    [32]byte
	gen    *generation
}

// generation is the caddy.Context of one update batch: every module of the routes that batch
// provisioned lives in it. Its Cleanup runs (cancel) when no snapshot holds it any more.
type generation struct {
	cancel context.CancelFunc
	refs   atomic.Int64
	// size is the number of route lists provisioned in it (live or replaced since).
	size int
}

func (g *generation) release() {
	if g.refs.Add(-1) == 0 {
		g.cancel()
	}
}

// snapshot is an immutable table. refs counts 1 while it is the table's current snapshot plus
// one per request running on it; at zero it releases its generations.
type snapshot struct {
	exact    map[string]*entry
	wildcard map[string]*entry
	fallback *entry
	// live counts the entries of each generation the snapshot holds.
	live    map[*generation]int
	refs    atomic.Int64
	version uint64
	acc     [32]byte
	label   string
}

func (s *snapshot) hash() string { return hex.EncodeToString(s.acc[:]) }

// lookup picks the entry for a request's Host: exact, then the longest wildcard suffix, then
// the default; nil when none matches.
func (s *snapshot) lookup(rawHost string) *entry {
	h := requestHost(rawHost)
	if e, ok := s.exact[h]; ok {
		return e
	}
	if len(s.wildcard) > 0 {
		// The first suffix found walking from the left is the longest.
		for i := strings.IndexByte(h, '.'); i >= 0; {
			if e, ok := s.wildcard[h[i+1:]]; ok {
				return e
			}
			j := strings.IndexByte(h[i+1:], '.')
			if j < 0 {
				break
			}
			i += j + 1
		}
	}
	return s.fallback
}

func (s *snapshot) get(p pattern) *entry {
	switch p.kind {
	case exactHost:
		return s.exact[p.key]
	case wildcardHost:
		return s.wildcard[p.key]
	default:
		return s.fallback
	}
}

// keys lists the snapshot's table keys, sorted.
func (s *snapshot) keys() []string {
	keys := make([]string, 0, len(s.exact)+len(s.wildcard)+1)
	for k := range s.exact {
		keys = append(keys, k)
	}
	for k := range s.wildcard {
		keys = append(keys, "*."+k)
	}
	if s.fallback != nil {
		keys = append(keys, AnyHost)
	}
	sort.Strings(keys)
	return keys
}

func (s *snapshot) size() int {
	n := len(s.exact) + len(s.wildcard)
	if s.fallback != nil {
		n++
	}
	return n
}

// keyHash is one key's share of the table hash: SHA-256 of "<key> <hex SHA-256 of the key's
// compact route JSON>". The table hash is the XOR of its keys' shares (hex): independent of
// order, kept up to date per delta in O(1), and computable by a controller from what it sent.
func keyHash(key string, sum [32]byte) [32]byte {
	return sha256.Sum256([]byte(key + " " + hex.EncodeToString(sum[:])))
}

func xorInto(acc *[32]byte, h [32]byte) {
	for i := range acc {
		acc[i] ^= h[i]
	}
}

// Change is one delta: for each key the host's new ordered route list (nil: delete the key).
// Replace drops every key the change does not name.
type Change struct {
	Hosts   map[string]*caddyhttp.RouteList
	compact map[string][]byte
	Replace bool
	Label   *string
	// IfMatch, when set, is the table hash the change expects to apply to.
	IfMatch string
}

// errPrecondition answers a change whose IfMatch is not the table's hash.
var errPrecondition = errors.New("the table's hash is not the If-Match one")

// table holds a route table's current snapshot; writers are serialised by mu, readers take
// the snapshot lock-free.
type table struct {
	id      string
	mu      sync.Mutex
	base    caddy.Context
	cur     atomic.Pointer[snapshot]
	closed  bool
	version uint64
}

// errClosed answers deltas that reach a table whose handler was unloaded.
var errClosed = errors.New("the route table was unloaded (a config load replaced it); send the delta again")

// acquire takes a reference on the current snapshot (nil when the table is closed).
func (t *table) acquire() *snapshot {
	for {
		s := t.cur.Load()
		if s == nil {
			return nil
		}
		n := s.refs.Load()
		if n > 0 && s.refs.CompareAndSwap(n, n+1) {
			return s
		}
		// s was retired between the load and the increment: the next load sees its successor.
	}
}

// release drops a reference; the last one releases the snapshot's generations.
func (s *snapshot) release() {
	if s.refs.Add(-1) == 0 {
		for g := range s.live {
			g.release()
		}
	}
}

// apply provisions the change's routes in a new generation, then swaps in a snapshot with the
// change applied. On any error nothing changes and the new generation is cleaned up.
func (t *table) apply(c Change) (*snapshot, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil, errClosed
	}
	if c.IfMatch != "" {
		if cur := t.cur.Load(); cur == nil || cur.hash() != c.IfMatch {
			return nil, errPrecondition
		}
	}
	type parsed struct {
		p      pattern
		routes *caddyhttp.RouteList
		raw    []byte
	}
	changes := make([]parsed, 0, len(c.Hosts))
	named := make(map[pattern]string, len(c.Hosts))
	for k, routes := range c.Hosts {
		p, err := parsePattern(k)
		if err != nil {
			return nil, err
		}
		if other, ok := named[p]; ok {
			return nil, fmt.Errorf("hosts %q and %q are the same key", other, k)
		}
		named[p] = k
		changes = append(changes, parsed{p, routes, c.compact[k]})
	}
	ctx, cancel := caddy.NewContext(t.base)
	gen := &generation{cancel: cancel}
	shared := sharedRegexps{}
	for _, ch := range changes {
		if ch.routes == nil {
			continue
		}
		gen.size++
		if err := ch.routes.Provision(ctx); err != nil {
			cancel()
			return nil, fmt.Errorf("host %q: %w", keyOf(ch.p), err)
		}
		shared.routes(*ch.routes)
	}

	old := t.cur.Load()
	next := &snapshot{exact: map[string]*entry{}, wildcard: map[string]*entry{}, live: map[*generation]int{}}
	if old != nil && !c.Replace {
		next.exact = maps.Clone(old.exact)
		next.wildcard = maps.Clone(old.wildcard)
		next.fallback = old.fallback
		next.label = old.label
		next.acc = old.acc
		next.live = maps.Clone(old.live)
	}
	for _, ch := range changes {
		var e *entry
		if ch.routes != nil {
			e = &entry{routes: *ch.routes, raw: ch.raw, sum: sha256.Sum256(ch.raw), gen: gen}
		}
		next.put(ch.p, e)
	}
	if c.Label != nil {
		next.label = *c.Label
	}
	t.merge(next)
	for g := range next.live {
		g.refs.Add(1)
	}
	if next.live[gen] == 0 {
		// The batch only deleted hosts: its (empty) context is not needed.
		cancel()
	}
	t.version++
	next.version = t.version
	next.refs.Store(1)
	t.cur.Store(next)
	if old != nil {
		old.release()
	}
	return next, nil
}

// Bounds on what a table keeps alive. A generation lives while any of its route lists is in
// the table, with all the modules it provisioned, live or replaced; and each caddy.Context
// costs about 15 KB (its metrics registry) besides its modules, so 5,000 hosts changed one by
// one would otherwise hold 75 MB of contexts. So a table keeps at most maxGenerations
// generations, and at most twice its live route lists (plus slack) provisioned.
const (
	maxGenerations   = 64
	provisionedSlack = 64
)

// put sets (e != nil) or deletes the entry of p, keeping the hash and the counts up to date.
func (s *snapshot) put(p pattern, e *entry) {
	key := keyOf(p)
	if prev := s.get(p); prev != nil {
		xorInto(&s.acc, keyHash(key, prev.sum))
		if s.live[prev.gen]--; s.live[prev.gen] == 0 {
			delete(s.live, prev.gen)
		}
	}
	if e != nil {
		xorInto(&s.acc, keyHash(key, e.sum))
		s.live[e.gen]++
	}
	switch p.kind {
	case exactHost:
		setOrDelete(s.exact, p.key, e)
	case wildcardHost:
		setOrDelete(s.wildcard, p.key, e)
	default:
		s.fallback = e
	}
}

// each calls f for every entry.
func (s *snapshot) each(f func(pattern, *entry)) {
	for k, e := range s.exact {
		f(pattern{exactHost, k}, e)
	}
	for k, e := range s.wildcard {
		f(pattern{wildcardHost, k}, e)
	}
	if s.fallback != nil {
		f(pattern{kind: anyHost}, s.fallback)
	}
}

// merge keeps s (not yet published) within the bounds above: when s has more than
// maxGenerations generations or more than twice its live route lists provisioned, the live
// route lists of the smaller half of its generations and of every generation more than half
// replaced are provisioned again in one new generation and put in s in place of the old ones,
// which are released with the snapshot that held them. As merged generations grow, a route
// list is provisioned again O(log n) times over the table's life. If provisioning fails (it
// succeeded before, so only a module whose provisioning depends on the outside world can fail
// here), s stays as it was.
func (t *table) merge(s *snapshot) {
	live := s.live
	provisioned, total := 0, 0
	for g, n := range live {
		provisioned += g.size
		total += n
	}
	if len(live) <= maxGenerations && provisioned <= 2*total+provisionedSlack {
		return
	}
	chosen := map[*generation]bool{}
	if len(live) > maxGenerations {
		gens := slices.SortedFunc(maps.Keys(live), func(a, b *generation) int { return live[a] - live[b] })
		for _, g := range gens[:len(gens)/2] {
			chosen[g] = true
		}
	}
	for g, n := range live {
		if 2*n < g.size {
			chosen[g] = true
		}
	}
	ctx, cancel := caddy.NewContext(t.base)
	merged := &generation{cancel: cancel}
	type replacement struct {
		p pattern
		e *entry
	}
	var repl []replacement
	var failed error
	shared := sharedRegexps{}
	s.each(func(p pattern, e *entry) {
		if failed != nil || !chosen[e.gen] {
			return
		}
		var routes caddyhttp.RouteList
		if failed = caddy.StrictUnmarshalJSON(e.raw, &routes); failed == nil {
			if failed = routes.Provision(ctx); failed == nil {
				shared.routes(routes)
			}
		}
		merged.size++
		repl = append(repl, replacement{p, &entry{routes: routes, raw: e.raw, sum: e.sum, gen: merged}})
	})
	if failed != nil {
		cancel()
		return
	}
	for _, r := range repl {
		s.put(r.p, r.e)
	}
}

func setOrDelete(m map[string]*entry, k string, e *entry) {
	if e == nil {
		delete(m, k)
	} else {
		m[k] = e
	}
}

func keyOf(p pattern) string {
	switch p.kind {
	case wildcardHost:
		return "*." + p.key
	case anyHost:
		return AnyHost
	default:
		return p.key
	}
}

// close retires the current snapshot: its generations are cleaned up once the requests still
// running on it finish. Later deltas get errClosed.
func (t *table) close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closed = true
	if s := t.cur.Swap(nil); s != nil {
		s.release()
	}
}
