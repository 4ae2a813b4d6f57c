// GitHub's side of a delivery, with npm's @octokit/webhooks-methods:
// reads a JSON request on stdin and prints the answer as JSON.
//   {"op": "sign", "secret": s, "payload": text}
//     -> {"signature": "sha256=..."}   (the X-Hub-Signature-256 value)
//   {"op": "verify", "secret": s, "payload": text, "signature": "sha256=..."}
//     -> {"valid": true|false}
// The payload is UTF-8 text; octokit signs and verifies its UTF-8 bytes.
// Run by TestRealSenders from a directory whose node_modules holds the
// package.
import { sign, verify } from "@octokit/webhooks-methods";

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const req = JSON.parse(Buffer.concat(chunks).toString("utf8"));
let out;
switch (req.op) {
  case "sign":
    out = { signature: await sign(req.secret, req.payload) };
    break;
  case "verify":
    out = { valid: await verify(req.secret, req.payload, req.signature) };
    break;
  default:
    throw new Error(`unknown op ${req.op}`);
}
process.stdout.write(JSON.stringify(out));
