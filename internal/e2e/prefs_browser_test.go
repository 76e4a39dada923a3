package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/chromedp/chromedp"

	"github.com/criticizer/criticizer/internal/devstack"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/prefs"
	"github.com/criticizer/criticizer/internal/store/dynamo"
	"github.com/criticizer/criticizer/internal/store/dynamo/schema"
	"github.com/criticizer/criticizer/internal/testenv"
	"github.com/criticizer/criticizer/internal/unsubscribe"
)

// prefLink finds the footer's preference link in an email's text.
var prefLink = regexp.MustCompile(`(?m)^Email preferences \(delivery, minimum severity, muted repositories\): (\S+)$`)

// chromiumPath is headless Chromium for the browser tests (`make deps`
// installs /usr/bin/chromium; CRITICIZER_CHROMIUM overrides). Without it
// a test skips, unless CRITICIZER_REQUIRE_STACK=1 (`make test`), where a
// missing browser is a failure, as internal/mail's screenshot tests do.
func chromiumPath(t *testing.T) string {
	t.Helper()
	path := "/usr/bin/chromium"
	if p := os.Getenv("CRITICIZER_CHROMIUM"); p != "" {
		path = p
	}
	if _, err := os.Stat(path); err == nil {
		return path
	}
	if p, err := exec.LookPath("chromium"); err == nil {
		return p
	}
	if os.Getenv("CRITICIZER_REQUIRE_STACK") == "1" {
		t.Fatalf("headless Chromium is required (CRITICIZER_REQUIRE_STACK=1) but %s is missing: run `make deps` or set CRITICIZER_CHROMIUM", path)
	}
	t.Skipf("headless Chromium not found at %s; `make deps` installs it", path)
	return ""
}

// browser starts one headless Chromium, a fresh profile, no network of its
// own, driven by chromedp over its DevTools pipe; it is stopped when the
// test ends.
func browser(t *testing.T) context.Context {
	t.Helper()
	bin := chromiumPath(t)
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(bin),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("window-size", "800,1200"),
		chromedp.UserDataDir(t.TempDir()),
	)
	ctx, cancelCtx := chromedp.NewContext(alloc, chromedp.WithLogf(t.Logf))
	ctx, cancelTimeout := context.WithTimeout(ctx, 2*time.Minute)
	t.Cleanup(func() { cancelTimeout(); cancelCtx(); cancelAlloc() })
	return ctx
}

// a11yProblems runs in the page and lists what fails the page's
// accessibility basics: a language; every visible control with a label of
// its own holding text; fieldsets, each with a legend; no script and no
// inline handlers (the page works without JavaScript); every text with a
// contrast of at least 4.5:1 (3:1 when large) against its background,
// WCAG AA, as the browser computes both.
const a11yProblems = `(() => {
  const out = [];
  if (document.documentElement.lang !== "en") out.push("html lang is " + JSON.stringify(document.documentElement.lang));
  if (document.scripts.length) out.push(document.scripts.length + " scripts");
  for (const el of document.querySelectorAll("*")) {
    for (const a of el.getAttributeNames()) if (a.startsWith("on")) out.push("inline handler " + a);
  }
  let controls = 0;
  for (const el of document.querySelectorAll("input, select, textarea")) {
    if (el.type === "hidden") continue;
    controls++;
    if (!el.labels || el.labels.length !== 1 || !el.labels[0].textContent.trim()) out.push("control without one label: " + (el.id || el.name));
  }
  if (controls < 7) out.push("only " + controls + " controls");
  const sets = document.querySelectorAll("fieldset");
  if (sets.length < 4) out.push(sets.length + " fieldsets");
  for (const fs of sets) {
    const lg = fs.querySelector(":scope > legend");
    if (!lg || !lg.textContent.trim()) out.push("fieldset without a legend");
  }
  const parse = c => { const v = c.match(/[\d.]+/g).map(Number); return {r: v[0], g: v[1], b: v[2], a: v.length > 3 ? v[3] : 1}; };
  const lin = v => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
  const lum = c => 0.2126 * lin(c.r) + 0.7152 * lin(c.g) + 0.0722 * lin(c.b);
  const bg = el => { for (let e = el; e; e = e.parentElement) { const c = parse(getComputedStyle(e).backgroundColor); if (c.a > 0) return c; } return {r: 255, g: 255, b: 255, a: 1}; };
  const walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  let n, texts = 0;
  while ((n = walk.nextNode())) {
    if (!n.textContent.trim()) continue;
    const el = n.parentElement, st = getComputedStyle(el);
    if (el.tagName === "OPTION" || st.display === "none" || st.visibility === "hidden") continue;
    const l1 = lum(parse(st.color)), l2 = lum(bg(el));
    const ratio = (Math.max(l1, l2) + 0.05) / (Math.min(l1, l2) + 0.05);
    const size = parseFloat(st.fontSize), large = size >= 24 || (parseInt(st.fontWeight) >= 700 && size >= 18.66);
    texts++;
    if (ratio < (large ? 3 : 4.5)) out.push("contrast " + ratio.toFixed(2) + ":1 of " + JSON.stringify(n.textContent.trim().slice(0, 40)));
  }
  if (texts < 20) out.push("only " + texts + " texts measured");
  return out;
})()`

// focusRing is the outline the focused element shows, as computed.
const focusRing = `(() => { const e = document.activeElement, s = getComputedStyle(e);
  return {id: e.id, style: s.outlineStyle, width: parseFloat(s.outlineWidth)}; })()`

// A reviewer opens the preference link in the footer of their email (in
// the SES store) in a real browser, headless Chromium: the page renders
// with its accessibility basics (a label per control, fieldsets with
// legends, contrast, a visible focus ring, lang, no script), they choose
// errors only and mute nothing, and submit the form. The record lands in
// DynamoDB Local, and the next version's email to them leaves the
// warnings out and says how many, while the other reviewer's email still
// has them.
// Rules: R-PREF-2, R-PREF-3.
func TestPreferences_BrowserSetsMinimumSeverity_NextEmailFollows(t *testing.T) {
	t.Parallel()
	ctx := browser(t)
	s := startStack(t, devstack.FunctionOptions{})
	cl := testenv.Prefix(t)
	ann, bo := "ann@example.com", "bo@example.com"
	diff := newFile("a.go", "package a", "", "import \"fmt\"", "", "func Total(sum int) int {", "<<<<<<< HEAD", "	fmt.Println(\"total\", sum)", "	return sum", "}") +
		newFile("a_test.go", "package a", "", "import \"testing\"", "", "func TestTotal(t *testing.T) {", "	if Total(2) != 2 {", "		t.Fatal(\"total\")", "	}", "}")
	post := func(v int) {
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

	post(1)
	v1 := emailOf(ann, 1)
	if !strings.Contains(v1, "[error]") || !strings.Contains(v1, "[warning]") {
		t.Fatalf("ann's v1 lacks an error and a warning to choose between:\n%s", v1)
	}
	m := prefLink.FindStringSubmatch(v1)
	if m == nil {
		t.Fatalf("ann's v1 has no preference link in its footer:\n%s", v1)
	}
	u, err := url.Parse(m[1])
	if err != nil {
		t.Fatal(err)
	}
	page := s.srv.URL + u.Path

	var problems []string
	var ring struct {
		ID    string
		Style string
		Width float64
	}
	var muteChecked bool
	err = chromedp.Do(ctx,
		chromedp.Navigate(page),
		chromedp.WaitVisible(chromedp.CSS(`form`)),
		chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			var err error
			problems, err = chromedp.Evaluate[[]string](a11yProblems)(ctx, tg)
			return err
		}),
		// Keyboard focus lands on the first control with a visible ring.
		chromedp.KeyEvent("\t"),
		chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			r, err := chromedp.Evaluate[map[string]any](focusRing)(ctx, tg)
			if err == nil {
				ring.ID, _ = r["id"].(string)
				ring.Style, _ = r["style"].(string)
				ring.Width, _ = r["width"].(float64)
			}
			return err
		}),
		chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			var err error
			muteChecked, err = chromedp.Evaluate[bool](`Array.from(document.querySelectorAll('input[name=mute]')).some(e => e.checked)`)(ctx, tg)
			return err
		}),
	)
	if err != nil {
		t.Fatalf("the page in Chromium: %v", err)
	}
	if len(problems) != 0 {
		t.Errorf("accessibility problems on the page:\n  %s", strings.Join(problems, "\n  "))
	}
	if ring.ID != "mode-instant" || ring.Style == "none" || ring.Width < 2 {
		t.Errorf("keyboard focus: %+v, want the first control with an outline of 2px or more", ring)
	}
	if muteChecked {
		t.Fatal("a repository is muted before anyone chose to")
	}
	// What the reader does: errors only, nothing muted, submit.
	var saved string
	err = chromedp.Do(ctx,
		chromedp.SetValue(chromedp.CSS(`#min_severity`), "error"),
		chromedp.Click(chromedp.CSS(`button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`.notice`)),
		chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			var err error
			saved, err = chromedp.Text(chromedp.CSS(`.notice`))(ctx, tg)
			return err
		}),
	)
	if err != nil {
		t.Fatalf("submitting the form in Chromium: %v", err)
	}
	if !strings.HasPrefix(saved, "Saved.") {
		t.Fatalf("after submitting, the page says %q", saved)
	}
	rec, err := dynamo.NewPreferences(s.env.Clients.DynamoDB, s.res.JobsTable, nil).Preferences(context.Background(), unsubscribe.RecipientID(ann))
	if err != nil || rec.MinSeverity != prefs.SeverityError || len(rec.Muted) != 0 || rec.UnsubscribedAll || rec.Rev != 1 || rec.Mode != prefs.Instant {
		t.Fatalf("ann's record in DynamoDB: %+v (%v), want errors only, nothing muted, at rev 1", rec, err)
	}

	post(2)
	annV2, boV2 := emailOf(ann, 2), emailOf(bo, 2)
	if strings.Contains(annV2, "[warning]") || !strings.Contains(annV2, "[error]") {
		t.Errorf("ann's v2 has warnings, or lacks the error:\n%s", annV2)
	}
	if !regexp.MustCompile(`\d+ findings? below error (is|are) left out by your email preferences\.`).MatchString(annV2) {
		t.Errorf("ann's v2 does not say what her minimum left out:\n%s", annV2)
	}
	if !strings.Contains(boV2, "[warning]") || strings.Contains(boV2, "your email preferences.") {
		t.Errorf("bo's v2 lacks the warnings ann left out, or speaks of her preferences:\n%s", boV2)
	}
}

// A mail scanner's prefetch of the preference link — a GET, a HEAD, a GET
// asking for JSON — changes nothing in DynamoDB: the jobs table (where
// preference records live) holds the same items after it as before.
// Rules: R-PREF-2.
func TestPreferences_ScannerPrefetchChangesNothing(t *testing.T) {
	t.Parallel()
	s := startStack(t, devstack.FunctionOptions{})
	cl := testenv.Prefix(t)
	s.waitJob(accept(t, s, "v1-"+cl, sample(t, cl, 1, "ann@example.com")), 30*time.Second, job.StatusSucceeded)
	var text string
	for _, e := range emailsFor(t, s.env.SES, cl) {
		text = e.Body.Text
	}
	m := prefLink.FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("no preference link in the footer:\n%s", text)
	}
	u, _ := url.Parse(m[1])
	before := s.jobsItems(t)
	for _, req := range []struct{ method, accept string }{{http.MethodGet, ""}, {http.MethodHead, ""}, {http.MethodGet, "application/json"}, {http.MethodGet, "text/html"}} {
		r, _ := http.NewRequest(req.method, s.srv.URL+u.Path, nil)
		r.Header.Set("User-Agent", "Mozilla/5.0 (compatible; SafeLinks prefetch)")
		if req.accept != "" {
			r.Header.Set("Accept", req.accept)
		}
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s %s: %d", req.method, req.accept, resp.StatusCode)
		}
	}
	after := s.jobsItems(t)
	if !reflect.DeepEqual(before, after) {
		for k := range after {
			if !reflect.DeepEqual(before[k], after[k]) {
				t.Errorf("item %s changed or appeared", k)
			}
		}
		t.Fatalf("a prefetch changed the jobs table: %d items before, %d after", len(before), len(after))
	}
	if _, ok := after[schema.PrefixPreference+unsubscribe.RecipientID("ann@example.com")]; ok {
		t.Fatal("a prefetch wrote a preference record")
	}
}

// jobsItems reads the jobs table whole, by key, leaving out the items the
// evidence path and the rate limiter keep moving on their own.
func (s *stack) jobsItems(t *testing.T) map[string]map[string]types.AttributeValue {
	t.Helper()
	out := map[string]map[string]types.AttributeValue{}
	p := dynamodb.NewScanPaginator(s.env.Clients.DynamoDB, &dynamodb.ScanInput{TableName: &s.res.JobsTable, ConsistentRead: boolPtr(true)})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range page.Items {
			pk := it["pk"].(*types.AttributeValueMemberS).Value
			if strings.HasPrefix(pk, schema.PrefixEvidence) || strings.HasPrefix(pk, "RATE#") {
				continue
			}
			out[pk] = it
		}
	}
	return out
}

func boolPtr(b bool) *bool { return &b }
