package mail

import (
	"strconv"
	"strings"

	"github.com/criticizer/criticizer/internal/prefs"
)

// The preference page (R-PREF-2): the form a GET of an email's
// preference link answers, and what a POST of it answers. It is a page
// of a browser, not of an email: a <style> sheet (allowed by the page's
// Content-Security-Policy as inline style), no script, every control
// labelled, grouped in fieldsets with legends, colours of at least 4.5:1
// against their background (WCAG AA), a visible focus ring. Written by
// hand and escaped as html/template escapes, like the email (write.go
// says why); the template under testdata renders the same bytes
// (TestPreferencesPage_SameBytesAsTheTemplate). Every value it shows —
// repository names, zone names, an error message — is escaped.

// PreferencesVersion names the preference page (previewed with the
// others).
const PreferencesVersion = "preferences/v1"

// PreferencesPage is what the page shows.
type PreferencesPage struct {
	// Action is where the form POSTs: the link's own path.
	Action string
	// Preferences are shown as the form's values; their Rev is the
	// revision the form saves from.
	Preferences prefs.Preferences
	// Offered are the repositories listed with a mute checkbox
	// (prefs.Offered), checked when muted; LinkRepository is the one of
	// the email the link came from (said so beside it).
	Offered        []string
	LinkRepository string
	// Zones are the time zones offered (prefs.Zones).
	Zones []string
	// Saved: the answer to a POST that saved. Conflict: the answer to a
	// POST made from a stale page; the form shows the record as it is now.
	Saved, Conflict bool
	// Error names the field a POST was refused for; the form shows the
	// record as stored.
	Error *prefs.FieldError
}

// fieldLabels are the form's fields as its labels name them, for the
// error message.
var fieldLabels = map[string]string{
	prefs.FieldRev: "Page revision", prefs.FieldMode: "Delivery", prefs.FieldDigestHour: "Digest hour",
	prefs.FieldTimeZone: "Time zone", prefs.FieldMinSeverity: "Minimum severity", prefs.FieldMute: "Muted repositories",
	prefs.FieldUnsubscribeAll: "Unsubscribe from every Criticizer email",
}

// PreferencesHTML renders the preference page.
func (r *Renderer) PreferencesHTML(p PreferencesPage) ([]byte, error) {
	return []byte(preferencesPage(p)), nil
}

// PreferencesRefusedHTML renders the page of a link that does not verify
// (or has expired when expired is true). Nothing was read or saved.
func (r *Renderer) PreferencesRefusedHTML(expired bool) ([]byte, error) {
	return []byte(page("Criticizer: link not valid", pick(expired, "This link has expired", "This link is not valid"), `  <p style="margin:14px 0 0;font-size:15px;line-height:1.55;">`+
		pick(expired, "Preference links work for 90 days after the email was sent. Use the link in a recent Criticizer email.",
			"The link may have been cut or changed on its way; try it from the email again.")+
		` Nothing was changed.</p>`)), nil
}

// prefStyle is the page's style sheet.
const prefStyle = `body{margin:0;padding:0;background:#f4f5f7;font-family:-apple-system,'Segoe UI',Helvetica,Arial,sans-serif;color:#1f2328;font-size:15px;line-height:1.5}
main{box-sizing:border-box;max-width:600px;margin:24px auto;padding:24px;background:#ffffff;border:1px solid #d0d7de;border-radius:6px}
.brand{font-size:12px;line-height:1.4;color:#57606a;text-transform:uppercase;letter-spacing:.04em}
h1{margin:8px 0 0;font-size:22px;line-height:1.3;font-weight:600}
p{margin:12px 0 0}
fieldset{margin:20px 0 0;padding:10px 16px 16px;border:1px solid #d0d7de;border-radius:6px;min-width:0}
legend{padding:0 6px;font-weight:600;font-size:16px}
.choice{margin:10px 0 0;overflow-wrap:anywhere}
.row{margin:14px 0 0}
.row label{display:block;font-weight:600;font-size:14px;margin:0 0 4px}
.hint{margin:4px 0 0 26px;font-size:13px;color:#57606a}
.note{margin:10px 0 0;font-size:13px;color:#57606a}
input[type=radio],input[type=checkbox]{width:18px;height:18px;margin:0 6px 0 0;vertical-align:-3px}
select{font:inherit;font-size:15px;max-width:100%;padding:5px 8px;border:1px solid #6e7781;border-radius:6px;background:#ffffff;color:#1f2328}
code{font-family:SFMono-Regular,Consolas,'Liberation Mono',Menlo,monospace;font-size:13px;overflow-wrap:anywhere}
button{font:inherit;font-size:15px;font-weight:600;margin:20px 0 0;padding:9px 18px;border:1px solid #0969da;border-radius:6px;background:#0969da;color:#ffffff;cursor:pointer}
:focus-visible{outline:3px solid #0550ae;outline-offset:2px}
.notice{margin:16px 0 0;padding:10px 12px;border:1px solid;border-radius:6px;font-size:14px}
.error{background:#ffebe9;border-color:#cf222e;color:#82071e}
.saved{background:#dafbe1;border-color:#1a7f37;color:#116329}
.conflict{background:#fff8c5;border-color:#9a6700;color:#4d2d00}`

// preferencesPage is preferences/v1.
func preferencesPage(p PreferencesPage) string {
	var b strings.Builder
	w := b.WriteString
	pr := p.Preferences
	aria := func(field, hint string) string { return ariaAttrs(p.Error, field, hint) }
	w(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>Criticizer: your email preferences</title>
<style>
` + prefStyle + `
</style>
</head>
<body>
<main>
<div class="brand">Criticizer</div>
<h1>Your email preferences</h1>`)
	switch {
	case p.Error != nil:
		label := fieldLabels[p.Error.Field]
		if label == "" {
			label = "The form"
		}
		w(`
<p class="notice error" id="form-error" role="alert">Not saved: ` + escText(label) + ` (` + escText(p.Error.Field) + `): ` + escText(p.Error.Message) + `. Nothing was changed.</p>`)
	case p.Conflict:
		w(`
<p class="notice conflict" role="alert">Not saved: your preferences changed since this page was opened (in another tab, or by an Unsubscribe link). This is what is saved now; make your change again.</p>`)
	case p.Saved:
		w(`
<p class="notice saved" role="status">Saved. Emails rendered from now on follow these preferences.</p>`)
	}
	w(`
<p>Choose how Criticizer's review emails reach you. Nothing changes until you press <strong>Save preferences</strong>.</p>
<form method="post" action="` + escURL(p.Action) + `">
<input type="hidden" name="rev" value="` + strconv.Itoa(pr.Rev) + `">
<fieldset>
<legend>Delivery</legend>`)
	for _, m := range []struct {
		mode        prefs.Mode
		label, hint string
	}{
		{prefs.Instant, "Instant", "Each review by email as soon as it is ready."},
		{prefs.Daily, "Daily digest", "One email a day, at the hour below, with the day's reviews."},
		{prefs.Mixed, "Mixed", "Reviews with an error at once; the rest in the daily digest."},
	} {
		id := "mode-" + string(m.mode)
		w(`
<div class="choice"><input type="radio" id="` + id + `" name="mode" value="` + string(m.mode) + `"` +
			pick(pr.Mode == m.mode, " checked", "") + aria(prefs.FieldMode, id+"-hint") + `><label for="` + id + `">` + escText(m.label) + `</label>
<div class="hint" id="` + id + `-hint">` + escText(m.hint) + `</div></div>`)
	}
	w(`
<div class="row"><label for="digest_hour">Digest hour</label><select id="digest_hour" name="digest_hour"` + aria(prefs.FieldDigestHour, "") + `>`)
	for h := range 24 {
		v := strconv.Itoa(h)
		w(`
<option value="` + v + `"` + pick(pr.DigestHour == h, " selected", "") + `>` + pick(h < 10, "0", "") + v + `:00</option>`)
	}
	w(`
</select></div>
<div class="row"><label for="time_zone">Time zone</label><select id="time_zone" name="time_zone"` + aria(prefs.FieldTimeZone, "") + `>`)
	for _, z := range p.Zones {
		w(`
<option value="` + escText(z) + `"` + pick(pr.TimeZone == z, " selected", "") + `>` + escText(strings.ReplaceAll(z, "_", " ")) + `</option>`)
	}
	w(`
</select></div>
</fieldset>
<fieldset>
<legend>Findings</legend>
<div class="row"><label for="min_severity">Minimum severity</label><select id="min_severity" name="min_severity"` + aria(prefs.FieldMinSeverity, "min_severity-hint") + `>`)
	for _, s := range []struct{ value, label string }{
		{"none", "Every finding"}, {"info", "Info and above"}, {"warning", "Warnings and errors"}, {"error", "Errors only"},
	} {
		w(`
<option value="` + s.value + `"` + pick(prefs.MinSeverityValue(pr.MinSeverity) == s.value, " selected", "") + `>` + s.label + `</option>`)
	}
	w(`
</select></div>
<p class="note" id="min_severity-hint">Your minimum can only leave findings out: what this deployment or a repository does not mail stays out, whatever you choose. Each email says how many findings your minimum left out.</p>
</fieldset>
<fieldset>
<legend>Muted repositories</legend>`)
	if len(p.Offered) == 0 {
		w(`
<p class="note">You have muted no repository. The preference link of a review email offers to mute that email's repository.</p>`)
	}
	for i, repo := range p.Offered {
		id := "mute-" + strconv.Itoa(i)
		w(`
<div class="choice"><input type="checkbox" id="` + id + `" name="mute" value="` + escText(repo) + `"` + pick(pr.Mutes(repo), " checked", "") + aria(prefs.FieldMute, "") +
			`><label for="` + id + `">Mute <code>` + escText(repo) + `</code>` + pick(repo == p.LinkRepository, " (the repository of this email)", "") + `</label></div>`)
	}
	w(`
<p class="note">A muted repository sends you no email. An email's Unsubscribe link mutes its repository too.</p>
</fieldset>
<fieldset>
<legend>Unsubscribe</legend>
<div class="choice"><input type="checkbox" id="unsubscribe_all" name="unsubscribe_all" value="1"` + pick(pr.UnsubscribedAll, " checked", "") + aria(prefs.FieldUnsubscribeAll, "") +
		`><label for="unsubscribe_all">Unsubscribe from every Criticizer email</label></div>
</fieldset>
<button type="submit">Save preferences</button>
</form>
</main>
</body>
</html>
`)
	return b.String()
}

// ariaAttrs are a control's aria-describedby (its hint, and the error
// message when the refused field is the control's) and aria-invalid.
func ariaAttrs(e *prefs.FieldError, field, hint string) string {
	bad := e != nil && e.Field == field
	desc := hint
	if bad {
		desc = strings.TrimSpace("form-error " + hint)
	}
	out := ""
	if desc != "" {
		out = ` aria-describedby="` + escText(desc) + `"`
	}
	if bad {
		out += ` aria-invalid="true"`
	}
	return out
}
