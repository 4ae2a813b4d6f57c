// Package utctime is sluice's one time layout: RFC 3339 in UTC with nine
// fractional digits. Times in this form sort as strings, in Kafka headers,
// DLQ envelopes and sink tables alike.
package utctime
