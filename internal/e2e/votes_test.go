package e2e

import (
	"context"
	"encoding/base64"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/devstack"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/store/dynamo"
	"github.com/criticizer/criticizer/internal/testenv"
	"github.com/criticizer/criticizer/internal/vote"
)

// A reader clicks a finding's vote link in an email the SES emulator
// stored: the GET a mail scanner would also make records nothing, the
// button's POST records one vote however often it is pressed, the other
// link of the pair replaces it, and a tampered link is refused. The links
// carry no address, and the vote lands in DynamoDB Local.
// Rules: R-VOTE-1.
func TestVoteLink_FromSentEmail_RecordsOnce(t *testing.T) {
	t.Parallel()
	s := startStack(t, devstack.FunctionOptions{})
	cl := testenv.Prefix(t)
	j := accept(t, s, "v1-"+cl, sample(t, cl, 1, "ann@example.com"))
	s.waitJob(j, 30*time.Second, job.StatusSucceeded)
	emails := emailsFor(t, s.env.SES, cl)
	if len(emails) != 1 {
		t.Fatalf("%d emails, want 1", len(emails))
	}
	e := emails[0]
	useful := regexp.MustCompile(`(?m)^    Useful: (\S+)$`).FindAllStringSubmatch(e.Body.Text, -1)
	wrong := regexp.MustCompile(`(?m)^    Wrong: (\S+)$`).FindAllStringSubmatch(e.Body.Text, -1)
	if len(useful) == 0 || len(useful) != len(wrong) {
		t.Fatalf("text part: %d useful and %d wrong links, want one pair per finding:\n%s", len(useful), len(wrong), e.Body.Text)
	}
	for _, l := range append(useful, wrong...) {
		if !strings.Contains(e.Body.HTML, `href="`+l[1]+`"`) {
			t.Errorf("the HTML part lacks %s", l[1])
		}
		payload, _, _ := strings.Cut(l[1][strings.LastIndex(l[1], "/")+1:], ".")
		b, err := base64.RawURLEncoding.DecodeString(payload)
		if err != nil || strings.Contains(string(b), "ann") || strings.Contains(string(b), "example.com") {
			t.Errorf("link %s: payload %q (%v) names the recipient", l[1], b, err)
		}
	}
	path := func(link string) string {
		u, err := url.Parse(link)
		if err != nil {
			t.Fatal(err)
		}
		return s.srv.URL + u.Path
	}
	votes := dynamo.NewVotes(s.env.Clients.DynamoDB, s.res.JobsTable, nil)
	ctx := context.Background()
	list := func() []vote.Vote {
		t.Helper()
		all, err := votes.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return all
	}

	// The scanner's fetch: both links, a page, no vote.
	for _, l := range []string{useful[0][1], wrong[0][1]} {
		resp, body := do(t, http.MethodGet, path(l), "", "")
		if resp.StatusCode != http.StatusOK || !strings.Contains(body, `method="post"`) {
			t.Fatalf("GET %s: %d %.200s", l, resp.StatusCode, body)
		}
	}
	if got := list(); len(got) != 0 {
		t.Fatalf("a GET recorded %+v", got)
	}
	// The reader presses the button three times, then changes their mind.
	for range 3 {
		if resp, body := do(t, http.MethodPost, path(useful[0][1]), "application/x-www-form-urlencoded", "confirm=1"); resp.StatusCode != http.StatusOK {
			t.Fatalf("POST: %d %.200s", resp.StatusCode, body)
		}
	}
	if got := list(); len(got) != 1 || got[0].Choice != vote.Useful || got[0].DeliveryID == "" {
		t.Fatalf("after three presses: %+v, want one useful vote", got)
	}
	do(t, http.MethodPost, path(wrong[0][1]), "application/x-www-form-urlencoded", "confirm=1")
	if got := list(); len(got) != 1 || got[0].Choice != vote.Wrong {
		t.Fatalf("after the other link: %+v, want one wrong vote", got)
	}
	// Tampered: the token's payload altered.
	bad := []byte(path(useful[0][1]))
	i := strings.LastIndex(string(bad), "/vote/") + len("/vote/") + 3
	bad[i] = map[bool]byte{true: 'B', false: 'A'}[bad[i] == 'A']
	if resp, _ := do(t, http.MethodPost, string(bad), "application/x-www-form-urlencoded", "confirm=1"); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("tampered link: %d, want 403", resp.StatusCode)
	}
	if got := list(); len(got) != 1 || got[0].Choice != vote.Wrong {
		t.Fatalf("a tampered link changed the votes: %+v", got)
	}
}
