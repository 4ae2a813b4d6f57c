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

// OrderPlacedJSON, UserProfileUpdatedJSON and LogLineJSON are valid payloads.
var (
	//go:embed events/order_placed.json
	OrderPlacedJSON []byte
	//go:embed events/user_profile_updated.json
	UserProfileUpdatedJSON []byte
	//go:embed events/log_line.json
	LogLineJSON []byte
)
