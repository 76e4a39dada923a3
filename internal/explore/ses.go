package explore

import (
	"context"
	"encoding/json"
	"fmt"
	"syscall"
	"time"

	"github.com/aws/smithy-go"

	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/mail"
	"github.com/criticizer/criticizer/internal/sesevent"
)

// Fate is what becomes of a message SES accepted, named by the event SES
// publishes after its Send event.
type Fate string

const (
	Delivered          Fate = "Delivery"
	TransientBounce    Fate = "Bounce/Transient"
	PermanentBounce    Fate = "Bounce/Permanent"
	Complained         Fate = "Complaint"
	RejectedForContent Fate = "Reject"
)

// reaches reports whether the reader has the message: a bounce or a
// reject means no copy reached the mailbox.
func (f Fate) reaches() bool { return f == Delivered || f == Complained }

// sesMail is one message SES accepted.
type sesMail struct {
	id       string // SES message id
	delivery string // the delivery id tag; "" for a probe
	probe    string
	to       string
	text     string    // the text part: what a digest covers (digest.go)
	at       time.Time // accepted (mail.timestamp)
	fate     Fate
	events   []*sesEvent
}

// sesEvent is one event SES publishes for a message, through SNS to the
// feedback queue. The Send event must reach the queue within the world's
// publish bound of the message's acceptance (the assumption the delivery
// protocol names); the others may come any time, or never.
type sesEvent struct {
	mail      *sesMail
	typ       string // Send, Delivery, Bounce, Complaint, Reject
	bounce    string // Transient, Permanent
	published int
	processed bool // a feedback invocation recorded it and its message was deleted
}

func (e *sesEvent) label() string { return e.typ + "(" + e.mail.id + ")" }

// body is the event as SES publishes it through SNS with raw message
// delivery: the feedback queue's message body.
func (e *sesEvent) body(set string) string {
	tags := map[string][]string{sesevent.ConfigurationSetTag: {set}}
	if e.mail.delivery != "" {
		tags[mail.DeliveryIDTag] = []string{e.mail.delivery}
	}
	if e.mail.probe != "" {
		tags[mail.ProbeTag] = []string{e.mail.probe}
	}
	ev := map[string]any{"eventType": e.typ,
		"mail": map[string]any{"messageId": e.mail.id, "timestamp": e.mail.at.UTC().Format(time.RFC3339Nano), "tags": tags}}
	at := e.mail.at.Add(time.Second).UTC().Format(time.RFC3339Nano)
	switch e.typ {
	case "Delivery":
		ev["delivery"] = map[string]any{"timestamp": at}
	case "Bounce":
		ev["bounce"] = map[string]any{"bounceType": e.bounce, "bounceSubType": "General", "timestamp": at}
	case "Complaint":
		ev["complaint"] = map[string]any{"timestamp": at}
	case "Reject":
		ev["reject"] = map[string]any{"reason": "Bad content"}
	}
	b, _ := json.Marshal(ev)
	return string(b)
}

// ses is SES v2 as the notifier sees it: every send is a choice point
// where the explorer picks accepted, answer lost, slow, throttled or
// refused; accepted mail is in the world's mailbox, with its events.
type ses struct {
	w *world
}

// sendFaults are the answers the explorer may give a send besides OK.
func sendFaults() []Outcome { return []Outcome{AnswerLost, Slow, FailBefore, Refused} }

// Send implements notify.Sender.
func (s *ses) Send(ctx context.Context, deliveryID, to string, m delivery.Message) (string, error) {
	return s.send(ctx, deliveryID, to, "", m.Text)
}

// SendProbe implements notify.Prober: a message to the mailbox
// simulator through the configuration set.
func (s *ses) SendProbe(ctx context.Context, id string) (string, error) {
	return s.send(ctx, "", "probe@simulator", id, "")
}

func (s *ses) send(ctx context.Context, deliveryID, to, probe, text string) (string, error) {
	w := s.w
	o := op{name: "ses.Send", key: deliveryID + probe, write: true, faults: sendFaults()}
	out := w.sched.gate(ctx, o)
	if p := procOf(ctx); p != nil {
		defer func() { p.note(o, out, "") }()
	}
	switch out {
	case FailBefore:
		// A throttle: an answer, nothing sent.
		return "", &delivery.NotSentError{Err: fmt.Errorf("ses send: %w",
			&smithy.GenericAPIError{Code: "TooManyRequestsException", Message: "Maximum sending rate exceeded", Fault: smithy.FaultClient})}
	case Refused:
		if w.refused == nil {
			w.refused = map[string]bool{}
		}
		w.refused[deliveryID] = true
		return "", &delivery.NotSentError{Err: fmt.Errorf("ses send: %w",
			&smithy.GenericAPIError{Code: "MessageRejected", Message: "Email address is not verified", Fault: smithy.FaultClient})}
	}
	m := w.accept("ses-"+w.name(ctx), deliveryID, to, probe)
	m.text = text
	switch out {
	case AnswerLost:
		return "", fmt.Errorf("ses send: read tcp 127.0.0.1:443: %w", syscall.ECONNRESET)
	case Slow:
		// Accepted; the answer is a later step.
		w.sched.gate(ctx, op{name: "ses.Answer", key: m.id})
	}
	return m.id, nil
}

// accept records a message SES accepted and the events it will publish.
func (w *world) accept(id, deliveryID, to, probe string) *sesMail {
	m := &sesMail{id: id, delivery: deliveryID, probe: probe, to: to, at: w.now, fate: Delivered}
	m.events = []*sesEvent{{mail: m, typ: "Send"}}
	f, ok := w.sc.Fates[to]
	if jf, set := w.fateOf[deliveryID]; set {
		f, ok = jf, true
	}
	if !ok || probe != "" {
		// Delivered, and its Delivery event left out: it changes nothing
		// the protocol decides, and each event is a feedback invocation
		// to interleave.
		w.mails = append(w.mails, m)
		return m
	}
	m.fate = f
	switch m.fate {
	case TransientBounce:
		m.events = append(m.events, &sesEvent{mail: m, typ: "Bounce", bounce: "Transient"})
	case PermanentBounce:
		m.events = append(m.events, &sesEvent{mail: m, typ: "Bounce", bounce: "Permanent"})
	default:
		m.events = append(m.events, &sesEvent{mail: m, typ: string(m.fate)})
	}
	w.mails = append(w.mails, m)
	return m
}

// publish puts e on the feedback queue, as SNS delivers it.
func (w *world) publish(e *sesEvent) {
	e.published++
	w.feedback.add(w, fmt.Sprintf("fb-%s-%d", e.label(), e.published), e.body(w.sc.ConfigurationSet), 0, time.Time{}, e)
}

// unpublished lists the events not yet on the feedback queue, in the order
// SES produced them.
func (w *world) unpublished() []*sesEvent {
	var out []*sesEvent
	for _, m := range w.mails {
		for _, e := range m.events {
			if e.published == 0 {
				out = append(out, e)
			}
		}
	}
	return out
}
