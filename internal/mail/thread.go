package mail

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"

	"github.com/criticizer/criticizer/internal/delivery"
)

// Every email about one changelist to one recipient belongs to one
// conversation (R-THREAD-1). Two things make a mail client see one:
//
//   - the subject is the same for every version, naming the changelist's
//     first title even after an edit (Subject, Data.ThreadTitle: the
//     version and its current title are in the body), which is what
//     Gmail and Outlook group by;
//   - every email names the same conversation root in References and
//     In-Reply-To, which is what RFC 5322 clients (Apple Mail, Thunderbird,
//     mutt) thread by, and Gmail requires besides the subject.
//
// SES replaces any Message-ID it is given, so no email can be the root
// itself. The root is a message id no email carries, named by every email
// of the conversation, the first one included: the JWZ threading every
// client descends from gathers the messages that name a missing parent
// under it (Jira's notifications thread the same way). It is derived, not
// stored: the same changelist and recipient give the same root on every
// version, retry and re-render, with no state to keep or lose.

// ThreadRootPrefix begins the left-hand side of every conversation root.
const ThreadRootPrefix = "<criticizer.t."

// Threads names conversations: ThreadRoot of a changelist and a recipient
// is "<criticizer.t.HEX@DOMAIN>", where HEX is 128 bits of HMAC-SHA-256
// under the deploy's unsubscribe signing key and DOMAIN the sender's
// domain. Keyed, the id tells a reader of the headers nothing: not the
// address, not the changelist, not whether two conversations share a
// recipient. It holds no mutable state; it is safe for concurrent use.
type Threads struct {
	key    []byte
	domain string
}

// NewThreads returns the conversation namer of a deploy: key is the
// unsubscribe signing key, domain the sender's domain. Without a key the
// id is a plain SHA-256 of the same inputs: those are what the email
// itself shows (the To address, and the changelist in the subject and
// body), so a reader of the email learns nothing from it; only someone who
// sees a reply's References without the email could test guesses of both.
// Rotating the key starts new conversations for changelists already
// mailed, once.
func NewThreads(key, domain string) *Threads {
	t := &Threads{domain: domain}
	if key != "" {
		t.key = []byte(key)
	}
	return t
}

// String and GoString keep the key out of fmt and slog output.
func (t Threads) String() string { return "mail.Threads{domain: " + t.domain + "}" }

// GoString is String for %#v.
func (t Threads) GoString() string { return t.String() }

// Root is the conversation root of a changelist (job.ChangelistKey) and a
// recipient, angle brackets included; "" for a nil Threads or one without
// a domain.
func (t *Threads) Root(changelistKey, recipient string) string {
	if t == nil || t.domain == "" {
		return ""
	}
	payload := "criticizer-thread\n" + changelistKey + "\n" + delivery.NormalizeRecipient(recipient)
	var sum []byte
	if t.key != nil {
		h := hmac.New(sha256.New, t.key)
		h.Write([]byte(payload))
		sum = h.Sum(nil)
	} else {
		s := sha256.Sum256([]byte(payload))
		sum = s[:]
	}
	return ThreadRootPrefix + hex.EncodeToString(sum[:16]) + "@" + t.domain + ">"
}
