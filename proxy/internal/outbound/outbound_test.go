package outbound

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

func TestReadPrefixKeepsTheBodyWhole(t *testing.T) {
	for _, c := range []struct {
		body       string
		limit      int64
		wantPrefix string
	}{
		{"0123456789", 4, "0123"},
		{"0123", 4, "0123"},
		{"01", 4, "01"},
		{"", 4, ""},
	} {
		prefix, rest, err := ReadPrefix(io.NopCloser(strings.NewReader(c.body)), c.limit, time.Minute)
		if err != nil || string(prefix) != c.wantPrefix {
			t.Errorf("%q: prefix %q, %v", c.body, prefix, err)
		}
		if all, _ := io.ReadAll(rest); string(all) != c.body {
			t.Errorf("%q: body handed on %q", c.body, all)
		}
	}
}

// A client that does not send in time: ErrBodyTimeout, and the body handed on still delivers
// every byte once they come.
func TestReadPrefixTimeoutHandsOnTheBodyUnchanged(t *testing.T) {
	pr, pw := io.Pipe()
	prefix, rest, err := ReadPrefix(pr, 8, time.Millisecond)
	if !errors.Is(err, ErrBodyTimeout) || prefix != nil {
		t.Fatalf("prefix %q, %v", prefix, err)
	}
	go func() {
		_, _ = io.WriteString(pw, "slow ")
		_, _ = io.WriteString(pw, "client body")
		_ = pw.Close()
	}()
	if all, err := io.ReadAll(rest); err != nil || string(all) != "slow client body" {
		t.Fatalf("body handed on %q, %v", all, err)
	}
}

// A read error is the body's error after the bytes that came before it.
func TestReadPrefixError(t *testing.T) {
	pr, pw := io.Pipe()
	go func() {
		_, _ = io.WriteString(pw, "ab")
		_ = pw.CloseWithError(errors.New("client went away"))
	}()
	prefix, rest, err := ReadPrefix(pr, 8, time.Minute)
	if err == nil || string(prefix) != "ab" {
		t.Fatalf("prefix %q, %v", prefix, err)
	}
	all, err := io.ReadAll(rest)
	if string(all) != "ab" || err == nil || !strings.Contains(err.Error(), "client went away") {
		t.Fatalf("body handed on %q, %v", all, err)
	}
}
