package kafkaconn

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The reasons of a RefusedError.
const (
	// ReasonAuthentication: the brokers refused the SASL credentials or
	// mechanism.
	ReasonAuthentication = "authentication"
	// ReasonCertificate: the TLS handshake failed on a certificate (the
	// broker's is not trusted or not for its name, or the broker refused
	// the client's), or the broker does not speak TLS.
	ReasonCertificate = "certificate"
)

// RefusedError is a connection refused for a reason that waiting does not
// change: a wrong password, or a certificate that does not verify. It stops
// start-up; a broker that is down does not.
type RefusedError struct {
	// Reason is ReasonAuthentication or ReasonCertificate.
	Reason string
	// Err is the client's error.
	Err error
}

func (e *RefusedError) Error() string {
	if e.Reason == ReasonAuthentication {
		return "kafkaconn: authentication refused by the brokers (check kafka.sasl): " + e.Err.Error()
	}
	return "kafkaconn: TLS certificate not accepted (check kafka.tls): " + e.Err.Error()
}

func (e *RefusedError) Unwrap() error { return e.Err }

// Refused returns err as a *RefusedError when it is an authentication or
// certificate failure, and nil otherwise. It is the one place where sluice
// tells a connection that is refused from one that is down.
func Refused(err error) *RefusedError {
	if err == nil {
		return nil
	}
	var re *RefusedError
	if errors.As(err, &re) {
		return re
	}
	switch {
	case errors.Is(err, kerr.SaslAuthenticationFailed), errors.Is(err, kerr.UnsupportedSaslMechanism),
		errors.Is(err, kerr.IllegalSaslState):
		return &RefusedError{Reason: ReasonAuthentication, Err: err}
	}
	var (
		verify    *tls.CertificateVerificationError
		unknownCA x509.UnknownAuthorityError
		invalid   x509.CertificateInvalidError
		hostname  x509.HostnameError
		alert     tls.AlertError
		header    tls.RecordHeaderError
	)
	switch {
	case errors.As(err, &verify), errors.As(err, &unknownCA), errors.As(err, &invalid), errors.As(err, &hostname),
		errors.As(err, &header):
		return &RefusedError{Reason: ReasonCertificate, Err: err}
	case errors.As(err, &alert) && certificateAlert(alert),
		remoteCertificateAlert(err):
		return &RefusedError{Reason: ReasonCertificate, Err: err}
	}
	return nil
}

// remoteCertificateAlert reports whether err is a TLS alert the broker sent
// about the client's certificate. crypto/tls gives such an alert only as
// text in a *net.OpError ("remote error: tls: certificate required").
func remoteCertificateAlert(err error) bool {
	var op *net.OpError
	if !errors.As(err, &op) || op.Op != "remote error" {
		return false
	}
	msg := op.Err.Error()
	return strings.HasPrefix(msg, "tls: ") && (strings.Contains(msg, "certificate") || strings.Contains(msg, "unknown certificate authority"))
}

// certificateAlert reports whether a TLS alert from the broker is about
// the client's certificate (RFC 8446 §6.2).
func certificateAlert(a tls.AlertError) bool {
	switch uint8(a) {
	case 42, 43, 44, 45, 46, 48, 116: // bad, unsupported, revoked, expired, unknown certificate; unknown CA; certificate required
		return true
	}
	return false
}

// Pinger is a client that asks a broker for metadata: *kgo.Client, or a
// component built on one (*publish.Producer).
type Pinger interface {
	Ping(ctx context.Context) error
}

// Check asks the cluster for metadata through cl, bounded by timeout. It
// returns a *RefusedError when the brokers refused the client's
// credentials or a certificate did not verify, another error when no
// broker answered (down, unreachable, slow: worth waiting for), and nil
// when one answered.
func Check(ctx context.Context, cl Pinger, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err := cl.Ping(ctx)
	if err == nil {
		return nil
	}
	if re := Refused(err); re != nil {
		return re
	}
	return fmt.Errorf("kafkaconn: no broker answered within %v: %w", timeout, err)
}

var _ Pinger = (*kgo.Client)(nil)
