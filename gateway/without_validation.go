//go:build sluicebench

package gateway

// WithoutValidation decodes payloads without running their contracts'
// rules, to price validation in benchmarks. The envelope's rules, the size
// limits and the skew window still apply. It exists only in binaries built
// with the sluicebench tag (scripts/bench.sh builds one), so that no
// production build, and no config, can turn validation off.
func WithoutValidation() Option {
	return optionFunc(func(o *options) { o.skipValidation = true })
}
