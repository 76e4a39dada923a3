package mail

import (
	"strings"
	"testing"
)

// A critique the team's learnings left findings out of says how many, in
// the text and the HTML part of its email and of a digest; one they left
// nothing out of says nothing about them.
// Rules: R-LEARN-2.
func TestRender_LearnedOutSaysHowMany(t *testing.T) {
	r, err := NewRenderer()
	if err != nil {
		t.Fatal(err)
	}
	d := firstCases()[0]
	plain, err := r.Render(d)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(plain.Text, "team's learnings") || strings.Contains(plain.HTML, "team's learnings") {
		t.Fatal("an email with nothing left out mentions the team's learnings")
	}
	for n, want := range map[int]string{1: "1 finding is left out by your team's learnings", 3: "3 findings are left out by your team's learnings"} {
		d.Critique.LearnedOut = n
		m, err := r.Render(d)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(m.Text, want) || !strings.Contains(m.HTML, want) {
			t.Errorf("%d left out: the email does not say %q:\n%s", n, want, m.Text)
		}
	}
	dg := SampleDigestData()
	dg.Items[0].Critique.LearnedOut = 2
	m, err := r.RenderDigest(dg)
	if err != nil {
		t.Fatal(err)
	}
	if want := "2 findings are left out by your team's learnings"; !strings.Contains(m.Text, want) || !strings.Contains(m.HTML, want) {
		t.Errorf("the digest does not say %q:\n%s", want, m.Text)
	}
}
