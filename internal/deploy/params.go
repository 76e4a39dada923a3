package deploy

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Chars is what characters a string parameter's pattern admits, for
// sizing the environments it goes into at its worst (R-LIMIT-1): Lambda
// measures an environment as JSON, where a quote or a backslash takes two
// bytes, a control character six (\u0000) and a character outside ASCII
// up to four.
type Chars int

const (
	// PlainASCII: printable ASCII without quote or backslash, one byte each.
	PlainASCII Chars = iota
	// PrintableASCII: printable ASCII, at most two bytes each.
	PrintableASCII
	// AnyChars: anything, at most six bytes each.
	AnyChars
)

// Bytes is the most JSON bytes one character of the class can take.
func (c Chars) Bytes() int {
	switch c {
	case PlainASCII:
		return 1
	case PrintableASCII:
		return 2
	}
	return 6
}

// Param is a deploy-time choice: a parameter of template.yaml and a
// context key of the CDK app (`cdk deploy -c key=value`), with the same
// default and the same constraints in both; the CDK app refuses at synth
// what CloudFormation would refuse at deploy (Check). When Env is set,
// the parameter's value is that variable of every function in Functions
// (OmitEmpty: only when it is not empty).
type Param struct {
	// Name is template.yaml's parameter (MailFrom).
	Name string
	// Context is the CDK context key; empty: Name with its first letter
	// in lower case (mailFrom).
	Context string
	// Number: a number (MinValue, MaxValue); otherwise a string.
	Number  bool
	Default string
	// Description is the parameter's, in template.yaml and in
	// docs/deploy.md's deploy-time table (make template writes both);
	// DefaultNote, when set, says what the default means there.
	Description string
	DefaultNote string
	// A string's constraints: at most MaxLength characters, matching
	// Pattern (a full match), admitting Chars. A number's: Min to Max.
	MaxLength int
	Pattern   string
	Chars     Chars
	Min, Max  int
	// Allowed lists the only values accepted, if any.
	Allowed []string
	// Env is the variable the value goes to, in Functions' environments;
	// OmitEmpty leaves it out when the value is empty.
	Env       string
	Functions []string
	OmitEmpty bool
	// SAMOnly parameters exist in template.yaml only (LocalStackHost: for
	// `sam local invoke`).
	SAMOnly bool
}

// ContextKey is the CDK context key of p.
func (p Param) ContextKey() string {
	if p.Context != "" {
		return p.Context
	}
	return strings.ToLower(p.Name[:1]) + p.Name[1:]
}

// HasCondition is the name of the condition that holds when p is not
// empty (OmitEmpty parameters).
func (p Param) HasCondition() string { return "Has" + p.Name }

// Check refuses a value CloudFormation would refuse for p.
func (p Param) Check(v string) error {
	if len(p.Allowed) > 0 && !slices.Contains(p.Allowed, v) {
		return fmt.Errorf("%q: want one of %s", v, strings.Join(p.Allowed, ", "))
	}
	if p.Number {
		n, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("%q: want a whole number", v)
		}
		if n < p.Min || n > p.Max {
			return fmt.Errorf("%d: want %d to %d", n, p.Min, p.Max)
		}
		return nil
	}
	if n := len([]rune(v)); p.MaxLength > 0 && n > p.MaxLength {
		return fmt.Errorf("%d characters, at most %d", n, p.MaxLength)
	}
	if p.Pattern != "" && !regexp.MustCompile(p.Pattern).MatchString(v) {
		return fmt.Errorf("%q does not match %s", v, p.Pattern)
	}
	return nil
}

// MaxJSONBytes is the most bytes p's value can take inside a JSON string
// (its worst case in an environment).
func (p Param) MaxJSONBytes() int {
	longest := 0
	for _, a := range p.Allowed {
		longest = max(longest, len(a))
	}
	if len(p.Allowed) > 0 {
		return longest
	}
	if p.Number {
		return max(len(strconv.Itoa(p.Min)), len(strconv.Itoa(p.Max)))
	}
	return p.MaxLength * p.Chars.Bytes()
}
