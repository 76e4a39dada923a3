package devstack

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// SESEmulator reads the SES emulator's mailbox (GET /store). Tests assert on
// sent mail through it, and the local SES event bridge (package devstack)
// turns what it reads into the events SES would publish.
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
	// ReplyTo are the message's Reply-To addresses.
	ReplyTo []string `json:"replyTo"`
	Subject string   `json:"subject"`
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
