package docs_test

import (
	"os/exec"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/criticizer/criticizer/internal/docs"
)

// MaxSubject is the longest commit subject the history keeps
// (docs/development.md, "Commits"): one short imperative line, the why in
// the body.
const MaxSubject = 72

// historyRuleStart is the last commit before the subject rule began; every
// commit after it is checked.
const historyRuleStart = "abf428cb5f906600576256493f3b1fcb80b95b0b"

// landedLongSubjects are commits after historyRuleStart whose subjects are
// longer than MaxSubject and that had already landed on main when this
// check was written. Landed history is never rewritten (a rewrite replaces
// every later commit and is refused), so they are named here instead; the
// list only shrinks.
var landedLongSubjects = map[string]bool{
	"cc42a03b40d33736003a1135499f9669e928449b": true, // all: gofmt; the config defaults and SAM env files the evidence path added (73)
	"8a0dac394f212c462f9fd58356b9672c01438d54": true, // Merge branch 'quota': SES quota paused, not dead-lettered; fresh tx tokens (74)
}

// Every commit since the rule began has a subject of at most MaxSubject
// characters. Without the repository's history (an archive, not a clone)
// there is nothing to check, and the test says so.
func TestHistory_SubjectsAreShort(t *testing.T) {
	root, err := docs.Root()
	if err != nil {
		t.Fatal(err)
	}
	git := func(args ...string) (string, error) {
		out, err := exec.Command("git", append([]string{"-C", root}, args...)...).Output()
		return string(out), err
	}
	if _, err := git("rev-parse", "--git-dir"); err != nil {
		t.Skip("not a git checkout: no history to check")
	}
	rng := historyRuleStart + "..HEAD"
	if _, err := git("cat-file", "-e", historyRuleStart+"^{commit}"); err != nil {
		// A shallow clone may not reach the start: check what it has.
		t.Logf("%s is not in this clone (shallow?): checking every commit it has", historyRuleStart[:8])
		rng = "HEAD"
	}
	out, err := git("log", "--format=%H %s", rng)
	if err != nil {
		t.Fatalf("git log %s: %v", rng, err)
	}
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		hash, subject, _ := strings.Cut(line, " ")
		checked++
		if n := utf8.RuneCountInString(subject); n > MaxSubject && !landedLongSubjects[hash] {
			t.Errorf("commit %s: subject is %d characters, at most %d (the why goes in the body): %q",
				hash[:12], n, MaxSubject, subject)
		}
	}
	if checked == 0 {
		t.Logf("no commits after %s", historyRuleStart[:8])
	}
}

// The exceptions are real commits with long subjects: an entry that no
// longer names one is stale and goes.
func TestHistory_ExceptionsAreLongSubjects(t *testing.T) {
	root, err := docs.Root()
	if err != nil {
		t.Fatal(err)
	}
	for hash := range landedLongSubjects {
		out, err := exec.Command("git", "-C", root, "log", "-1", "--format=%s", hash).Output()
		if err != nil {
			t.Logf("%s not in this clone: %v", hash[:12], err)
			continue
		}
		if n := utf8.RuneCountInString(strings.TrimSpace(string(out))); n <= MaxSubject {
			t.Errorf("%s has a %d-character subject: remove it from landedLongSubjects", hash[:12], n)
		}
	}
}
