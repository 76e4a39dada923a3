package e2e

import (
	"context"
	"encoding/json"
	"fmt"
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
	"github.com/criticizer/criticizer/internal/unsubscribe"
	"github.com/criticizer/criticizer/internal/vote"
)

// debugWrong finds, in an email's text, the Wrong link of the debug-print
// finding, past the code shown under it (R-MAIL-5), and says whether it
// is the email's first finding.
var debugWrong = regexp.MustCompile(`\(debug-print\)\n(?:    (?:> |  )[ +-].*\n)*    Useful: \S+\n    Wrong: (\S+)\n`)

// A reviewer marks a finding wrong from the email in the SES store, by
// its button's POST; the next version, with that line unchanged and a
// change elsewhere, is mailed to that reviewer without the finding, saying
// one was hidden, while the other reviewer of the changelist still sees
// it; a version that changes the line shows it to both again. The vote
// and the mark land in DynamoDB Local.
// Rules: R-VOTE-3.
func TestDismissal_WrongFromSentEmail_HiddenUntilTheLineChanges(t *testing.T) {
	t.Parallel()
	s := startStack(t, devstack.FunctionOptions{})
	cl := testenv.Prefix(t)
	ann, bo := "ann@example.com", "bo@example.com"
	debugLine := `	fmt.Println("total", sum)`
	files := func(debug string, extra bool) string {
		d := newFile("a.go", "package a", "", "import \"fmt\"", "", "func Total(sum int) int {", debug, "	return sum", "}") +
			newFile("a_test.go", "package a", "", "import \"testing\"", "", "func TestTotal(t *testing.T) {", "	if Total(2) != 2 {", "		t.Fatal(\"total\")", "	}", "}") +
			newFile("b.go", "package a", "", "// TODO: round the refunds", "func Refund() {}")
		if extra {
			d += newFile("c.go", "package a", "", "// TODO: cap the discounts", "func Discount() {}")
		}
		return d
	}
	post := func(v int, diff string) {
		t.Helper()
		var m map[string]any
		_ = json.Unmarshal(sample(t, cl, v, ann, bo), &m)
		m["diff"] = diff
		body, _ := json.Marshal(m)
		s.waitJob(accept(t, s, fmt.Sprintf("v%d-%s", v, cl), body), 30*time.Second, job.StatusSucceeded)
	}
	emailOf := func(to string, v int) string {
		t.Helper()
		for _, e := range emailsFor(t, s.env.SES, cl) {
			if versionOf(e) == v && len(e.Destination.To) == 1 && e.Destination.To[0] == to {
				return e.Body.Text
			}
		}
		t.Fatalf("no v%d email to %s", v, to)
		return ""
	}

	post(1, files(debugLine, false))
	v1 := emailOf(ann, 1)
	m := debugWrong.FindStringSubmatch(v1)
	if m == nil {
		t.Fatalf("ann's v1 has no debug-print finding with links:\n%s", v1)
	}
	if first := regexp.MustCompile(`(?m)^    Wrong: (\S+)$`).FindStringSubmatch(v1); first[1] != m[1] {
		t.Fatalf("the debug finding is not ann's finding 1:\n%s", v1)
	}
	u, err := url.Parse(m[1])
	if err != nil {
		t.Fatal(err)
	}
	if resp, body := do(t, http.MethodPost, s.srv.URL+u.Path, "application/x-www-form-urlencoded", "confirm=1"); resp.StatusCode != http.StatusOK {
		t.Fatalf("POST wrong: %d %.200s", resp.StatusCode, body)
	}
	ctx := context.Background()
	if votes, err := dynamo.NewVotes(s.env.Clients.DynamoDB, s.res.JobsTable, nil).List(ctx); err != nil || len(votes) != 1 || votes[0].Choice != vote.Wrong || votes[0].Rule != "debug-print" {
		t.Fatalf("votes %+v (%v), want ann's one wrong on debug-print (make eval reads it)", votes, err)
	}
	marks, err := dynamo.NewDismissals(s.env.Clients.DynamoDB, s.res.JobsTable, nil).Marks(ctx, job.ChangelistKey("generic", cl),
		[]string{unsubscribe.RecipientID(ann), unsubscribe.RecipientID(bo)})
	if err != nil || len(marks) != 1 || len(marks[unsubscribe.RecipientID(ann)]) != 1 {
		t.Fatalf("marks %v (%v), want ann's one", marks, err)
	}

	// v2: the debug line unchanged, a change elsewhere.
	post(2, files(debugLine, true))
	annV2, boV2 := emailOf(ann, 2), emailOf(bo, 2)
	if strings.Contains(annV2, "(debug-print)") || !strings.Contains(annV2, "1 finding you marked wrong is hidden") {
		t.Errorf("ann's v2 shows the finding she marked wrong, or does not say it is hidden:\n%s", annV2)
	}
	if !strings.Contains(annV2, "cap the discounts") && !strings.Contains(annV2, "c.go") {
		t.Errorf("ann's v2 lacks the new finding:\n%s", annV2)
	}
	if !strings.Contains(boV2, "(debug-print)") || strings.Contains(boV2, "marked wrong") {
		t.Errorf("bo's v2 lacks the finding ann marked wrong:\n%s", boV2)
	}

	// v3: the debug line changes; the finding is another, shown to ann.
	post(3, files(`	fmt.Println("sum is", sum)`, true))
	if annV3 := emailOf(ann, 3); !strings.Contains(annV3, "(debug-print)") || strings.Contains(annV3, "marked wrong") {
		t.Errorf("ann's v3, whose debug line changed, lacks the finding:\n%s", annV3)
	}
}

// A dismissal stays where it was given, through the stack: ann marks
// wrong the debug print in Total from the email in the SES store; v2
// keeps Total as it was and adds Refund above it, with the same print.
// Ann's v2 shows the print in Refund, as new, and hides the one she saw
// (moved down five lines), saying one is hidden; bo's v2 shows both.
// What DynamoDB Local keeps for her mark is a 32-character digest. On
// main both prints were hidden (the mark was the line's text), and the
// new one never reached her.
// Rules: R-VOTE-3.
func TestDismissal_SamePrintInAnotherFunction_NewShownOldHidden(t *testing.T) {
	t.Parallel()
	s := startStack(t, devstack.FunctionOptions{})
	cl := testenv.Prefix(t)
	ann, bo := "ann@example.com", "bo@example.com"
	total := []string{"func Total(sum int) int {", `	fmt.Println("total", sum)`, "	return sum", "}"}
	refund := []string{"func Refund(sum int) int {", `	fmt.Println("total", sum)`, "	return -sum", "}"}
	files := func(funcs ...[]string) string {
		lines := []string{"package a", "", `import "fmt"`}
		for _, f := range funcs {
			lines = append(append(lines, ""), f...)
		}
		return newFile("a.go", lines...) +
			newFile("a_test.go", "package a", "", "import \"testing\"", "", "func TestTotal(t *testing.T) {", "	if Total(2) != 2 {", "		t.Fatal(\"total\")", "	}", "}")
	}
	post := func(v int, diff string) {
		t.Helper()
		var m map[string]any
		_ = json.Unmarshal(sample(t, cl, v, ann, bo), &m)
		m["diff"] = diff
		body, _ := json.Marshal(m)
		s.waitJob(accept(t, s, fmt.Sprintf("v%d-%s", v, cl), body), 30*time.Second, job.StatusSucceeded)
	}
	emailOf := func(to string, v int) string {
		t.Helper()
		for _, e := range emailsFor(t, s.env.SES, cl) {
			if versionOf(e) == v && len(e.Destination.To) == 1 && e.Destination.To[0] == to {
				return e.Body.Text
			}
		}
		t.Fatalf("no v%d email to %s", v, to)
		return ""
	}
	prints := regexp.MustCompile(`line (\d+): [^\n]*\(debug-print\)`)

	post(1, files(total))
	v1 := emailOf(ann, 1)
	m := debugWrong.FindStringSubmatch(v1)
	if m == nil || len(prints.FindAllString(v1, -1)) != 1 {
		t.Fatalf("ann's v1 has not one debug-print finding with links:\n%s", v1)
	}
	u, err := url.Parse(m[1])
	if err != nil {
		t.Fatal(err)
	}
	if resp, body := do(t, http.MethodPost, s.srv.URL+u.Path, "application/x-www-form-urlencoded", "confirm=1"); resp.StatusCode != http.StatusOK {
		t.Fatalf("POST wrong: %d %.200s", resp.StatusCode, body)
	}
	marks, err := dynamo.NewDismissals(s.env.Clients.DynamoDB, s.res.JobsTable, nil).Marks(context.Background(), job.ChangelistKey("generic", cl),
		[]string{unsubscribe.RecipientID(ann)})
	if err != nil || len(marks[unsubscribe.RecipientID(ann)]) != 1 {
		t.Fatalf("marks %v (%v), want ann's one", marks, err)
	}
	for k := range marks[unsubscribe.RecipientID(ann)] {
		if len(k) != 32 || strings.Trim(k, "0123456789abcdef") != "" {
			t.Errorf("ann's mark is kept as %q, want a 32-character digest", k)
		}
	}

	post(2, files(refund, total))
	annV2, boV2 := emailOf(ann, 2), emailOf(bo, 2)
	got := prints.FindAllStringSubmatch(annV2, -1)
	if len(got) != 1 || got[0][1] != "6" || !strings.Contains(annV2, "1 finding you marked wrong is hidden") {
		t.Errorf("ann's v2 prints %q, want only Refund's (line 6) and one hidden:\n%s", got, annV2)
	}
	if !regexp.MustCompile(`== New since version 1 \(\d+\) ==\n\na\.go\n  \[warning\] line 6: [^\n]*\(debug-print\)`).MatchString(annV2) {
		t.Errorf("ann's v2 does not list the print in Refund as new:\n%s", annV2)
	}
	if n := len(prints.FindAllString(boV2, -1)); n != 2 || strings.Contains(boV2, "marked wrong") {
		t.Errorf("bo's v2 shows %d prints, want both:\n%s", n, boV2)
	}
}
