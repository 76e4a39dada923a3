package e2e

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/devstack"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/testenv"
)

// Regression: GET /jobs/{id} needed no credential, and a job id is derived
// from public facts (owner/repo#N), so anyone could read a job and test
// guessed addresses offline against the delivery ids it listed. The route
// now answers only with the token of the link intake's answer carries —
// the admin API key is refused like no token at all — answers a job
// without it as one that does not exist, and lists no delivery id and no
// unmasked address or login.
// Rules: R-PRIVACY-1, R-PRIVACY-4.
func TestJobStatus_NeedsTheLinksToken_ShowsNothingTestable(t *testing.T) {
	t.Parallel()
	const adminKey = "status-admin-key-0123456789abcdef0123"
	s := startStack(t, devstack.FunctionOptions{}, func(c *config.Config) { c.AdminAPIKey = adminKey })
	cl := testenv.Prefix(t)
	id := accept(t, s, "k-"+cl, sample(t, cl, 1, "ann.lee@example.com"))
	s.waitJob(id, 30*time.Second, job.StatusSucceeded)

	get := func(path string, header map[string]string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, s.srv.URL+path, nil)
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	missing, _ := get("/jobs/"+string(job.NewID("generic", cl+"-none", 1)), nil)
	for name, path := range map[string]string{"no token": "/jobs/" + string(id), "wrong token": "/jobs/" + string(id) + "?token=aaaaaaaaaaaaaaaaaaaaaaaaaa"} {
		if code, body := get(path, nil); code != http.StatusNotFound || code != missing {
			t.Errorf("%s: %d %s, want the 404 of a job that does not exist", name, code, body)
		}
	}
	code, body := get(s.jobLink(id), nil)
	if code != http.StatusOK || !strings.Contains(body, `"status":"succeeded"`) {
		t.Fatalf("with the link's token: %d %s", code, body)
	}
	for _, leak := range []string{"ann.lee", "delivery_id", `"d_`} {
		if strings.Contains(body, leak) {
			t.Errorf("the status view holds %q: %s", leak, body)
		}
	}
	if !strings.Contains(body, `"recipient":"a***@e***.com"`) {
		t.Errorf("the recipient is not shown masked: %s", body)
	}
	// The admin API key opens nothing here (R-PRIVACY-4): this route has
	// no IAM in front of it, so it must not take, nor test, the key.
	for _, h := range []map[string]string{{"Authorization": "Bearer " + adminKey}, {"X-Api-Key": adminKey}} {
		if code, body := get("/jobs/"+string(id), h); code != http.StatusNotFound || code != missing {
			t.Errorf("with the admin API key %v: %d %s, want the 404 of a job that does not exist", h, code, body)
		}
	}
}

// With LOG_LEVEL=warn (allowed by the templates), a reviewed webhook still
// emits the EMF lines its alarms and dashboard stand on.
func TestMetrics_EmittedAtLogLevelWarn(t *testing.T) {
	t.Parallel()
	s := startStack(t, devstack.FunctionOptions{}, func(c *config.Config) { c.LogLevel = "warn" })
	cl := testenv.Prefix(t)
	id := accept(t, s, "k-"+cl, sample(t, cl, 1, "warn@example.com"))
	s.waitJob(id, 30*time.Second, job.StatusSucceeded)
	eventually(t, 10*time.Second, "EMF lines", func() bool {
		logs := s.logText()
		return countLines(logs, `"CloudWatchMetrics"`, `"Stage":"notify"`, `"Succeeded":1`) > 0 &&
			countLines(logs, `"CloudWatchMetrics"`, `"EventType":"Send"`) > 0
	})
	if n := countLines(s.logText(), `"level":"INFO"`, `"msg":"stage succeeded"`); n != 0 {
		t.Errorf("%d info lines at LOG_LEVEL=warn", n)
	}
}

// A job whose recipients are non-ASCII addresses and whose diff_url
// carries planted credentials (userinfo, a token in the query) dead-letters
// at fetch (the URL names a loopback address). Nothing an outsider or an
// operator's log reader sees lets a recipient, a login or a token be read
// or tested: not the status view (reached with the link's token), not the
// dead letter, not the logs.
// Rules: R-PRIVACY-1, R-STAGE-4.
func TestDisclosure_NonASCIIRecipientsAndPlantedTokens_NothingReadable(t *testing.T) {
	t.Parallel()
	s := startStack(t, devstack.FunctionOptions{})
	cl := testenv.Prefix(t)
	const glToken = "glpat-" + "Zq8yX3vN1pL5mK7rT9wB"
	recipients := []string{"josé.núñez@example.com", "anna@bücher.example"}
	diffURL := "https://reviewer-login:" + plantedToken + "@127.0.0.1:8443/diff?private_token=" + glToken
	id := accept(t, s, "k-"+cl, diffURLBody(t, cl, diffURL, recipients...))
	s.waitJob(id, 30*time.Second, job.StatusDeadLettered)

	req, _ := http.NewRequest(http.MethodGet, s.srv.URL+s.jobLink(id), nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	view, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	dead := strings.Join(dlqBodies(t, s, job.StageFetch), "\n")
	if dead == "" {
		t.Fatal("no dead letter at fetch")
	}
	for where, text := range map[string]string{"status view": string(view), "dead letter": dead, "logs": s.logText()} {
		for _, secret := range []string{"josé", "jos\\u00e9", "núñez", "n\\u00fa\\u00f1ez", "anna@", "bücher", "xn--bcher",
			"reviewer-login", plantedToken, glToken, "private_token=glpat"} {
			if strings.Contains(text, secret) {
				t.Errorf("%s holds %q", where, secret)
			}
		}
	}
	// The test stack allows private diff URLs (its stand-ins listen on
	// loopback), so the fetch fails to connect rather than by policy; the
	// URL is quoted in the error, redacted.
	if !strings.Contains(dead, "[REDACTED:") {
		t.Errorf("dead letter: want the diff_url's credentials redacted in place: %s", dead)
	}
}
