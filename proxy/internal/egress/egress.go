// Package egress is the guard on the proxy's connections to destinations a tenant named (an
// XBackend hostname, a mirror or ExternalAuth target): it keeps such a name from turning the
// proxy against itself (its admin API on loopback, its own pod addresses) or its node (the
// cloud metadata service on 169.254.169.254, link-local neighbours).
//
// Config (JSON), the `egress_guard` field of kengine_http, kengine_mirror and kengine_ext_auth:
//
//	"egress_guard": {"deny": ["10.96.0.0/12", "fd00::/8"]}
//
// Present (even `{}`), every dial resolves the host itself and dials only checked literal IPs:
// the addresses it resolved are checked, and the connection goes to one of those addresses, not
// to the name, so a second resolution (DNS rebinding) never happens. Refused always, whatever
// the list: loopback (127/8, ::1), unspecified (0/8, ::), link-local (169.254/16, fe80::/10),
// multicast (224/4, ff00::/8), the IPv4 broadcast address, every address of the proxy's own
// interfaces (read when the guard is built; at most once a second, shared by the guards built
// meanwhile), and the listed CIDRs. An IPv6 address that carries an IPv4 address (IPv4-mapped
// ::ffff:a.b.c.d, IPv4-compatible ::a.b.c.d, NAT64 64:ff9b::/96, 6to4 2002::/16) is refused
// when that IPv4 address is; an address with a zone (fe80::1%eth0) is refused. A host written
// as an IPv4 number in any spelling a C resolver reads (127.1, 0x7f.1, 2130706433, 0177.0.0.1)
// is taken as that address, not looked up; localhost, *.localhost, localhost.localdomain,
// ip6-localhost and ip6-loopback (any case, trailing dots) are refused without a lookup. Only
// TCP is dialed. A refusal is a *DeniedError ("egress to app.example.com:2019 refused:
// 127.0.0.1 is loopback"), logged as a warning.
package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
)

// Config is the JSON of `egress_guard`.
type Config struct {
	// CIDRs refused beside the built-in ranges (e.g. the cluster's Service and node ranges).
	Deny []string `json:"deny,omitempty"`
}

// Resolver looks up a host's addresses; *net.Resolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// DefaultResolver is the resolver of the guards New builds: net.DefaultResolver, replaced by
// tests that need a name to resolve to given addresses.
var DefaultResolver Resolver = net.DefaultResolver

// DialFunc dials a network address, like net.Dialer.DialContext.
type DialFunc func(ctx context.Context, network, address string) (net.Conn, error)

// Guard checks and dials. Its exported fields may be replaced before use (tests do).
type Guard struct {
	// Resolver resolves hosts (DefaultResolver when built).
	Resolver Resolver
	// Dial connects to a checked literal address (a net.Dialer with a 3 s timeout).
	Dial DialFunc

	deny   []netip.Prefix
	own    map[netip.Addr]bool
	logger *zap.Logger
}

// New builds a guard from its config: the listed CIDRs and the addresses of this host's
// interfaces at this moment. logger (may be nil) gets a warning per refused dial.
func New(c Config, logger *zap.Logger) (*Guard, error) {
	g := &Guard{
		Resolver: DefaultResolver,
		Dial:     (&net.Dialer{Timeout: 3 * time.Second}).DialContext,
		logger:   logger,
	}
	if g.logger == nil {
		g.logger = zap.NewNop()
	}
	for i, s := range c.Deny {
		p, err := parsePrefix(s)
		if err != nil {
			return nil, fmt.Errorf("egress_guard: deny[%d]: %v", i, err)
		}
		g.deny = append(g.deny, p)
	}
	own, err := ownAddresses()
	if err != nil {
		return nil, fmt.Errorf("egress_guard: reading this host's interface addresses: %v", err)
	}
	g.own = own
	return g, nil
}

// A config with thousands of guards (one per mirror or tenant upstream) builds them in one
// go: the interface addresses are read once a second at most and shared (read-only).
var ownCache struct {
	sync.Mutex
	at    time.Time
	addrs map[netip.Addr]bool
}

// ownAddresses are the addresses of this host's interfaces, IPv4-mapped ones unmapped.
func ownAddresses() (map[netip.Addr]bool, error) {
	ownCache.Lock()
	defer ownCache.Unlock()
	if ownCache.addrs != nil && time.Since(ownCache.at) < time.Second {
		return ownCache.addrs, nil
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, err
	}
	own := map[netip.Addr]bool{}
	for _, a := range addrs {
		var ip net.IP
		switch v := a.(type) {
		case *net.IPNet:
			ip = v.IP
		case *net.IPAddr:
			ip = v.IP
		}
		if addr, ok := netip.AddrFromSlice(ip); ok {
			own[addr.Unmap()] = true
		}
	}
	ownCache.at, ownCache.addrs = time.Now(), own
	return own, nil
}

// parsePrefix reads a CIDR or a single address; an IPv4-mapped prefix becomes its IPv4 one.
func parsePrefix(s string) (netip.Prefix, error) {
	s = strings.TrimSpace(s)
	var p netip.Prefix
	if strings.Contains(s, "/") {
		var err error
		if p, err = netip.ParsePrefix(s); err != nil {
			return p, fmt.Errorf("%q is not a CIDR", s)
		}
	} else {
		a, err := netip.ParseAddr(s)
		if err != nil || a.Zone() != "" {
			return p, fmt.Errorf("%q is not a CIDR", s)
		}
		p = netip.PrefixFrom(a, a.BitLen())
	}
	if p.Addr().Is4In6() && p.Bits() >= 96 {
		p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
	}
	return p.Masked(), nil
}

// DeniedError is a refused dial.
type DeniedError struct {
	// Address is the dial address as given (host:port).
	Address string
	// IP is the refused address ("" when the address itself was refused, e.g. no port).
	IP string
	// Reason says why: "loopback", "link-local", "an address of this proxy", ….
	Reason string
}

func (e *DeniedError) Error() string {
	switch {
	case e.IP == "":
		return fmt.Sprintf("egress to %s refused: %s", e.Address, e.Reason)
	case hostOf(e.Address) == e.IP:
		return fmt.Sprintf("egress to %s refused: %s", e.Address, e.Reason)
	default:
		return fmt.Sprintf("egress to %s refused: %s is %s", e.Address, e.IP, e.Reason)
	}
}

func hostOf(address string) string {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return address
	}
	return host
}

var (
	broadcast = netip.MustParseAddr("255.255.255.255")
	thisNet   = netip.MustParsePrefix("0.0.0.0/8")
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour = netip.MustParsePrefix("2002::/16")
)

// Check says why a is refused, or "" when it may be dialed.
func (g *Guard) Check(a netip.Addr) string {
	if a.Zone() != "" {
		return "an address with a zone"
	}
	for _, f := range forms(a) {
		if why := g.check(f); why != "" {
			if f != a {
				return why + " (" + f.String() + ")"
			}
			return why
		}
	}
	return ""
}

// forms are a and the IPv4 addresses it carries.
func forms(a netip.Addr) []netip.Addr {
	out := []netip.Addr{a}
	if !a.Is6() {
		return out
	}
	b := a.As16()
	v4 := func(i int) netip.Addr { return netip.AddrFrom4([4]byte{b[i], b[i+1], b[i+2], b[i+3]}) }
	switch {
	case a.Is4In6():
		out = append(out, a.Unmap())
	case nat64.Contains(a):
		out = append(out, v4(12))
	case sixToFour.Contains(a):
		out = append(out, v4(2))
	default:
		// IPv4-compatible (::a.b.c.d, RFC 4291 §2.5.5.1): the first 96 bits are zero. :: and
		// ::1 are themselves refused; their IPv4 reading (0.0.0.0, 0.0.0.1) is too.
		compatible := true
		for _, x := range b[:12] {
			compatible = compatible && x == 0
		}
		if compatible {
			out = append(out, v4(12))
		}
	}
	return out
}

func (g *Guard) check(a netip.Addr) string {
	switch {
	case a.IsLoopback():
		return "loopback"
	case a.IsUnspecified() || (a.Is4() && thisNet.Contains(a)):
		return "unspecified"
	case a.IsLinkLocalUnicast():
		return "link-local"
	case a.IsMulticast():
		return "multicast"
	case a == broadcast:
		return "broadcast"
	case g.own[a]:
		return "an address of this proxy"
	}
	for _, p := range g.deny {
		if p.Contains(a) {
			return "in the denied range " + p.String()
		}
	}
	return ""
}

// Resolve checks address (host:port) and returns the literal addresses (ip:port) that may be
// dialed, in the resolver's order. network is tcp, tcp4 or tcp6.
func (g *Guard) Resolve(ctx context.Context, network, address string) ([]string, error) {
	var family string
	switch network {
	case "tcp":
		family = "ip"
	case "tcp4":
		family = "ip4"
	case "tcp6":
		family = "ip6"
	default:
		return nil, g.refuse(&DeniedError{Address: address, Reason: "network " + strconv.Quote(network) + " (only tcp)"})
	}
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return nil, g.refuse(&DeniedError{Address: address, Reason: "not host:port"})
	}
	if host == "" {
		return nil, g.refuse(&DeniedError{Address: address, Reason: "no host (this host)"})
	}
	var ips []netip.Addr
	if ip, ok := literal(host); ok {
		ips = []netip.Addr{ip}
	} else if strings.Contains(host, "%") {
		return nil, g.refuse(&DeniedError{Address: address, Reason: "an address with a zone"})
	} else if loopbackName(host) {
		return nil, g.refuse(&DeniedError{Address: address, Reason: "loopback by name"})
	} else {
		ips, err = g.Resolver.LookupNetIP(ctx, family, host)
		if err != nil {
			return nil, err
		}
		if len(ips) == 0 {
			return nil, fmt.Errorf("egress to %s: %s has no address", address, host)
		}
	}
	var allowed []string
	var first *DeniedError
	for _, ip := range ips {
		if (family == "ip4" && !ip.Unmap().Is4()) || (family == "ip6" && !ip.Is6()) {
			continue
		}
		if why := g.Check(ip); why != "" {
			if first == nil {
				first = &DeniedError{Address: address, IP: ip.String(), Reason: why}
			}
			continue
		}
		allowed = append(allowed, net.JoinHostPort(ip.String(), port))
	}
	if len(allowed) == 0 {
		if first == nil {
			return nil, fmt.Errorf("egress to %s: no %s address", address, family)
		}
		return nil, g.refuse(first)
	}
	if first != nil {
		g.logger.Warn("egress: refused addresses of a destination left out", zap.String("address", address),
			zap.String("ip", first.IP), zap.String("reason", first.Reason))
	}
	return allowed, nil
}

func (g *Guard) refuse(e *DeniedError) error {
	g.logger.Warn("egress refused", zap.String("address", e.Address), zap.String("ip", e.IP), zap.String("reason", e.Reason))
	return e
}

// loopbackName says whether host is a name for loopback by definition (RFC 6761 §6.3 and the
// usual /etc/hosts aliases), whatever a resolver answers for it.
func loopbackName(host string) bool {
	h := strings.ToLower(strings.TrimRight(host, "."))
	return h == "localhost" || strings.HasSuffix(h, ".localhost") || h == "localhost.localdomain" ||
		h == "ip6-localhost" || h == "ip6-loopback"
}

// literal reads host as an IP address: IPv6 (with its zone, if any), dotted IPv4, or an IPv4
// number in any form inet_aton accepts (1 to 4 parts, each decimal, octal with a leading 0 or
// hex with 0x; the last part fills the remaining bytes). A trailing dot is ignored.
func literal(host string) (netip.Addr, bool) {
	host = strings.TrimSuffix(host, ".")
	if a, err := netip.ParseAddr(host); err == nil {
		return a, true
	}
	return parseInetAton(host)
}

func parseInetAton(s string) (netip.Addr, bool) {
	parts := strings.Split(s, ".")
	if len(parts) == 0 || len(parts) > 4 {
		return netip.Addr{}, false
	}
	vals := make([]uint64, len(parts))
	for i, p := range parts {
		base := 10
		switch {
		case len(p) > 2 && (p[:2] == "0x" || p[:2] == "0X"):
			base, p = 16, p[2:]
		case p == "0x" || p == "0X":
			base, p = 16, "0" // inet_aton reads "0x" as 0
		case len(p) > 1 && p[0] == '0':
			base, p = 8, p[1:]
		}
		if p == "" {
			return netip.Addr{}, false
		}
		v, err := strconv.ParseUint(p, base, 32)
		if err != nil {
			return netip.Addr{}, false
		}
		vals[i] = v
	}
	last := len(vals) - 1
	for _, v := range vals[:last] {
		if v > 0xff {
			return netip.Addr{}, false
		}
	}
	if vals[last] >= 1<<(8*(4-last)) {
		return netip.Addr{}, false
	}
	n := vals[last]
	for i, v := range vals[:last] {
		n |= v << (8 * (3 - i))
	}
	return netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}), true
}

// DialContext resolves and checks address, then dials its allowed literal addresses in turn
// with g.Dial until one connects.
func (g *Guard) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	return g.Wrap(g.Dial)(ctx, network, address)
}

// Wrap returns a dial function that resolves and checks the address, then calls dial with each
// allowed literal address in turn until one connects.
func (g *Guard) Wrap(dial DialFunc) DialFunc {
	return func(ctx context.Context, network, address string) (net.Conn, error) {
		targets, err := g.Resolve(ctx, network, address)
		if err != nil {
			return nil, err
		}
		var errs []error
		for _, t := range targets {
			conn, err := dial(ctx, network, t)
			if err == nil {
				return conn, nil
			}
			errs = append(errs, err)
			if ctx.Err() != nil {
				break
			}
		}
		return nil, errors.Join(errs...)
	}
}
