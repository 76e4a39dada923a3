package codehost

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/criticizer/criticizer/internal/channel"
	"github.com/criticizer/criticizer/internal/critic"
	"github.com/criticizer/criticizer/internal/retry"
	"github.com/criticizer/criticizer/internal/source"
)

// MaxAnnotationsPerRequest is how many annotations the Checks API takes
// in one create or update; more go in follow-up updates, which GitHub
// appends.
const MaxAnnotationsPerRequest = 50

// maxCheckRunPages bounds the lookup of a head commit's check runs (100 a
// page).
const maxCheckRunPages = 10

// GitHubCheck is the "github-check" channel: one check run named
// Criticizer per version on its head commit, found by its external_id
// (Post.VersionKey) (R-CHANNEL-10). Started creates it in_progress;
// Finished completes it (the Started receipt's id, else the one its
// external_id finds, else a new one created completed) with a
// conclusion that is never red unless the operator opts in
// (R-CHANNEL-11), a bounded summary whose model text is escaped
// (R-CHANNEL-12, R-CHANNEL-13), and annotations at the findings' lines,
// 50 a request: the rest in follow-up updates, resumed from the check
// run's annotations_count after a lost answer so none is posted twice
// (R-CHANNEL-14).
//
// Only a GitHub App may create check runs: API's client must carry the
// App's installation tokens (source.GitHubAppTransport).
type GitHubCheck struct {
	API *source.GitHub
	Options
}

var _ channel.Channel = (*GitHubCheck)(nil)

// Name implements channel.Channel.
func (*GitHubCheck) Name() string { return GitHubCheckName }

// checkRun is what the Checks API answers of a check run.
type checkRun struct {
	ID         int64  `json:"id"`
	Name       string `json:"name"`
	HeadSHA    string `json:"head_sha"`
	ExternalID string `json:"external_id"`
	Status     string `json:"status"`
	Conclusion string `json:"conclusion"`
	Output     struct {
		AnnotationsCount int `json:"annotations_count"`
	} `json:"output"`
}

// Annotation is one Checks API annotation.
type Annotation struct {
	Path            string `json:"path"`
	StartLine       int    `json:"start_line"`
	EndLine         int    `json:"end_line"`
	AnnotationLevel string `json:"annotation_level"`
	Message         string `json:"message"`
	Title           string `json:"title,omitempty"`
}

type checkOutput struct {
	Title       string       `json:"title"`
	Summary     string       `json:"summary"`
	Annotations []Annotation `json:"annotations,omitempty"`
}

// Annotations are p's findings as annotations, in the findings' order:
// a whole-file finding at the file's first line, the level by severity
// (error: failure, warning: warning, info: notice), the message as plain
// text (GitHub shows it so), defanged and bounded.
func Annotations(p channel.Post) []Annotation {
	if p.Phase != channel.Finished || p.Outcome != channel.Reviewed {
		return nil
	}
	out := make([]Annotation, 0, len(p.Findings))
	for _, f := range p.Findings {
		if f.File == "" {
			continue
		}
		line := max(f.Line, 1)
		level := "notice"
		switch f.Severity {
		case critic.SeverityError:
			level = "failure"
		case critic.SeverityWarning:
			level = "warning"
		}
		msg, _ := oneLineKeep(f.Message, MaxAnnotationRunes)
		title, _ := Plain(f.Rule, 200)
		out = append(out, Annotation{Path: f.File, StartLine: line, EndLine: line, AnnotationLevel: level,
			Message: defang(msg), Title: title})
	}
	return out
}

// oneLineKeep bounds a message to n runes, dropping format characters
// but keeping its line breaks (an annotation shows them as text).
func oneLineKeep(s string, n int) (string, bool) {
	var b []rune
	cut := false
	for _, r := range s {
		if len(b) >= n {
			cut = true
			break
		}
		if r == '\n' || r >= ' ' && r != 0x7f && !isFormat(r) {
			b = append(b, r)
		}
	}
	out := string(b)
	if out == "" {
		out = "(no message)"
	}
	return out, cut
}

// conclusion is a completed check run's conclusion (R-CHANNEL-11):
// success without findings, neutral with them (failure only with the
// opt-in and an error-severity finding), skipped for a version
// superseded or skipped, neutral for one Criticizer could not review.
func (g *GitHubCheck) conclusion(p channel.Post) string {
	switch p.Outcome {
	case channel.Superseded, channel.Skipped:
		return "skipped"
	case channel.NotReviewed:
		return "neutral"
	}
	switch {
	case g.failing(p):
		return "failure"
	case total(p.Counts) > 0:
		return "neutral"
	}
	return "success"
}

// Find implements channel.Channel: for Started, a check run with the
// version's external_id on its head commit; for Finished, one that is
// completed and holds every annotation.
func (g *GitHubCheck) Find(ctx context.Context, p channel.Post) (channel.Receipt, bool, error) {
	if err := applicable(p, "github"); err != nil {
		return channel.Receipt{}, false, nil
	}
	run, ok, err := g.lookup(ctx, p)
	if err != nil || !ok {
		return channel.Receipt{}, false, err
	}
	r := channel.Receipt{Ref: strconv.FormatInt(run.ID, 10)}
	if p.Phase == channel.Started {
		return r, true, nil
	}
	return r, run.Status == "completed" && run.Output.AnnotationsCount >= len(Annotations(p)), nil
}

// lookup finds the check run named Criticizer with p's external_id on
// p's head commit.
func (g *GitHubCheck) lookup(ctx context.Context, p channel.Post) (checkRun, bool, error) {
	const op = "github.ListCheckRunsForRef"
	repo, err := githubRepo(p.Repository)
	if err != nil {
		return checkRun{}, false, err
	}
	for page := 1; page <= maxCheckRunPages; page++ {
		var body struct {
			TotalCount int        `json:"total_count"`
			CheckRuns  []checkRun `json:"check_runs"`
		}
		path := repo + "/commits/" + url.PathEscape(p.Head) + "/check-runs?check_name=" + url.QueryEscape(CheckName) +
			"&filter=all&per_page=100&page=" + strconv.Itoa(page)
		if err := g.API.Call(ctx, op, http.MethodGet, path, nil, &body); err != nil {
			return checkRun{}, false, err
		}
		for _, r := range body.CheckRuns {
			if r.ExternalID == p.VersionKey && r.Name == CheckName {
				return r, true, nil
			}
		}
		if len(body.CheckRuns) < 100 {
			break
		}
	}
	return checkRun{}, false, nil
}

// get reads check run id; ok is false when GitHub holds none (404).
func (g *GitHubCheck) get(ctx context.Context, repo, id string) (checkRun, bool, error) {
	var r checkRun
	err := g.API.Call(ctx, "github.GetCheckRun", http.MethodGet, repo+"/check-runs/"+url.PathEscape(id), nil, &r)
	if statusOf(err) == http.StatusNotFound {
		return checkRun{}, false, nil
	}
	return r, err == nil, err
}

// Send implements channel.Channel.
func (g *GitHubCheck) Send(ctx context.Context, p channel.Post, prior channel.Receipt) (channel.Receipt, error) {
	if err := applicable(p, "github"); err != nil {
		return channel.Receipt{}, err
	}
	if p.StatusOff && p.Phase == channel.Started {
		return channel.Receipt{}, channel.ErrNotApplicable
	}
	repo, err := githubRepo(p.Repository)
	if err != nil {
		return channel.Receipt{}, err
	}
	// The repository turned its status off: a run already in progress
	// (its Started post came first) is still completed, never left so.
	// A check run this version already has is never created again,
	// whichever phase made it (a Started after its Finished included).
	run, found, err := g.existing(ctx, p, repo, prior)
	if err != nil {
		return channel.Receipt{}, err
	}
	if p.Phase == channel.Started {
		if found {
			return channel.Receipt{Ref: strconv.FormatInt(run.ID, 10)}, nil
		}
		return g.create(ctx, p, repo, "in_progress", nil)
	}
	if !found && p.StatusOff {
		return channel.Receipt{}, channel.ErrNotApplicable
	}
	ann := Annotations(p)
	if !found {
		first := ann[:min(len(ann), MaxAnnotationsPerRequest)]
		r, err := g.create(ctx, p, repo, "completed", first)
		if err != nil {
			return channel.Receipt{}, err
		}
		return r, g.annotate(ctx, p, repo, r.Ref, ann[len(first):])
	}
	// Resume where an earlier attempt whose answer was lost stopped:
	// GitHub appends annotations, so those it holds are not sent again.
	done := min(run.Output.AnnotationsCount, len(ann))
	id := strconv.FormatInt(run.ID, 10)
	return channel.Receipt{Ref: id}, g.complete(ctx, p, repo, id, ann[done:])
}

// existing is the check run p's version has: the one prior names, else
// the one its external_id finds.
func (g *GitHubCheck) existing(ctx context.Context, p channel.Post, repo string, prior channel.Receipt) (checkRun, bool, error) {
	if prior.Ref != "" {
		r, ok, err := g.get(ctx, repo, prior.Ref)
		if err != nil || ok {
			return r, ok, err
		}
	}
	return g.lookup(ctx, p)
}

// create makes the version's check run, in_progress or completed with
// its first annotations.
func (g *GitHubCheck) create(ctx context.Context, p channel.Post, repo, status string, ann []Annotation) (channel.Receipt, error) {
	const op = "github.CreateCheckRun"
	now := g.now().UTC().Format(time.RFC3339)
	title, sum, cut := g.output(ctx, p)
	body := map[string]any{"name": CheckName, "head_sha": p.Head, "external_id": p.VersionKey, "status": status,
		"started_at": now, "output": checkOutput{Title: title, Summary: sum, Annotations: ann}}
	if u := jobURL(p.JobURL); u != "" {
		body["details_url"] = u
	}
	if status == "completed" {
		body["conclusion"], body["completed_at"] = g.conclusion(p), now
	}
	var r checkRun
	if err := g.API.Call(ctx, op, http.MethodPost, repo+"/check-runs", body, &r); err != nil {
		return channel.Receipt{}, err
	}
	if r.ID == 0 {
		return channel.Receipt{}, retry.Transient(retry.Upstream5xx, fmt.Errorf("%s: the answer names no check run", op))
	}
	g.metric(ctx, GitHubCheckName, map[string]float64{"AnnotationsPosted": float64(len(ann)), "TextCut": float64(cut)})
	return channel.Receipt{Ref: strconv.FormatInt(r.ID, 10)}, nil
}

// complete moves check run id to completed with p's outcome and its
// first annotations, then sends the rest.
func (g *GitHubCheck) complete(ctx context.Context, p channel.Post, repo, id string, ann []Annotation) error {
	const op = "github.UpdateCheckRun"
	title, sum, cut := g.output(ctx, p)
	first := ann[:min(len(ann), MaxAnnotationsPerRequest)]
	body := map[string]any{"status": "completed", "conclusion": g.conclusion(p),
		"completed_at": g.now().UTC().Format(time.RFC3339), "output": checkOutput{Title: title, Summary: sum, Annotations: first}}
	if u := jobURL(p.JobURL); u != "" {
		body["details_url"] = u
	}
	if err := g.API.Call(ctx, op, http.MethodPatch, repo+"/check-runs/"+url.PathEscape(id), body, nil); err != nil {
		return err
	}
	g.metric(ctx, GitHubCheckName, map[string]float64{"AnnotationsPosted": float64(len(first)), "TextCut": float64(cut)})
	return g.annotate(ctx, p, repo, id, ann[len(first):])
}

// annotate sends ann to check run id in updates of at most 50.
func (g *GitHubCheck) annotate(ctx context.Context, p channel.Post, repo, id string, ann []Annotation) error {
	const op = "github.UpdateCheckRun"
	title, sum := headline(p), ""
	for len(ann) > 0 {
		n := min(len(ann), MaxAnnotationsPerRequest)
		if sum == "" {
			_, sum, _ = g.output(ctx, p)
		}
		body := map[string]any{"output": checkOutput{Title: title, Summary: sum, Annotations: ann[:n]}}
		if err := g.API.Call(ctx, op, http.MethodPatch, repo+"/check-runs/"+url.PathEscape(id), body, nil); err != nil {
			return err
		}
		g.metric(ctx, GitHubCheckName, map[string]float64{"AnnotationsPosted": float64(n)})
		ann = ann[n:]
	}
	return nil
}

// output is the check run's title and summary for p, and how much of
// it was cut.
func (g *GitHubCheck) output(_ context.Context, p channel.Post) (string, string, int) {
	s, cut := summary(p, MaxSummaryBytes)
	return headline(p), s, cut
}
