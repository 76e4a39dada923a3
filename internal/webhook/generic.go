package webhook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/mail"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/criticizer/criticizer/internal/delivery"
)

// Limits of the generic contract.
const (
	// MaxBody is the largest request body any webhook route reads (900 KiB).
	// Lambda's synchronous invoke payload is what sets it: API Gateway puts
	// the body in the event's JSON, escaped, where a control character
	// takes 6 bytes (\u0001) and a quote or backslash 2, beside the request
	// line and headers (10,240 bytes at most, each copied into several of
	// the event's fields). At 900 KiB the worst such event is under
	// 6,291,456 bytes, so every body API Gateway can hand to intake reaches
	// it, and one over the cap is answered 413 rather than failing the
	// invoke with a 500 (R-LIMIT-3, TestMaxBody_FitsTheInvokePayload). A
	// body API Gateway base64-encodes (a content type it does not treat as
	// text) grows by a third only.
	MaxBody = 900 << 10
	// MaxDiff is the largest inline diff (768 KiB): with the other fields
	// it stays under MaxBody; a longer diff is given as diff_url.
	MaxDiff       = 768 << 10
	MaxRecipients = 50
	maxText       = 1000
	maxID         = 256
	// MaxRepository bounds the generic repository field: with its source
	// ("generic:") it fits every place a repository is named, the
	// unsubscribe token's scope among them (config.MaxUnsubscribeScopeLen).
	MaxRepository = 255
)

// SignatureHeader carries the generic source's body signature.
const SignatureHeader = "X-Criticizer-Signature"

// Generic is the adapter for Criticizer's own webhook format, for any caller
// that can sign a JSON body (CI jobs, bots, other review systems).
type Generic struct {
	Secret []byte
}

// genericBody is the wire format. review_version is raw so "1.5", "-1" and
// "\"3\"" get a precise error instead of a generic type error.
type genericBody struct {
	ChangelistID  *string         `json:"changelist_id"`
	ReviewVersion json.RawMessage `json:"review_version"`
	Title         *string         `json:"title"`
	Description   *string         `json:"description"`
	URL           *string         `json:"url"`
	Author        *string         `json:"author"`
	Recipients    []string        `json:"recipients"`
	Diff          *string         `json:"diff"`
	DiffURL       *string         `json:"diff_url"`
	Quiet         *bool           `json:"quiet"`
	Repository    *string         `json:"repository"`
}

// Parse verifies and validates a generic webhook. The signature is checked
// first, so an unsigned request learns nothing about validation.
func (g Generic) Parse(r Request) (Change, error) {
	if len(r.Body) > MaxBody {
		return Change{}, &TooLargeError{Limit: MaxBody}
	}
	if err := verifySHA256(g.Secret, r.Header(SignatureHeader), r.Body); err != nil {
		return Change{}, err
	}
	key := r.Header("Idempotency-Key")
	if err := checkIdempotencyKey(key); err != nil {
		return Change{}, err
	}
	// encoding/json replaces invalid UTF-8 with U+FFFD while decoding, so
	// check the raw bytes first: a corrupted diff must be refused, not
	// reviewed and quoted to reviewers.
	if !utf8.Valid(r.Body) {
		return Change{}, &FieldError{Field: invalidUTF8Field(r.Body), Message: "must be UTF-8 text"}
	}
	var b genericBody
	dec := json.NewDecoder(bytes.NewReader(r.Body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b); err != nil {
		return Change{}, jsonFieldError(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Change{}, &FieldError{Field: "body", Message: "must be a single JSON object"}
	}
	c := Change{Source: "generic", IdempotencyKey: key}
	var err error
	if c.ChangelistID, err = requiredText("changelist_id", b.ChangelistID, maxID); err != nil {
		return Change{}, err
	}
	if c.ReviewVersion, err = positiveInt("review_version", b.ReviewVersion); err != nil {
		return Change{}, err
	}
	if c.Title, err = requiredText("title", b.Title, maxText); err != nil {
		return Change{}, err
	}
	if b.Description != nil && len(*b.Description) > maxDescriptionIn {
		return Change{}, &FieldError{Field: "description", Message: fmt.Sprintf("must be at most %d bytes", maxDescriptionIn)}
	}
	c.Description = description(b.Description)
	if b.URL == nil {
		return Change{}, &FieldError{Field: "url", Message: "is required"}
	}
	if c.URL, err = httpURL("url", *b.URL); err != nil {
		return Change{}, err
	}
	if c.Author, err = requiredText("author", b.Author, maxText); err != nil {
		return Change{}, err
	}
	if c.Recipients, err = recipients("recipients", b.Recipients); err != nil {
		return Change{}, err
	}
	// A caller's review_version is an explicit rerun, mailed to every
	// recipient, unless it opts in to the quiet rules (R-RERUN-2).
	c.Quiet = b.Quiet != nil && *b.Quiet
	if b.Repository != nil {
		if c.Repository, err = genericRepository("repository", *b.Repository); err != nil {
			return Change{}, err
		}
	}
	switch {
	case b.Diff != nil && b.DiffURL != nil:
		return Change{}, &FieldError{Field: "diff", Message: "give either diff or diff_url, not both"}
	case b.Diff != nil:
		if strings.TrimSpace(*b.Diff) == "" {
			return Change{}, &FieldError{Field: "diff", Message: "must not be empty"}
		}
		if len(*b.Diff) > MaxDiff {
			return Change{}, &FieldError{Field: "diff", Message: fmt.Sprintf("must be at most %d bytes", MaxDiff)}
		}
		c.Diff = *b.Diff
	case b.DiffURL != nil:
		if c.DiffURL, err = httpURL("diff_url", *b.DiffURL); err != nil {
			return Change{}, err
		}
	default:
		return Change{}, &FieldError{Field: "diff", Message: "one of diff or diff_url is required"}
	}
	return c, nil
}

// invalidUTF8Field names the top-level field whose raw value holds invalid
// UTF-8, or "body".
func invalidUTF8Field(body []byte) string {
	var fields map[string]json.RawMessage
	if json.Unmarshal(body, &fields) != nil {
		return "body"
	}
	names := make([]string, 0, len(fields))
	for k := range fields {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if !utf8.Valid(fields[k]) && k != "" {
			return k
		}
	}
	return "body" // also for a key that is the empty string: a field must have a name
}

// jsonFieldError names the field a decoding error is about.
func jsonFieldError(err error) error {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te):
		field := te.Field
		if field == "" {
			field = "body"
		}
		return &FieldError{Field: field, Message: "must be " + jsonKind(te.Type.Kind().String())}
	case errors.As(err, &se):
		return &FieldError{Field: "body", Message: fmt.Sprintf("malformed JSON at byte %d", se.Offset)}
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return &FieldError{Field: "body", Message: "malformed JSON: unexpected end of input"}
	}
	msg := err.Error()
	if f, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		field := strings.Trim(f, `"`)
		if field == "" {
			// A key that is the empty string: name it as such, so the
			// error still names a field.
			return &FieldError{Field: "body", Message: `has a field named "" that is not a known field`}
		}
		return &FieldError{Field: field, Message: "is not a known field"}
	}
	return &FieldError{Field: "body", Message: "malformed JSON"}
}

func jsonKind(k string) string {
	switch k {
	case "struct", "map":
		return "an object"
	case "slice":
		return "an array"
	}
	return "a " + k
}

// MaxDescription bounds the description kept (runes): enough for the
// model to know the author's intent, not a second diff.
const MaxDescription = 4000

// maxDescriptionIn refuses a generic request whose description is far over
// what is kept: a caller's mistake, not a description.
const maxDescriptionIn = 64 << 10

// description is an optional free text, valid UTF-8, cut to
// MaxDescription runes. The code hosts' descriptions are never refused: a
// long one is cut.
func description(v *string) string {
	if v == nil {
		return ""
	}
	s := strings.ToValidUTF8(strings.TrimSpace(*v), "\uFFFD")
	if utf8.RuneCountInString(s) > MaxDescription {
		s = string([]rune(s)[:MaxDescription])
	}
	return s
}

func requiredText(field string, v *string, max int) (string, error) {
	if v == nil {
		return "", &FieldError{Field: field, Message: "is required"}
	}
	s := strings.TrimSpace(*v)
	switch {
	case s == "":
		return "", &FieldError{Field: field, Message: "must not be empty"}
	case len(s) > max:
		return "", &FieldError{Field: field, Message: fmt.Sprintf("must be at most %d bytes", max)}
	case !utf8.ValidString(s):
		return "", &FieldError{Field: field, Message: "must be UTF-8 text"}
	case strings.IndexFunc(s, unicode.IsControl) >= 0:
		return "", &FieldError{Field: field, Message: "must not contain control characters"}
	}
	return s, nil
}

func positiveInt(field string, raw json.RawMessage) (int, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return 0, &FieldError{Field: field, Message: "is required"}
	}
	n, err := strconv.ParseInt(string(raw), 10, 32)
	if err != nil || n < 1 {
		return 0, &FieldError{Field: field, Message: "must be a positive integer"}
	}
	return int(n), nil
}

func httpURL(field, raw string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", &FieldError{Field: field, Message: "must be an absolute http or https URL"}
	}
	// The limit holds for the URL as stored (escaped: "a b" becomes
	// "a%20b"), not only as sent, so a stored URL always validates again.
	s := u.String()
	if len(raw) > 2048 || len(s) > 2048 {
		return "", &FieldError{Field: field, Message: "must be at most 2048 bytes"}
	}
	return s, nil
}

func domainOf(addr string) string {
	_, domain, _ := strings.Cut(addr, "@")
	return domain
}

func recipients(field string, in []string) ([]string, error) {
	if len(in) == 0 {
		return nil, &FieldError{Field: field, Message: "at least one recipient is required"}
	}
	if len(in) > MaxRecipients {
		return nil, &FieldError{Field: field, Message: fmt.Sprintf("at most %d recipients", MaxRecipients)}
	}
	out := make([]string, 0, len(in))
	seen := make(map[string]bool, len(in))
	for i, raw := range in {
		addr, err := mail.ParseAddress(raw)
		// A bare address only: "Ann <ann@x>" would put a display name into
		// the delivery key.
		if err != nil || addr.Name != "" || addr.Address != strings.TrimSpace(raw) || !strings.Contains(domainOf(addr.Address), ".") {
			// The message names the index, never the address (PII in logs).
			return nil, &FieldError{Field: fmt.Sprintf("%s[%d]", field, i), Message: "must be an email address such as reviewer@example.com"}
		}
		n := delivery.NormalizeRecipient(addr.Address)
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out, nil
}

// genericRepository validates the generic source's optional repository
// (R-INTAKE-7): what a code host's changelist id holds before its number
// ("acme/billing" of "acme/billing#7"), named by the caller. It is
// trimmed, 1 to MaxRepository bytes, a path of non-empty segments with
// no white space, no control or formatting character (a bidi override
// would show one name and be another), and none of the characters that
// end a code host's repository in a changelist id ("#", "!", "~") or
// start a query ("?").
func genericRepository(field, raw string) (string, error) {
	s, err := requiredText(field, &raw, MaxRepository)
	if err != nil {
		return "", err
	}
	if strings.IndexFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.Is(unicode.Cf, r) }) >= 0 {
		return "", &FieldError{Field: field, Message: "must not contain white space or formatting characters"}
	}
	if strings.ContainsAny(s, "#!~?\\") || strings.HasPrefix(s, "/") || strings.HasSuffix(s, "/") || strings.Contains(s, "//") {
		return "", &FieldError{Field: field, Message: "must be a repository path such as acme/billing: segments separated by single slashes, without # ! ~ ? or a backslash"}
	}
	return s, nil
}
