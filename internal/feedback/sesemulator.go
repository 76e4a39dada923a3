// Package feedback is where provider evidence comes from: proof that SES
// accepted (or delivered, bounced...) the message for a delivery id. The
// notifier consults it before any resend of a row whose send may have
// happened (seed 000 §6.4, §8.2).
package feedback

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/mail"
)

// SESEmulator reads the SES emulator's mailbox (GET /store). It is how tests
// assert on sent mail, and it is the local provider-evidence source: the
// emulator publishes no SES events, so the notifier's reconciliation reads
// the same fact — "SES accepted a message with this delivery id" — from
// here.
type SESEmulator struct {
	BaseURL string
	HTTP    *http.Client
}

// StoredEmail is one message in the emulator's store.
type StoredEmail struct {
	MessageID   string `json:"messageId"`
	From        string `json:"from"`
	Destination struct {
		To []string `json:"to"`
	} `json:"destination"`
	Subject string `json:"subject"`
	Body    struct {
		HTML string `json:"html"`
		Text string `json:"text"`
	} `json:"body"`
	Headers []struct {
		Name  string `json:"name"`
		Value string `json:"value"`
	} `json:"headers"`
	At int64 `json:"at"` // seconds since the epoch
}

// Header returns a header's value, case-insensitively.
func (e StoredEmail) Header(name string) string {
	for _, h := range e.Headers {
		if strings.EqualFold(h.Name, name) {
			return h.Value
		}
	}
	return ""
}

func (s *SESEmulator) client() *http.Client {
	if s.HTTP != nil {
		return s.HTTP
	}
	return &http.Client{Timeout: 10 * time.Second}
}

// Emails returns every stored message.
func (s *SESEmulator) Emails(ctx context.Context) ([]StoredEmail, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.BaseURL+"/store", nil)
	if err != nil {
		return nil, err
	}
	resp, err := s.client().Do(req)
	if err != nil {
		return nil, fmt.Errorf("ses store: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("ses store: HTTP %d", resp.StatusCode)
	}
	var out struct {
		Emails []StoredEmail `json:"emails"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, fmt.Errorf("ses store: %w", err)
	}
	return out.Emails, nil
}

// Lookup finds the message SES accepted for a delivery id, if any.
func (s *SESEmulator) Lookup(ctx context.Context, deliveryID string) (delivery.Evidence, bool, error) {
	emails, err := s.Emails(ctx)
	if err != nil {
		return delivery.Evidence{}, false, err
	}
	for _, e := range emails {
		if e.Header(mail.DeliveryIDHeader) == deliveryID {
			return delivery.Evidence{MessageID: e.MessageID, At: time.Unix(e.At, 0)}, true, nil
		}
	}
	return delivery.Evidence{}, false, nil
}
