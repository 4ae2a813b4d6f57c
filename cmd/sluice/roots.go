package main

// The image has no base and so no CA bundle; pollers, the HTTP sink and
// OAuth token endpoints still verify their servers. The fallback roots
// (Mozilla's, as the Go team packages them) are used only when the system
// has no roots of its own: on a host or a base image with a bundle, that
// bundle and SSL_CERT_FILE / SSL_CERT_DIR still apply.
import _ "golang.org/x/crypto/x509roots/fallback"
