// Package pulltest holds what the tests of the pollers, their ownership
// and the demo partner share: a clock that advances by every sleep, an
// in-memory cursor store, an ingester that records what it admits, a
// scripted partner API and a runner of pollers that the test stops.
package pulltest
