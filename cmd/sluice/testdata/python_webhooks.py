"""A Standard Webhooks and a Stripe sender's side of a delivery, with PyPI's
standardwebhooks and stripe, for TestRealSenders.

Reads a JSON request on stdin and prints the answer as JSON:

  {"op": "sign", "scheme": "standard", "secret": whsec, "payload": text,
   "id": webhook-id, "timestamp": Unix seconds}
    -> {"headers": {"webhook-id": ..., "webhook-timestamp": ..., "webhook-signature": ...}}
  {"op": "sign", "scheme": "stripe", "secret": whsec, "payload": text,
   "timestamp": Unix seconds}
    -> {"headers": {"Stripe-Signature": "t=...,v1=..."}}
  {"op": "verify", "scheme": "standard" | "stripe", "secret": whsec,
   "payload": text, "headers": {name: value}}
    -> {"valid": true} or {"valid": false, "error": text}

The payload is text; both libraries sign and verify its UTF-8 bytes.
Verification is the libraries' own: standardwebhooks' Webhook.verify (with
its five-minute tolerance) and stripe's WebhookSignature.verify_header
(without one: a consumer verifies a stored delivery later).
"""

import json
import sys
from datetime import datetime, timezone

import stripe
from standardwebhooks.webhooks import Webhook


def sign(req):
    if req["scheme"] == "standard":
        at = datetime.fromtimestamp(req["timestamp"], tz=timezone.utc)
        sig = Webhook(req["secret"]).sign(req["id"], at, req["payload"])
        return {"headers": {"webhook-id": req["id"], "webhook-timestamp": str(req["timestamp"]), "webhook-signature": sig}}
    header = stripe.WebhookSignature.generate_signature_header(req["payload"], req["secret"], timestamp=req["timestamp"])
    return {"headers": {"Stripe-Signature": header}}


def verify(req):
    try:
        if req["scheme"] == "standard":
            Webhook(req["secret"]).verify(req["payload"], req["headers"])
        else:
            stripe.WebhookSignature.verify_header(req["payload"], req["headers"].get("Stripe-Signature"), req["secret"])
    except Exception as e:  # the libraries' own refusals, reported as such
        return {"valid": False, "error": f"{type(e).__name__}: {e}"}
    return {"valid": True}


req = json.load(sys.stdin)
ops = {"sign": sign, "verify": verify}
if req.get("op") not in ops or req.get("scheme") not in ("standard", "stripe"):
    sys.exit(f"unknown op or scheme: {req.get('op')!r} {req.get('scheme')!r}")
json.dump(ops[req["op"]](req), sys.stdout)
