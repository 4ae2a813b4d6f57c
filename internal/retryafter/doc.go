// Package retryafter reads the HTTP Retry-After header, for every client
// in sluice that honors it (the HTTP sink, the pollers, the load
// generator).
package retryafter
