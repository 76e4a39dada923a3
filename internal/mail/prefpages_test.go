package mail

import (
	"bytes"
	htmltemplate "html/template"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/criticizer/criticizer/internal/prefs"
)

// prefCases are preference pages the writer and the template must render
// alike: the sample, each field refused, a conflict, nothing offered,
// hostile repository names and a hostile action, everything chosen.
func prefCases() []PreferencesPage {
	base := SamplePreferencesPage
	var out []PreferencesPage
	out = append(out, base())
	for _, f := range []string{prefs.FieldMode, prefs.FieldDigestHour, prefs.FieldTimeZone, prefs.FieldMinSeverity, prefs.FieldMute, prefs.FieldUnsubscribeAll, prefs.FieldRev, "body", `x"><script>`} {
		p := base()
		p.Saved, p.Error = false, &prefs.FieldError{Field: f, Message: `choose <one> & "only" 'one' + more`}
		out = append(out, p)
	}
	p := base()
	p.Saved, p.Conflict = false, true
	out = append(out, p)
	p = base()
	p.Saved, p.Offered, p.LinkRepository = false, nil, ""
	p.Preferences = prefs.Default().Normalized()
	p.Zones = prefs.Zones("UTC")
	out = append(out, p)
	p = base()
	evil := `generic:<script>alert("x")</script> & 'q' +1`
	p.Preferences.Muted = []string{evil}
	p.Preferences.TimeZone = "America/Argentina/Buenos_Aires"
	p.Preferences.UnsubscribedAll, p.Preferences.MinSeverity, p.Preferences.Mode, p.Preferences.DigestHour = true, "", prefs.Daily, 23
	p.Offered, p.LinkRepository = prefs.Offered(p.Preferences, "github:o/r\"x"), "github:o/r\"x"
	p.Action = "javascript:alert(1)"
	out = append(out, p)
	p = base()
	p.Action = "/preferences/t+k?a=1&b='2' x"
	out = append(out, p)
	return out
}

type tmplAria struct {
	Desc string
	Bad  bool
}

type tmplOption struct {
	Value, Label string
	Selected     bool
}

// tmplData is what testdata/preferences-v1.html.tmpl reads, built from
// a PreferencesPage as the writer shows it.
func tmplData(p PreferencesPage) any {
	aria := func(field, hint string) tmplAria {
		bad := p.Error != nil && p.Error.Field == field
		d := hint
		if bad {
			d = strings.TrimSpace("form-error " + hint)
		}
		return tmplAria{d, bad}
	}
	type mode struct {
		Mode        prefs.Mode
		Label, Hint string
		Checked     bool
		Aria        tmplAria
	}
	type repo struct {
		Name          string
		Muted, OfLink bool
	}
	var modes []mode
	for _, m := range []mode{{Mode: prefs.Instant, Label: "Instant", Hint: "Each review by email as soon as it is ready."},
		{Mode: prefs.Daily, Label: "Daily digest", Hint: "One email a day, at the hour below, with the day's reviews."},
		{Mode: prefs.Mixed, Label: "Mixed", Hint: "Reviews with an error at once; the rest in the daily digest."}} {
		m.Checked, m.Aria = p.Preferences.Mode == m.Mode, aria(prefs.FieldMode, "mode-"+string(m.Mode)+"-hint")
		modes = append(modes, m)
	}
	var hours, zones, sevs []tmplOption
	for h := range 24 {
		hours = append(hours, tmplOption{strconv.Itoa(h), pick(h < 10, "0", "") + strconv.Itoa(h) + ":00", p.Preferences.DigestHour == h})
	}
	for _, z := range p.Zones {
		zones = append(zones, tmplOption{z, strings.ReplaceAll(z, "_", " "), p.Preferences.TimeZone == z})
	}
	for _, s := range [][2]string{{"none", "Every finding"}, {"info", "Info and above"}, {"warning", "Warnings and errors"}, {"error", "Errors only"}} {
		sevs = append(sevs, tmplOption{s[0], s[1], prefs.MinSeverityValue(p.Preferences.MinSeverity) == s[0]})
	}
	var repos []repo
	for _, r := range p.Offered {
		repos = append(repos, repo{r, p.Preferences.Mutes(r), r == p.LinkRepository})
	}
	label := ""
	if p.Error != nil {
		if label = fieldLabels[p.Error.Field]; label == "" {
			label = "The form"
		}
	}
	return map[string]any{
		"Action": p.Action, "Preferences": p.Preferences, "Error": p.Error, "ErrorLabel": label, "Conflict": p.Conflict, "Saved": p.Saved,
		"Modes": modes, "Hours": hours, "ZoneOptions": zones, "SeverityOptions": sevs, "Offered": p.Offered, "Repos": repos,
		"Aria": map[string]tmplAria{
			prefs.FieldDigestHour: aria(prefs.FieldDigestHour, ""), prefs.FieldTimeZone: aria(prefs.FieldTimeZone, ""),
			prefs.FieldMinSeverity: aria(prefs.FieldMinSeverity, "min_severity-hint"), prefs.FieldMute: aria(prefs.FieldMute, ""),
			prefs.FieldUnsubscribeAll: aria(prefs.FieldUnsubscribeAll, ""),
		},
	}
}

// The hand-written preference page is byte for byte what
// testdata/preferences-v1.html.tmpl renders under html/template, hostile
// repository names, error messages and actions included: everything it
// shows is escaped as html/template escapes it.
// Rules: R-PREF-2, R-WIRE-1.
func TestPreferencesPage_SameBytesAsTheTemplate(t *testing.T) {
	tm, err := htmltemplate.ParseFiles("testdata/preferences-v1.html.tmpl")
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range prefCases() {
		var b bytes.Buffer
		if err := tm.Execute(&b, tmplData(p)); err != nil {
			t.Fatal(err)
		}
		if got := preferencesPage(p); got != b.String() {
			at := diffAt(got, b.String())
			t.Errorf("case %d differs at byte %d:\n got  %q\n want %q", i, at, around(got, at), around(b.String(), at))
		}
	}
}

var (
	controlRe = regexp.MustCompile(`<(input|select)\b[^>]*>`)
	idRe      = regexp.MustCompile(`\bid="([^"]+)"`)
	typeRe    = regexp.MustCompile(`\btype="([^"]+)"`)
)

// The page's accessibility basics, read from its markup: a language,
// every visible control with an id and a <label for> of its own,
// fieldsets with legends, no script, a focus style, the refused field
// marked invalid and pointing at the message that names it.
// Rules: R-PREF-2.
func TestPreferencesPage_LabelledGroupedNoScript(t *testing.T) {
	for i, p := range prefCases() {
		page := preferencesPage(p)
		if !strings.Contains(page, `<html lang="en">`) || strings.Contains(strings.ToLower(page), "<script") || !strings.Contains(page, ":focus-visible{outline:3px") {
			t.Errorf("case %d: no lang, a script, or no focus style", i)
		}
		if f, l := strings.Count(page, "<fieldset>"), strings.Count(page, "<legend>"); f != 4 || l != 4 {
			t.Errorf("case %d: %d fieldsets, %d legends; want 4 of each", i, f, l)
		}
		ids := map[string]bool{}
		for _, c := range controlRe.FindAllString(page, -1) {
			if m := typeRe.FindStringSubmatch(c); m != nil && m[1] == "hidden" {
				continue
			}
			m := idRe.FindStringSubmatch(c)
			if m == nil {
				t.Errorf("case %d: control without an id: %s", i, c)
				continue
			}
			if ids[m[1]] {
				t.Errorf("case %d: id %q twice", i, m[1])
			}
			ids[m[1]] = true
			if strings.Count(page, `<label for="`+m[1]+`">`) != 1 {
				t.Errorf("case %d: control %q has no label of its own", i, m[1])
			}
		}
		if len(ids) < 3+3+len(p.Offered) {
			t.Errorf("case %d: %d labelled controls", i, len(ids))
		}
		if e := p.Error; e != nil {
			if !strings.Contains(page, `id="form-error" role="alert">Not saved: `) || !strings.Contains(page, "("+escText(e.Field)+")") {
				t.Errorf("case %d: the error does not name the field %q", i, e.Field)
			}
			if _, known := fieldLabels[e.Field]; known && e.Field != prefs.FieldRev && !strings.Contains(page, `aria-invalid="true"`) {
				t.Errorf("case %d: the refused field %q is not marked invalid", i, e.Field)
			}
		}
	}
	// What the page shows comes from the record, escaped: the sample's
	// choices are the selected ones.
	page := preferencesPage(SamplePreferencesPage())
	for _, want := range []string{`value="mixed" checked`, `<option value="8" selected>08:00</option>`, `<option value="Europe/Berlin" selected>Europe/Berlin</option>`,
		`<option value="warning" selected>Warnings and errors</option>`, `name="rev" value="4"`, `(the repository of this email)`, `role="status">Saved.`} {
		if !strings.Contains(page, want) {
			t.Errorf("the sample page lacks %s", want)
		}
	}
}
