package e2e

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/devstack"
	"github.com/criticizer/criticizer/internal/docs"
)

// localAPI is the API's address under `make run`, as the pages write it.
const localAPI = "http://127.0.0.1:3000"

// localWebhookSecret is the secret `make run` gives the generic source
// (cmd/devstack's LocalWebhookSecret), which the README's curl signs with.
const localWebhookSecret = devstack.LocalGenericSecret

// The `curl` commands of README.md and docs/ run as written, in page
// order, by bash in the repository root, against a stack configured as
// `make run` configures it (its webhook secret, and an admin key in $KEY
// as operations.md starts it): each answers 2xx. The README's first
// review answers exactly the JSON the README prints, a second post of it
// answers the same bytes, and the mailbox holds one email per recipient.
func TestDocs_CurlCommandsRunAsWritten(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Fatal("curl is not installed")
	}
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Fatal("openssl is not installed")
	}
	root, err := docs.Root()
	if err != nil {
		t.Fatal(err)
	}
	pages, err := docs.Load(root)
	if err != nil {
		t.Fatal(err)
	}
	s := startStack(t, devstack.FunctionOptions{}, func(c *config.Config) {
		c.WebhookSecret, c.AdminAPIKey = localWebhookSecret, adminKey
	})
	readme := strings.Join(pages[0].Lines, "\n")

	// run runs one command and returns the HTTP status, the
	// Idempotent-Replayed header and the body (curl's -w writes the first
	// two after the body, on lines of their own).
	run := func(c docs.Command) (int, string, string) {
		t.Helper()
		cmd := exec.Command("bash", "-c", strings.ReplaceAll(c.Text, localAPI, s.srv.URL)+
			` -w '\n%{http_code}\n%header{idempotent-replayed}'`)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "KEY="+adminKey)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s:%d: %q: %v\n%s", c.Page, c.Line, c.Text, err, out)
		}
		lines := strings.Split(string(out), "\n")
		if len(lines) < 3 {
			t.Fatalf("%s:%d: no status in %q", c.Page, c.Line, out)
		}
		status, err := strconv.Atoi(lines[len(lines)-2])
		if err != nil {
			t.Fatalf("%s:%d: no status in %q", c.Page, c.Line, out)
		}
		return status, lines[len(lines)-1], strings.Join(lines[:len(lines)-2], "\n")
	}

	n := 0
	for _, p := range pages {
		for _, c := range p.Commands() {
			if !strings.HasPrefix(c.Text, "curl ") || !strings.Contains(c.Text, localAPI) {
				continue
			}
			n++
			status, replayed, body := run(c)
			if status < 200 || status > 299 {
				t.Errorf("%s:%d: %q answered %d: %s", c.Page, c.Line, c.Text, status, body)
				continue
			}
			if !strings.Contains(c.Text, "/webhooks/generic") || p.Path != "README.md" {
				continue
			}
			// The first review: the answer the README prints; posted
			// again, the same bytes marked replayed; one email per
			// recipient.
			if replayed != "" || !strings.Contains(readme, "\n"+body+"\n") {
				t.Errorf("README.md:%d: the first review answers (Idempotent-Replayed %q)\n%s\nwhich the README does not print", c.Line, replayed, body)
			}
			if again, replayed, body2 := run(c); again != status || replayed != "true" || body2 != body {
				t.Errorf("README.md:%d: posted again: %d, Idempotent-Replayed %q, %s; want the first answer, byte for byte, replayed", c.Line, again, replayed, body2)
			}
			eventually(t, 30*time.Second, "one email per recipient of billing-1042", func() bool {
				got := perRecipient(emailsFor(t, s.env.SES, "billing-1042"))
				return len(got) == 2 && got["reviewer1@example.com"] == 1 && got["reviewer2@example.com"] == 1
			})
		}
	}
	if n < 3 {
		t.Fatalf("only %d curl commands to the local API found: the reader is broken", n)
	}
}
