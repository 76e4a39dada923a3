// Package mail renders the critique email and sends it with SES v2.
//
// Rendering happens once per outbox row, when the row is created; the result
// is stored with the row, so a retry sends exactly the bytes the first attempt
// would have sent.
package mail

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	htmltemplate "html/template"
	"sort"
	"strings"
	texttemplate "text/template"
	"unicode/utf8"

	"github.com/criticizer/criticizer/internal/critic"
	"github.com/criticizer/criticizer/internal/delivery"
)

// TemplateVersion names the template set; it is stored with every rendered
// message so an operator can tell which layout a reviewer saw.
const TemplateVersion = "critique/v1"

//go:embed templates/*.tmpl
var templateFS embed.FS

// Data is what the critique templates show.
type Data struct {
	ChangelistID  string
	ReviewVersion int
	Title         string
	URL           string
	Author        string
	Critique      critic.Critique
}

// FileFindings groups findings by file for the templates.
type FileFindings struct {
	File     string
	Findings []critic.Finding
}

// view is the template's input: Data plus derived fields.
type view struct {
	Data
	Files  []FileFindings
	Counts map[critic.Severity]int
}

// Renderer holds the parsed templates.
type Renderer struct {
	html *htmltemplate.Template
	text *texttemplate.Template
}

// NewRenderer parses the embedded templates.
func NewRenderer() (*Renderer, error) {
	h, err := htmltemplate.New("critique.html.tmpl").ParseFS(templateFS, "templates/critique.html.tmpl")
	if err != nil {
		return nil, fmt.Errorf("parse html template: %w", err)
	}
	t, err := texttemplate.New("critique.txt.tmpl").ParseFS(templateFS, "templates/critique.txt.tmpl")
	if err != nil {
		return nil, fmt.Errorf("parse text template: %w", err)
	}
	return &Renderer{html: h, text: t}, nil
}

// Subject names the changelist and the review version.
func Subject(d Data) string {
	title := d.Title
	if len(title) > 120 {
		// Cut at a character boundary: a subject must stay valid UTF-8.
		cut := 117
		for cut > 0 && !utf8.RuneStart(title[cut]) {
			cut--
		}
		title = title[:cut] + "..."
	}
	return fmt.Sprintf("[Criticizer] %s v%d: %s", d.ChangelistID, d.ReviewVersion, strings.Join(strings.Fields(title), " "))
}

// Render produces the message: subject, HTML, text and a content hash.
func (r *Renderer) Render(d Data) (delivery.Message, error) {
	v := view{Data: d, Counts: map[critic.Severity]int{}}
	byFile := map[string][]critic.Finding{}
	for _, f := range d.Critique.Findings {
		byFile[f.File] = append(byFile[f.File], f)
		v.Counts[f.Severity]++
	}
	for file, fs := range byFile {
		v.Files = append(v.Files, FileFindings{File: file, Findings: fs})
	}
	sort.Slice(v.Files, func(i, j int) bool { return v.Files[i].File < v.Files[j].File })
	var hb, tb bytes.Buffer
	if err := r.html.Execute(&hb, v); err != nil {
		return delivery.Message{}, fmt.Errorf("render html: %w", err)
	}
	if err := r.text.Execute(&tb, v); err != nil {
		return delivery.Message{}, fmt.Errorf("render text: %w", err)
	}
	m := delivery.Message{Subject: Subject(d), HTML: hb.String(), Text: tb.String(), TemplateVersion: TemplateVersion}
	sum := sha256.Sum256([]byte(m.Subject + "\x00" + m.HTML + "\x00" + m.Text))
	m.ContentSHA256 = hex.EncodeToString(sum[:])
	return m, nil
}
