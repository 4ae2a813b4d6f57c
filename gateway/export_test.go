package gateway

import "net"

// WrapHTTPListener replaces the REST listener with wrap's, before Start,
// so a test can see what the server reads.
func WrapHTTPListener(s *Server, wrap func(net.Listener) net.Listener) {
	s.httpLis = wrap(s.httpLis)
}
