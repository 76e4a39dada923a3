package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/pkoukk/tiktoken-go"
	tiktokenloader "github.com/pkoukk/tiktoken-go-loader"

	"github.com/criticizer/criticizer/internal/cost"
	"github.com/criticizer/criticizer/internal/critic"
	"github.com/criticizer/criticizer/internal/critic/critictest"
	"github.com/criticizer/criticizer/internal/critic/eval"
	"github.com/criticizer/criticizer/internal/critic/openai"
)

// tokenCount is one review's model tokens.
type tokenCount struct {
	Change        string
	Input, Output int // as the critic recorded them (Critique.Usage)
	OutputCap     int // the output limit the critic asked for
}

// rerunTokens is the rerun sequence of R-COST-3: a 20-file change pushed
// 5 times, 2 files changed per push, reviewed by the llm stage's critic
// (critic.Incremental around the LLM critic) and, for comparison, each
// version's diff reviewed in full.
type rerunTokens struct {
	Versions                int
	Files, ChangedPerPush   int
	FirstInput, FirstOutput int // version 1, a full review
	// Per rerun (versions 2..n), the mean: the incremental review's tokens
	// and the files it sent, and a full re-review's input tokens.
	RerunInput, RerunOutput float64
	FullInput               float64
	FilesSent               float64
}

// benchFile is one file of the rerun sequence's change: a handler, edited
// by a push (rev).
func benchFile(n, rev int) string {
	id := fmt.Sprintf("%02d", n)
	lines := []string{"package svc", "", "import (", "\t\"context\"", "\t\"fmt\"", ")", "",
		"// Handler" + id + " prices an order of kind " + id + ".",
		"func Handler" + id + "(ctx context.Context, in Order" + id + ") (Price" + id + ", error) {",
		"\tif err := in.Validate(); err != nil {",
		"\t\treturn Price" + id + "{}, fmt.Errorf(\"handler" + id + ": %w\", err)",
		"\t}",
		"\trate, err := rates.Lookup(ctx, in.Currency)",
		"\tif err != nil {",
		"\t\treturn Price" + id + "{}, fmt.Errorf(\"handler" + id + ": rate: %w\", err)",
		"\t}",
		"\ttotal := in.Cents * int64(in.Quantity)",
		fmt.Sprintf("\t// revision %d", rev),
		"\treturn Price" + id + "{Cents: total * rate.Num / rate.Den, Currency: in.Currency}, nil",
		"}"}
	path := fmt.Sprintf("svc/handler%02d.go", n)
	var b strings.Builder
	fmt.Fprintf(&b, "diff --git a/%s b/%s\nnew file mode 100644\n--- /dev/null\n+++ b/%s\n@@ -0,0 +1,%d @@\n", path, path, path, len(lines))
	for _, l := range lines {
		b.WriteString("+" + l + "\n")
	}
	return b.String()
}

// contextTokens is the same kind of sequence for the code around the
// hunks (R-CONTEXT-1): a change that edits one line deep in a function of
// each of its files, reviewed with the hunks alone (as before the
// context) and with the files as the head has them.
type contextTokens struct {
	Versions, Files int
	// Full reviews (version 1) and reruns (the mean of versions 2..n),
	// input tokens, without and with the context.
	FullBefore, FullAfter   int
	RerunBefore, RerunAfter float64
	// LinesShown is the context lines version 1 showed the model.
	LinesShown int
}

// benchModified is file n of the context sequence at revision rev: a
// handler of 40 lines whose line 24, deep in the function, each push
// edits. It returns the diff against the file at rev 0 and the file.
func benchModified(n, rev int) (string, string) {
	id := fmt.Sprintf("%02d", n)
	file := func(r int) []string {
		lines := []string{"package svc", "", "import (", "\t\"context\"", "\t\"fmt\"", ")", "",
			"// Handler" + id + " prices an order of kind " + id + ".",
			"func Handler" + id + "(ctx context.Context, in Order" + id + ") (Price" + id + ", error) {",
			"\tif err := in.Validate(); err != nil {",
			"\t\treturn Price" + id + "{}, fmt.Errorf(\"handler" + id + ": %w\", err)",
			"\t}",
			"\trate, err := rates.Lookup(ctx, in.Currency)",
			"\tif err != nil {",
			"\t\treturn Price" + id + "{}, fmt.Errorf(\"handler" + id + ": rate: %w\", err)",
			"\t}",
			"\tdiscount, err := discounts.For(ctx, in.Customer)",
			"\tif err != nil {",
			"\t\treturn Price" + id + "{}, fmt.Errorf(\"handler" + id + ": discount: %w\", err)",
			"\t}",
			"\ttotal := in.Cents * int64(in.Quantity)",
			"\tif in.Quantity > 100 {",
			"\t\ttotal -= total / 20",
			fmt.Sprintf("\ttotal -= discount.Cents // revision %d", r),
			"\t}",
			"\tif total < 0 {",
			"\t\ttotal = 0",
			"\t}",
			"\ttax := taxes.Rate(in.Country)",
			"\ttotal += total * tax.Num / tax.Den",
			"\tlog.Printf(\"handler" + id + ": %d\", total)",
			"\treturn Price" + id + "{Cents: total * rate.Num / rate.Den, Currency: in.Currency}, nil",
			"}"}
		return lines
	}
	old, cur := file(0), file(rev)
	path := fmt.Sprintf("svc/handler%02d.go", n)
	var b strings.Builder
	fmt.Fprintf(&b, "diff --git a/%s b/%s\nindex 1111111..2222222 100644\n--- a/%s\n+++ b/%s\n@@ -21,7 +21,7 @@\n", path, path, path, path)
	for i := 21; i <= 27; i++ {
		if i == 24 {
			b.WriteString("-" + old[i-1] + "\n+" + cur[i-1] + "\n")
			continue
		}
		b.WriteString(" " + cur[i-1] + "\n")
	}
	return b.String(), strings.Join(cur, "\n") + "\n"
}

// runContextSequence pushes a change of files files versions times, one
// file edited again per push (rev 1 for every file at version 1), through
// the incremental critic, once with the hunks alone and once with the
// head's files.
func runContextSequence(ctx context.Context, llm critic.Critic, files, versions int) (contextTokens, error) {
	ct := contextTokens{Versions: versions, Files: files}
	for _, withHead := range []bool{false, true} {
		inc := critic.NewIncremental(llm)
		rev := make([]int, files)
		for i := range rev {
			rev[i] = 1
		}
		var prev *critic.Previous
		rerun := 0.0
		for v := 1; v <= versions; v++ {
			if v > 1 {
				rev[(v-2)%files]++
			}
			var d strings.Builder
			head := critic.HeadFiles{}
			for n := range files {
				text, file := benchModified(n+1, rev[n])
				d.WriteString(text)
				head[fmt.Sprintf("svc/handler%02d.go", n+1)] = file
			}
			in := critic.Input{ChangelistID: "bench/context", ReviewVersion: v, Title: "Price orders", Author: "bench", Diff: d.String(), Previous: prev}
			if withHead {
				in.Head = head
			}
			c, err := inc.Review(ctx, in)
			if err != nil {
				return ct, fmt.Errorf("version %d: %w", v, err)
			}
			if c.Usage == nil {
				return ct, fmt.Errorf("version %d: no token usage", v)
			}
			switch {
			case v == 1 && withHead:
				ct.FullAfter = c.Usage.InputTokens
				if c.Context != nil {
					ct.LinesShown = c.Context.Lines
				}
			case v == 1:
				ct.FullBefore = c.Usage.InputTokens
			default:
				rerun += float64(c.Usage.InputTokens)
			}
			prev = &critic.Previous{Version: v, Critique: c}
		}
		if withHead {
			ct.RerunAfter = rerun / float64(versions-1)
		} else {
			ct.RerunBefore = rerun / float64(versions-1)
		}
	}
	return ct, nil
}

// runRerunSequence pushes the change versions times, changed files per
// push, through the incremental critic, and reviews each version's diff in
// full too, counting the tokens the stand-in bills.
func runRerunSequence(ctx context.Context, llm critic.Critic, stand *critictest.StandIn, files, versions, changed int) (rerunTokens, error) {
	rt := rerunTokens{Versions: versions, Files: files, ChangedPerPush: changed}
	inc := critic.NewIncremental(llm)
	rev := make([]int, files)
	var prev *critic.Previous
	sent := func() int {
		reqs := stand.Requests()
		if len(reqs) == 0 {
			return 0
		}
		return strings.Count(reqs[len(reqs)-1].User, "\nFile: ")
	}
	for v := 1; v <= versions; v++ {
		if v > 1 {
			for k := 0; k < changed; k++ {
				rev[((v-2)*changed+k)%files]++
			}
		}
		var d strings.Builder
		for n := range files {
			d.WriteString(benchFile(n+1, rev[n]))
		}
		in := critic.Input{ChangelistID: "bench/reruns", ReviewVersion: v, Title: "Price orders", Author: "bench", Diff: d.String(), Previous: prev}
		before := len(stand.Requests())
		c, err := inc.Review(ctx, in)
		if err != nil {
			return rt, fmt.Errorf("version %d: %w", v, err)
		}
		if c.Usage == nil {
			return rt, fmt.Errorf("version %d: no token usage", v)
		}
		if v == 1 {
			rt.FirstInput, rt.FirstOutput = c.Usage.InputTokens, c.Usage.OutputTokens
		} else {
			rt.RerunInput += float64(c.Usage.InputTokens)
			rt.RerunOutput += float64(c.Usage.OutputTokens)
			if len(stand.Requests()) > before {
				rt.FilesSent += float64(sent())
			}
			full := in
			full.Previous = nil
			fc, err := llm.Review(ctx, full)
			if err != nil {
				return rt, fmt.Errorf("version %d, full: %w", v, err)
			}
			rt.FullInput += float64(fc.Usage.InputTokens)
		}
		prev = &critic.Previous{Version: v, Critique: c}
	}
	n := float64(versions - 1)
	rt.RerunInput, rt.RerunOutput, rt.FullInput, rt.FilesSent = rt.RerunInput/n, rt.RerunOutput/n, rt.FullInput/n, rt.FilesSent/n
	return rt, nil
}

// o200k is the tokenizer of OpenAI's current models (gpt-4o, gpt-4.1,
// gpt-5), loaded from the pinned module, offline.
func o200k() (*tiktoken.Tiktoken, error) {
	tiktoken.SetBpeLoader(tiktokenloader.NewOfflineLoader())
	return tiktoken.GetEncoding("o200k_base")
}

// chatTokens counts a two-message chat request as OpenAI bills it: each
// message's content plus 3 tokens of framing, plus 3 priming the answer.
func chatTokens(enc *tiktoken.Tiktoken, system, user string) int {
	return len(enc.Encode(system, nil, nil)) + len(enc.Encode(user, nil, nil)) + 2*3 + 3
}

// runTokens reviews the bench's sample change and the eval cases with the
// LLM critic against the recording stand-in, which answers each request
// with its case's recorded answer and bills the tokens it counts; the
// critic keeps them with the critique, as the llm stage stores them.
func runTokens(ctx context.Context) ([]tokenCount, rerunTokens, contextTokens, error) {
	enc, err := o200k()
	if err != nil {
		return nil, rerunTokens{}, contextTokens{}, fmt.Errorf("tokenizer: %w", err)
	}
	cases, err := eval.Cases()
	if err != nil {
		return nil, rerunTokens{}, contextTokens{}, err
	}
	type change struct {
		name   string
		in     critic.Input
		answer string
	}
	var changes []change
	b, err := os.ReadFile("events/generic-webhook.json")
	if err != nil {
		return nil, rerunTokens{}, contextTokens{}, fmt.Errorf("run from the repository root: %w", err)
	}
	var sample struct {
		ChangelistID, Title, Author, URL, Diff string
	}
	if err := json.Unmarshal(b, &sample); err != nil {
		return nil, rerunTokens{}, contextTokens{}, err
	}
	changes = append(changes, change{"bench sample (events/generic-webhook.json)", critic.Input{ChangelistID: "bench/sample", ReviewVersion: 1,
		Title: sample.Title, Author: sample.Author, URL: sample.URL, Diff: sample.Diff}, critictest.SampleReview})
	changes = append(changes, change{"critictest.SampleDiff", critictest.SampleInput(), critictest.SampleReview})
	for _, c := range cases {
		changes = append(changes, change{"eval: " + c.Name, critic.Input{ChangelistID: "eval/" + c.Name, ReviewVersion: 1, Title: c.Name,
			Author: "eval", Diff: c.Diff()}, c.StandIn})
	}
	stand := critictest.NewStandIn()
	defer stand.Close()
	var answer string
	stand.Reply = func(r critictest.Request) (int, []byte) {
		return http.StatusOK, critictest.Completion(answer, "stop", chatTokens(enc, r.System, r.User), len(enc.Encode(answer, nil, nil)))
	}
	model, err := openai.New(openai.Config{BaseURL: stand.URL, Model: "gpt-4.1"})
	if err != nil {
		return nil, rerunTokens{}, contextTokens{}, err
	}
	llm, err := critic.NewLLM(model)
	if err != nil {
		return nil, rerunTokens{}, contextTokens{}, err
	}
	review := func(in critic.Input) (critic.Usage, int, error) {
		crit, err := llm.Review(ctx, in)
		if err != nil {
			return critic.Usage{}, 0, err
		}
		if crit.Usage == nil {
			return critic.Usage{}, 0, fmt.Errorf("%s: the critique carries no token usage", in.ChangelistID)
		}
		reqs := stand.Requests()
		limit := 0
		if len(reqs) > 0 {
			for _, k := range []string{"max_tokens", "max_completion_tokens"} {
				if v, ok := reqs[len(reqs)-1].Body[k].(float64); ok {
					limit = int(v)
				}
			}
		}
		return *crit.Usage, limit, nil
	}
	var out []tokenCount
	for _, c := range changes {
		answer = c.answer
		u, limit, err := review(c.in)
		if err != nil {
			return nil, rerunTokens{}, contextTokens{}, fmt.Errorf("%s: %w", c.name, err)
		}
		out = append(out, tokenCount{Change: c.name, Input: u.InputTokens, Output: u.OutputTokens, OutputCap: limit})
	}
	answer = `{"summary":"No problem found in the handlers.","findings":[]}`
	rt, err := runRerunSequence(ctx, llm, stand, 20, 5, 2)
	if err != nil {
		return nil, rerunTokens{}, contextTokens{}, fmt.Errorf("rerun sequence: %w", err)
	}
	ct, err := runContextSequence(ctx, llm, 20, 5)
	if err != nil {
		return nil, rerunTokens{}, contextTokens{}, fmt.Errorf("context sequence: %w", err)
	}
	return out, rt, ct, nil
}

// printTokens prints section 7c: tokens per review and per rerun, and
// what they cost at each model's list price.
func printTokens(w io.Writer, tcs []tokenCount, rt rerunTokens, ct contextTokens) {
	fmt.Fprintf(w, "\n7c. Model tokens per review and per rerun, LLM critic (prompt counted with o200k_base, the tokenizer of gpt-4o/4.1/5, through the recording\n")
	fmt.Fprintf(w, "    stand-in; output: the stand-in's recorded answer, and the cap the critic asks for)\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	line := func(cells ...string) { fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t") }
	line("change", "input", "output", "output cap", "")
	var in, outT, capT float64
	for _, t := range tcs {
		line(t.Change, fmt.Sprint(t.Input), fmt.Sprint(t.Output), fmt.Sprint(t.OutputCap), "")
		in += float64(t.Input)
		outT += float64(t.Output)
		capT += float64(t.OutputCap)
	}
	n := float64(len(tcs))
	in, outT, capT = in/n, outT/n, capT/n
	line("mean", fmt.Sprintf("%.0f", in), fmt.Sprintf("%.0f", outT), fmt.Sprintf("%.0f", capT), "")
	tw.Flush()
	ratio := 0.0
	if rt.FullInput > 0 {
		ratio = rt.RerunInput / rt.FullInput
	}
	fmt.Fprintf(w, "   Reruns (critic.Incremental, R-COST-3): a %d-file change pushed %d times, %d files changed per push. Version 1: %d input tokens.\n",
		rt.Files, rt.Versions, rt.ChangedPerPush, rt.FirstInput)
	fmt.Fprintf(w, "   Per rerun: %.1f files sent, %.0f input tokens; a full re-review of the same diff: %.0f. Rerun / full = %.2f (goal <= 0.30)\n",
		rt.FilesSent, rt.RerunInput, rt.FullInput, ratio)
	if ct.FullBefore > 0 && ct.FullAfter > 0 {
		fmt.Fprintf(w, "   The code around the hunks (R-CONTEXT-1): a %d-file change editing one line deep in a function of each file, pushed %d times,\n", ct.Files, ct.Versions)
		fmt.Fprintf(w, "   one file per push. Full review: %d input tokens with the hunks alone, %d with their functions (%d context lines), x%.2f;\n",
			ct.FullBefore, ct.FullAfter, ct.LinesShown, float64(ct.FullAfter)/float64(ct.FullBefore))
		fmt.Fprintf(w, "   per rerun: %.0f and %.0f, x%.2f. Rerun / full review = %.2f before, %.2f with the context (goal <= 0.30)\n",
			ct.RerunBefore, ct.RerunAfter, ct.RerunAfter/ct.RerunBefore, ct.RerunBefore/float64(ct.FullBefore), ct.RerunAfter/float64(ct.FullAfter))
	}
	fmt.Fprintf(w, "   USD per 1,000 reviews at the mean (output as answered / at the cap), per 1,000 reruns of the sequence; list prices read %s:\n", cost.Models()[0].Input.Taken)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	line = func(cells ...string) { fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t") }
	line("model", "$/M in", "$/M out", "review", "review at cap", "rerun", "full re-review", "")
	for _, m := range cost.Models() {
		review := m.Input.Of(in) + m.Output.Of(outT)
		atCap := m.Input.Of(in) + m.Output.Of(capT)
		rerun := m.Input.Of(rt.RerunInput) + m.Output.Of(rt.RerunOutput)
		full := m.Input.Of(rt.FullInput) + m.Output.Of(rt.RerunOutput)
		line(m.Name, fmt.Sprintf("%.2f", m.Input.USD), fmt.Sprintf("%.2f", m.Output.USD), fmt.Sprintf("%.3f", 1000*review),
			fmt.Sprintf("%.3f", 1000*atCap), fmt.Sprintf("%.3f", 1000*rerun), fmt.Sprintf("%.3f", 1000*full), "")
	}
	tw.Flush()
	fmt.Fprintf(w, "   Claude counts tokens with its own tokenizer (not public offline): its figures here use the o200k count\n")
}
