// Signs stdin (UTF-8 text) as GitHub does, with @octokit/webhooks-methods'
// sign, under the secret in SLUICE_TEST_SECRET, and prints the
// X-Hub-Signature-256 value. Run by TestOctokitSigns from a directory
// whose node_modules holds the package.
import { sign } from "@octokit/webhooks-methods";

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const payload = Buffer.concat(chunks).toString("utf8");
process.stdout.write(await sign(process.env.SLUICE_TEST_SECRET, payload));
