package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/mail"
	"strings"

	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/retry"
	"github.com/criticizer/criticizer/internal/safehttp"
	"github.com/criticizer/criticizer/internal/source"
	"github.com/criticizer/criticizer/internal/store"
)

// Fetch is the fetch stage: it makes sure the changelist's diff is in the
// blob store and records where.
//
// For a job from a code review system (GitHub, GitLab, Gerrit) it also
// finds the recipients: it asks the system (Source) for the diff and the
// requested reviewers, adds the reviewers the webhook named, resolves each
// reviewer's address with the Directory, and records the addresses
// (recipients) and the reviewers left without one (no_email_reviewers) in
// the same write that advances the job, so a retried or duplicated fetch
// can never change who is mailed once the job has moved on.
type Fetch struct {
	Base
	HTTP *http.Client
	// Source fetches changelists from code review systems (a
	// source.Router); nil when none is configured.
	Source source.Fetcher
	// Directory resolves usernames to addresses; nil resolves none.
	Directory source.Directory
}

// reviewSystems are the sources whose jobs carry a store.SourceRef rather
// than a diff and recipients.
var reviewSystems = map[string]bool{"github": true, "gitlab": true, "gerrit": true}

// Handle runs the fetch stage for one message.
func (f *Fetch) Handle(ctx context.Context, m job.Message, attempt int) error {
	j, ok, err := f.begin(ctx, m, job.StageFetch)
	if err != nil || !ok {
		return err
	}
	if reviewSystems[j.Source] {
		set, err := f.fromSource(ctx, j)
		if err != nil {
			return err
		}
		return f.finish(ctx, j, job.StageFetch, attempt, set)
	}
	set := map[string]any{}
	if j.DiffRef == "" {
		if j.DiffURL == "" {
			return retry.Permanent(retry.SchemaInvalid, fmt.Errorf("job %s has neither a diff nor a diff_url", j.ID))
		}
		body, err := f.download(ctx, j.DiffURL)
		if err != nil {
			return err
		}
		ref, sha, err := f.Blobs.Put(ctx, "diffs", body)
		if err != nil {
			return err
		}
		set["diff_ref"], set["diff_sha256"] = ref, sha
	}
	return f.finish(ctx, j, job.StageFetch, attempt, set)
}

// fromSource fetches a code review system's changelist: the diff into the
// blob store, the reviewers resolved to addresses. It returns the job
// attributes to set.
func (f *Fetch) fromSource(ctx context.Context, j job.Job) (map[string]any, error) {
	ref, err := f.Jobs.GetSourceRef(ctx, j.ID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, retry.Permanent(retry.NotFound, err)
	}
	if err != nil {
		return nil, err
	}
	if f.Source == nil {
		return nil, retry.Permanent(retry.RuntimeBug, fmt.Errorf("job %s: no fetcher is configured for source %q", j.ID, j.Source))
	}
	cl, err := f.Source.Fetch(ctx, source.Ref{Source: ref.Source, Repo: ref.Repo, Number: ref.Number, HeadSHA: ref.HeadSHA, Patchset: ref.Patchset})
	if err != nil {
		return nil, err
	}
	// The system's current reviewers first, then any the webhook named
	// that it no longer lists (GitHub forgets a requested reviewer once
	// they have reviewed).
	reviewers := append([]source.Reviewer(nil), cl.Reviewers...)
	known := map[string]bool{}
	for _, r := range reviewers {
		known[strings.ToLower(r.Username)] = true
	}
	for _, u := range ref.Reviewers {
		if u != "" && !known[strings.ToLower(u)] {
			known[strings.ToLower(u)] = true
			reviewers = append(reviewers, source.Reviewer{Username: u})
		}
	}
	resolved, err := source.ResolveReviewers(ctx, f.Directory, j.Source, reviewers)
	if err != nil {
		return nil, retry.Transient(retry.Upstream5xx, err)
	}
	recipients, noEmail := splitReviewers(j.Source, resolved)
	if cl.Truncated {
		f.Log.InfoContext(ctx, "diff truncated at the size limit", "job_id", j.ID)
	}
	if len(recipients) == 0 {
		f.Log.WarnContext(ctx, "no reviewer of the change has an address; nobody will be mailed", "job_id", j.ID, "reviewers", len(resolved))
	}
	diffRef, diffSHA, err := f.Blobs.Put(ctx, "diffs", []byte(cl.Diff))
	if err != nil {
		return nil, err
	}
	return map[string]any{
		"diff_ref": diffRef, "diff_sha256": diffSHA, store.AttrDiffTruncated: cl.Truncated,
		store.AttrRecipients: recipients, store.AttrNoEmailReviewers: noEmail,
	}, nil
}

// splitReviewers separates the reviewers with a usable address (the
// recipients, normalized and de-duplicated) from those without one, who are
// named by a stable "<source>:<username>" identity: the key of their
// skipped_no_email delivery row. An address the source disclosed that is
// not a bare address is treated as none: never guessed at or repaired.
func splitReviewers(src string, rs []source.Reviewer) (recipients, noEmail []string) {
	recipients, noEmail = []string{}, []string{}
	seen := map[string]bool{}
	for _, r := range rs {
		if addr := delivery.NormalizeRecipient(r.Email); addr != "" && bareAddress(addr) {
			if !seen[addr] {
				seen[addr] = true
				recipients = append(recipients, addr)
			}
			continue
		}
		if strings.TrimSpace(r.Username) == "" {
			continue // no address and no name: nobody to record
		}
		id := src + ":" + strings.TrimSpace(r.Username)
		if k := delivery.NormalizeRecipient(id); !seen[k] {
			seen[k] = true
			noEmail = append(noEmail, id)
		}
	}
	return recipients, noEmail
}

// bareAddress reports whether a is a plain address such as
// reviewer@example.com (no display name, a dotted domain).
func bareAddress(a string) bool {
	p, err := mail.ParseAddress(a)
	if err != nil || p.Name != "" || p.Address != a {
		return false
	}
	at := strings.LastIndexByte(a, '@')
	return at > 0 && strings.Contains(a[at+1:], ".")
}

// download GETs a diff_url with a size limit; HTTP failures carry their
// status and Retry-After for classification (R-STAGE-1).
func (f *Fetch) download(ctx context.Context, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, retry.Permanent(retry.SchemaInvalid, fmt.Errorf("diff_url: %w", err))
	}
	req.Header.Set("Accept", "text/x-diff, text/plain, */*")
	resp, err := f.HTTP.Do(req)
	if errors.Is(err, safehttp.ErrForbidden) {
		// An address or port the policy refuses (safehttp): the URL will
		// not change on retry.
		return nil, retry.Permanent(retry.PolicyRejected, fmt.Errorf("get diff_url: %w (private addresses need %s)", err, "CRITICIZER_ALLOW_PRIVATE_DIFF_URLS"))
	}
	if err != nil {
		return nil, fmt.Errorf("get diff_url: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, &retry.HTTPStatusError{Status: resp.StatusCode, RetryAfter: resp.Header.Get("Retry-After"), Op: "fetch.diff_url"}
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxDiffBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read diff_url: %w", err)
	}
	if len(body) > MaxDiffBytes {
		return nil, retry.Permanent(retry.SchemaInvalid, fmt.Errorf("diff at diff_url is larger than %d bytes", MaxDiffBytes))
	}
	return body, nil
}
