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
	Change            string
	Input, Output     int // as the critic recorded them (Critique.Usage)
	OutputCap         int // the output limit the critic asked for
	RerunInput, Rerun int // a rerun of the same change (rerunInput)
}

// rerunInput is what the llm stage sends a model when a changelist is
// reviewed again at a new version, given the previous version's input.
// Today every rerun is a full re-review, so it is the new input whole.
//
// HOOK (incremental reruns): when the llm stage reviews only what changed
// since the previous version, build that input here, the way the stage
// does, and the "per rerun" figures of section 7 follow.
func rerunInput(prev, next critic.Input) critic.Input { return next }

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
func runTokens(ctx context.Context) ([]tokenCount, error) {
	enc, err := o200k()
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	cases, err := eval.Cases()
	if err != nil {
		return nil, err
	}
	type change struct {
		name   string
		in     critic.Input
		answer string
	}
	var changes []change
	b, err := os.ReadFile("events/generic-webhook.json")
	if err != nil {
		return nil, fmt.Errorf("run from the repository root: %w", err)
	}
	var sample struct {
		ChangelistID, Title, Author, URL, Diff string
	}
	if err := json.Unmarshal(b, &sample); err != nil {
		return nil, err
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
		return nil, err
	}
	llm, err := critic.NewLLM(model)
	if err != nil {
		return nil, err
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
			return nil, fmt.Errorf("%s: %w", c.name, err)
		}
		next := c.in
		next.ReviewVersion++
		ru, _, err := review(rerunInput(c.in, next))
		if err != nil {
			return nil, fmt.Errorf("%s rerun: %w", c.name, err)
		}
		out = append(out, tokenCount{Change: c.name, Input: u.InputTokens, Output: u.OutputTokens, OutputCap: limit,
			RerunInput: ru.InputTokens, Rerun: ru.OutputTokens})
	}
	return out, nil
}

// printTokens prints section 7c: tokens per review and per rerun, and
// what they cost at each model's list price.
func printTokens(w io.Writer, tcs []tokenCount) {
	fmt.Fprintf(w, "\n7c. Model tokens per review and per rerun, LLM critic (prompt counted with o200k_base, the tokenizer of gpt-4o/4.1/5, through the recording\n")
	fmt.Fprintf(w, "    stand-in; output: the stand-in's recorded answer, and the cap the critic asks for; reruns are full re-reviews today: rerunInput)\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	line := func(cells ...string) { fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t") }
	line("change", "input", "output", "output cap", "rerun input", "rerun output", "")
	var in, outT, capT, rin, rout float64
	for _, t := range tcs {
		line(t.Change, fmt.Sprint(t.Input), fmt.Sprint(t.Output), fmt.Sprint(t.OutputCap), fmt.Sprint(t.RerunInput), fmt.Sprint(t.Rerun), "")
		in += float64(t.Input)
		outT += float64(t.Output)
		capT += float64(t.OutputCap)
		rin += float64(t.RerunInput)
		rout += float64(t.Rerun)
	}
	n := float64(len(tcs))
	in, outT, capT, rin, rout = in/n, outT/n, capT/n, rin/n, rout/n
	line("mean", fmt.Sprintf("%.0f", in), fmt.Sprintf("%.0f", outT), fmt.Sprintf("%.0f", capT), fmt.Sprintf("%.0f", rin), fmt.Sprintf("%.0f", rout), "")
	tw.Flush()
	fmt.Fprintf(w, "   USD per 1,000 reviews at the mean (output as answered / at the cap), per 1,000 reruns; list prices read %s:\n", cost.Models()[0].Input.Taken)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	line = func(cells ...string) { fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t") }
	line("model", "$/M in", "$/M out", "review", "review at cap", "rerun", "")
	for _, m := range cost.Models() {
		review := m.Input.Of(in) + m.Output.Of(outT)
		atCap := m.Input.Of(in) + m.Output.Of(capT)
		rerun := m.Input.Of(rin) + m.Output.Of(rout)
		line(m.Name, fmt.Sprintf("%.2f", m.Input.USD), fmt.Sprintf("%.2f", m.Output.USD), fmt.Sprintf("%.3f", 1000*review),
			fmt.Sprintf("%.3f", 1000*atCap), fmt.Sprintf("%.3f", 1000*rerun), "")
	}
	tw.Flush()
	fmt.Fprintf(w, "   Claude counts tokens with its own tokenizer (not public offline): its figures here use the o200k count\n")
}
