package webhook

// The header parsers, for the fuzz targets.
var (
	ParseSignatureList   = parseSignatureList
	ParseStripeSignature = parseStripeSignature
	DecodeSignature      = decodeSignature
	ParseTime            = parseTime
)
