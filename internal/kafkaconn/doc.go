// Package kafkaconn is the one Kafka connection block of sluice: the seed
// brokers, client id, dial timeout, TLS and SASL that every Kafka client
// of the process uses (the gateway's producer and drainer, the consumer
// group and its DLQ and parked producer, the pollers' group and cursor
// store, the dlq commands, the dev command and loadgen's direct mode).
//
// # Usage
//
//	cfg := kafkaconn.NewDefaultConfig()
//	cfg.Brokers = []string{"kafka-0:9093"}
//	cfg.SASL = kafkaconn.SASLConfig{Mechanism: "SCRAM-SHA-512", Username: "sluice", PasswordEnv: "KAFKA_PASSWORD"}
//	conn, err := cfg.Options(log) // once, at start
//	cl, err := kgo.NewClient(append(conn, kgo.ConsumerGroup("g"))...)
//	err = kafkaconn.Check(ctx, cl, 10*time.Second) // a *RefusedError (credential, certificate) stops start-up
//
// Options is the only place where the block becomes franz-go options;
// components add their own options after it and leave the connection
// alone. A component that opens Kafka clients takes these options as its
// constructor's conn []kgo.Opt argument.
//
//	err = kafkaconn.Read(ctx, cl, spans, 5*time.Second, fn) // listed offsets to their end
//
// Read is the one loop that reads partitions from listed offsets to the
// end offsets listed before it: each record of a Span once, in offset
// order per partition, until every span is read, fn stops, nothing arrives
// for the idle wait (the last offsets are gaps) or ctx ends.
//
// # Contract
//
//   - Validate names the wrong field by its path in the config file
//     (kafka.tls.ca_file, kafka.sasl.password_env, ...). It reads what the
//     block points at: the password's environment variable or file, the CA
//     bundle, the client certificate and key (which must parse and match).
//     The tls block is tlsfiles.ClientConfig, so the CA bundle and the
//     certificate are parsed strictly: every PEM block a certificate, at
//     least one.
//     A config that validates gives the same connection in Options.
//   - Setting any file under tls turns TLS on; TLS without a CA file
//     verifies the brokers against the system roots. The minimum version is
//     TLS 1.2. insecure_skip_verify is only ever set explicitly and is
//     logged as a warning when Options runs.
//   - The password is read once, when Options runs (from password_env or
//     password_file, a trailing newline trimmed), and is never logged nor
//     part of an error. SASL without TLS is allowed (private networks) and
//     logged as a warning: the credentials travel in clear (PLAIN) or are
//     open to an active attacker (SCRAM).
//   - Check tells apart what waiting does not change from what it does: an
//     authentication failure or a certificate the client cannot verify is
//     a *RefusedError; a broker that is down or slow is not. Only the former
//     should stop start-up: a gateway with a spool spools while Kafka is
//     down.
//
// # What it does not do
//
// It does not reload: rotated certificates or passwords take a restart.
// It does not configure authorization (ACLs are the cluster's business) nor
// SASL mechanisms other than PLAIN and SCRAM (no OAUTHBEARER, GSSAPI or
// AWS_MSK_IAM).
package kafkaconn
