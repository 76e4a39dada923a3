package inbound

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

func cmds(s ...string) []Command {
	var out []Command
	for _, c := range s {
		p, ok := parseLine(c)
		if !ok {
			panic(c)
		}
		out = append(out, p...)
	}
	return out
}

// Replies as the common mail clients write them: the commands above the
// quote are read, the quoted email (which shows the same vocabulary) and
// whatever follows a signature are not. Gmail's plain part is preferred
// to its HTML; an HTML-only reply is read through its text rendering;
// Outlook's base64 and Windows-1252 parts are decoded.
// Rules: R-REPLY-4.
func TestParse_RealMailClientReplies(t *testing.T) {
	for _, tc := range []struct {
		file    string
		want    []Command
		unknown int
	}{
		{"gmail.eml", cmds("wrong 1", "useful 2"), 1},
		{"html-only.eml", cmds("wrong 2", "mute"), 0},
		{"outlook.eml", cmds("useful 1", "wrong 2"), 1},
		{"outlook-classic.eml", cmds("help"), 1},
		{"apple-mail.eml", cmds("mute"), 0},
		{"iphone.eml", cmds("wrong 1", "wrong 2"), 1},
		{"thunderbird.eml", cmds("useful 2", "unsubscribe"), 0},
	} {
		t.Run(tc.file, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join("testdata", "replies", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			_, text, err := ReadMessage(raw)
			if err != nil {
				t.Fatal(err)
			}
			p := Parse(text)
			if !reflect.DeepEqual(p.Commands, tc.want) || p.Unknown != tc.unknown || p.Ignored != 0 {
				t.Errorf("commands %v, %d unknown, %d ignored; want %v, %d unknown\ntext:\n%s", p.Commands, p.Unknown, p.Ignored, tc.want, tc.unknown, text)
			}
		})
	}
}

// Outlook's HTML part, read alone: everything from its reply marker on
// is the quote.
func TestHTMLText_OutlookMarkerEndsTheReply(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "replies", "outlook.eml"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(raw)
	i := strings.Index(s, "<html>")
	j := strings.Index(s[i:], "</html>")
	doc := strings.NewReplacer("=\r\n", "", "=3D", "=").Replace(s[i : i+j+7])
	p := Parse(htmlText(doc))
	if want := cmds("useful 1", "wrong 2"); !reflect.DeepEqual(p.Commands, want) {
		t.Errorf("commands %v, want %v (the mute after divRplyFwdMsg is quoted)", p.Commands, want)
	}
}

// The vocabulary, line by line: case, "#", commas and "and", trailing
// punctuation; a verb with anything unexpected after it is not a
// command; duplicates count once; past MaxCommands the rest are counted
// as ignored.
// Rules: R-REPLY-4, R-REPLY-6.
func TestParse_Vocabulary(t *testing.T) {
	for text, want := range map[string]Parsed{
		"WRONG 3":                          {Commands: cmds("wrong 3")},
		"wrong #3, #4 and 5.":              {Commands: []Command{{Wrong, 3}, {Wrong, 4}, {Wrong, 5}}},
		"Useful: 2!":                       {Commands: cmds("useful 2")},
		"mute\nmute\nMute.":                {Commands: cmds("mute")},
		"help me":                          {Unknown: 1},
		"wrong":                            {Unknown: 1},
		"wrong 0":                          {Unknown: 1},
		"wrong three":                      {Unknown: 1},
		"wrong 1000":                       {Unknown: 1},
		"unsubscribe please":               {Unknown: 1},
		"\n\n  \nunsubscribe\n\n":          {Commands: cmds("unsubscribe")},
		"wrong 1\n> useful 2":              {Commands: cmds("wrong 1")},
		"wrong 1\n-- \nuseful 2":           {Commands: cmds("wrong 1")},
		"wrong 1 2 3 4 5 6 7 8 9 10 11 12": {Commands: cmds("wrong 1 2 3 4 5 6 7 8 9 10"), Ignored: 2},
		"On Tue, Dec 1, 2026 at 10:30 AM Criticizer <\nreply+x@r.example.org> wrote:\nwrong 1": {},
		"From: Criticizer\nSent: Tuesday\nwrong 1":                                             {},
		"From: my phone, wrong 2":                                                              {Unknown: 1},
		"On second thought\nwrong 2":                                                           {Commands: cmds("wrong 2"), Unknown: 1},
	} {
		if got := Parse(text); !reflect.DeepEqual(got, want) {
			t.Errorf("Parse(%q) = %+v, want %+v", text, got, want)
		}
	}
}

// FuzzParse: whatever a reply's text holds, Parse never panics, acts on
// at most MaxCommands commands, each of the vocabulary with a finding
// number exactly for wrong and useful, within bounds, no two alike.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"wrong 1\nuseful 2", "mute", "Wrong #3, 4 and 5.", "help\n> wrong 1", "-- \nwrong 1",
		"On Tue, Dec 1 Criticizer <\nx@y> wrote:\nwrong 1", strings.Repeat("wrong 1 2 3\n", 20)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		p := Parse(text)
		if len(p.Commands) > MaxCommands || p.Ignored < 0 || p.Unknown < 0 || p.Unknown > maxLines {
			t.Fatalf("bounds: %+v", p)
		}
		seen := map[Command]bool{}
		for _, c := range p.Commands {
			if seen[c] {
				t.Fatalf("%v twice", c)
			}
			seen[c] = true
			switch c.Verb {
			case Wrong, Useful:
				if c.Finding < 1 || c.Finding > maxFinding {
					t.Fatalf("%v: finding out of range", c)
				}
			case Mute, Unsubscribe, Help:
				if c.Finding != 0 {
					t.Fatalf("%v carries a number", c)
				}
			default:
				t.Fatalf("%v: not a verb of the vocabulary", c)
			}
		}
	})
}

// FuzzReadMessage: whatever bytes SES stored as a reply, reading its
// header and text never panics, the text is valid UTF-8, and its
// commands are within bounds. Seeds: the
// mail clients' replies under testdata/replies.
func FuzzReadMessage(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "replies", "*.eml"))
	for _, p := range files {
		raw, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if len(raw) > MaxRawBytes {
			return
		}
		_, text, err := ReadMessage(raw)
		if err != nil {
			return
		}
		if !utf8.ValidString(text) {
			t.Fatalf("text is not UTF-8: %q", text)
		}
		if p := Parse(text); len(p.Commands) > MaxCommands {
			t.Fatalf("%d commands", len(p.Commands))
		}
	})
}
