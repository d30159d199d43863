package routetable

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// naiveMatch is the rule written out: every key that matches the host, the most specific
// winning (exact, then the wildcard with the longest suffix, then "*").
func naiveMatch(keys []string, host string) string {
	h := strings.ToLower(host)
	if i := strings.LastIndexByte(h, ':'); i >= 0 && !strings.HasPrefix(h, "[") {
		h = h[:i]
	}
	best, bestLen := "", -1
	for _, k := range keys {
		k = strings.ToLower(k)
		switch {
		case k == h:
			return k
		case k == AnyHost:
			if bestLen < 0 {
				best, bestLen = k, 0
			}
		case strings.HasPrefix(k, "*."):
			suffix := k[1:] // ".example.com"
			if strings.HasSuffix(h, suffix) && len(h) > len(suffix) && len(suffix) > bestLen {
				best, bestLen = k, len(suffix)
			}
		}
	}
	return best
}

// indexed builds a snapshot whose entries are told apart by their sum, one per key.
func indexed(t *testing.T, keys []string) (*snapshot, map[*entry]string) {
	t.Helper()
	s := &snapshot{exact: map[string]*entry{}, wildcard: map[string]*entry{}}
	names := map[*entry]string{}
	for _, k := range keys {
		p, err := parsePattern(k)
		if err != nil {
			t.Fatal(err)
		}
		e := &entry{}
		names[e] = strings.ToLower(k)
		switch p.kind {
		case exactHost:
			s.exact[p.key] = e
		case wildcardHost:
			s.wildcard[p.key] = e
		default:
			s.fallback = e
		}
	}
	return s, names
}

func TestHostIndex(t *testing.T) {
	keys := []string{"foo.example.com", "*.example.com", "*.bar.example.com", "bar.example.com", "*.com", "*", "10.0.0.1", "::1"}
	s, names := indexed(t, keys)
	cases := map[string]string{
		"foo.example.com":         "foo.example.com",   // exact beats wildcard
		"FOO.Example.COM":         "foo.example.com",   // case-insensitive
		"foo.example.com:8080":    "foo.example.com",   // port ignored
		"foo.example.com.":        "foo.example.com",   // trailing dot
		"x.example.com":           "*.example.com",     // wildcard
		"a.b.example.com":         "*.example.com",     // a wildcard covers several labels
		"x.bar.example.com":       "*.bar.example.com", // longest suffix wins
		"y.x.bar.example.com:443": "*.bar.example.com",
		"bar.example.com":         "bar.example.com",
		"example.com":             "*.com", // "*.example.com" does not match example.com itself
		"com":                     "*",
		"unknown.org":             "*",
		"10.0.0.1:80":             "10.0.0.1",
		"[::1]:8443":              "::1",
		"[::1]":                   "::1",
		"":                        "*",
	}
	for host, want := range cases {
		e := s.lookup(host)
		if got := names[e]; got != want {
			t.Errorf("lookup(%q) = %q, want %q", host, got, want)
		}
	}
	s.fallback = nil
	if e := s.lookup("unknown.org"); e != nil {
		t.Errorf("no default entry: lookup(unknown.org) = %q, want none", names[e])
	}
}

// The index agrees with the rule written out, on random tables and hosts.
func TestHostIndexAgreesWithTheRule(t *testing.T) {
	labels := []string{"a", "b", "c", "example", "com", "Io"}
	for seed := uint64(0); seed < 300; seed++ {
		r := rand.New(rand.NewPCG(seed, 16))
		name := func() string {
			n := 1 + r.IntN(4)
			parts := make([]string, n)
			for i := range parts {
				parts[i] = labels[r.IntN(len(labels))]
			}
			return strings.Join(parts, ".")
		}
		seen := map[string]bool{}
		var keys []string
		for range r.IntN(12) {
			k := name()
			switch r.IntN(3) {
			case 0:
				k = "*." + k
			case 1:
				if r.IntN(4) == 0 {
					k = AnyHost
				}
			}
			if !seen[strings.ToLower(k)] {
				seen[strings.ToLower(k)] = true
				keys = append(keys, k)
			}
		}
		s, names := indexed(t, keys)
		for range 20 {
			host := name()
			if r.IntN(3) == 0 {
				host += fmt.Sprintf(":%d", r.IntN(65536))
			}
			want := naiveMatch(keys, host)
			if got := names[s.lookup(host)]; got != want {
				t.Fatalf("seed %d: keys %q: lookup(%q) = %q, want %q", seed, keys, host, got, want)
			}
		}
	}
}

func TestPatternsAreChecked(t *testing.T) {
	for _, bad := range []string{"", "foo.*.com", "*foo.com", "foo..com", "foo.com:80", "a/b", "**", "*.", "x y"} {
		if _, err := parsePattern(bad); err == nil {
			t.Errorf("parsePattern(%q) accepted", bad)
		}
	}
	for _, good := range []string{"*", "*.example.com", "Foo.Example.com", "10.0.0.1", "fe80::1", "under_score.io"} {
		if _, err := parsePattern(good); err != nil {
			t.Errorf("parsePattern(%q): %v", good, err)
		}
	}
}

func TestRequestHostAllocatesOnlyForUpperCase(t *testing.T) {
	if n := testing.AllocsPerRun(100, func() { _ = requestHost("foo.example.com:8080") }); n != 0 {
		t.Errorf("requestHost of a lower-case host allocates %v times", n)
	}
}
