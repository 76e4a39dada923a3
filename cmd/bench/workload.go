package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sort"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/criticizer/criticizer/internal/webhook"
)

// request is one generated webhook delivery. Both systems are driven with
// the same list, read from the same file.
type request struct {
	Key  string `json:"key"`
	Body string `json:"body"`
	Sig  string `json:"sig"`
	Dup  bool   `json:"dup"`
}

// genericBody is a valid generic webhook. The diff is given by URL, so
// intake stores no blob: the job record and the fetch message are the whole
// of its work, as for the peer.
func genericBody(changelistID string, recipients []string) []byte {
	b, _ := json.Marshal(map[string]any{
		"changelist_id": changelistID, "review_version": 1,
		"title":  "Add refunds to invoices",
		"url":    "https://review.example.com/c/billing/+/" + changelistID,
		"author": "ana", "recipients": recipients,
		"diff_url": "https://review.example.com/raw/" + changelistID + ".diff",
	})
	return b
}

// workload generates n requests of which about dupRatio re-send an earlier
// request (same key, same body, same signature: a webhook retried by its
// sender). A duplicate only repeats a request issued at least gap positions
// earlier, so with up to gap concurrent workers the original has been
// answered: a retry, not a race (racing first requests are a separate case
// that both systems answer with a retry-later error).
func workload(prefix string, n int, dupRatio float64, gap int, secret []byte, seed uint64) []request {
	rng := rand.New(rand.NewPCG(seed, 0x6372697469637a))
	out := make([]request, 0, n)
	var uniques []int // positions of unique requests
	for i := range n {
		eligible := sort.SearchInts(uniques, i-gap+1) // uniques at positions <= i-gap
		if eligible > 0 && rng.Float64() < dupRatio {
			r := out[uniques[rng.IntN(eligible)]]
			r.Dup = true
			out = append(out, r)
			continue
		}
		cl := fmt.Sprintf("%s-%d", prefix, len(uniques))
		body := genericBody(cl, []string{"reviewer1@example.com", "reviewer2@example.com"})
		out = append(out, request{Key: "delivery-" + cl, Body: string(body), Sig: webhook.Sign(secret, body)})
		uniques = append(uniques, i)
	}
	return out
}

// apiEvent is the API Gateway (HTTP API, payload 2.0) event for a request.
func apiEvent(r request) events.APIGatewayV2HTTPRequest {
	now := time.Now()
	return events.APIGatewayV2HTTPRequest{
		Version: "2.0", RouteKey: "$default", RawPath: "/webhooks/generic",
		Headers: map[string]string{"content-type": "application/json", "idempotency-key": r.Key,
			"x-criticizer-signature": r.Sig},
		Body: r.Body,
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			APIID: "bench", Stage: "$default", RequestID: fmt.Sprintf("bench-%d", now.UnixNano()), TimeEpoch: now.UnixMilli(),
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: "POST", Path: "/webhooks/generic", SourceIP: "127.0.0.1"},
		},
	}
}

// percentile of sorted durations (nearest rank).
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted))*p+0.5) - 1
	i = max(0, min(i, len(sorted)-1))
	return sorted[i]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
