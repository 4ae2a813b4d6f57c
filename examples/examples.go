package examples

import (
	_ "embed"
)

// Contracts is the buf image of the example contracts.
//
//go:embed contracts.binpb
var Contracts []byte

// Types are the example event types, one per contract.
var Types = []string{
	"examples.shop.v1.OrderPlaced",
	"examples.identity.v1.UserProfileUpdated",
	"examples.logs.v1.LogLine",
}

// StripeEventType is a Stripe event object's contract, for webhook
// sources that receive Stripe's signed deliveries. It is in Contracts but
// not in Types: sources list it where they take it (sluice dev's demo
// webhook source does).
const StripeEventType = "examples.stripe.v1.Event"

// OrderPlacedJSON, UserProfileUpdatedJSON and LogLineJSON are valid
// payloads; StripeEventJSON is a Stripe event as Stripe delivers it.
var (
	//go:embed events/order_placed.json
	OrderPlacedJSON []byte
	//go:embed events/user_profile_updated.json
	UserProfileUpdatedJSON []byte
	//go:embed events/log_line.json
	LogLineJSON []byte
	//go:embed webhooks/stripe_event.json
	StripeEventJSON []byte
)
