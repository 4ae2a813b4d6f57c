package contract

import (
	"errors"
	"fmt"
	"strings"

	"buf.build/go/protovalidate"
)

// MalformedError reports a payload that cannot be decoded as its contract's
// message: undecodable JSON or protobuf, invalid UTF-8, an unknown field, a
// JSON value that is not an object, or nesting deeper than the limit. The
// same input always fails the same way; the gateway answers MALFORMED.
type MalformedError struct {
	// Msg says what was wrong and where, for the caller to read.
	Msg string
	// Err is the decoder's error, if there is one.
	Err error
}

func (e *MalformedError) Error() string {
	if e.Err == nil {
		return "contract: malformed payload: " + e.Msg
	}
	return "contract: malformed payload: " + e.Msg + ": " + e.Err.Error()
}

// Unwrap returns the decoder's error.
func (e *MalformedError) Unwrap() error { return e.Err }

// ViolationError reports a payload that decoded but broke its contract's
// protovalidate rules. The gateway answers SCHEMA_VIOLATION with the
// violations attached.
type ViolationError struct {
	Violations []Violation
	// Partial is set when the message was over FullReportBytes and
	// Violations holds its first failed rule only.
	Partial bool
}

func (e *ViolationError) Error() string {
	var b strings.Builder
	b.WriteString("contract: schema violation")
	for i, v := range e.Violations {
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString("; ")
		}
		b.WriteString(v.String())
	}
	return b.String()
}

// Violation is one failed rule.
type Violation struct {
	// Field is the dotted path of the field that failed, e.g.
	// "customer.email", "items[0].sku" or `labels["Key"]`; empty for a
	// message-level rule.
	Field string
	// Rule is the rule id: a standard rule such as "string.email" or the id
	// of the contract's own CEL rule.
	Rule string
	// Message is the rule's message.
	Message string
}

func (v Violation) String() string {
	if v.Field == "" {
		return fmt.Sprintf("%s [%s]", v.Message, v.Rule)
	}
	return fmt.Sprintf("%s: %s [%s]", v.Field, v.Message, v.Rule)
}

// Violations extracts the violations from an error that is or wraps a
// *protovalidate.ValidationError. It reports false for any other error.
func Violations(err error) ([]Violation, bool) {
	var verr *protovalidate.ValidationError
	if !errors.As(err, &verr) {
		return nil, false
	}
	out := make([]Violation, 0, len(verr.Violations))
	for _, v := range verr.Violations {
		p := v.Proto
		out = append(out, Violation{
			Field:   protovalidate.FieldPathString(p.GetField()),
			Rule:    p.GetRuleId(),
			Message: p.GetMessage(),
		})
	}
	return out, true
}
