// Package reload serves a new contract registry without a restart: it
// swaps the registry of a contract.Versions when the descriptor set file
// changes, on SIGHUP, or when the admin endpoint asks, once the new
// registry has been built and checked whole.
//
// # Usage
//
//	versions, _ := contract.NewVersions(registry, cfg.KeepVersions)
//	r, err := reload.New(reload.Config{
//		Path: path, WatchInterval: 2 * time.Second, Policies: policies,
//		Load: func(b []byte) (*contract.Registry, error) { return contract.Load(b, types, opts...) },
//	}, versions, reload.WithPrepare(svc.PrepareContracts), reload.WithSignals(hup), reload.WithRegisterer(reg))
//	go r.Run(ctx)     // the watch and the signals, until ctx ends
//	r.Routes(adminMux) // GET /admin/contracts, POST /admin/contracts/reload
//
// # A reload
//
// A reload reads the file (at most MaxImageBytes) and, when its SHA-256
// differs from the image served:
//
//  1. loads it with Config.Load: it must decode, build, hold every event
//     type, and its rules must compile;
//  2. compares it with the registry served, per type under its policy
//     (contract.CompareRegistries); a finding that breaks the policy
//     refuses it as incompatible;
//  3. runs every WithPrepare step;
//  4. swaps it into Versions. Readers that took the registry before keep
//     it: a request finishes with the version it started with.
//
// A reload that fails at any step changes nothing that is served, and
// says why in the log (each breaking finding on a line of its own), in
// sluice_contract_reloads_total{result} and sluice_contract_reload_refused,
// and in the admin endpoint's answer. A file that holds what is served is
// "unchanged", whatever its path or modification time.
//
// # The watch
//
// Every WatchInterval the file is read and hashed; a rename of a new file
// into place and a write in place look alike. A content is loaded only
// once two reads in a row have found it: a file being written is read
// again, not loaded half done. A content the watch or a reload refused
// is not tried again by the watch until the file changes; SIGHUP and the
// admin endpoint always try. A file that cannot be read (missing for the
// moment of a rename) is no reload at all for the watch.
//
// # Metrics
//
//	sluice_contract_info{type,fingerprint}       1 per type, for the version served
//	sluice_contract_reloads_total{result}        reloaded, unchanged, failed, incompatible
//	sluice_contract_reload_refused               1 while the last reload tried was refused
//	sluice_contract_reload_duration_seconds      load to swap, of successful reloads
//
// # What it does not do
//
// It does not reload the config file: the event types, topics and
// policies are the ones the process started with, and a new type needs a
// restart. It does not coordinate gateways and consumers: each process
// reloads on its own, and Versions lets a consumer decode the records of
// the versions it kept while the tiers roll. It does not authenticate:
// the admin listener lets POST /admin/contracts/reload through only with
// a credential (admin.auth's token, or a client certificate its TLS
// verified), and GET /admin/contracts as it lets probes through. A
// reload only re-reads the file the config names.
package reload
