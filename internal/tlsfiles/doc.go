// Package tlsfiles is TLS from files for sluice: the server side of its
// listeners (one config block, its validation, and a Reloader that serves
// the certificate files as they are now, so rotating a certificate needs
// no restart), and the client side of its connections (ClientConfig).
//
// # The block
//
//	tls:
//	  cert_file: ""       # PEM certificate chain, leaf first; with key_file. Empty: no TLS
//	  key_file: ""        # PEM private key of the leaf
//	  client_ca_file: ""  # PEM CAs that sign client certificates
//	  client_auth: none   # none | request | require
//
// client_auth request asks for a client certificate and verifies one that
// is sent against client_ca_file; a connection without one is let in (the
// application then decides, for example by API key). require refuses a
// connection at the handshake unless its certificate verifies. Both need
// client_ca_file; client_ca_file without one of them is refused as a config
// error, since it would look like mTLS and not be. Every connection speaks
// TLS 1.2 or newer.
//
// ServerConfig.Validate reads the files as a start-up would: each readable,
// the chain parses, the key matches the leaf, the CA file holds at least one
// certificate and nothing else. A ConfigError names the field
// ("cert_file", "client_auth", …); the caller puts its own block's path in
// front.
//
// A listener's block is ListenerConfig: the same keys and insecure, which
// says that plaintext on an address other than loopback is meant.
// ListenerConfig.ValidateAt names the wrong field by its path in the config
// file, and PlaintextBeyondLoopback is the one rule for which addresses
// need TLS or insecure (Loopback decides what loopback is).
//
// # The client block
//
//	tls:
//	  enabled: false              # on also when ca_file, cert_file or key_file is set
//	  ca_file: ""                 # PEM CAs that sign the server's certificate; empty: system roots
//	  cert_file: ""               # client certificate (PEM), with key_file, for mTLS
//	  key_file: ""
//	  server_name: ""             # name checked instead of the host dialed
//	  insecure_skip_verify: false # tests only
//
// ClientConfig.Load reads the files once, into a tls.Config of TLS 1.2 or
// newer; the CA file and the certificate are parsed strictly, as the
// server's are. Its ConfigError names the field; the caller puts its own
// path in front (kafka.tls.ca_file). Client files are not reloaded.
//
// # Reload
//
// Reloader.Config is a *tls.Config whose GetConfigForClient serves the
// certificate, key and client CAs last loaded. On a handshake, at most once
// per second, it stats the three files; when any file's identity, size or
// modification time changed, it loads them again. Then:
//
//   - a load that succeeds serves every new connection from then on;
//     connections already open keep what they were handshaken with;
//   - a load that fails (a half-written file, a key that does not match
//     the certificate, a missing file) keeps serving the previous set, and
//     is tried again only when the files change again, so one broken state
//     is logged and counted once.
//
// Every reload is logged and counted in sluice_tls_reloads_total{listener,
// result}, on the Registerer passed in;
// sluice_tls_certificate_expiry_timestamp_seconds{listener} is the NotAfter
// of the certificate served. The first load, by NewReloader, is not a
// reload: it fails NewReloader instead.
//
// No goroutine is started: the first handshake after a change finds it.
// Replace files by rename; a handshake between the certificate's and the
// key's renames finds a mismatch, counts an error, and keeps the old pair
// until the second rename.
//
// # What it does not do
//
// No OCSP stapling, no revocation lists, no reload on the client side. A
// connection that is open when its certificate is rotated, or when a
// client CA is removed, is not closed.
package tlsfiles
