package inbound

import (
	"io"
	"mime"
	"net/mail"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/criticizer/criticizer/internal/delivery"
)

// Notification is SES's notification of a received message
// (notificationType "Received"), as a receipt rule's S3 action publishes
// it to SNS: the receipt's verdicts and action, and the mail's envelope
// and common headers. "content" is present only for an SNS action, which
// this deployment does not use: the raw message is in S3.
type Notification struct {
	NotificationType string                    `json:"notificationType"`
	Receipt          events.SimpleEmailReceipt `json:"receipt"`
	Mail             events.SimpleEmailMessage `json:"mail"`
}

// Verdict statuses, as SES writes them.
const (
	Pass             = "PASS"
	Fail             = "FAIL"
	Gray             = "GRAY"
	ProcessingFailed = "PROCESSING_FAILED"
)

// Why a reply is dropped: the Reason dimension of RepliesDropped
// (docs/operations.md). Each is counted and never answered.
const (
	DropMalformed       = "malformed"        // not an SES notification, or no message id
	DropNotReceived     = "not_received"     // another notificationType (SES's setup notice)
	DropUnknownKey      = "unknown_key"      // no recipient is a reply address whose key verifies
	DropExpired         = "expired"          // the key verifies but has expired
	DropUnknownDelivery = "unknown_delivery" // the delivery's row is gone (retention) or is a confirmation
	DropTooLarge        = "too_large"        // the raw message is over MaxRawBytes
	DropUnreadable      = "unreadable"       // the raw message is not where the action says, or not a message
	DropSpam            = "spam"             // spamVerdict FAIL
	DropVirus           = "virus"            // virusVerdict FAIL
	DropDMARC           = "dmarc"            // dmarcVerdict FAIL and the domain asks for quarantine or reject
	DropUnauthenticated = "unauthenticated"  // no SPF or DKIM pass aligned with the From's domain
	DropForged          = "forged"           // From is not the address the delivery was sent to
	DropAmbiguousFrom   = "ambiguous_from"   // several From fields or mailboxes, a Sender not the From, or a From SES did not judge
	DropAutoReply       = "auto_reply"       // Auto-Submitted, Precedence, X-Autoreply, a null sender
	DropLoop            = "loop"             // our own List-Id: Criticizer's mail came back
	DropRateLimited     = "rate_limited"     // the delivery's replies this hour are spent
)

// Loop returns why a reply is an automatic one that must never be
// answered (R-REPLY-3), or "": RFC 3834's Auto-Submitted other than
// "no"; Precedence bulk, junk, list or auto_reply; X-Autoreply or
// X-Autorespond (what vacation responders that predate RFC 3834 set);
// an empty envelope sender (a bounce or a receipt, RFC 5321 §4.5.5); or
// the List-Id Criticizer's own email carries (a message of ours sent
// back, as a forwarding loop or a misconfigured auto-forward would).
func Loop(h mail.Header, envelopeFrom, listID string) string {
	if v := strings.ToLower(strings.TrimSpace(h.Get("Auto-Submitted"))); v != "" && !strings.HasPrefix(v, "no") {
		return DropAutoReply
	}
	switch strings.ToLower(strings.TrimSpace(h.Get("Precedence"))) {
	case "bulk", "junk", "list", "auto_reply":
		return DropAutoReply
	}
	if h.Get("X-Autoreply") != "" || h.Get("X-Autorespond") != "" {
		return DropAutoReply
	}
	if e := strings.TrimSpace(envelopeFrom); e == "" || e == "<>" {
		return DropAutoReply
	}
	if isOurs(h, listID) {
		return DropLoop
	}
	return ""
}

// isOurs reports whether the message carries the List-Id of this
// deploy's email ("Criticizer <list id>").
func isOurs(h mail.Header, listID string) bool {
	if listID == "" {
		return false
	}
	v := h.Get("List-Id")
	return v != "" && strings.Contains(strings.ToLower(v), "<"+strings.ToLower(listID)+">")
}

// Authenticated returns why a reply's sender is not taken as the
// delivery's recipient (R-REPLY-2), or "". SES reports verdicts, not who
// they vouch for: SPF is checked on the envelope sender (mail.source,
// MAIL FROM), DKIM on whichever domain signed, and neither says the From
// header is genuine. DMARC is the check that ties them to the From's
// domain, so:
//
//   - spam or virus FAIL: dropped;
//   - DMARC FAIL with the domain's policy quarantine or reject: dropped
//     (the domain's owner asked for it);
//   - the From must be the one SES judged (From: one field, one mailbox,
//     no other Sender, the notification's commonHeaders.from), else
//     DropAmbiguousFrom;
//   - and the address the delivery was sent to
//     (delivery.NormalizeRecipient: case folded), else DropForged;
//   - DMARC PASS: SES found SPF or DKIM passing aligned with the From's
//     domain;
//   - otherwise (no DMARC record, GRAY; or FAIL under policy none; or
//     DMARC could not be checked) alignment is checked here, strictly:
//     SPF PASS with the envelope sender's domain the From's domain or a
//     parent of it, or DKIM PASS with every DKIM-Signature's d= the
//     From's domain or a parent of it (SES does not say which signature
//     passed, so all must align). A parent domain's DNS controls its
//     subdomains, so its pass speaks for them; the reverse is not taken.
func Authenticated(n Notification, h mail.Header, recipient string) string {
	r := n.Receipt
	if r.SpamVerdict.Status == Fail {
		return DropSpam
	}
	if r.VirusVerdict.Status == Fail {
		return DropVirus
	}
	if r.DMARCVerdict.Status == Fail {
		switch strings.ToLower(r.DMARCPolicy) {
		case "quarantine", "reject":
			return DropDMARC
		}
	}
	addr, why := From(n, h)
	if why != "" {
		return why
	}
	if addr != delivery.NormalizeRecipient(recipient) {
		return DropForged
	}
	domain := domainOf(addr)
	switch {
	case r.DMARCVerdict.Status == Pass:
		return ""
	case r.SPFVerdict.Status == Pass && aligned(domainOf(n.Mail.Source), domain):
		return ""
	case r.DKIMVerdict.Status == Pass && dkimAligned(h, domain):
		return ""
	}
	return DropUnauthenticated
}

// From is the one address a reply is from, as SES judged it (R-REPLY-2),
// case folded; or why there is none: DropForged for a reply with no From
// field or one that is not an address, DropAmbiguousFrom for one whose
// From is not a single mailbox SES's verdicts were about. SES's DMARC
// verdict is about one From domain, and which one it chose when the
// message offers several is not said; RFC 5322 §3.6 allows exactly one
// From field, and a Sender field names who sent a From of several
// mailboxes (or on someone's behalf). So the reply must have one From
// field holding one mailbox, no Sender other than that mailbox, and SES's
// notification (commonHeaders.from: what SES read as the From) must name
// that one mailbox and no other. A field is matched as SES and mail
// clients read RFC 5322's obsolete syntax: in any case, with blanks
// before the colon ("From :" is a From field too).
func From(n Notification, h mail.Header) (string, string) {
	froms := fields(h, "From")
	switch {
	case len(froms) == 0:
		return "", DropForged
	case len(froms) > 1:
		return "", DropAmbiguousFrom
	}
	addr, why := mailbox(froms[0])
	if why != "" {
		return "", why
	}
	senders := fields(h, "Sender")
	if len(senders) > 1 {
		return "", DropAmbiguousFrom
	}
	for _, s := range senders {
		if a, why := mailbox(s); why != "" || a != addr {
			return "", DropAmbiguousFrom
		}
	}
	judged := n.Mail.CommonHeaders.From
	if len(judged) != 1 {
		return "", DropAmbiguousFrom
	}
	if a, why := mailbox(judged[0]); why != "" || a != addr {
		return "", DropAmbiguousFrom
	}
	return addr, ""
}

// mailbox reads a From (or Sender) field that must hold one mailbox: its
// address, case folded; DropForged when it is no address list at all,
// DropAmbiguousFrom when it holds several mailboxes (a group's members
// count one by one) or none.
func mailbox(v string) (string, string) {
	list, err := addresses.ParseList(v)
	switch {
	case err != nil:
		return "", DropForged
	case len(list) != 1:
		return "", DropAmbiguousFrom
	}
	addr := delivery.NormalizeRecipient(list[0].Address)
	if addr == "" {
		return "", DropForged
	}
	return addr, ""
}

// addresses parses address lists for their addresses only: a display
// name's encoded words in a charset Go does not decode are left as they
// are instead of failing the whole field (net/mail's default decoder
// knows UTF-8, US-ASCII and ISO-8859-1 only), since the name is never
// used.
var addresses = mail.AddressParser{WordDecoder: &mime.WordDecoder{
	CharsetReader: func(_ string, input io.Reader) (io.Reader, error) { return input, nil },
}}

// fields are the values of every field of a header named name, matched
// as RFC 5322's obsolete syntax allows (obs-optional: blanks before the
// colon) and in any case: net/mail keys "From :" apart from "From".
func fields(h mail.Header, name string) []string {
	var out []string
	for k, vs := range h {
		if strings.EqualFold(strings.TrimRight(k, " \t"), name) {
			out = append(out, vs...)
		}
	}
	return out
}

// domainOf is an address's domain, lower-cased, without a trailing dot.
func domainOf(addr string) string {
	addr = strings.Trim(strings.TrimSpace(addr), "<>")
	at := strings.LastIndexByte(addr, '@')
	if at < 0 {
		return ""
	}
	return strings.TrimSuffix(strings.ToLower(addr[at+1:]), ".")
}

// aligned reports whether an authenticated domain speaks for the From's:
// the same, or a parent of it.
func aligned(authenticated, from string) bool {
	if authenticated == "" || from == "" || !strings.Contains(authenticated, ".") {
		return false
	}
	return authenticated == from || strings.HasSuffix(from, "."+authenticated)
}

// dkimAligned reports whether the message has DKIM signatures and every
// one's signing domain (d=) speaks for the From's domain.
func dkimAligned(h mail.Header, from string) bool {
	sigs := h["Dkim-Signature"]
	if len(sigs) == 0 {
		return false
	}
	for _, s := range sigs {
		d := ""
		for _, tag := range strings.Split(s, ";") {
			k, v, ok := strings.Cut(strings.TrimSpace(tag), "=")
			if ok && strings.TrimSpace(k) == "d" {
				d = strings.ToLower(strings.Join(strings.Fields(v), ""))
			}
		}
		if !aligned(d, from) {
			return false
		}
	}
	return true
}

// Received is when SES received the reply (receipt.timestamp, else
// mail.timestamp): the time its commands are recorded at, so a reply
// redelivered later never outranks a choice the reader made after it.
func (n Notification) Received() time.Time {
	if !n.Receipt.Timestamp.IsZero() {
		return n.Receipt.Timestamp.UTC()
	}
	return n.Mail.Timestamp.UTC()
}
