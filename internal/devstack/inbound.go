package devstack

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/mail"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/emersion/go-smtp"
)

// Inbound plays SES's email receiving for the local stack: an SMTP
// listener (github.com/emersion/go-smtp) that accepts mail for the
// inbound domain's recipients only, as the receipt rule matches them, and
// for each message does what the rule's S3 action does on AWS: stores the
// raw message in the payload bucket under the inbound prefix, with the
// headers SES prepends, and publishes SES's "Received" notification — the
// same JSON, receipt verdicts and S3 action included — to the inbound
// topic, which delivers it raw to the reply queue. The reply function
// runs the same code as on AWS from there.
//
// SES computes SPF, DKIM, DMARC, spam and virus verdicts; the local stack
// cannot (no DNS of the sender's domain, no scanner). Every verdict is
// PASS unless the message carries VerdictsHeader, which tests use to
// force others (docs/local-stack.md's fidelity table); SES never honours
// such a header, and the reply function never reads it.
type Inbound struct {
	// Domain is the inbound domain: a recipient elsewhere is refused with
	// 550, as SES refuses mail no rule matches.
	Domain string
	S3     *s3.Client
	Bucket string
	// Prefix is the S3 action's object key prefix (deploy.InboundPrefix).
	Prefix   string
	SNS      *sns.Client
	TopicARN string
	// Verdicts, if set, replaces the verdicts of every message (after
	// VerdictsHeader): a switch for a test or a chaos campaign.
	Verdicts func(*Verdicts)
	Log      *slog.Logger
	// Now is the clock; nil is time.Now.
	Now func() time.Time

	server    *smtp.Server
	ln        net.Listener
	mu        sync.Mutex
	count     int
	published [][]byte
}

// VerdictsHeader, on a message sent to the local listener, sets its
// verdicts: "spf=FAIL dkim=FAIL dmarc=FAIL dmarcPolicy=reject spam=FAIL
// virus=FAIL", any of them; the others stay PASS.
const VerdictsHeader = "X-Local-SES-Verdicts"

// Verdicts are a received message's receipt verdicts.
type Verdicts struct {
	SPF, DKIM, DMARC, Spam, Virus string
	// DMARCPolicy is set only with a DMARC FAIL, as SES does.
	DMARCPolicy string
}

// MaxInboundBytes is the largest message the listener takes: SES's S3
// action takes up to 30 MB; locally a few MiB is more than any reply.
const MaxInboundBytes = 4 << 20

// Start listens on addr ("127.0.0.1:2525", or ":0" for any port).
func (in *Inbound) Start(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("inbound SMTP: %w", err)
	}
	s := smtp.NewServer(smtp.BackendFunc(func(*smtp.Conn) (smtp.Session, error) { return &session{in: in}, nil }))
	s.Domain = "inbound-smtp.local"
	s.MaxMessageBytes = MaxInboundBytes
	s.MaxRecipients = 50
	s.ReadTimeout, s.WriteTimeout = 30*time.Second, 30*time.Second
	s.ErrorLog = slogPrinter{in.Log}
	in.server, in.ln = s, ln
	go func() { _ = s.Serve(ln) }()
	return nil
}

// Addr is where the listener listens.
func (in *Inbound) Addr() string { return in.ln.Addr().String() }

// Received is how many messages the listener stored and notified.
func (in *Inbound) Received() int {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.count
}

// Published are the notifications the listener published, in order:
// tests publish one again to play SQS redelivering it, or a DLQ redrive.
func (in *Inbound) Published() [][]byte {
	in.mu.Lock()
	defer in.mu.Unlock()
	return slices.Clone(in.published)
}

// Republish publishes a notification to the inbound topic again.
func (in *Inbound) Republish(ctx context.Context, body []byte) error {
	_, err := in.SNS.Publish(ctx, &sns.PublishInput{TopicArn: aws.String(in.TopicARN), Message: aws.String(string(body))})
	return err
}

// Close stops the listener.
func (in *Inbound) Close() error {
	if in.server == nil {
		return nil
	}
	return in.server.Close()
}

type slogPrinter struct{ log *slog.Logger }

func (p slogPrinter) Printf(format string, v ...any) { p.log.Debug(fmt.Sprintf(format, v...)) }
func (p slogPrinter) Println(v ...any)               { p.log.Debug(fmt.Sprint(v...)) }

type session struct {
	in    *Inbound
	from  string
	rcpts []string
}

func (s *session) Reset()        { s.from, s.rcpts = "", nil }
func (s *session) Logout() error { return nil }

func (s *session) Mail(from string, _ *smtp.MailOptions) error {
	s.from = from
	return nil
}

func (s *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	at := strings.LastIndexByte(to, '@')
	if at < 0 || !strings.EqualFold(to[at+1:], s.in.Domain) {
		return &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "Mailbox does not exist"}
	}
	s.rcpts = append(s.rcpts, to)
	return nil
}

func (s *session) Data(r io.Reader) error {
	raw, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	if err := s.in.receive(context.Background(), s.from, s.rcpts, raw); err != nil {
		s.in.Log.Warn("inbound SMTP: message not stored", "error", err)
		return &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "Try again later"}
	}
	return nil
}

// receive stores a message and publishes its notification, as the
// receipt rule's S3 action does.
func (in *Inbound) receive(ctx context.Context, from string, rcpts []string, raw []byte) error {
	now := time.Now
	if in.Now != nil {
		now = in.Now
	}
	at := now().UTC()
	m, err := mail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		return fmt.Errorf("not a message: %w", err)
	}
	v := Verdicts{SPF: "PASS", DKIM: "PASS", DMARC: "PASS", Spam: "PASS", Virus: "PASS"}
	for _, kv := range strings.Fields(m.Header.Get(VerdictsHeader)) {
		k, val, _ := strings.Cut(kv, "=")
		switch strings.ToLower(k) {
		case "spf":
			v.SPF = val
		case "dkim":
			v.DKIM = val
		case "dmarc":
			v.DMARC = val
		case "dmarcpolicy":
			v.DMARCPolicy = val
		case "spam":
			v.Spam = val
		case "virus":
			v.Virus = val
		}
	}
	if in.Verdicts != nil {
		in.Verdicts(&v)
	}
	id := sesMessageID()
	key := in.Prefix + id
	// SES prepends its own trace and verdict headers to what it stores.
	stored := append([]byte(fmt.Sprintf("Return-Path: <%s>\r\nReceived: from local (127.0.0.1) by inbound-smtp.local with SMTP id %s for %s; %s\r\n"+
		"X-SES-Spam-Verdict: %s\r\nX-SES-Virus-Verdict: %s\r\n"+
		"Authentication-Results: amazonses.com; spf=%s; dkim=%s; dmarc=%s;\r\n",
		from, id, strings.Join(rcpts, ", "), at.Format(time.RFC1123Z), v.Spam, v.Virus,
		strings.ToLower(v.SPF), strings.ToLower(v.DKIM), strings.ToLower(v.DMARC))), raw...)
	if _, err := in.S3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(in.Bucket), Key: aws.String(key), Body: bytes.NewReader(stored)}); err != nil {
		return fmt.Errorf("store %s: %w", key, err)
	}
	body, err := json.Marshal(in.notification(m.Header, from, rcpts, id, key, at, v))
	if err != nil {
		return err
	}
	if _, err := in.SNS.Publish(ctx, &sns.PublishInput{TopicArn: aws.String(in.TopicARN), Message: aws.String(string(body))}); err != nil {
		return fmt.Errorf("notify %s: %w", id, err)
	}
	in.mu.Lock()
	in.count++
	in.published = append(in.published, body)
	in.mu.Unlock()
	in.Log.Info("inbound SMTP: reply stored and notified", "ses_message_id", id, "object", key)
	return nil
}

// notification is SES's Received notification of a message stored by an
// S3 action that notifies a topic, as the SES developer guide shows it
// ("Contents of notifications for Amazon SES email receiving").
func (in *Inbound) notification(h mail.Header, from string, rcpts []string, id, key string, at time.Time, v Verdicts) map[string]any {
	verdict := func(s string) map[string]string { return map[string]string{"status": s} }
	var headers []map[string]string
	for name, vals := range h {
		for _, val := range vals {
			headers = append(headers, map[string]string{"name": name, "value": val})
		}
	}
	list := func(name string) []string {
		as, err := h.AddressList(name)
		if err != nil {
			return nil
		}
		out := make([]string, len(as))
		for i, a := range as {
			out[i] = a.String()
		}
		return out
	}
	common := map[string]any{"returnPath": from, "from": list("From"), "to": list("To"), "messageId": h.Get("Message-Id"),
		"date": h.Get("Date"), "subject": h.Get("Subject")}
	if cc := list("Cc"); len(cc) > 0 {
		common["cc"] = cc
	}
	receipt := map[string]any{
		"timestamp": at.Format("2006-01-02T15:04:05.000Z"), "processingTimeMillis": 42, "recipients": rcpts,
		"spamVerdict": verdict(v.Spam), "virusVerdict": verdict(v.Virus), "spfVerdict": verdict(v.SPF),
		"dkimVerdict": verdict(v.DKIM), "dmarcVerdict": verdict(v.DMARC),
		"action": map[string]any{"type": "S3", "topicArn": in.TopicARN, "bucketName": in.Bucket, "objectKeyPrefix": in.Prefix, "objectKey": key},
	}
	if v.DMARC == "FAIL" && v.DMARCPolicy != "" {
		receipt["dmarcPolicy"] = v.DMARCPolicy
	}
	return map[string]any{
		"notificationType": "Received",
		"mail": map[string]any{"timestamp": at.Format("2006-01-02T15:04:05.000Z"), "source": from, "messageId": id,
			"destination": append(list("To"), list("Cc")...), "headersTruncated": false, "headers": headers, "commonHeaders": common},
		"receipt": receipt,
	}
}

// sesMessageID is a message id in SES's receiving form: 40 lower-case
// letters and digits.
func sesMessageID() string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, 40)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}

// ReplyMessage is a reply to a stored email as a mail client writes it:
// from the recipient, to the email's Reply-To, "Re:" its subject,
// In-Reply-To its Message-ID, text above the quoted email.
func ReplyMessage(from string, e StoredEmail, text string) []byte {
	var b strings.Builder
	to := ""
	if len(e.ReplyTo) > 0 {
		to = e.ReplyTo[0]
	}
	fmt.Fprintf(&b, "From: %s\r\nTo: %s\r\nSubject: Re: %s\r\nDate: %s\r\nMessage-ID: <%s@local.client>\r\nMIME-Version: 1.0\r\n"+
		"Content-Type: text/plain; charset=utf-8\r\n", from, to, mime.QEncoding.Encode("utf-8", e.Subject), time.Now().UTC().Format(time.RFC1123Z), sesMessageID())
	if id := e.Header("Message-Id"); id != "" {
		fmt.Fprintf(&b, "In-Reply-To: %s\r\nReferences: %s\r\n", id, id)
	}
	b.WriteString("\r\n" + strings.ReplaceAll(text, "\n", "\r\n") + "\r\n\r\nOn " + time.Unix(e.At, 0).UTC().Format("Mon, Jan 2, 2006 at 3:04 PM") +
		" Criticizer <" + to + "> wrote:\r\n\r\n")
	for _, l := range strings.Split(strings.ReplaceAll(e.Body.Text, "\r\n", "\n"), "\n") {
		b.WriteString(strings.TrimRight("> "+l, " ") + "\r\n")
	}
	return []byte(b.String())
}
