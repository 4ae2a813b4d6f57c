package contract

import (
	"buf.build/gen/go/bufbuild/protovalidate/protocolbuffers/go/buf/validate"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// compilePattern compiles a string's pattern rule.
func compilePattern(string) (valueCheck, error) {
	return nil, errNotCompiled("pattern not compiled")
}

// compileStringFormat compiles a string's well-known format rule; it
// returns the check and the rules fields it covers.
func compileStringFormat(*validate.StringRules) (valueCheck, []protoreflect.Name, error) {
	return nil, nil, errNotCompiled("string format not compiled")
}
