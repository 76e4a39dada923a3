package sesmail_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sesv2"

	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/sesmail"
	"github.com/criticizer/criticizer/internal/unsubscribe"
)

// roundTripFunc is an http.RoundTripper: the test stands in for SES below
// the SDK and reads the request as SES would receive it.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// sentHeaders sends m through a Sender whose SES answers every SendEmail
// with a message id, and returns the headers the request carried.
func sentHeaders(t *testing.T, m delivery.Message) []struct{ Name, Value string } {
	t.Helper()
	var body []byte
	client := sesv2.New(sesv2.Options{
		Region:      "eu-west-1",
		Credentials: aws.AnonymousCredentials{},
		HTTPClient: &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
			b, err := io.ReadAll(r.Body)
			if err != nil {
				return nil, err
			}
			body = b
			return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
				Body: io.NopCloser(bytes.NewReader([]byte(`{"MessageId":"m-1"}`))), Request: r}, nil
		})},
	})
	if _, err := sesmail.NewSender(client, "criticizer@example.com", "").Send(context.Background(), "d_limits", "rcpt@example.com", m); err != nil {
		t.Fatalf("send: %v", err)
	}
	var in struct {
		Content struct {
			Simple struct {
				Headers []struct{ Name, Value string }
			}
		}
	}
	if err := json.Unmarshal(body, &in); err != nil {
		t.Fatalf("SendEmail request %q: %v", body, err)
	}
	return in.Content.Simple.Headers
}

// TestListUnsubscribe_LongestFitsSESHeaderLimits: under the longest public
// URL config accepts, the longest List-Unsubscribe value notify can build
// — the real signer's token for the longest scope any source produces — is
// exactly SES's 870-character limit, and every header name and value the
// sender gives SES keeps SES's rules (names: 1–126 printable ASCII
// characters without a colon; values: 1–870 printable ASCII characters).
// So config's bound is the one the sender needs: one character more would
// be refused by SES, and config refuses it (TestPublicURL_SESHeaderBoundary).
// Rules: R-LIMIT-2.
func TestListUnsubscribe_LongestFitsSESHeaderLimits(t *testing.T) {
	signer, err := unsubscribe.NewSigner(strings.Repeat("k", unsubscribe.MinKeyLen))
	if err != nil {
		t.Fatal(err)
	}
	rcpt := unsubscribe.RecipientID("reviewer@example.com")
	if len(rcpt) != config.UnsubscribeRecipientIDLen {
		t.Errorf("recipient id %q is %d characters; config assumes %d", rcpt, len(rcpt), config.UnsubscribeRecipientIDLen)
	}
	// The longest scopes: a generic changelist id of 256 bytes (its most)
	// ending in a separator, and a 256-byte repository of each system.
	repo := strings.Repeat("o", 128) + "/" + strings.Repeat("r", 127)
	scopes := []string{
		unsubscribe.Repository("generic", strings.Repeat("g", 255)+"#"),
		unsubscribe.Repository("github", repo+"#1"),
		unsubscribe.Repository("gitlab", repo+"!1"),
		unsubscribe.Repository("gerrit", repo+"~1"),
	}
	longest := ""
	for _, sc := range scopes {
		if len(sc) > config.MaxUnsubscribeScopeLen {
			t.Errorf("scope %.20q… is %d bytes; config assumes at most %d", sc, len(sc), config.MaxUnsubscribeScopeLen)
		}
		if len(sc) > len(longest) {
			longest = sc
		}
	}
	base := "https://" + strings.Repeat("a", config.MaxPublicURLLen-len("https://")-len(".example")) + ".example"
	if len(base) != config.MaxPublicURLLen {
		t.Fatalf("base URL %d characters", len(base))
	}
	u := signer.URL(base, rcpt, longest)
	if !strings.HasPrefix(u, base+config.UnsubscribePath) {
		t.Fatalf("unsubscribe URL %.40q… is not under %s", u, base+config.UnsubscribePath)
	}
	name := regexp.MustCompile(`^[!-9;-~]{1,126}$`)
	value := regexp.MustCompile(`^[ -~]{1,870}$`)
	var got string
	for _, h := range sentHeaders(t, delivery.Message{Subject: "s", HTML: "h", Text: "t", UnsubscribeURL: u}) {
		if !name.MatchString(h.Name) || len(h.Name) > config.MaxSESHeaderName {
			t.Errorf("header name %q breaks SES's rule", h.Name)
		}
		if !value.MatchString(h.Value) || len(h.Value) > config.MaxSESHeaderValue {
			t.Errorf("header %s: a %d-character value breaks SES's rule", h.Name, len(h.Value))
		}
		if h.Name == "List-Unsubscribe" {
			got = h.Value
		}
	}
	if len(got) != config.MaxSESHeaderValue {
		t.Errorf("the longest List-Unsubscribe value is %d characters; config's bound makes it %d, SES's limit", len(got), config.MaxSESHeaderValue)
	}
}
