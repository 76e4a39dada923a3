package api_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/criticizer/criticizer/internal/api"
	"github.com/criticizer/criticizer/internal/store/memstore"
	"github.com/criticizer/criticizer/internal/webhook"
)

// Lambda's and API Gateway's limits the event is built within.
const (
	// invokePayloadLimit is Lambda's synchronous invocation payload
	// (request) limit, 6 MB: 6,291,456 bytes (Lambda quotas).
	invokePayloadLimit = 6 << 20
	// requestLineAndHeaders is HTTP API's "total combined size of request
	// line and header values", 10,240 bytes (HTTP API quotas).
	requestLineAndHeaders = 10240
)

// worstEvent is the largest HTTP API (payload format 2.0) event a request
// with a body of n bytes can make, JSON-encoded as Lambda receives it: the
// body as text (API Gateway base64-encodes only content types it does not
// treat as text, which grows it by a third, not six times), every byte a
// control character (\u0001, 6 bytes escaped), and every field API Gateway
// copies the request line or headers into given the whole 10,240-byte
// budget of such bytes — more than any one request can have.
func worstEvent(t *testing.T, n int) int {
	t.Helper()
	worst := func(n int) string { return strings.Repeat("\x01", n) }
	line := worst(requestLineAndHeaders)
	ev := events.APIGatewayV2HTTPRequest{
		Version: "2.0", RouteKey: "POST /webhooks/generic", RawPath: line, RawQueryString: line,
		Cookies:               []string{line},
		Headers:               map[string]string{"x-worst": line},
		QueryStringParameters: map[string]string{"q": line},
		PathParameters:        map[string]string{"p": line},
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			RouteKey: "POST /webhooks/generic", AccountID: "123456789012", Stage: "$default",
			RequestID: "Abcdefghijklmnopqrstuvwxyz0123456789=", APIID: "abcdefghij",
			DomainName: line, DomainPrefix: "abcdefghij", Time: "27/Nov/2026:08:00:00 +0000", TimeEpoch: 1795766400000,
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: "POST", Path: line,
				Protocol: "HTTP/1.1", SourceIP: "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", UserAgent: line},
		},
		Body: worst(n),
	}
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	return len(b)
}

// TestMaxBody_FitsTheInvokePayload: a body at intake's cap, every byte at
// its worst escape, with the request line and headers at HTTP API's limit,
// makes an event within Lambda's 6 MB synchronous payload, so every body
// API Gateway can pass reaches intake, which answers one over the cap 413
// naming the body. The old 4 MiB cap did not fit: such a body failed the
// invoke, and its sender got a 500.
// Rules: R-LIMIT-3.
func TestMaxBody_FitsTheInvokePayload(t *testing.T) {
	if n := worstEvent(t, webhook.MaxBody); n > invokePayloadLimit {
		t.Errorf("the worst event with a %d-byte body is %d bytes, over Lambda's %d", webhook.MaxBody, n, invokePayloadLimit)
	} else {
		t.Logf("the worst event with a %d-byte body: %d bytes of %d", webhook.MaxBody, n, invokePayloadLimit)
	}
	if n := worstEvent(t, 4<<20); n <= invokePayloadLimit {
		t.Errorf("the worst event with the old 4 MiB cap is %d bytes: the test no longer tells them apart", n)
	}
	if webhook.MaxDiff >= webhook.MaxBody {
		t.Errorf("MaxDiff %d is not under MaxBody %d: a diff at its limit would be refused as too large", webhook.MaxDiff, webhook.MaxBody)
	}

	h := &api.Handler{
		Sources: map[string]api.Parser{"generic": webhook.Generic{Secret: []byte(offlineSecret)}},
		Intake: &api.Intake{Jobs: memstore.NewJobs(nil), Blobs: &memBlobs{objs: map[string][]byte{}}, Queue: &memQueue{},
			Log: slog.New(slog.NewJSONHandler(io.Discard, nil)), Now: time.Now, TTL: time.Hour},
		Log: slog.New(slog.NewJSONHandler(io.Discard, nil)),
	}
	body := strings.Repeat(" ", webhook.MaxBody+1)
	req := events.APIGatewayV2HTTPRequest{RawPath: "/webhooks/generic", Body: body,
		Headers: map[string]string{"idempotency-key": "k", strings.ToLower(webhook.SignatureHeader): webhook.Sign([]byte(offlineSecret), []byte(body))}}
	req.RequestContext.HTTP.Method = http.MethodPost
	resp, err := h.Handle(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	var p api.Problem
	if err := json.Unmarshal([]byte(resp.Body), &p); err != nil || resp.StatusCode != http.StatusRequestEntityTooLarge || p.Field != "body" {
		t.Errorf("a body of MaxBody+1 bytes: %d %s, want 413 naming the field body", resp.StatusCode, resp.Body)
	}
}
