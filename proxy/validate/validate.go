// Package validate adds POST /kengine/validate to Caddy's admin API: it answers whether a
// config would load, without loading it, so the controller can find which object of a refused
// config the proxy refuses (capabilities/reconcile/culprits.ts) while the proxy keeps serving
// what it runs.
//
// The body is a config as /load takes it. The answer is 200 when caddy.Validate accepts it, or
// 400 with Caddy's error ({"error": "..."}, as /load answers). caddy.Validate (Caddy v2.11.9,
// caddy.go) provisions the config's apps in a context of their own and then cancels that
// context, which runs every provisioned module's Cleanup: it starts no app (so it binds no
// listener: the http and layer4 apps listen in Start), does not replace the admin server (it
// calls provisionContext with replaceAdminServer false) and does not touch the running config.
// What it cannot find: errors that only Start reports (a port already in use).
//
// Validations run one at a time (provisioning sets process-wide defaults such as CertMagic's
// storage while it runs), and the body is capped at MaxBodyBytes.
package validate

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"

	"github.com/caddyserver/caddy/v2"
)

// Path is where the admin API answers.
const Path = "/kengine/validate"

// MaxBodyBytes caps the config a validation reads (a 3,000-route config is about 450 KiB).
const MaxBodyBytes = 16 << 20

func init() {
	caddy.RegisterModule(Validator{})
}

// Validator is the admin API module admin.api.kengine_validate.
type Validator struct{}

// CaddyModule returns the Caddy module information.
func (Validator) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "admin.api.kengine_validate",
		New: func() caddy.Module { return new(Validator) },
	}
}

// Routes returns the validation route.
func (Validator) Routes() []caddy.AdminRoute {
	return []caddy.AdminRoute{{Pattern: Path, Handler: caddy.AdminHandlerFunc(serve)}}
}

var one sync.Mutex

func serve(w http.ResponseWriter, r *http.Request) error {
	if r.Method != http.MethodPost {
		return caddy.APIError{
			HTTPStatus: http.StatusMethodNotAllowed,
			Err:        fmt.Errorf("method %s not allowed", r.Method),
		}
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return caddy.APIError{
				HTTPStatus: http.StatusRequestEntityTooLarge,
				Err:        fmt.Errorf("config larger than %d bytes", MaxBodyBytes),
			}
		}
		return caddy.APIError{HTTPStatus: http.StatusBadRequest, Err: fmt.Errorf("reading config: %v", err)}
	}
	if err := Config(body); err != nil {
		return caddy.APIError{HTTPStatus: http.StatusBadRequest, Err: err}
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte("{}\n"))
	return nil
}

// Config reports whether Caddy would load this config (/load's body), without loading it.
func Config(body []byte) error {
	var cfg *caddy.Config
	if err := caddy.StrictUnmarshalJSON(caddy.RemoveMetaFields(body), &cfg); err != nil {
		return err
	}
	if cfg == nil {
		cfg = new(caddy.Config)
	}
	one.Lock()
	defer one.Unlock()
	return caddy.Validate(cfg)
}

var _ caddy.AdminRouter = Validator{}
