package routetable

import (
	"encoding/json"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
)

// sharedRegexps lets the regular-expression matchers provisioned together (one change, or one
// merge) share one compiled regular expression per distinct matcher config. Caddy compiles one
// for every path_regexp, header_regexp and vars_regexp matcher it provisions, and a controller's
// route lists repeat a few patterns over thousands of hosts (a PathPrefix is a path_regexp);
// each compiled copy costs a few KB of heap. A *regexp.Regexp is safe for concurrent use, and
// the shared copy is provisioned from the same config, so matching is unchanged. Scoped to one
// provisioning so that patterns no route uses any more are not kept.
type sharedRegexps map[string]caddyhttp.MatchRegexp

// routes shares the regular expressions of provisioned routes, their subroutes' included. Call
// it before the routes serve a request.
func (s sharedRegexps) routes(rl caddyhttp.RouteList) {
	for i := range rl {
		for _, set := range rl[i].MatcherSets {
			for _, m := range set {
				switch m := m.(type) {
				case *caddyhttp.MatchPathRE:
					s.share(&m.MatchRegexp)
				case *caddyhttp.MatchHeaderRE:
					for _, re := range *m {
						s.share(re)
					}
				case *caddyhttp.MatchVarsRE:
					for _, re := range *m {
						s.share(re)
					}
				}
			}
		}
		for _, h := range rl[i].Handlers {
			if sub, ok := h.(*caddyhttp.Subroute); ok {
				s.routes(sub.Routes)
			}
		}
	}
}

// share replaces a provisioned matcher by the first one with the same config (its exported
// fields: name and pattern), or keeps it as that one.
func (s sharedRegexps) share(re *caddyhttp.MatchRegexp) {
	if re == nil {
		return
	}
	key, err := json.Marshal(re)
	if err != nil {
		return
	}
	if first, ok := s[string(key)]; ok {
		*re = first
	} else {
		s[string(key)] = *re
	}
}
