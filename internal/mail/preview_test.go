package mail_test

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/criticizer/criticizer/internal/critic"
	"github.com/criticizer/criticizer/internal/mail"
)

// Every listed template previews, with the content type its form calls for;
// the critique previews are the sample critique rendered exactly as Render
// would render it.
func TestPreview_EveryListedTemplateRenders(t *testing.T) {
	r := renderer(t)
	names := r.PreviewNames()
	want := map[string]string{
		"critique/v3.html":     "text/html; charset=utf-8",
		"critique/v3.txt":      "text/plain; charset=utf-8",
		"critique/v4.html":     "text/html; charset=utf-8",
		"critique/v4.txt":      "text/plain; charset=utf-8",
		"unsubscribe/v1.html":  "text/html; charset=utf-8",
		"unsubscribed/v1.html": "text/html; charset=utf-8",
		"vote/v1.html":         "text/html; charset=utf-8",
		"voted/v1.html":        "text/html; charset=utf-8",
		"preferences/v1.html":  "text/html; charset=utf-8",
		"digest/v1.html":       "text/html; charset=utf-8",
		"digest/v1.txt":        "text/plain; charset=utf-8",

		"reply-confirmation/v1.html": "text/html; charset=utf-8",
		"reply-confirmation/v1.txt":  "text/plain; charset=utf-8",
	}
	if len(names) != len(want) {
		t.Errorf("PreviewNames() = %v; want %d names", names, len(want))
	}
	m, err := r.Render(mail.SampleData())
	if err != nil {
		t.Fatal(err)
	}
	rerun, err := r.Render(mail.SampleRerunData())
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		ct, body, err := r.Preview(name)
		if err != nil {
			t.Errorf("Preview(%q): %v", name, err)
			continue
		}
		if ct != want[name] {
			t.Errorf("Preview(%q) content type %q; want %q", name, ct, want[name])
		}
		if len(body) == 0 || !utf8.Valid(body) {
			t.Errorf("Preview(%q) is empty or not UTF-8", name)
		}
		switch name {
		case mail.TemplateVersion + ".html":
			if string(body) != m.HTML {
				t.Errorf("HTML preview differs from Render(SampleData()).HTML")
			}
		case mail.TemplateVersion + ".txt":
			if string(body) != m.Text {
				t.Errorf("text preview differs from Render(SampleData()).Text")
			}
		case mail.RerunTemplateVersion + ".html":
			if string(body) != rerun.HTML || rerun.TemplateVersion != mail.RerunTemplateVersion {
				t.Errorf("rerun HTML preview differs from Render(SampleRerunData()).HTML, or not %s", mail.RerunTemplateVersion)
			}
		case mail.RerunTemplateVersion + ".txt":
			if string(body) != rerun.Text {
				t.Errorf("rerun text preview differs from Render(SampleRerunData()).Text")
			}
		}
	}
}

// A name that is not listed is ErrUnknownTemplate, so the admin API can
// answer 404.
func TestPreview_UnknownNameIsErrUnknownTemplate(t *testing.T) {
	r := renderer(t)
	for _, name := range []string{"", "critique/v1.html", "critique/v3", "../render.go", "critique/v3.HTML"} {
		if _, _, err := r.Preview(name); !errors.Is(err, mail.ErrUnknownTemplate) {
			t.Errorf("Preview(%q) error %v; want ErrUnknownTemplate", name, err)
		}
	}
}

// The sample exercises what the layout must cope with: several files, every
// severity, a whole-file finding, a partial review, a long unbreakable line
// and a non-ASCII title.
func TestSampleData_CoversTheLayoutsHardCases(t *testing.T) {
	d := mail.SampleData()
	files := map[string]bool{}
	sev := map[critic.Severity]bool{}
	wholeFile, long := false, false
	for _, f := range d.Critique.Findings {
		files[f.File] = true
		sev[f.Severity] = true
		wholeFile = wholeFile || f.Line == 0
		for _, w := range strings.Fields(f.Message + " " + f.File) {
			long = long || len(w) >= 60
		}
	}
	if len(files) < 3 {
		t.Errorf("sample has %d files; want several", len(files))
	}
	for _, s := range []critic.Severity{critic.SeverityError, critic.SeverityWarning, critic.SeverityInfo} {
		if !sev[s] {
			t.Errorf("sample has no %s finding", s)
		}
	}
	if !wholeFile || !long || !d.Critique.Truncated {
		t.Errorf("sample lacks a whole-file finding (%v), a long unbreakable word (%v) or truncation (%v)", wholeFile, long, d.Critique.Truncated)
	}
	ascii := true
	for _, c := range d.Title {
		ascii = ascii && c < 0x80
	}
	if ascii {
		t.Errorf("sample title %q is ASCII", d.Title)
	}
	if d.UnsubscribeURL == "" || d.Source == "" {
		t.Errorf("sample has no unsubscribe URL or source")
	}
}

// The unsubscribe page names no address and depends on nothing (so a valid
// and an invalid token get the same page), has no script and no external
// assets, and says the reader is unsubscribed.
func TestUnsubscribedPage_SameForEveryTokenAndSelfContained(t *testing.T) {
	r := renderer(t)
	a, err := r.UnsubscribedPage(false)
	if err != nil {
		t.Fatal(err)
	}
	b, err := renderer(t).UnsubscribedPage(false)
	if err != nil {
		t.Fatal(err)
	}
	if string(a) != string(b) {
		t.Errorf("two renders of the page differ")
	}
	page := strings.ToLower(string(a))
	for _, bad := range []string{"<script", "src=", "<link", "@", "http://", "https://"} {
		if strings.Contains(page, bad) {
			t.Errorf("page contains %q", bad)
		}
	}
	if !strings.Contains(page, "unsubscribed") {
		t.Errorf("page does not say the reader is unsubscribed")
	}
}

// Email-safe HTML: no scripts, no external assets (images, stylesheets,
// fonts), no <style> block (clients drop it): every style is inline.
func TestRender_HTMLIsEmailSafe(t *testing.T) {
	r := renderer(t)
	_, page, err := r.Preview(mail.TemplateVersion + ".html")
	if err != nil {
		t.Fatal(err)
	}
	s := strings.ToLower(string(page))
	for _, bad := range []string{"<script", "<style", "<link", "<img", "src=", "url(", "@import", "class="} {
		if strings.Contains(s, bad) {
			t.Errorf("critique HTML contains %q", bad)
		}
	}
	if !strings.Contains(s, "max-width:600px") {
		t.Errorf("critique HTML has no 600px column")
	}
}
