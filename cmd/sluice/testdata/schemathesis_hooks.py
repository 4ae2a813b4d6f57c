"""Schemathesis hooks for the served description of POST /v1/events.

JSON Schema cannot say "within max_age before and max_future after now",
which the description states for occurred_at in words and in
x-sluice-event-time-window. This hook moves every occurred_at that the
schema admits into that window, keeping its variety (the offset into the
window comes from the generated value), also one that matches the pattern
but names no day (the 30th of February): the pattern is wider than the
calendar. A value the schema does not admit (a negative case's mutation)
is left as generated.
"""

import hashlib
import os
import re
from datetime import datetime, timedelta, timezone

import schemathesis

# The description's occurred_at pattern: RFC 3339 as Go's time.Parse reads it.
_RFC3339 = re.compile(
    r"^[0-9]{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12][0-9]|3[01])T(?:[01]?[0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]"
    r"(?:[.,][0-9]+)?(?:Z|[+-](?:[01][0-9]|2[0-4]):(?:[0-5][0-9]|60))$"
)
_max_age, _max_future = (int(x) for x in os.environ["SLUICE_EVENT_TIME_WINDOW"].split(","))
# A margin on each side: the request takes time to arrive and be judged.
_span = max(_max_age - 120, 1)


def _in_window(value: str) -> str:
    offset = int.from_bytes(hashlib.sha256(value.encode("utf-8", "surrogatepass")).digest()[:8], "big") % _span
    t = datetime.now(timezone.utc) - timedelta(seconds=60 + offset)
    return t.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@schemathesis.hook
def before_call(ctx, case, kwargs):
    # Before the call rather than at generation: every phase's requests
    # pass here, the coverage phase's too.
    body = case.body
    if not isinstance(body, dict) or not isinstance(body.get("events"), list):
        return
    for event in body["events"]:
        if isinstance(event, dict):
            at = event.get("occurred_at")
            if isinstance(at, str) and _RFC3339.match(at):
                event["occurred_at"] = _in_window(at)
