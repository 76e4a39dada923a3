package pipeline

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/criticizer/criticizer/internal/critic"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/obs"
	"github.com/criticizer/criticizer/internal/retry"
	"github.com/criticizer/criticizer/internal/reviewers"
	"github.com/criticizer/criticizer/internal/safehttp"
	"github.com/criticizer/criticizer/internal/source"
	"github.com/criticizer/criticizer/internal/store"
)

// Fetch is the fetch stage: it makes sure the changelist's diff is in the
// blob store and records where.
//
// For a job from a code review system (GitHub, GitLab, Gerrit) it also
// decides who reviews the version (reviewers.Select, R-REVIEWERS-2): it
// asks the system for the diff, who is asked to review and who reviewed,
// merges what the changelist's roster says (removals), resolves each
// reviewer's address with the Directory, and records the addresses
// (recipients) and the reviewers left without one (no_email_reviewers) in
// the same write that advances the job, so a retried or duplicated fetch
// can never change who is mailed once the job has moved on.
//
// A message with job.TaskReviewers instead adds reviewers asked after
// that (R-REVIEWERS-1): see Fetch.refresh.
type Fetch struct {
	Base
	HTTP *http.Client
	// Source fetches changelists from code review systems (a
	// source.Router); nil when none is configured.
	Source source.Fetcher
	// Directory resolves usernames to addresses; nil resolves none.
	Directory reviewers.Directory
	// Rosters holds what reviewer webhooks said; nil: none.
	Rosters RosterReader
	// Unknown, if set, records the usernames no directory entry resolved,
	// for an operator to add (store.Directory.NoteUnknown).
	Unknown UnknownNoter
	// MaxTeamMembers caps the members of one requested team who are
	// mailed (R-REVIEWERS-6); 0 keeps everyone.
	MaxTeamMembers int
	// GeneratedPaths are the deployment's globs of generated files
	// (CRITICIZER_GENERATED_PATHS): files they match need no read of
	// their base (R-CRITIC-7).
	GeneratedPaths []string
	// ContextFileBytes caps a changed file read at the version's head
	// for the code around its hunks (R-CONTEXT-1, R-CONTEXT-2): a larger
	// one gets none; 0 reads none (the offline critic reads no context).
	ContextFileBytes int
	// Heads holds the changelists' head commits in their code host's
	// order (store.Heads): a head intake placed pending is settled here
	// before it is reviewed (R-SOURCE-6). nil settles none.
	Heads HeadOrders
}

// HeadOrders reads and settles head commits' places (store.Heads, part
// of store.Jobs). A role interface because Fetch.Heads is optional: a
// source whose heads intake never places pending has none to settle.
type HeadOrders interface {
	Head(ctx context.Context, source, changelistID, sha string) (store.HeadRecord, error)
	SettleHead(ctx context.Context, source, changelistID, sha string, order store.HeadOrder) (store.HeadRecord, error)
}

// RosterReader reads a changelist's roster (store.Rosters).
type RosterReader interface {
	Get(ctx context.Context, source, changelistID string) (reviewers.Roster, error)
}

// UnknownNoter records reviewers without an address (store.Directory).
type UnknownNoter interface {
	NoteUnknown(ctx context.Context, source string, usernames []string) error
}

// Handle runs the fetch stage for one message.
func (f *Fetch) Handle(ctx context.Context, m job.Message, attempt int) error {
	if m.Task == job.TaskReviewers {
		return f.refresh(ctx, m)
	}
	if m.Task != "" {
		return retry.Permanent(retry.SchemaInvalid, fmt.Errorf("fetch: unknown task %q", m.Task))
	}
	j, ok, err := f.begin(ctx, m, job.StageFetch)
	if err != nil || !ok {
		return err
	}
	if job.IsReviewSystem(j.Source) { // a store.SourceRef, not a diff and recipients
		w, err := f.fromSource(ctx, j)
		if err != nil {
			return err
		}
		return f.placed(ctx, j, attempt, w)
	}
	var w store.JobWrite
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
		w.Diff = &store.StoredDiff{Ref: ref, SHA256: sha}
	}
	return f.placed(ctx, j, attempt, w)
}

// sourceRef reads where a job's changelist lives.
func (f *Fetch) sourceRef(ctx context.Context, j job.Job) (source.Ref, error) {
	ref, _, err := f.sourceRefLabels(ctx, j)
	return ref, err
}

// sourceRefLabels reads where a job's changelist lives, and its labels.
func (f *Fetch) sourceRefLabels(ctx context.Context, j job.Job) (source.Ref, []string, error) {
	ref, err := f.Jobs.GetSourceRef(ctx, j.ID)
	if errors.Is(err, store.ErrNotFound) {
		return source.Ref{}, nil, retry.Permanent(retry.NotFound, err)
	}
	if err != nil {
		return source.Ref{}, nil, err
	}
	if f.Source == nil {
		return source.Ref{}, nil, retry.Permanent(retry.RuntimeBug, fmt.Errorf("job %s: no fetcher is configured for source %q", j.ID, j.Source))
	}
	return source.Ref{Source: ref.Source, Repo: ref.Repo, Number: ref.Number, HeadSHA: ref.HeadSHA, BaseSHA: ref.BaseSHA,
		Patchset: ref.Patchset}, ref.Labels, nil
}

// fromSource fetches a code review system's changelist: the diff into the
// blob store, the version's reviewers decided and resolved to addresses.
// It returns what the job keeps of it.
func (f *Fetch) fromSource(ctx context.Context, j job.Job) (store.JobWrite, error) {
	ref, labels, err := f.sourceRefLabels(ctx, j)
	if err != nil {
		return store.JobWrite{}, err
	}
	if behind, err := f.order(ctx, j, ref); err != nil || behind != "" {
		// A head the code host places behind a versioned one: skipped,
		// nobody mailed, nothing more asked of the host (R-SOURCE-6).
		return store.JobWrite{Skipped: behind, Reviewers: &store.FetchedReviewers{Recipients: []string{}, NoEmail: []string{}}}, err
	}
	cl, err := f.Source.Fetch(ctx, ref)
	if err != nil {
		return store.JobWrite{}, err
	}
	if ref.BaseSHA == "" && cl.BaseSHA != "" {
		// The commit of merged code the settings and the files' first
		// lines are read at, never the head nor an unmerged parent
		// (R-REPO-6): pinned on the version's source reference the first
		// time it is found, so that every later attempt reads the same
		// bytes (R-SOURCE-5).
		if ref.BaseSHA, err = f.Jobs.PinBase(ctx, j.ID, cl.BaseSHA); err != nil {
			return store.JobWrite{}, err
		}
	}
	rs, warnings, err := f.repoSettings(ctx, ref)
	if err != nil {
		return store.JobWrite{}, err
	}
	skip, w, err := f.applySettings(ctx, j, ref, cmp.Or(cl.Reviewers.Author, j.Author), labels, rs, warnings)
	if err != nil {
		return store.JobWrite{}, err
	}
	if skip != "" {
		return w, nil
	}
	recipients, noEmail, capped, err := f.decide(ctx, j, cl.Reviewers)
	if err != nil {
		return store.JobWrite{}, err
	}
	f.unknown(ctx, j, noEmail)
	if cl.Truncated {
		f.Log.InfoContext(ctx, "diff truncated at the size limit", "job_id", j.ID)
	}
	if len(recipients) == 0 {
		f.Log.WarnContext(ctx, "no reviewer of the change has an address; nobody will be mailed", "job_id", j.ID, "reviewers", len(noEmail))
	}
	diffRef, diffSHA, err := f.Blobs.Put(ctx, "diffs", []byte(cl.Diff))
	if err != nil {
		return store.JobWrite{}, err
	}
	w.Diff = &store.StoredDiff{Ref: diffRef, SHA256: diffSHA, Truncated: cl.Truncated}
	w.Reviewers = &store.FetchedReviewers{Recipients: recipients, NoEmail: noEmail}
	w.UnexpandedTeams = cl.Reviewers.UnexpandedTeams
	// The diff against an open change (a Gerrit stack): what it shows of
	// its base decides nothing generated (R-CRITIC-7).
	w.DiffBaseUnmerged = cl.BaseUnmerged
	// Every read of a file, at the base and then at the head, within one
	// source.FileRequestTimeout: the fetch message reserves one (R-STAGE-9).
	reads := time.Now().Add(source.FileRequestTimeout)
	gen := f.generatedAtBase(ctx, j, ref, cl.Diff, cl.BaseUnmerged, reads)
	w.GeneratedAtBase = gen
	// The code around the hunks, read at the head the event named: what
	// the change wrote, shown to the model, never cited (R-CONTEXT-1).
	ctxRef, err := f.headContext(ctx, j, ref, cl.Diff, critic.Generated{Paths: f.GeneratedPaths, AtBase: gen, BaseUnmerged: cl.BaseUnmerged}, reads)
	if err != nil {
		return store.JobWrite{}, err
	}
	w.ContextRef = ctxRef
	if a := cl.Reviewers.Author; a != "" && a != j.Author {
		// The system's own word on the author (GitLab: the merge
		// request's, where the hook named only whoever triggered it),
		// recorded before the prompt and the e-mails are written
		// (R-SOURCE-1).
		w.Author = a
	}
	w.TeamMembersNotMailed = capped
	return w, nil
}

// decide selects a version's reviewers from what the system says and the
// changelist's roster (reviewers.Select), and resolves their addresses:
// the recipients, and the identities of those without an address.
func (f *Fetch) decide(ctx context.Context, j job.Job, asked source.Reviewers) (recipients, noEmail []string, capped map[string]int, err error) {
	roster := reviewers.Roster{}
	if f.Rosters != nil {
		if roster, err = f.Rosters.Get(ctx, j.Source, j.ChangelistID); err != nil {
			return nil, nil, nil, err
		}
	}
	asked, capped = capTeams(asked, f.MaxTeamMembers)
	if len(capped) > 0 {
		n := 0
		for _, c := range capped {
			n += c
		}
		f.Log.WarnContext(ctx, "requested teams larger than the cap: their other members are not mailed", "job_id", j.ID, "not_mailed", n)
		obs.Metric(ctx, f.Log, map[string]string{"Source": j.Source}, map[string]float64{"TeamMembersNotMailed": float64(n)})
	}
	a := asked.Asked(j.Author)
	resolved, err := reviewers.Resolve(ctx, f.Directory, j.Source, reviewers.Select(a, roster))
	if err != nil {
		return nil, nil, nil, fmt.Errorf("job %s: %w", j.ID, err) // the store's error keeps its class
	}
	if resolved, err = f.onlyInvited(ctx, j, a, roster, resolved); err != nil {
		return nil, nil, nil, err
	}
	recipients, noEmail = reviewers.Split(j.Source, resolved)
	if len(asked.UnexpandedTeams) > 0 {
		f.Log.WarnContext(ctx, "requested teams could not be expanded to their members; give the token the organization's members: read",
			"job_id", j.ID, "teams", len(asked.UnexpandedTeams))
	}
	return recipients, noEmail, capped, nil
}

// unknown counts reviewers a version gains without an address
// (UnknownReviewers, R-REVIEWERS-3) and notes them on the directory's
// unknown list, for an operator to add.
func (f *Fetch) unknown(ctx context.Context, j job.Job, identities []string) {
	if len(identities) == 0 {
		return
	}
	obs.Metric(ctx, f.Log, map[string]string{"Source": j.Source}, map[string]float64{"UnknownReviewers": float64(len(identities))})
	if f.Unknown == nil {
		return
	}
	names := make([]string, len(identities))
	for i, id := range identities {
		_, names[i], _ = strings.Cut(id, ":")
	}
	if err := f.Unknown.NoteUnknown(ctx, j.Source, names); err != nil {
		// The job's own list has them; the directory's list is a
		// convenience for the operator.
		f.Log.WarnContext(ctx, "could not note reviewers without an address", "job_id", j.ID, "error", err)
	}
}

// refresh is the reviewer refresh (job.TaskReviewers, R-REVIEWERS-1): a
// reviewer was asked after the version's reviewers were fetched. It
// decides the version's reviewers again and adds those who are not yet
// among them — never removes anyone: removals count from the next version
// — then makes sure notify mails them:
//
//   - the job has not reached notify: notify will read the additions;
//   - at notify: notify is enqueued (it finalizes only the revision of
//     additions it read, store.Jobs.FinishNotify, so one already running
//     does not close the job over the newcomer);
//   - done (succeeded or needs_intervention): reopened at notify, then
//     enqueued; rows that exist are never sent again (R-OUTBOX-1), so only
//     the newcomer is mailed, with the version's critique, without a new
//     review;
//   - dead-lettered: left for the operator's replay, which mails them.
//
// Every step is idempotent: a retry after a crash adds nothing twice, and
// it finds the additions notify has not finalized (AddedRev ahead of
// AddedSeen) and enqueues notify again.
func (f *Fetch) refresh(ctx context.Context, m job.Message) error {
	j, err := f.Jobs.Get(ctx, m.JobID)
	if errors.Is(err, store.ErrNotFound) {
		// The version's records expired (R-COST-2): nobody is mailed a
		// version that old again; the next version asks its reviewers.
		f.Log.InfoContext(ctx, "reviewer refresh for a job that no longer exists; nothing to do", "job_id", m.JobID)
		return nil
	}
	if err != nil {
		return err
	}
	if !job.IsReviewSystem(j.Source) || j.Skipped != "" {
		return nil // a version the repository's settings skip mails no one (R-REPO-4)
	}
	ref, err := f.sourceRef(ctx, j)
	if err != nil {
		return err
	}
	asked, err := f.Source.Reviewers(ctx, ref)
	if err != nil {
		return err
	}
	recipients, noEmail, _, err := f.decide(ctx, j, asked)
	if err != nil {
		return err
	}
	known, err := f.Jobs.NoEmailReviewers(ctx, j.ID)
	if err != nil {
		return err
	}
	addrs := missing(recipients, j.AllRecipients())
	ids := missing(noEmail, known)
	if len(addrs)+len(ids) > 0 {
		if j, err = f.Jobs.AddReviewers(ctx, j.ID, addrs, ids); err != nil {
			return err
		}
		f.Log.InfoContext(ctx, "reviewers added to the version", "job_id", j.ID, "review_version", j.ReviewVersion,
			"added", len(addrs), "added_without_address", len(ids))
		f.unknown(ctx, j, ids)
	}
	if j.Status == job.StatusNoRecipients && j.Stage == job.StageLLM && len(j.AllRecipients()) > 0 {
		return f.restartReview(ctx, j)
	}
	if j.AddedRev == j.AddedSeen {
		return nil // nobody new, or notify has mailed them
	}
	switch {
	case j.Stage == job.StageDone && (j.Status == job.StatusSucceeded || j.Status == job.StatusNeedsIntervention):
		if err := f.Jobs.Reopen(ctx, j.ID); err != nil && !errors.Is(err, store.ErrConflict) {
			return err
		}
		// ErrConflict: reopened by someone else (a feedback resend, a
		// concurrent refresh), or moved on; notify sorts it out.
		return f.enqueue(ctx, j.ID, job.StageNotify)
	case j.Stage == job.StageNotify && j.Status != job.StatusDeadLettered:
		return f.enqueue(ctx, j.ID, job.StageNotify)
	}
	return nil
}

// missing are the members of want not in have.
func missing(want, have []string) []string {
	var out []string
	for _, w := range want {
		if !slices.Contains(have, w) {
			out = append(out, w)
		}
	}
	return out
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
