package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	netmail "net/mail"
	"net/smtp"
	"strings"
	"sync"
	"time"

	"github.com/criticizer/criticizer/internal/devstack"
	"github.com/criticizer/criticizer/internal/inbound"
	"github.com/criticizer/criticizer/internal/mail"
	"github.com/criticizer/criticizer/internal/queue"
	"github.com/criticizer/criticizer/internal/store/dynamo"
)

// replyDomain is the campaign's inbound domain.
const replyDomain = "replies.chaos.test"

// replier plays reviewers replying during the campaign: it watches the
// SES store for this run's critiques, replies "wrong 1" to a seeded share
// of them over SMTP (the local SES receiving, which is not faulted: it is
// SES), and delivers a seeded share of those replies' notifications a
// second time, as SQS's at-least-once delivery and a DLQ redrive do. The
// reply function, and notify sending the confirmations, run among the
// workers: restarted, their AWS calls faulted below the SDK, their
// invocations killed. Each reply must end with one vote on the finding it
// names (if the email lists one) and exactly one confirmation.
type replier struct {
	in   *devstack.Inbound
	ses  *devstack.SESEmulator
	run  string
	rate float64
	log  *slog.Logger

	mu      sync.Mutex
	rng     *rand.Rand
	seen    map[string]bool // delivery ids looked at
	replies []sentReply
	doubled int
	errors  int
	// resent: replies sent a second time over SMTP (a mail server that
	// lost the answer to its DATA); SES gives each receipt its own id.
	resent int
	// forged are replies with a second From field (R-REPLY-2): never
	// acted on, never confirmed.
	forged []sentReply
}

// sentReply is one reply the campaign sent.
type sentReply struct {
	deliveryID string
	// confirmation is its confirmation's delivery id (inbound.Key: the
	// reader's address and the reply's Message-ID).
	confirmation string
	listed       bool // the email numbers a finding 1
}

func newReplier(in *devstack.Inbound, sesURL, run string, seed uint64, rate float64, log *slog.Logger) *replier {
	return &replier{in: in, ses: &devstack.SESEmulator{BaseURL: sesURL}, run: run, rate: rate, log: log,
		rng: rand.New(rand.NewPCG(seed, seed^0x7e9)), seen: map[string]bool{}}
}

// loop replies until ctx is done.
func (r *replier) loop(ctx context.Context) {
	for ctx.Err() == nil {
		r.once(ctx)
		sleepCtx(ctx, 500*time.Millisecond)
	}
}

func (r *replier) once(ctx context.Context) {
	emails, err := r.ses.Emails(ctx)
	if err != nil {
		return
	}
	for _, e := range emails {
		id := e.Header(mail.DeliveryIDHeader)
		if id == "" || len(e.ReplyTo) == 0 || strings.HasPrefix(e.Subject, "Re: ") || !strings.Contains(e.Subject, r.run+"-cl") || len(e.Destination.To) != 1 {
			continue
		}
		r.mu.Lock()
		seen := r.seen[id]
		r.seen[id] = true
		reply := !seen && r.rng.Float64() < r.rate
		// Until one reply has been delivered twice, every reply is: each
		// campaign tries the duplicate at its first chance, then at 30%,
		// as the platform kinds are injected (inject.go), so a short run
		// with few replies still tests it. The same for a reply sent
		// twice over SMTP, and for a forged reply to an email nobody
		// replies to.
		double := r.rng.Float64() < 0.3 || r.doubled == 0
		resend := r.rng.Float64() < 0.3 || r.resent == 0
		forge := !seen && !reply && (r.rng.Float64() < r.rate/2 || len(r.forged) == 0)
		r.mu.Unlock()
		if forge && len(e.Destination.To) == 1 {
			r.forge(id, e)
			continue
		}
		if !reply {
			continue
		}
		to := e.Destination.To[0]
		before := len(r.in.Published())
		msg := devstack.ReplyMessage(to, e, "wrong 1")
		var sendErr error
		for try := 0; try < 5; try++ {
			if sendErr = smtp.SendMail(r.in.Addr(), nil, to, e.ReplyTo[:1], msg); sendErr == nil {
				break
			}
			sleepCtx(ctx, 200*time.Millisecond)
		}
		pub := r.in.Published()
		if sendErr != nil || len(pub) <= before {
			r.mu.Lock()
			r.errors++
			r.mu.Unlock()
			continue
		}
		body := pub[len(pub)-1]
		if resend {
			// The same bytes again: another receipt, another SES id, the
			// same reply (R-REPLY-8): one confirmation.
			if smtp.SendMail(r.in.Addr(), nil, to, e.ReplyTo[:1], msg) == nil {
				r.mu.Lock()
				r.resent++
				r.mu.Unlock()
			}
		}
		var n inbound.Notification
		_ = json.Unmarshal(body, &n)
		var confirmation string
		if m, err := netmail.ReadMessage(bytes.NewReader(msg)); err == nil {
			confirmation, _ = inbound.Key(n, m.Header, to)
		}
		r.mu.Lock()
		r.replies = append(r.replies, sentReply{deliveryID: id, confirmation: confirmation, listed: strings.Contains(e.Body.Text, "\n  #1 [")})
		r.mu.Unlock()
		if double {
			// The same notification again: what SQS redelivering it, or a
			// redrive moving it with a new id, hands the reply function.
			if r.in.Republish(ctx, body) == nil {
				r.mu.Lock()
				r.doubled++
				r.mu.Unlock()
			}
		}
	}
}

// forge sends a reply to the email with a second From field, someone
// else's, under the reader's: acted on, it would record a vote in their
// name. It must be dropped (ambiguous_from), never confirmed.
func (r *replier) forge(id string, e devstack.StoredEmail) {
	to := e.Destination.To[0]
	msg := append([]byte("From: eve."+r.run+"@example.com\r\n"), devstack.ReplyMessage(to, e, "wrong 1")...)
	before := len(r.in.Published())
	if err := smtp.SendMail(r.in.Addr(), nil, to, e.ReplyTo[:1], msg); err != nil || len(r.in.Published()) <= before {
		return
	}
	pub := r.in.Published()
	var n inbound.Notification
	_ = json.Unmarshal(pub[len(pub)-1], &n)
	var key string
	if m, err := netmail.ReadMessage(bytes.NewReader(msg)); err == nil {
		key, _ = inbound.Key(n, m.Header, to)
	}
	r.mu.Lock()
	r.forged = append(r.forged, sentReply{deliveryID: id, confirmation: key})
	r.mu.Unlock()
}

// busy counts the reply queue's and its DLQ's messages; redrive moves the
// DLQ's back, as an operator would (docs/operations.md).
func replyBusy(ctx context.Context, c *devstack.Clients, res devstack.Resources) (int, error) {
	q := queue.New(c.SQS, queue.URLs{})
	n := 0
	for _, u := range []string{res.ReplyQueue, res.ReplyDLQ} {
		cnt, err := q.Counts(ctx, u)
		if err != nil {
			return 0, fmt.Errorf("count the reply queues: %w", err)
		}
		n += cnt.Visible + cnt.InFlight + cnt.Delayed
	}
	return n, nil
}

// verify checks every reply: exactly one confirmation email (none is
// lost, none duplicated), and its vote when the email lists finding 1.
func (r *replier) verify(ctx context.Context, c *devstack.Clients, res devstack.Resources, emails []devstack.StoredEmail, rep *Report) error {
	r.mu.Lock()
	replies := append([]sentReply(nil), r.replies...)
	forged := append([]sentReply(nil), r.forged...)
	rep.Replies, rep.RepliesDoubled, rep.ReplyErrors = len(replies), r.doubled, r.errors
	rep.RepliesResent, rep.RepliesForged = r.resent, len(forged)
	r.mu.Unlock()
	confirmations := map[string]int{}
	for _, e := range emails {
		confirmations[e.Header(mail.DeliveryIDHeader)]++
	}
	votes, err := dynamo.NewVotes(c.DynamoDB, res.JobsTable, nil).List(ctx)
	if err != nil {
		return err
	}
	voted := map[string]int{}
	for _, v := range votes {
		voted[v.DeliveryID]++
	}
	for _, sr := range replies {
		switch n := confirmations[sr.confirmation]; {
		case n == 0:
			rep.ConfirmationsLost++
			rep.Problems = append(rep.Problems, fmt.Sprintf("the reply to %s has no confirmation", sr.deliveryID))
		case n > 1:
			rep.ConfirmationDuplicates += n - 1
			rep.Problems = append(rep.Problems, fmt.Sprintf("the reply to %s has %d confirmations", sr.deliveryID, n))
		default:
			rep.Confirmations++
		}
		if sr.listed {
			switch voted[sr.deliveryID] {
			case 0:
				rep.VotesLost++
				rep.Problems = append(rep.Problems, fmt.Sprintf("the reply to %s recorded no vote", sr.deliveryID))
			case 1:
				rep.Votes++
			default:
				rep.Problems = append(rep.Problems, fmt.Sprintf("the reply to %s recorded %d votes on one finding", sr.deliveryID, voted[sr.deliveryID]))
			}
		}
	}
	for _, fr := range forged {
		if confirmations[fr.confirmation] > 0 || voted[fr.deliveryID] > 0 {
			rep.ForgedActed++
			rep.Problems = append(rep.Problems, fmt.Sprintf("a forged reply to %s was acted on (%d confirmations, %d votes)",
				fr.deliveryID, confirmations[fr.confirmation], voted[fr.deliveryID]))
		}
	}
	left, err := replyBusy(ctx, c, res)
	if err != nil {
		return err
	}
	if rep.ReplyLeft = left; left > 0 {
		rep.Problems = append(rep.Problems, fmt.Sprintf("%d reply messages never processed", left))
	}
	return nil
}

// isConfirmation reports whether an email is one of the campaign's
// replies' confirmations.
func (r *replier) isConfirmation(deliveryID string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, sr := range r.replies {
		if sr.confirmation == deliveryID {
			return true
		}
	}
	return false
}

func sleepCtx(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
