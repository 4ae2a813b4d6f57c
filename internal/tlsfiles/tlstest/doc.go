// Package tlstest makes certificates for tests: a CA, server and client
// certificates it signs, written to files the way an operator rotates them,
// and a server's tls.Config (for kfake.TLS).
package tlstest
