package egress

import (
	"context"
	"errors"
	"maps"
	"net"
	"net/netip"
	"os"
	"strings"
	"sync"
	"testing"
)

// fakeResolver answers from a table; answers[host] is consumed one answer per lookup, the last
// one repeating.
type fakeResolver struct {
	mu      sync.Mutex
	answers map[string][][]string
	lookups []string
}

func (r *fakeResolver) LookupNetIP(_ context.Context, network, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lookups = append(r.lookups, network+" "+host)
	seq, ok := r.answers[host]
	if !ok || len(seq) == 0 {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	answer := seq[0]
	if len(seq) > 1 {
		r.answers[host] = seq[1:]
	}
	var out []netip.Addr
	for _, s := range answer {
		out = append(out, netip.MustParseAddr(s))
	}
	return out, nil
}

// recorder is a dial function that records its targets and fails (nothing is really dialed).
type recorder struct {
	mu      sync.Mutex
	targets []string
	connect string // a target that "connects"
}

var errNoNet = errors.New("test dial: no network")

func (d *recorder) dial(_ context.Context, _, address string) (net.Conn, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.targets = append(d.targets, address)
	if address == d.connect {
		c1, c2 := net.Pipe()
		_ = c2.Close()
		return c1, nil
	}
	return nil, errNoNet
}

func newGuard(t *testing.T, deny []string, answers map[string][][]string) (*Guard, *fakeResolver, *recorder) {
	t.Helper()
	g, err := New(Config{Deny: deny}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := &fakeResolver{answers: answers}
	d := &recorder{}
	g.Resolver = r
	g.Dial = d.dial
	// The reasons these tests expect do not depend on this host's addresses (a local cluster
	// may put 10.96.0.1 on an interface): TestOwnInterfaceAddressesAreRefused covers those.
	g.own = map[netip.Addr]bool{}
	return g, r, d
}

// Every spelling of a refused destination is refused before any dial; the reason is named.
func TestRefusedDestinationsInEverySpelling(t *testing.T) {
	g, _, d := newGuard(t, []string{"10.96.0.0/12", "fd00:10::/64", "::ffff:192.168.0.0/112", "203.0.113.7"}, map[string][][]string{
		"tenant.example":     {{"127.0.0.1"}},
		"metadata.example":   {{"169.254.169.254"}},
		"mapped.example":     {{"::ffff:127.0.0.1"}},
		"v6loop.example":     {{"::1"}},
		"svc.example":        {{"10.96.0.1"}},
		"all-denied.example": {{"127.0.0.1", "::1", "169.254.169.254", "fe80::1"}},
	})
	for _, c := range []struct{ address, reason string }{
		// IPv4 loopback
		{"127.0.0.1:2019", "loopback"},
		{"127.0.0.1.:2019", "loopback"},
		{"127.255.255.254:80", "loopback"},
		{"127.1:2019", "loopback"},
		{"127.0.1:2019", "loopback"},
		{"0x7f.1:2019", "loopback"},
		{"0X7F.0.0.1:2019", "loopback"},
		{"0x7f000001:2019", "loopback"},
		{"2130706433:2019", "loopback"},
		{"017700000001:2019", "loopback"},
		{"0177.0.0.1:2019", "loopback"},
		{"0177.0.0.01:2019", "loopback"},
		{"127.000.000.001:2019", "loopback"},
		// IPv6 loopback and IPv4 in IPv6
		{"[::1]:2019", "loopback"},
		{"[0:0:0:0:0:0:0:1]:2019", "loopback"},
		{"[0000::0001]:2019", "loopback"},
		{"[::ffff:127.0.0.1]:2019", "loopback"},
		{"[::ffff:7f00:1]:2019", "loopback"},
		{"[::FFFF:7F00:0001]:2019", "loopback"},
		{"[0:0:0:0:0:ffff:127.0.0.1]:2019", "loopback"},
		{"[::127.0.0.1]:2019", "loopback"},
		{"[::7f00:1]:2019", "loopback"},
		{"[64:ff9b::127.0.0.1]:2019", "loopback"},
		{"[2002:7f00:1::]:2019", "loopback"},
		// unspecified
		{"0.0.0.0:2019", "unspecified"},
		{"0:2019", "unspecified"},
		{"0.1.2.3:2019", "unspecified"},
		{"[::]:2019", "unspecified"},
		{"[::ffff:0.0.0.0]:2019", "unspecified"},
		{":2019", "no host"},
		// link-local, the metadata service
		{"169.254.169.254:80", "link-local"},
		{"169.254.0.1:80", "link-local"},
		{"0xa9fea9fe:80", "link-local"},
		{"2852039166:80", "link-local"},
		{"0251.0376.0251.0376:80", "link-local"},
		{"169.254.43518:80", "link-local"},
		{"[::ffff:169.254.169.254]:80", "link-local"},
		{"[::ffff:a9fe:a9fe]:80", "link-local"},
		{"[::169.254.169.254]:80", "link-local"},
		{"[fe80::1]:80", "link-local"},
		{"[FE80::a:b:c:d]:80", "link-local"},
		{"[febf:ffff::1]:80", "link-local"},
		// zones
		{"[fe80::1%eth0]:80", "zone"},
		{"[fe80::1%25eth0]:80", "zone"},
		{"[2001:db8::1%eth0]:80", "zone"},
		{"[::1%lo]:80", "zone"},
		{"host.example%eth0:80", "zone"},
		// multicast and broadcast
		{"224.0.0.1:80", "multicast"},
		{"239.255.255.250:1900", "multicast"},
		{"[ff02::1]:80", "multicast"},
		{"[ff05::1:3]:547", "multicast"},
		{"[::ffff:224.0.0.251]:5353", "multicast"},
		{"255.255.255.255:80", "broadcast"},
		// the listed CIDRs, in every form
		{"10.96.0.1:443", "denied range 10.96.0.0/12"},
		{"10.111.255.255:443", "denied range 10.96.0.0/12"},
		{"[::ffff:10.96.0.1]:443", "denied range 10.96.0.0/12"},
		{"[fd00:10::5]:443", "denied range fd00:10::/64"},
		{"192.168.3.4:80", "denied range 192.168.0.0/16"},
		{"203.0.113.7:80", "denied range 203.0.113.7/32"},
		// names resolving to refused addresses
		{"tenant.example:80", "127.0.0.1 is loopback"},
		{"metadata.example:80", "169.254.169.254 is link-local"},
		{"mapped.example:80", "::ffff:127.0.0.1 is loopback"},
		{"v6loop.example:80", "::1 is loopback"},
		{"svc.example:80", "denied range"},
		{"all-denied.example:80", "loopback"},
		// not host:port
		{"127.0.0.1", "not host:port"},
		{"tenant.example", "not host:port"},
	} {
		_, err := g.DialContext(context.Background(), "tcp", c.address)
		var denied *DeniedError
		if !errors.As(err, &denied) || !strings.Contains(err.Error(), c.reason) {
			t.Errorf("%s: got %v, want a refusal naming %q", c.address, err, c.reason)
			continue
		}
		if !strings.HasPrefix(err.Error(), "egress to "+c.address+" refused: ") {
			t.Errorf("%s: message %q does not name the destination", c.address, err)
		}
	}
	if len(d.targets) != 0 {
		t.Fatalf("refused destinations were dialed: %v", d.targets)
	}
}

// Public addresses in every spelling are dialed, as the literal that was checked.
func TestAllowedDestinationsAreDialedAsTheCheckedLiteral(t *testing.T) {
	g, r, d := newGuard(t, []string{"10.96.0.0/12"}, map[string][][]string{
		"app.example": {{"93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946"}},
	})
	for _, c := range []struct{ address, want string }{
		{"93.184.216.34:80", "93.184.216.34:80"},
		{"93.184.216.34.:80", "93.184.216.34:80"},
		{"0x5d.0xb8.0xd8.0x22:80", "93.184.216.34:80"},
		{"1572395042:80", "93.184.216.34:80"},
		{"10.95.255.255:80", "10.95.255.255:80"},
		{"10.112.0.0:80", "10.112.0.0:80"},
		{"[2606:2800:220:1:248:1893:25c8:1946]:443", "[2606:2800:220:1:248:1893:25c8:1946]:443"},
		{"[::ffff:93.184.216.34]:80", "[::ffff:93.184.216.34]:80"},
		{"[64:ff9b::93.184.216.34]:80", "[64:ff9b::5db8:d822]:80"},
		{"010.0.0.1:80", "8.0.0.1:80"},
	} {
		d.targets = nil
		_, err := g.DialContext(context.Background(), "tcp", c.address)
		if !errors.Is(err, errNoNet) || len(d.targets) != 1 || d.targets[0] != c.want {
			t.Errorf("%s: err %v, dialed %v, want %s", c.address, err, d.targets, c.want)
		}
	}
	if len(r.lookups) != 0 {
		t.Fatalf("literal addresses were looked up: %v", r.lookups)
	}
	// A name: every allowed address in turn, then the errors of each.
	d.targets = nil
	_, err := g.DialContext(context.Background(), "tcp", "app.example:8080")
	want := []string{"93.184.216.34:8080", "[2606:2800:220:1:248:1893:25c8:1946]:8080"}
	if !errors.Is(err, errNoNet) || strings.Join(d.targets, " ") != strings.Join(want, " ") {
		t.Fatalf("app.example: err %v, dialed %v", err, d.targets)
	}
	// tcp4 and tcp6 keep to their family, and look up only it.
	d.targets = nil
	_, _ = g.DialContext(context.Background(), "tcp4", "app.example:80")
	_, _ = g.DialContext(context.Background(), "tcp6", "app.example:80")
	if strings.Join(d.targets, " ") != "93.184.216.34:80 [2606:2800:220:1:248:1893:25c8:1946]:80" {
		t.Fatalf("per family: dialed %v", d.targets)
	}
	if got := strings.Join(r.lookups, ","); got != "ip app.example,ip4 app.example,ip6 app.example" {
		t.Fatalf("lookups %s", got)
	}
}

// A name resolving to a public and a refused address: only the public one is dialed.
func TestMixedAnswerDialsOnlyTheAllowedAddresses(t *testing.T) {
	g, _, d := newGuard(t, nil, map[string][][]string{
		"mixed.example": {{"127.0.0.1", "93.184.216.34", "::1", "169.254.169.254", "2606:2800:220:1:248:1893:25c8:1946"}},
	})
	d.connect = "[2606:2800:220:1:248:1893:25c8:1946]:80"
	conn, err := g.DialContext(context.Background(), "tcp", "mixed.example:80")
	if err != nil {
		t.Fatal(err)
	}
	_ = conn.Close()
	if got := strings.Join(d.targets, " "); got != "93.184.216.34:80 [2606:2800:220:1:248:1893:25c8:1946]:80" {
		t.Fatalf("dialed %s", got)
	}
}

// DNS rebinding: a name answers a public address, then loopback. Each dial resolves once and
// connects to the address it checked, so the loopback answer is refused and never dialed.
func TestRebindingNeverReachesLoopback(t *testing.T) {
	g, r, d := newGuard(t, nil, map[string][][]string{
		"rebind.example": {{"93.184.216.34"}, {"127.0.0.1"}, {"93.184.216.34", "127.0.0.1"}, {"::ffff:127.0.0.1"}},
	})
	d.connect = "93.184.216.34:80"
	var refused int
	for i := range 6 {
		conn, err := g.DialContext(context.Background(), "tcp", "rebind.example:80")
		if err == nil {
			_ = conn.Close()
			continue
		}
		var denied *DeniedError
		if !errors.As(err, &denied) || denied.Reason[:8] != "loopback" {
			t.Fatalf("dial %d: %v", i, err)
		}
		refused++
	}
	for _, target := range d.targets {
		if target != "93.184.216.34:80" {
			t.Fatalf("dialed %s (all: %v)", target, d.targets)
		}
	}
	if len(r.lookups) != 6 || len(d.targets) != 2 || refused != 4 {
		t.Fatalf("%d lookups, %d dials, %d refused", len(r.lookups), len(d.targets), refused)
	}
}

// Names that are loopback by definition are refused without a lookup.
func TestLoopbackNamesAreRefusedWithoutALookup(t *testing.T) {
	g, r, d := newGuard(t, nil, nil)
	for _, address := range []string{"localhost:2019", "LOCALHOST:2019", "localhost.:2019", "localhost..:2019",
		"a.localhost:80", "A.B.LocalHost.:80", "localhost.localdomain:80", "ip6-localhost:80", "IP6-Loopback:80"} {
		_, err := g.DialContext(context.Background(), "tcp", address)
		var denied *DeniedError
		if !errors.As(err, &denied) || denied.Reason != "loopback by name" {
			t.Errorf("%s: %v", address, err)
		}
	}
	if len(d.targets) != 0 || len(r.lookups) != 0 {
		t.Fatalf("dialed %v, looked up %v", d.targets, r.lookups)
	}
}

// The system resolver: a name /etc/hosts maps to 127.0.0.1 (this host's own name) is refused.
func TestSystemResolverAnswerIsChecked(t *testing.T) {
	name, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	addrs, err := net.DefaultResolver.LookupNetIP(context.Background(), "ip", name)
	if err != nil || len(addrs) == 0 {
		t.Skipf("this host's name %q does not resolve here: %v", name, err)
	}
	g, err := New(Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	d := &recorder{}
	g.Dial = d.dial
	_, err = g.DialContext(context.Background(), "tcp", net.JoinHostPort(name, "2019"))
	var denied *DeniedError
	if !errors.As(err, &denied) || len(d.targets) != 0 {
		t.Fatalf("%s (%v): %v, dialed %v", name, addrs, err, d.targets)
	}
}

// The addresses of this host's interfaces are refused, whatever they are.
func TestOwnInterfaceAddressesAreRefused(t *testing.T) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	g, err := New(Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	d := &recorder{}
	g.Dial = d.dial
	n := 0
	for _, a := range addrs {
		ipnet, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		ip, _ := netip.AddrFromSlice(ipnet.IP)
		ip = ip.Unmap()
		if g.Check(ip) == "" {
			t.Errorf("%s (of this host) is allowed", ip)
		}
		n++
	}
	if n == 0 {
		t.Fatal("no interface addresses")
	}
	// An address of our own that no built-in rule refuses, given to the guard as its own.
	own := netip.MustParseAddr("198.51.100.9")
	g.own = maps.Clone(g.own) // the shared map stays as it was read
	g.own[own] = true
	_, err = g.DialContext(context.Background(), "tcp", "198.51.100.9:80")
	if err == nil || !strings.Contains(err.Error(), "an address of this proxy") || len(d.targets) != 0 {
		t.Fatalf("own address: %v, dialed %v", err, d.targets)
	}
}

func TestOnlyTCPIsDialed(t *testing.T) {
	g, _, d := newGuard(t, nil, nil)
	for _, network := range []string{"udp", "unix", "ip", ""} {
		if _, err := g.DialContext(context.Background(), network, "93.184.216.34:80"); err == nil ||
			!strings.Contains(err.Error(), "only tcp") {
			t.Errorf("%q: %v", network, err)
		}
	}
	if len(d.targets) != 0 {
		t.Fatalf("dialed %v", d.targets)
	}
}

func TestResolutionFailuresAreErrors(t *testing.T) {
	g, _, d := newGuard(t, nil, map[string][][]string{"empty.example": {{}}})
	for _, address := range []string{"missing.example:80", "empty.example:80"} {
		if _, err := g.DialContext(context.Background(), "tcp", address); err == nil {
			t.Errorf("%s: no error", address)
		}
	}
	if len(d.targets) != 0 {
		t.Fatalf("dialed %v", d.targets)
	}
}

func TestNewRefusesBadCIDRs(t *testing.T) {
	for _, s := range []string{"10.0.0.0/33", "not-a-cidr", "fe80::1%eth0", "10.0.0.0/", ""} {
		if _, err := New(Config{Deny: []string{"10.0.0.0/8", s}}, nil); err == nil || !strings.Contains(err.Error(), "deny[1]") {
			t.Errorf("%q: %v", s, err)
		}
	}
	g, err := New(Config{Deny: []string{"10.1.2.3/8", " 192.0.2.1 ", "::ffff:198.51.100.0/120"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range g.deny {
		got = append(got, p.String())
	}
	if strings.Join(got, " ") != "10.0.0.0/8 192.0.2.1/32 198.51.100.0/24" {
		t.Fatalf("deny list %v", got)
	}
}

func TestParseInetAton(t *testing.T) {
	for s, want := range map[string]string{
		"127.0.0.1": "127.0.0.1", "127.1": "127.0.0.1", "1.2.3": "1.2.0.3", "0x7f.0x1": "127.0.0.1",
		"4294967295": "255.255.255.255", "0": "0.0.0.0", "00": "0.0.0.0", "0x0": "0.0.0.0", "1.0x10000": "1.1.0.0",
		"256.0.0.1": "", "1.2.3.4.5": "", "4294967296": "", "1..2": "", "": "", "a.b.c.d": "", "08.0.0.1": "",
		"1.2.3.256": "", "0xg": "", "-1": "", "+1": "", "1.2.65536": "", "1.16777215": "1.255.255.255",
	} {
		a, ok := parseInetAton(s)
		got := ""
		if ok {
			got = a.String()
		}
		if got != want {
			t.Errorf("%q: got %q, want %q", s, got, want)
		}
	}
}
