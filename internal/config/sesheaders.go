package config

import "fmt"

// SES v2's limits on the headers a message is sent with (SendEmail's
// MessageHeader): a name of 1 to 126 printable ASCII characters without a
// colon, a value of 1 to 870 printable ASCII characters. SES refuses the
// whole send otherwise (R-LIMIT-2).
const (
	MaxSESHeaderName  = 126
	MaxSESHeaderValue = 870
	// MaxSESHeaders is how many headers SES v2 takes with a simple
	// message (Message.Headers: at most 15 items).
	MaxSESHeaders = 15
)

// The longest unsubscribe token notify mints (internal/unsubscribe's
// Signer.Token): base64url, unpadded, of "v1\n" + recipient id + "\n" +
// scope, then ".", then the base64url of the 16-byte MAC. The recipient id
// is "r_" and a 32-character digest (unsubscribe.RecipientID); the scope
// is a source and the repository part of a changelist id
// (unsubscribe.Repository), at most "generic:" and 255 bytes (a 256-byte
// generic changelist id less its separator) or "github:" and a 256-byte
// repository. A test in internal/sesmail builds the longest header from
// the real signer and checks these.
const (
	UnsubscribeRecipientIDLen = len("r_") + 32
	MaxUnsubscribeScopeLen    = len("github:") + 256
	unsubscribePayloadLen     = len("v1\n") + UnsubscribeRecipientIDLen + len("\n") + MaxUnsubscribeScopeLen
	MaxUnsubscribeTokenLen    = (unsubscribePayloadLen*4+2)/3 + len(".") + (16*4+2)/3
	// UnsubscribePath is what notify puts between the public URL and the
	// token.
	UnsubscribePath = "/unsubscribe/"
	// MaxPublicURLLen is the longest CRITICIZER_PUBLIC_URL (without a
	// trailing slash) whose longest List-Unsubscribe value,
	// "<" + URL + UnsubscribePath + token + ">", fits MaxSESHeaderValue.
	MaxPublicURLLen = MaxSESHeaderValue - len("<") - len(UnsubscribePath) - MaxUnsubscribeTokenLen - len(">")
)

// checkPublicURL refuses a public URL SES could not carry in the
// List-Unsubscribe header: a byte that is not printable ASCII (a space,
// or an angle bracket, would also break the header's <URL> form), or a
// length whose longest header value would pass MaxSESHeaderValue.
func checkPublicURL(v string) error {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c <= ' ' || c >= 0x7f || c == '<' || c == '>' {
			return fmt.Errorf("%s: byte %d is not printable ASCII (or is a space or an angle bracket); SES sends headers in printable ASCII only: percent-encode it", EnvPublicURL, i)
		}
	}
	if len(v) > MaxPublicURLLen {
		return fmt.Errorf("%s: %d characters, at most %d: the List-Unsubscribe header built under it must fit SES's %d-character header value",
			EnvPublicURL, len(v), MaxPublicURLLen, MaxSESHeaderValue)
	}
	return checkURL(EnvPublicURL, v)
}
