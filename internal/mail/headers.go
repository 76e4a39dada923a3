package mail

// The headers and SES message tags every email carries, and what they
// mean. They are the contract between the sender (package sesmail), the
// feedback function that matches SES's events back to rows, and the local
// SES event bridge; they live here, with the message, so none of those
// needs the SES client to name them.

// DeliveryIDHeader carries the delivery id in every email, so a reply, a
// bounce or a complaint can be traced to its delivery row.
const DeliveryIDHeader = "X-Criticizer-Delivery-Id"

// DeliveryIDTag is the SES message tag with the delivery id. SES has no
// idempotency key; event publishing echoes tags, which is how the feedback
// function matches provider evidence to the row (R-OUTBOX-3, R-OUTBOX-6).
const DeliveryIDTag = "delivery_id"

// TemplateTag is the SES message tag naming the template version the
// message was rendered with (e.g. "critique_v3"), so sending events can be
// told apart by layout.
const TemplateTag = "template"

// The RFC 8058 one-click unsubscribe headers, sent with every message that
// has an unsubscribe URL. Mailbox providers show their own unsubscribe
// button for them and POST "List-Unsubscribe=One-Click" to the URL.
const (
	ListUnsubscribeHeader     = "List-Unsubscribe"
	ListUnsubscribePostHeader = "List-Unsubscribe-Post"
	ListUnsubscribePostValue  = "List-Unsubscribe=One-Click"
)

// TagValue makes s a valid SES message tag value: SES accepts only ASCII
// letters, digits, '_' and '-', at most 256 characters; anything else
// becomes '_' ("critique/v3" -> "critique_v3").
func TagValue(s string) string {
	b := []byte(s)
	if len(b) > 256 {
		b = b[:256]
	}
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			b[i] = '_'
		}
	}
	return string(b)
}

// ProbeTag is the SES message tag that marks an evidence probe, and
// ProbeHeader the header that carries it too (the local SES emulator keeps
// headers, not tags). Its value is the probe's id.
const (
	ProbeTag    = "criticizer_probe"
	ProbeHeader = "X-Criticizer-Probe"
)

// DefaultProbeAddress is SES's mailbox simulator address that accepts every
// message: a probe sent there produces the Send and Delivery events of any
// message, costs what any message costs, and reaches nobody.
const DefaultProbeAddress = "success@simulator.amazonses.com"
