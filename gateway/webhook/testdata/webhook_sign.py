"""Signs deliveries with PyPI's standardwebhooks and stripe, for TestPythonSigners.

Reads a JSON request on stdin:
  {"payload": text, "id": webhook-id, "timestamp": Unix seconds,
   "standard_secrets": [whsec_...], "stripe_secrets": [whsec_...]}
and prints, as JSON, the headers each library makes:
  {"standard": ["v1,...", ...], "stripe": ["t=...,v1=...", ...]}
one per secret, in order.
"""

import json
import sys
from datetime import datetime, timezone

import stripe
from standardwebhooks.webhooks import Webhook

req = json.load(sys.stdin)
at = datetime.fromtimestamp(req["timestamp"], tz=timezone.utc)
out = {
    "standard": [Webhook(s).sign(req["id"], at, req["payload"]) for s in req["standard_secrets"]],
    "stripe": [
        stripe.WebhookSignature.generate_signature_header(req["payload"], s, timestamp=req["timestamp"])
        for s in req["stripe_secrets"]
    ],
}
json.dump(out, sys.stdout)
