// Package outbound holds what our handlers share for the requests they send on their own,
// beside the proxied one (mirror copies, authorization checks): their HTTP client, and the
// removal of hop-by-hop headers (RFC 9110 §7.6.1), which belong to one connection, not to a
// message passed on over another.
package outbound

import (
	"net"
	"net/http"
	"strings"
	"time"
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

// Client sends requests with this overall timeout, dials within 3 s, keeps maxIdlePerHost
// idle connections per host and never follows a redirect (the answer is the redirect).
func Client(timeout time.Duration, maxIdlePerHost int) *http.Client {
	return &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			DialContext:         (&net.Dialer{Timeout: 3 * time.Second}).DialContext,
			MaxIdleConnsPerHost: maxIdlePerHost,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}
