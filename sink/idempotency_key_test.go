package sink

import "testing"

// TestIdempotencyKeyKeepsIDs: every character an event id may hold
// (^[A-Za-z0-9][A-Za-z0-9._:-]*$) is left as it is in the key, so a
// receiver sees the provider's delivery id as the provider sent it; a
// source or id with '/' is escaped, so distinct identities keep distinct
// keys.
func TestIdempotencyKeyKeepsIDs(t *testing.T) {
	const every = "aZ09._:-"
	for _, c := range []struct{ source, id, want string }{
		{"stripe", "evt_1NG8Du2eZvKYlo2CUI79vXWy", "stripe/evt_1NG8Du2eZvKYlo2CUI79vXWy"},
		{"svix", "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W", "svix/msg_2KWPBgLlAfxdpx2AI54pPJ85f4W"},
		{"s", "a" + every, "s/a" + every},
		{"a/b", "c", "a%2Fb/c"},
		{"a", "b/c", "a/b%2Fc"},
	} {
		if got := IdempotencyKey(c.source, c.id); got != c.want {
			t.Errorf("IdempotencyKey(%q, %q) = %q, want %q", c.source, c.id, got, c.want)
		}
	}
}
