// Command loadgen is the request-path benchmark's load generator (hack/bench/request-load.ts):
// a closed loop of keep-alive connections, each sending one GET after the other, like wrk.
// HTTP/1.1 requests are written from prepared bytes and answers read with net/http's parser
// on the raw connection, so the client costs little CPU beside the server it measures; HTTP/2
// goes through net/http's transport (one connection per worker). It prints one JSON line:
// requests, errors, statuses, requests/s and latency quantiles in microseconds.
//
//	loadgen -addr 127.0.0.1:8080 -host r0.bench.local -path / -c 16 -d 3s [-tls] [-h2] [-H 'X-A: b']
package main

import (
	"bufio"
	"crypto/tls"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"time"
)

type headers []string

func (h *headers) String() string     { return strings.Join(*h, ", ") }
func (h *headers) Set(v string) error { *h = append(*h, v); return nil }

type result struct {
	Requests int `json:"requests"`
	// All the answers, the warm-up's and the last in-flight ones too (for CPU per request).
	All      int            `json:"all"`
	Errors   int            `json:"errors"`
	Statuses map[string]int `json:"statuses"`
	Seconds  float64        `json:"seconds"`
	RPS      float64        `json:"rps"`
	P50us    float64        `json:"p50us"`
	P90us    float64        `json:"p90us"`
	P99us    float64        `json:"p99us"`
	FirstErr string         `json:"firstError,omitempty"`
}

type worker struct {
	lat      []time.Duration
	all      int
	statuses map[int]int
	errors   int
	firstErr error
}

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "host:port to connect to")
	host := flag.String("host", "localhost", "Host header (and TLS server name)")
	path := flag.String("path", "/", "request path")
	conns := flag.Int("c", 16, "connections (one request in flight on each)")
	dur := flag.Duration("d", 3*time.Second, "duration of the measurement")
	warm := flag.Duration("warmup", 300*time.Millisecond, "unmeasured load before it")
	useTLS := flag.Bool("tls", false, "TLS (certificate not verified)")
	h2 := flag.Bool("h2", false, "HTTP/2 over TLS")
	var hdrs headers
	flag.Var(&hdrs, "H", "extra request header 'Name: value' (repeatable)")
	flag.Parse()

	var req strings.Builder
	fmt.Fprintf(&req, "GET %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: kengine-loadgen\r\n", *path, *host)
	for _, h := range hdrs {
		req.WriteString(h + "\r\n")
	}
	req.WriteString("\r\n")
	raw := []byte(req.String())
	tlsConf := &tls.Config{ServerName: *host, InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}} //nolint:gosec // a benchmark against our own loopback proxy

	var start, stop time.Time
	var phase sync.RWMutex // measuring from start until stop
	phase.Lock()
	workers := make([]*worker, *conns)
	var wg sync.WaitGroup
	for i := range workers {
		w := &worker{statuses: map[int]int{}, lat: make([]time.Duration, 0, 1<<16)}
		workers[i] = w
		wg.Add(1)
		go func() {
			defer wg.Done()
			var do func() (int, error)
			if *h2 {
				tr := &http.Transport{
					TLSClientConfig:   &tls.Config{ServerName: *host, InsecureSkipVerify: true}, //nolint:gosec // as above
					ForceAttemptHTTP2: true,
				}
				client := &http.Client{Transport: tr}
				url := "https://" + *addr + *path
				do = func() (int, error) {
					r, _ := http.NewRequest("GET", url, nil)
					r.Host = *host
					for _, h := range hdrs {
						k, v, _ := strings.Cut(h, ":")
						r.Header.Set(strings.TrimSpace(k), strings.TrimSpace(v))
					}
					res, err := client.Do(r)
					if err != nil {
						return 0, err
					}
					_, _ = io.Copy(io.Discard, res.Body)
					_ = res.Body.Close()
					if res.ProtoMajor != 2 {
						return 0, fmt.Errorf("answered with %s, not HTTP/2", res.Proto)
					}
					return res.StatusCode, nil
				}
			} else {
				var c net.Conn
				var br *bufio.Reader
				do = func() (int, error) {
					if c == nil {
						var err error
						if *useTLS {
							c, err = tls.Dial("tcp", *addr, tlsConf)
						} else {
							c, err = net.Dial("tcp", *addr)
						}
						if err != nil {
							c = nil
							return 0, err
						}
						br = bufio.NewReaderSize(c, 16<<10)
					}
					if _, err := c.Write(raw); err != nil {
						_ = c.Close()
						c = nil
						return 0, err
					}
					res, err := http.ReadResponse(br, nil)
					if err == nil {
						_, err = io.Copy(io.Discard, res.Body)
						_ = res.Body.Close()
					}
					if err != nil || res.Close {
						_ = c.Close()
						c = nil
					}
					if err != nil {
						return 0, err
					}
					return res.StatusCode, nil
				}
			}
			for {
				t0 := time.Now()
				status, err := do()
				d := time.Since(t0)
				if err == nil {
					w.all++
				}
				if !phase.TryRLock() {
					if start.IsZero() {
						continue // warm-up
					}
					return // stopped
				}
				phase.RUnlock()
				if err != nil {
					w.errors++
					if w.firstErr == nil {
						w.firstErr = err
					}
					continue
				}
				w.statuses[status]++
				w.lat = append(w.lat, d)
			}
		}()
	}
	time.Sleep(*warm)
	start = time.Now()
	phase.Unlock()
	time.Sleep(*dur)
	phase.Lock()
	stop = time.Now()
	wg.Wait()

	out := result{Statuses: map[string]int{}, Seconds: stop.Sub(start).Seconds()}
	var all []time.Duration
	for _, w := range workers {
		all = append(all, w.lat...)
		out.All += w.all
		out.Errors += w.errors
		for s, n := range w.statuses {
			out.Statuses[fmt.Sprint(s)] += n
		}
		if w.firstErr != nil && out.FirstErr == "" {
			out.FirstErr = w.firstErr.Error()
		}
	}
	out.Requests = len(all)
	out.RPS = float64(out.Requests) / out.Seconds
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	q := func(p float64) float64 {
		if len(all) == 0 {
			return 0
		}
		return float64(all[int(p*float64(len(all)-1))].Nanoseconds()) / 1e3
	}
	out.P50us, out.P90us, out.P99us = q(0.5), q(0.9), q(0.99)
	_ = json.NewEncoder(os.Stdout).Encode(out)
}
