package inbound

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	netmail "net/mail"
	"regexp"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/criticizer/criticizer/internal/deadline"
	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/mail"
	"github.com/criticizer/criticizer/internal/obs"
	"github.com/criticizer/criticizer/internal/store"
	"github.com/criticizer/criticizer/internal/unsubscribe"
	"github.com/criticizer/criticizer/internal/vote"
	"github.com/criticizer/criticizer/internal/voting"
)

// ObjectPrefix is where SES's receipt rule stores replies in the payload
// bucket (a lifecycle rule expires them): the only objects the reply
// function reads.
const ObjectPrefix = "inbound/"

// Window is the span of the replies-per-email bound (R-REPLY-6).
const Window = time.Hour

// maxRecipients bounds the envelope recipients looked at for a key.
const maxRecipients = 50

// Rows reads and writes delivery rows (store.Deliveries).
type Rows interface {
	Get(ctx context.Context, id string) (delivery.Row, error)
	Ensure(ctx context.Context, r delivery.Row) (delivery.Row, bool, error)
}

// Recorder records a reader's choice on a finding of an email
// (voting.Recorder: the one operation a vote link and a reply share).
type Recorder interface {
	Record(ctx context.Context, deliveryID string, ref voting.Ref, c vote.Choice, now time.Time) (voting.Result, error)
}

// Objects reads the raw replies SES stored (blob.Store on the payload
// bucket, through ObjectsOf). An object over the limit is ErrTooLarge, one
// that is not there ErrNoObject.
type Objects interface {
	Get(ctx context.Context, ref string, limit int64) ([]byte, error)
}

// ErrTooLarge and ErrNoObject are what Objects returns for an object over
// the limit (nothing past it is read) and for one that is not there.
var (
	ErrTooLarge = errors.New("object larger than the limit")
	ErrNoObject = errors.New("no such object")
)

// Unsubscriber records that a reader left every email (store.Recipients).
type Unsubscriber interface {
	UnsubscribeAll(ctx context.Context, recipientID string) error
}

// Enqueuer sends a stage message.
type Enqueuer interface {
	Enqueue(ctx context.Context, m job.Message) error
}

// Handler is the reply function: SES's notifications of received
// replies (receipt rule → S3 and SNS → the reply queue), each read,
// checked and acted on at most once (R-REPLY-2..7).
type Handler struct {
	Keys *Keys
	// InboundDomain is the domain of the reply addresses.
	InboundDomain string
	// Bucket is the payload bucket; Objects reads it. A notification
	// naming another bucket, or a key outside ObjectPrefix, is not read.
	Bucket   string
	Objects  Objects
	Rows     Rows
	Recorder Recorder
	Mutes    store.Mutes
	Windows  store.ReplyWindows
	// Claims fences the acting on a reply: of the receipts of one reply,
	// one acts (R-REPLY-8).
	Claims store.ReplyClaims
	// Unsubscribes records "unsubscribe" (the one-click link's "all").
	Unsubscribes Unsubscriber
	// Queue takes the confirmation's notify task: notify sends it.
	Queue    Enqueuer
	Renderer *mail.Renderer
	// ListID is the deploy's list id: a message carrying it is ours,
	// come back (R-REPLY-3).
	ListID string
	// PerHour bounds the replies to one email acted on in Window.
	PerHour int
	// Budget is the invocation's time per record (internal/deadline).
	Budget deadline.Budget
	Log    *slog.Logger
	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

func (h *Handler) now() time.Time {
	if h.Now != nil {
		return h.Now()
	}
	return time.Now()
}

// Outcomes of a reply besides the drops (Reply's Outcome dimension).
const (
	// Acted: its commands were carried out and its confirmation queued.
	Acted = "acted"
	// Duplicate: the same reply again (the same sender and Message-ID
	// received again, which SES gives a message id of its own; or the
	// same receipt again: SQS redelivered it, a redrive moved it with a
	// new SQS id): its confirmation is queued again, nothing else is
	// done, and notify sends it at most once.
	Duplicate = "duplicate"
)

// errActing is a reply another receipt of which is being acted on (it
// holds the claim, its confirmation is not written yet): this receipt is
// retried, and then finds the confirmation.
var errActing = errors.New("another receipt of the reply is being acted on")

// Handle processes a batch from the reply queue. A record that fails for
// a reason that may pass (a store or queue error) is reported as a batch
// item failure and retried; after the queue's maxReceiveCount it is in
// the reply DLQ, from where it can be redriven (every step is idempotent
// on the reply's key, Key). Everything else is acted on or dropped, counted,
// and acknowledged. A record after the first starts only while Budget
// allows; the rest come back whole.
func (h *Handler) Handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	var resp events.SQSEventResponse
	plan := h.Budget.Plan(ctx)
	for i, rec := range ev.Records {
		if i > 0 && !plan.Allows() {
			for _, r := range ev.Records[i:] {
				resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: r.MessageId})
			}
			break
		}
		outcome, err := h.Process(ctx, []byte(rec.Body))
		log := h.Log.With("message_id", rec.MessageId)
		switch {
		case err != nil:
			log.WarnContext(ctx, "reply not processed; it will be retried", "error", err)
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: rec.MessageId})
		case outcome == Acted || outcome == Duplicate:
			obs.Metric(ctx, h.Log, map[string]string{"Outcome": outcome}, map[string]float64{"Replies": 1})
		default:
			obs.Metric(ctx, h.Log, map[string]string{"Reason": outcome}, map[string]float64{"RepliesDropped": 1})
			log.InfoContext(ctx, "reply dropped, never answered", "reason", outcome)
		}
	}
	return resp, nil
}

// Process reads one SES notification and acts on the reply it names:
// Acted, Duplicate, or the Drop* reason it was dropped for; an error is
// a failure that may pass (retry the record).
func (h *Handler) Process(ctx context.Context, body []byte) (string, error) {
	var n Notification
	if err := json.Unmarshal(body, &n); err != nil || n.NotificationType == "" {
		return DropMalformed, nil
	}
	if n.NotificationType != "Received" {
		return DropNotReceived, nil
	}
	if n.Mail.MessageID == "" || len(n.Mail.MessageID) > 256 {
		return DropMalformed, nil
	}
	deliveryID, to, drop := h.key(n)
	if drop != "" {
		return drop, nil
	}
	log := h.Log.With("ses_message_id", n.Mail.MessageID, "delivery_id", deliveryID)
	row, err := h.Rows.Get(ctx, deliveryID)
	if errors.Is(err, store.ErrNotFound) || err == nil && row.Kind == delivery.KindReply {
		return DropUnknownDelivery, nil
	}
	if err != nil {
		return "", err
	}
	a := n.Receipt.Action
	if a.Type != "S3" || a.BucketName != h.Bucket || !strings.HasPrefix(a.ObjectKey, ObjectPrefix) || strings.Contains(a.ObjectKey, "..") {
		return DropUnreadable, nil
	}
	raw, err := h.Objects.Get(ctx, a.ObjectKey, MaxRawBytes)
	switch {
	case errors.Is(err, ErrTooLarge):
		return DropTooLarge, nil
	case errors.Is(err, ErrNoObject):
		return DropUnreadable, nil
	case err != nil:
		return "", err
	}
	hdr, text, err := ReadMessage(raw)
	if hdr == nil {
		return DropUnreadable, nil
	}
	if err != nil && !errors.Is(err, ErrNoText) {
		log.InfoContext(ctx, "reply's text could not be read; read as empty", "error", err)
	}
	if why := Loop(hdr, n.Mail.Source, h.ListID); why != "" {
		return why, nil
	}
	if why := Authenticated(n, hdr, row.Recipient); why != "" {
		return why, nil
	}
	confirmID, keyed := Key(n, hdr, row.Recipient)
	if !keyed {
		obs.Metric(ctx, h.Log, nil, map[string]float64{"RepliesWithoutMessageID": 1})
	}
	log = log.With("confirmation_id", confirmID)
	if dup, err := h.again(ctx, confirmID); err != nil {
		return "", err
	} else if dup {
		log.InfoContext(ctx, "reply seen before; confirmation handed to notify again")
		return Duplicate, nil
	}
	at := n.Received()
	if at.IsZero() {
		at = h.now().UTC()
	}
	ok, err := h.Windows.Admit(ctx, deliveryID, confirmID, at.Truncate(Window), Window, max(h.PerHour, 1))
	if err != nil {
		return "", err
	}
	if !ok {
		return DropRateLimited, nil
	}
	// One receipt acts: a choice recorded again by a later receipt, at
	// its own receipt time, would outrank one the reader made since.
	if ok, err := h.Claims.Claim(ctx, confirmID, n.Mail.MessageID); err != nil {
		return "", err
	} else if !ok {
		if dup, err := h.again(ctx, confirmID); err != nil {
			return "", err
		} else if dup {
			log.InfoContext(ctx, "reply acted on by another receipt; confirmation handed to notify again")
			return Duplicate, nil
		}
		return "", fmt.Errorf("reply %s: %w", confirmID, errActing)
	}
	p := Parse(text)
	actions, err := h.act(ctx, row, p, at)
	if err != nil {
		return "", err
	}
	about, jobID := changelistID(row.ChangelistKey), row.JobID
	if row.IsDigest() {
		// A digest has no job: its confirmation's notify message names
		// the digest, as the digest's own does (delivery.DigestMessage).
		about, jobID = "the daily digest for "+row.Period, job.ID(row.ID)
	}
	m, err := h.Renderer.RenderConfirmation(mail.Confirmation{
		ChangelistID: about, Digest: row.IsDigest(), Subject: row.Message.Subject, Actions: actions,
		Findings: len(strings.Fields(row.Message.Findings)), Ignored: p.Ignored, Unknown: p.Unknown,
		Thread: messageID(n, hdr), ReplyTo: to, ListID: h.ListID,
	})
	if err != nil {
		return "", err
	}
	now := h.now().UTC()
	confirm := delivery.Row{ID: confirmID, Kind: delivery.KindReply, JobID: jobID, ChangelistKey: row.ChangelistKey,
		Recipient: row.Recipient, ReviewVersion: row.ReviewVersion, Status: delivery.StatusPending, Message: m,
		CreatedAt: now, UpdatedAt: now}
	if _, _, err := h.Rows.Ensure(ctx, confirm); err != nil {
		return "", err
	}
	if err := h.Queue.Enqueue(ctx, confirm.NotifyMessage()); err != nil {
		return "", fmt.Errorf("enqueue confirmation %s: %w", confirmID, err)
	}
	log.InfoContext(ctx, "reply acted on; confirmation queued", "commands", len(p.Commands), "ignored", p.Ignored, "unknown_lines", p.Unknown)
	return Acted, nil
}

// again reports whether the reply's confirmation is written: it was
// acted on before, its commands are recorded, and its confirmation is
// handed to notify again (a crash may have come before the enqueue),
// which sends it once. An error is one that may pass.
func (h *Handler) again(ctx context.Context, confirmID string) (bool, error) {
	done, err := h.Rows.Get(ctx, confirmID)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if !done.Status.Done() {
		if err := h.Queue.Enqueue(ctx, done.NotifyMessage()); err != nil {
			return false, fmt.Errorf("enqueue confirmation %s: %w", confirmID, err)
		}
	}
	return true, nil
}

// key finds the delivery a reply answers: the first envelope recipient
// that is a reply address of the inbound domain whose key opens, and that
// address (lower-cased). A key that opens but has expired is DropExpired,
// none DropUnknownKey.
func (h *Handler) key(n Notification) (deliveryID, addr, drop string) {
	drop = DropUnknownKey
	rcpts := n.Receipt.Recipients
	if len(rcpts) == 0 {
		rcpts = n.Mail.Destination
	}
	for i, r := range rcpts {
		if i == maxRecipients {
			break
		}
		k, ok := KeyOf(r, h.InboundDomain)
		if !ok {
			continue
		}
		id, err := h.Keys.Open(k, h.now())
		switch {
		case err == nil:
			return id, LocalPrefix + k + "@" + strings.ToLower(h.InboundDomain), ""
		case errors.Is(err, ErrExpired):
			drop = DropExpired
		}
	}
	return "", "", drop
}

// act carries out a reply's commands in order, as what each did; an
// error is one that may pass. A number the email does not list does
// nothing (Listed false). Each is idempotent, so a reply acted on again
// after a crash records nothing twice: a vote is one per finding of an
// email, a mark's latest choice wins by when it was made (the reply's
// receipt, not the time it is processed), a mute and an unsubscribe are
// set once.
func (h *Handler) act(ctx context.Context, row delivery.Row, p Parsed, at time.Time) ([]mail.ReplyAction, error) {
	rid := unsubscribe.RecipientID(row.Recipient)
	var out []mail.ReplyAction
	for _, c := range p.Commands {
		a := mail.ReplyAction{Verb: string(c.Verb), Finding: c.Finding}
		switch c.Verb {
		case Wrong, Useful:
			res, err := h.Recorder.Record(ctx, row.ID, voting.Ref{Number: c.Finding}, vote.Choice(c.Verb), at)
			switch {
			case errors.Is(err, voting.ErrUnknownFinding):
			case err != nil:
				return nil, err
			default:
				a.Listed = true
				if res.Learning != "" {
					// What the tally did (R-LEARN-1): "full" is a
					// choice past its bound, "author" the author's own.
					obs.Metric(ctx, h.Log, map[string]string{"Outcome": string(res.Learning)}, map[string]float64{"LearningVotes": 1})
				}
				if row.IsDigest() {
					// A digest's number names a finding of one of
					// its changelists (R-DIGEST-6).
					a.Changelist = changelistID(res.ChangelistKey)
				}
			}
		case Mute:
			if row.IsDigest() {
				break // a digest names no one changelist: nothing muted
			}
			if err := h.Mutes.Mute(ctx, row.ChangelistKey, rid, at); err != nil {
				return nil, err
			}
		case Unsubscribe:
			if err := h.Unsubscribes.UnsubscribeAll(ctx, rid); err != nil {
				return nil, err
			}
		}
		obs.Metric(ctx, h.Log, map[string]string{"Verb": string(c.Verb)}, map[string]float64{"ReplyCommands": 1})
		out = append(out, a)
	}
	return out, nil
}

// changelistID is the changelist's id of its key (job.ChangelistKey:
// "<source>:<id>").
func changelistID(key string) string {
	_, id, ok := strings.Cut(key, ":")
	if !ok {
		return key
	}
	return id
}

// msgID is a Message-ID fit to key a reply by and to be sent back in a
// header: angle brackets around printable ASCII without spaces, at most
// 250 characters. An outsider wrote it: it is checked, never trusted.
var msgID = regexp.MustCompile(`^<[!-;=?-~]{1,248}>$`)

// ownMessageID is the reply's own Message-ID: its one Message-ID field
// (matched as From is, fields), fit by msgID; "" when it has none, several
// or none fit.
func ownMessageID(hdr netmail.Header) string {
	ids := fields(hdr, "Message-Id")
	if len(ids) != 1 {
		return ""
	}
	if v := strings.TrimSpace(ids[0]); msgID.MatchString(v) {
		return v
	}
	return ""
}

// Key is the reply's confirmation's delivery id: what it is acted on and
// confirmed once per (R-REPLY-8). A mail server that lost the answer to
// its DATA sends the reply again and SES gives each receipt its own
// message id, so the key is the reply's own: its sender (the delivery's
// recipient, which Authenticated has tied its From to) and its
// Message-ID (delivery.ReplyIDOf). A reply without one fit to key by
// (ownMessageID) is keyed by SES's message id (delivery.ReplyID), and
// false says so: each of its receipts is a reply of its own.
func Key(n Notification, hdr netmail.Header, sender string) (string, bool) {
	if id := ownMessageID(hdr); id != "" {
		return delivery.ReplyIDOf(sender, id), true
	}
	return delivery.ReplyID(n.Mail.MessageID), false
}

// messageID is the reply's Message-ID, which the confirmation is sent
// In-Reply-To; "" when it has none fit to be sent back.
func messageID(n Notification, h netmail.Header) string {
	if id := ownMessageID(h); id != "" {
		return id
	}
	if v := strings.TrimSpace(n.Mail.CommonHeaders.MessageID); msgID.MatchString(v) {
		return v
	}
	return ""
}
