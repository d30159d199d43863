package deadline

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
)

func statusOf(t *testing.T, err error) int {
	t.Helper()
	var he caddyhttp.HandlerError
	if !errors.As(err, &he) {
		t.Fatalf("want a caddyhttp.HandlerError, got %v", err)
	}
	return he.StatusCode
}

func run(d Deadline, next caddyhttp.HandlerFunc) (*httptest.ResponseRecorder, error) {
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "http://app.example.com/", nil)
	return rec, d.ServeHTTP(rec, req, next)
}

// A route that is still waiting when the deadline passes (an attempt in flight, a retry's
// backoff) and then fails, whatever status it would give: 504.
func TestExpiredWithoutResponseIs504(t *testing.T) {
	for _, status := range []int{http.StatusInternalServerError, http.StatusBadGateway, 499} {
		_, err := run(Deadline{Timeout: caddy.Duration(20 * time.Millisecond)},
			func(w http.ResponseWriter, r *http.Request) error {
				<-r.Context().Done()
				return caddyhttp.Error(status, r.Context().Err())
			})
		if got := statusOf(t, err); got != http.StatusGatewayTimeout {
			t.Fatalf("route failing with %d after the deadline: got %d, want 504", status, got)
		}
	}
}

// Before the deadline, the route's own answer and error pass unchanged.
func TestBeforeDeadlineUnchanged(t *testing.T) {
	d := Deadline{Timeout: caddy.Duration(time.Minute)}
	rec, err := run(d, func(w http.ResponseWriter, r *http.Request) error {
		if _, ok := r.Context().Deadline(); !ok {
			t.Error("the route's context has no deadline")
		}
		w.WriteHeader(http.StatusTeapot)
		return nil
	})
	if err != nil || rec.Code != http.StatusTeapot {
		t.Fatalf("got %d, %v; want 418, nil", rec.Code, err)
	}
	_, err = run(d, func(http.ResponseWriter, *http.Request) error {
		return caddyhttp.Error(http.StatusInternalServerError, errors.New("last attempt"))
	})
	if got := statusOf(t, err); got != http.StatusInternalServerError {
		t.Fatalf("got %d, want the route's 500", got)
	}
}

// A response already started cannot be replaced: the route's result stands.
func TestStartedResponseKept(t *testing.T) {
	rec, err := run(Deadline{Timeout: caddy.Duration(20 * time.Millisecond)},
		func(w http.ResponseWriter, r *http.Request) error {
			w.WriteHeader(http.StatusOK)
			<-r.Context().Done()
			return r.Context().Err()
		})
	if rec.Code != http.StatusOK || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %d, %v; want 200 and the route's own error", rec.Code, err)
	}
}

func TestValidate(t *testing.T) {
	if err := (&Deadline{}).Validate(); err == nil {
		t.Fatal("a zero timeout must be refused")
	}
	if err := (&Deadline{Timeout: caddy.Duration(time.Second)}).Validate(); err != nil {
		t.Fatal(err)
	}
}
