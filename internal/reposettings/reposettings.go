// Package reposettings reads a repository's .criticizer.yaml: the settings a
// repository keeps for its own reviews, as PR-Agent and CodeRabbit read
// theirs from a file in the repository. The fetch stage reads the file at
// the base of the reviewed version, never its head (R-REPO-6), through the
// source's API (source.FileFetcher) and Parse turns it into what the job
// keeps (job.RepoSettings) and who is skipped.
//
// The file is written by the repository's contributors, so it is refused
// whole, with a warning the job's status shows, whenever anything
// in it is wrong: an unknown key, a bad glob, a value out of range, a file
// over MaxBytes (R-REPO-2). The review then runs with the deployment's
// defaults. It has no key that widens who is mailed or turns redaction
// off; trying one is refused with its own warning (R-REPO-3).
package reposettings

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/bmatcuk/doublestar/v4"
	"gopkg.in/yaml.v3"

	"github.com/criticizer/criticizer/internal/job"
)

// FileName is the file's path from the repository root.
const FileName = ".criticizer.yaml"

// Limits of the file (R-REPO-2).
const (
	// MaxBytes is the largest file read; a larger one is refused.
	MaxBytes = 16 << 10
	// MaxGlobs bounds ignore, and MaxNames skip_authors and skip_labels.
	MaxGlobs = 100
	MaxNames = 100
	// MaxInstructions bounds the instructions' entries, each at most
	// MaxInstructionRunes.
	MaxInstructions     = 20
	MaxInstructionRunes = 500
)

// Settings are a parsed file: what the job keeps, and who is not reviewed.
type Settings struct {
	job.RepoSettings
	// SkipAuthors are usernames whose changes are not reviewed (bots:
	// dependabot[bot], renovate[bot]); compared without case.
	SkipAuthors []string
	// SkipLabels are labels (GitLab, GitHub; Gerrit's hashtags) that
	// keep a change from review, compared without case, when its author
	// cannot have set them (R-REPO-7: never a Gerrit hashtag).
	SkipLabels []string
}

// file is the schema: every key the file may have.
type file struct {
	Ignore       []string      `yaml:"ignore"`
	Instructions []instruction `yaml:"instructions"`
	SkipAuthors  []string      `yaml:"skip_authors"`
	SkipLabels   []string      `yaml:"skip_labels"`
	MinSeverity  string        `yaml:"min_severity"`
	Language     string        `yaml:"language"`
	// CodeHostStatus is "on" or "off": off turns off the status on the
	// change for this repository; on asks for nothing the deployment has
	// not turned on (R-CHANNEL-10).
	CodeHostStatus string `yaml:"code_host_status"`
}

type instruction struct {
	Path string `yaml:"path"`
	Text string `yaml:"text"`
}

// Keys are the file's keys, in the order the documentation gives them.
func Keys() []string {
	return []string{"ignore", "instructions", "skip_authors", "skip_labels", "min_severity", "language", "code_host_status"}
}

// refusedKeys are keys a repository might try in order to choose who is
// mailed or to turn redaction off: the deployment decides both.
var refusedKeys = []string{"recipients", "reviewers", "to", "cc", "bcc", "mail_to", "email", "emails", "notify",
	"redact", "redaction", "no_redact", "unredacted"}

// languagePattern is a language's name or tag: "German", "pt-BR". It goes
// into the prompt as an instruction, so it is held to letters, spaces and
// hyphens.
var languagePattern = regexp.MustCompile(`^[A-Za-z][A-Za-z -]{0,31}$`)

// Parse reads a .criticizer.yaml. With any problem it returns the zero
// Settings (the deployment's defaults) and says what was wrong, one
// sentence per problem, each naming the file; an empty file is defaults
// without a warning.
func Parse(b []byte) (Settings, []string) {
	if len(b) > MaxBytes {
		return Settings{}, []string{fmt.Sprintf("%s is %d bytes, over the limit of %d: ignored, the review ran with defaults", FileName, len(b), MaxBytes)}
	}
	s, problems := parse(b)
	if len(problems) > 0 {
		for i, p := range problems {
			problems[i] = FileName + ": " + p
		}
		return Settings{}, append(problems, FileName+" was ignored: the review ran with defaults")
	}
	return s, nil
}

func parse(b []byte) (Settings, []string) {
	var root yaml.Node
	if err := yaml.Unmarshal(b, &root); err != nil {
		return Settings{}, []string{"not valid YAML: " + yamlMessage(err)}
	}
	if len(root.Content) == 0 {
		return Settings{}, nil // empty, or comments only
	}
	doc := root.Content[0]
	if doc.Kind == yaml.ScalarNode && doc.Tag == "!!null" {
		return Settings{}, nil // "---" alone
	}
	if doc.Kind != yaml.MappingNode {
		return Settings{}, []string{"want a mapping of keys (" + strings.Join(Keys(), ", ") + ")"}
	}
	var problems []string
	for i := 0; i+1 < len(doc.Content); i += 2 {
		k := doc.Content[i].Value
		switch {
		case slices.Contains(Keys(), k):
		case slices.Contains(refusedKeys, strings.ToLower(k)):
			problems = append(problems, fmt.Sprintf("key %q (line %d) is refused: who is mailed and redaction are the deployment's to decide, never a repository's", k, doc.Content[i].Line))
		default:
			problems = append(problems, fmt.Sprintf("unknown key %q (line %d); the keys are %s", k, doc.Content[i].Line, strings.Join(Keys(), ", ")))
		}
	}
	if len(problems) > 0 {
		return Settings{}, problems
	}
	var f file
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil && !errors.Is(err, io.EOF) {
		return Settings{}, []string{yamlMessage(err)}
	}
	return f.validate()
}

// yamlMessage is a decoding error without yaml.v3's prefixes.
func yamlMessage(err error) string {
	var te *yaml.TypeError
	if errors.As(err, &te) {
		return strings.Join(te.Errors, "; ")
	}
	return strings.TrimPrefix(err.Error(), "yaml: ")
}

// validate checks every value and builds the settings.
func (f file) validate() (Settings, []string) {
	var problems []string
	bad := func(format string, a ...any) { problems = append(problems, fmt.Sprintf(format, a...)) }
	var s Settings
	switch strings.ToLower(strings.TrimSpace(f.CodeHostStatus)) {
	case "", "on", "true":
	case "off", "false":
		s.CodeHostStatusOff = true
	default:
		bad("code_host_status is %q; want on or off", f.CodeHostStatus)
	}
	if len(f.Ignore) > MaxGlobs {
		bad("ignore has %d globs, at most %d are allowed", len(f.Ignore), MaxGlobs)
	}
	for _, g := range f.Ignore {
		if msg := checkGlob(g); msg != "" {
			bad("ignore: %s", msg)
			continue
		}
		s.Ignore = append(s.Ignore, g)
	}
	if len(f.Instructions) > MaxInstructions {
		bad("instructions has %d entries, at most %d are allowed", len(f.Instructions), MaxInstructions)
	}
	for i, in := range f.Instructions {
		text := strings.TrimSpace(in.Text)
		switch msg := checkGlob(in.Path); {
		case msg != "":
			bad("instructions[%d].path: %s", i, msg)
		case text == "":
			bad("instructions[%d].text is empty", i)
		case utf8.RuneCountInString(text) > MaxInstructionRunes:
			bad("instructions[%d].text is over %d characters", i, MaxInstructionRunes)
		default:
			s.Instructions = append(s.Instructions, job.PathInstruction{Path: in.Path, Text: text})
		}
	}
	names := func(key string, in []string) []string {
		if len(in) > MaxNames {
			bad("%s has %d names, at most %d are allowed", key, len(in), MaxNames)
		}
		var out []string
		for _, n := range in {
			if n = strings.TrimSpace(n); n == "" || len(n) > 255 {
				bad("%s: a name must have 1 to 255 characters", key)
				continue
			}
			out = append(out, n)
		}
		return out
	}
	s.SkipAuthors = names("skip_authors", f.SkipAuthors)
	s.SkipLabels = names("skip_labels", f.SkipLabels)
	switch sev := strings.ToLower(strings.TrimSpace(f.MinSeverity)); sev {
	case "", "info", "warning", "error":
		s.MinSeverity = sev
	default:
		bad("min_severity %q: want info, warning or error", f.MinSeverity)
	}
	if lang := strings.TrimSpace(f.Language); lang != "" {
		if !languagePattern.MatchString(lang) {
			bad("language %q: want a language's name or tag (letters, spaces and hyphens, at most 32)", f.Language)
		}
		s.Language = lang
	}
	if len(problems) > 0 {
		return Settings{}, problems
	}
	return s, nil
}

// checkGlob says what is wrong with a path glob, or "".
func checkGlob(g string) string {
	switch {
	case strings.TrimSpace(g) == "":
		return "an empty glob"
	case strings.HasPrefix(g, "/"):
		return fmt.Sprintf("glob %q: paths are relative to the repository root, without a leading /", g)
	case !doublestar.ValidatePattern(g):
		return fmt.Sprintf("glob %q is not a valid pattern", g)
	}
	return ""
}

// Match reports whether the path glob g (valid, as Parse keeps only valid
// ones) matches path, a file's path from the repository root.
func Match(g, path string) bool {
	ok, err := doublestar.Match(g, path)
	return err == nil && ok
}

// SkipReason says why a change by author with labels is not reviewed, or
// "" when it is: SkipAuthorReason, else the first of labels SkipLabelsOf
// names. The fetch stage asks the source first whether a label was
// beyond the author's reach (R-REPO-7).
func (s Settings) SkipReason(author string, labels []string) string {
	if why := s.SkipAuthorReason(author); why != "" {
		return why
	}
	if named := s.SkipLabelsOf(labels); len(named) > 0 {
		return SkipLabelReason(named[0])
	}
	return ""
}

// SkipAuthorReason says why a change by author is not reviewed (the
// author is in skip_authors), or "".
func (s Settings) SkipAuthorReason(author string) string {
	for _, a := range s.SkipAuthors {
		if author != "" && strings.EqualFold(a, author) {
			return fmt.Sprintf("not reviewed: the author %s is in skip_authors of %s", author, FileName)
		}
	}
	return ""
}

// SkipLabelsOf are the labels, of those given, that skip_labels names, in
// their order.
func (s Settings) SkipLabelsOf(labels []string) []string {
	var out []string
	for _, have := range labels {
		for _, l := range s.SkipLabels {
			if strings.EqualFold(l, have) {
				out = append(out, have)
				break
			}
		}
	}
	return out
}

// SkipLabelReason says why a change with label, which skip_labels names,
// is not reviewed.
func SkipLabelReason(label string) string {
	return fmt.Sprintf("not reviewed: the label %q is in skip_labels of %s", label, FileName)
}
