package gateway

import (
	"net"

	"github.com/sluicehq/sluice/contract"

	"google.golang.org/grpc/codes"

	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
)

// WrapHTTPListener replaces the REST listener with wrap's, before Start,
// so a test can see what the server reads.
func WrapHTTPListener(s *Server, wrap func(net.Listener) net.Listener) {
	s.httpLis = wrap(s.httpLis)
}

// ReasonCode and ReasonHTTPStatus are the rejection table's gRPC code and
// HTTP status of a reason.
func ReasonCode(r ingestv1.Reason) codes.Code { return traits(r).code }
func ReasonHTTPStatus(r ingestv1.Reason) int  { return traits(r).http }

// GzipBomb and ZstdBomb are compression bombs of about a kilobyte.
var (
	GzipBomb = gzipBomb
	ZstdBomb = zstdBomb
)

// Served is r as the registry a Service serves, with no other version.
func Served(r *contract.Registry) *contract.Versions { return served(r) }

func served(r *contract.Registry) *contract.Versions {
	v, err := contract.NewVersions(r, 1)
	if err != nil {
		panic(err)
	}
	return v
}
