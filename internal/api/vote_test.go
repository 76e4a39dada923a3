package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/criticizer/criticizer/internal/api"
	"github.com/criticizer/criticizer/internal/critic"
	"github.com/criticizer/criticizer/internal/mail"
	"github.com/criticizer/criticizer/internal/store"
	"github.com/criticizer/criticizer/internal/store/dynamo"
	"github.com/criticizer/criticizer/internal/store/memstore"
	"github.com/criticizer/criticizer/internal/testenv"
	"github.com/criticizer/criticizer/internal/vote"
)

const voteKey = "vote-test-unsubscribe-key-0123456789abcdef"

func voteReq(method, path string) events.APIGatewayV2HTTPRequest {
	r := events.APIGatewayV2HTTPRequest{RawPath: path}
	r.RequestContext.HTTP.Method, r.RequestContext.HTTP.Path = method, path
	if method == http.MethodPost {
		r.Body = "confirm=1"
		r.Headers = map[string]string{"content-type": "application/x-www-form-urlencoded"}
	}
	return r
}

// A vote link records once however often it is clicked, a GET (what a
// mail scanner does) records nothing, the other link of the pair replaces
// the choice, and a tampered or expired link is refused and records
// nothing. Run on the in-memory store and on DynamoDB Local; metrics count
// each POST by outcome.
// Rules: R-VOTE-1, R-VOTE-2.
func TestVote_RecordsOnceRefusesTamperedAndExpired(t *testing.T) {
	for name, open := range map[string]func(t *testing.T) store.Votes{
		"memstore": func(*testing.T) store.Votes { return memstore.NewVotes() },
		"dynamodb": func(t *testing.T) store.Votes {
			env := testenv.Stack(t)
			res := testenv.Provision(t, env)
			return dynamo.NewVotes(env.Clients.DynamoDB, res.JobsTable, nil)
		},
	} {
		t.Run(name, func(t *testing.T) {
			votes := open(t)
			signer, err := vote.NewSigner(voteKey)
			if err != nil {
				t.Fatal(err)
			}
			pages, _ := mail.NewRenderer()
			now := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
			var logs bytes.Buffer
			log := slog.New(slog.NewJSONHandler(&logs, nil))
			h := &api.Handler{Log: log, Votes: &api.Votes{Signer: signer, Store: votes, Pages: pages, Log: log, Now: func() time.Time { return now }}}
			ctx := context.Background()
			do := func(method, link string) events.APIGatewayV2HTTPResponse {
				t.Helper()
				path := strings.TrimPrefix(link, "https://api.example.com")
				resp, err := h.Handle(ctx, voteReq(method, path))
				if err != nil {
					t.Fatal(err)
				}
				return resp
			}
			f := critic.Finding{File: "a.go", Line: 3, Severity: critic.SeverityWarning, Rule: "debug-print", Message: "fmt.Println left in."}
			useful, wrong := signer.Links("https://api.example.com", "d_vote1", f, now.Add(vote.LinkLifetime))

			// A scanner fetches both links, with GET and HEAD: nothing is recorded.
			for _, m := range []string{http.MethodHead, http.MethodGet} {
				for _, l := range []string{useful, wrong} {
					if r := do(m, l); r.StatusCode != http.StatusOK || (m == http.MethodGet && !strings.Contains(r.Body, `method="post"`)) {
						t.Fatalf("%s %s: %d %s", m, l, r.StatusCode, r.Body)
					}
				}
			}
			if got, _ := votes.List(ctx); len(got) != 0 {
				t.Fatalf("GET recorded votes: %+v", got)
			}
			// The reader presses the button, three times.
			for range 3 {
				if r := do(http.MethodPost, useful); r.StatusCode != http.StatusOK || !strings.Contains(r.Body, "useful") {
					t.Fatalf("POST: %d %s", r.StatusCode, r.Body)
				}
			}
			got, err := votes.List(ctx)
			if err != nil || len(got) != 1 || got[0].Choice != vote.Useful || got[0].Rule != "debug-print" || got[0].DeliveryID != "d_vote1" {
				t.Fatalf("after three clicks: %+v, %v; want one useful vote", got, err)
			}
			// Changing one's mind replaces the vote.
			do(http.MethodPost, wrong)
			if got, _ := votes.List(ctx); len(got) != 1 || got[0].Choice != vote.Wrong {
				t.Fatalf("after the other link: %+v; want one wrong vote", got)
			}

			// Tampered: any change to the token; expired: a link past its end.
			tok := strings.TrimPrefix(useful, "https://api.example.com/vote/")
			b := []byte(tok)
			b[5] ^= 0x04
			other, _ := vote.NewSigner(strings.Repeat("x", 40))
			stale, _ := signer.Links("https://api.example.com", "d_vote1", f, now.Add(-time.Second))
			forged, _ := other.Links("https://api.example.com", "d_vote1", f, now.Add(time.Hour))
			for _, tc := range []struct {
				link string
				want int
			}{
				{"/vote/" + string(b), http.StatusForbidden},
				{forged, http.StatusForbidden},
				{stale, http.StatusGone},
			} {
				for _, m := range []string{http.MethodGet, http.MethodPost} {
					if r := do(m, tc.link); r.StatusCode != tc.want {
						t.Errorf("%s %s: %d, want %d", m, tc.link, r.StatusCode, tc.want)
					}
				}
			}
			if got, _ := votes.List(ctx); len(got) != 1 || got[0].Choice != vote.Wrong {
				t.Fatalf("refused links changed the votes: %+v", got)
			}

			// Metrics: one recorded, two repeats, one changed, three refused.
			count := map[string]int{}
			for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
				var m map[string]any
				if json.Unmarshal([]byte(line), &m) == nil && m["Votes"] != nil {
					count[m["Outcome"].(string)]++
				}
			}
			want := map[string]int{"recorded": 1, "repeat": 2, "changed": 1, "invalid_token": 2, "expired": 1}
			for k, n := range want {
				if count[k] != n {
					t.Errorf("Votes metric %s = %d, want %d (all %v)", k, count[k], n, count)
				}
			}
		})
	}
}
