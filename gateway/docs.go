package gateway

import (
	"net/http"

	"github.com/sluicehq/sluice/gateway/openapi"
	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
)

// docsLimits are the limits the REST API's description states.
func docsLimits(l LimitsConfig) openapi.Limits {
	return openapi.Limits{
		MaxEventsPerRequest: l.MaxEventsPerRequest,
		MaxRequestBytes:     l.MaxRequestBytes,
		MaxEventAge:         l.MaxEventAge,
		MaxEventFuture:      l.MaxEventFuture,
	}
}

// docsRoutes serves GET /openapi.json and GET /docs (package openapi) of
// the registry served, unauthenticated, in the coding the caller accepts
// (encodeAnswers), and passes every other path on to next. Other methods
// on them are the typed 405.
func (s *Service) docsRoutes(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		doc := s.docs.Document(r.URL.EscapedPath())
		if doc == nil {
			next.ServeHTTP(w, r)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			skipBody(w, r)
			w.Header().Set("Allow", "GET, HEAD")
			writeFailureStatus(w, &Failure{Reason: ingestv1.Reason_MALFORMED, Message: "method " + r.Method + " not allowed: " + r.URL.Path + " is GET"}, http.StatusMethodNotAllowed)
			return
		}
		coding := codingIdentity
		if aw, ok := w.(*answerWriter); ok {
			coding = aw.coding
		}
		doc.Serve(w, r, coding.String())
	})
}
