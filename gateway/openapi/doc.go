// Package openapi describes the gateway's REST API and serves the
// description: GET /openapi.json, an OpenAPI 3.1 document, and GET /docs,
// an HTML page of it.
//
// # Usage
//
// New builds the documents of the registry served; Docs.Document returns
// the one for a path and Document.Serve writes it. A reload calls
// Docs.Prepare with the new registry before the swap, so that a registry
// whose description does not build is refused before it is served. The
// gateway (gateway.Service) wires the routes: it authenticates nothing
// for them, answers other methods with its typed 405, and names the
// coding the caller accepts.
//
// # What the description says
//
// It is built from the loaded contracts and the limits, so that it says
// what this gateway takes:
//   - the body is {"events": [...]} with the wire's names (occurred_at,
//     partition_key, payload), each event one of the loaded types with the
//     JSON Schema of its contract as payload (contract.Schema);
//   - every status the route answers, with its body (the per-event answer,
//     the whole-request ErrorBody, or either) and Retry-After;
//   - occurred_at's skew window, which JSON Schema cannot say, in words and
//     in x-sluice-event-time-window;
//   - one server, the relative URL "/": the gateway that served the
//     description, as the client reached it.
//
// # Guarantees
//
//   - Never narrower than the gateway: every request the gateway accepts
//     in full, and every event it accepts, is valid under the description
//     (null for an absent field, occurred_at as Go's RFC 3339 parser reads
//     it, each payload in every spelling protojson reads). Where JSON
//     Schema cannot state a rule exactly, the description says less and
//     names the rule in words: a client generated from it refuses nothing
//     the gateway would take. The gateway's FuzzOpenAPIAdmitsAccepted
//     holds it to that.
//   - The page is rendered from the built description, so it cannot say
//     what the description does not.
//   - Each document is built and compressed (gzip, zstd) once per
//     registry; a request costs a write. Each coding has a strong ETag of
//     its own, and If-None-Match is answered 304.
//   - A registry swapped in without Prepare is described on its first
//     request; one whose description does not build keeps the previous
//     documents served, and the error is logged: the description never
//     refuses a request.
//   - Nothing in a document comes from the request: a URL made from its
//     Host would let a caller put a host of its choosing into a document
//     others cache.
//
// # What survives a crash
//
// Nothing is written: the documents are rebuilt from the contracts at
// start.
//
// # What it does not do
//
// It does not describe gRPC, the webhook or CloudEvents routes, or
// Content-Encoding and Grpc-Timeout as parameters (the operation's
// description says them in words). It does not negotiate Accept-Encoding:
// the caller names the coding.
package openapi
