package tracing

import (
	"crypto/tls"

	"google.golang.org/grpc/credentials"
)

// credentialsFrom is the gRPC exporter's transport security for cfg.
func credentialsFrom(cfg *tls.Config) credentials.TransportCredentials {
	return credentials.NewTLS(cfg)
}
