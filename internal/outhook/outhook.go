// Package outhook is the signed webhook channel (R-CHANNEL-8): a version's
// posts sent to the destinations a deployment names
// (CRITICIZER_OUTBOUND_WEBHOOKS), each message signed as the Standard
// Webhooks specification says. It is a channel.Channel: posting carries
// it under the delivery protocol, and since a destination cannot be asked
// what it holds (Find finds nothing), a message whose answer was lost is
// sent again under the same webhook-id with the same body: at least once,
// the receiver deduplicating on webhook-id.
//
// The signature is the standard-webhooks project's own Go library
// (github.com/standard-webhooks/standard-webhooks/libraries/go), not a
// hand-written HMAC: a receiver's library verifies what it makes.
package outhook

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/criticizer/criticizer/internal/channel"
	"github.com/criticizer/criticizer/internal/retry"
)

// Destination is one configured webhook destination. Secret is
// "whsec_" and the base64 of the signing key, as the specification
// writes it.
type Destination struct {
	Name   string `json:"name"`
	URL    string `json:"url"`
	Secret string `json:"secret"`
}

// MaxDestinations bounds the destinations a deployment names.
const MaxDestinations = 16

var namePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,31}$`)

// Parse reads CRITICIZER_OUTBOUND_WEBHOOKS: a JSON array of
// destinations, each with a name (lower case, digits, - and _; at most
// 32), an http(s) URL and a whsec_ secret. Errors never quote a URL or a
// secret (they may hold a token).
func Parse(raw string) ([]Destination, error) {
	if strings.TrimSpace(raw) == "" {
		return nil, nil
	}
	var ds []Destination
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ds); err != nil {
		return nil, errors.New("not a JSON array of {name, url, secret}")
	}
	if len(ds) > MaxDestinations {
		return nil, fmt.Errorf("%d destinations, at most %d", len(ds), MaxDestinations)
	}
	seen := map[string]bool{}
	for i, d := range ds {
		if !namePattern.MatchString(d.Name) {
			return nil, fmt.Errorf("destination %d: name must be 1-32 of a-z, 0-9, - and _", i)
		}
		if seen[d.Name] {
			return nil, fmt.Errorf("destination %q named twice", d.Name)
		}
		seen[d.Name] = true
		u, err := url.Parse(d.URL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil {
			return nil, fmt.Errorf("destination %q: url must be http(s)://host/..., without credentials", d.Name)
		}
		if _, err := key(d.Secret); err != nil {
			return nil, fmt.Errorf("destination %q: %w", d.Name, err)
		}
	}
	return ds, nil
}

// key decodes a whsec_ secret to the signing key.
func key(secret string) ([]byte, error) {
	b64, ok := strings.CutPrefix(secret, "whsec_")
	if !ok {
		return nil, errors.New("secret must start with whsec_")
	}
	k, err := base64.StdEncoding.DecodeString(b64)
	if err != nil || len(k) < 16 {
		return nil, errors.New("secret after whsec_ must be the base64 of at least 16 bytes")
	}
	return k, nil
}

// Hook is one destination as a channel.
type Hook struct {
	dest   Destination
	signer *standardwebhooks.Webhook
	client *http.Client
	now    func() time.Time
}

var (
	_ channel.Channel  = (*Hook)(nil)
	_ channel.Renderer = (*Hook)(nil)
)

// New returns the channel of d, sending through client (a safehttp
// client in a deployment: private and loopback addresses refused).
func New(d Destination, client *http.Client, now func() time.Time) (*Hook, error) {
	k, err := key(d.Secret)
	if err != nil {
		return nil, fmt.Errorf("destination %q: %w", d.Name, err)
	}
	wh, err := standardwebhooks.NewWebhookRaw(k)
	if err != nil {
		return nil, fmt.Errorf("destination %q: %w", d.Name, err)
	}
	if now == nil {
		now = time.Now
	}
	return &Hook{dest: d, signer: wh, client: client, now: now}, nil
}

// Name is the row's channel key: "webhook:" and the destination's name.
func (h *Hook) Name() string { return "webhook:" + h.dest.Name }

// Find finds nothing: a webhook destination cannot be asked what it
// took, so a message whose answer was lost is sent again, same id and
// body (R-CHANNEL-3).
func (h *Hook) Find(context.Context, channel.Post) (channel.Receipt, bool, error) {
	return channel.Receipt{}, false, nil
}

// Render is the message's body (Body), stored once with the row.
func (h *Hook) Render(p channel.Post) ([]byte, error) { return Render(p) }

// SendTimeout bounds one delivery attempt.
const SendTimeout = 10 * time.Second

// Send POSTs the stored body with the Standard Webhooks headers: the
// post's id as webhook-id, a fresh timestamp and signature on each try.
// A 2xx is taken; any other answer is an HTTPStatusError classified by
// its status (R-STAGE-1); the response body is never read into a log.
func (h *Hook) Send(ctx context.Context, p channel.Post, _ channel.Receipt) (channel.Receipt, error) {
	body := p.Body
	if body == nil {
		var err error
		if body, err = Render(p); err != nil {
			return channel.Receipt{}, retry.Permanent(retry.RuntimeBug, err)
		}
	}
	at := h.now()
	sig, err := h.signer.Sign(p.ID, at, body)
	if err != nil {
		return channel.Receipt{}, retry.Permanent(retry.RuntimeBug, fmt.Errorf("sign %s: %w", p.ID, err))
	}
	ctx, cancel := context.WithTimeout(ctx, SendTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.dest.URL, bytes.NewReader(body))
	if err != nil {
		return channel.Receipt{}, retry.Permanent(retry.SchemaInvalid, fmt.Errorf("webhook %s: bad request", h.dest.Name))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "Criticizer-Webhooks/1")
	req.Header.Set(standardwebhooks.HeaderWebhookID, p.ID)
	req.Header.Set(standardwebhooks.HeaderWebhookTimestamp, fmt.Sprint(at.Unix()))
	req.Header.Set(standardwebhooks.HeaderWebhookSignature, sig)
	resp, err := h.client.Do(req)
	if err != nil {
		// The URL (and its query, which may hold a token) is dropped from
		// the error: what is logged and dead-lettered is the class.
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = fmt.Errorf("webhook %s: %s: %w", h.dest.Name, uerr.Op, uerr.Err)
		}
		return channel.Receipt{}, err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return channel.Receipt{}, &retry.HTTPStatusError{Status: resp.StatusCode, RetryAfter: resp.Header.Get("Retry-After"), Op: "webhook." + h.dest.Name}
	}
	return channel.Receipt{Ref: p.ID}, nil
}
