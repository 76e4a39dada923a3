// Package source fetches a changelist — its diff and its reviewers — from the
// code review system it lives in: GitHub (and GitHub Enterprise Server),
// GitLab, or Gerrit, through their REST APIs.
//
// Every failure is classified for the stage runner (package retry): rate
// limits are RATE_LIMITED with the wait the server asked for, 404 is
// NOT_FOUND, 401/403 AUTH_DENIED, 5xx and garbled responses UPSTREAM_5XX,
// transport failures NETWORK_*. Errors name the operation and the HTTP
// status, never a token, a response body or an e-mail address.
//
// Diffs are capped (DefaultMaxDiffBytes unless configured): a longer diff is
// cut at a file boundary (a hunk boundary when even the first file is too
// long) and Changelist.Truncated says so, so the critic and the e-mail can
// tell the reviewer that only part of the change was reviewed.
package source

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/criticizer/criticizer/internal/retry"
	"github.com/criticizer/criticizer/internal/reviewers"
)

// DefaultMaxDiffBytes is the diff size limit when a fetcher's MaxDiffBytes
// is zero.
const DefaultMaxDiffBytes = 1 << 20

// Ref identifies one version of a changelist in its source system. The
// webhook adapters' Event carries every field.
type Ref struct {
	Source string // "github", "gitlab" or "gerrit"
	// Repo is "owner/repo" on GitHub, the project's path_with_namespace (or
	// numeric id) on GitLab, the project name on Gerrit.
	Repo string
	// Number is the pull request number, merge request iid or Gerrit change
	// number.
	Number int
	// HeadSHA is the commit under review, as the event named it. Every
	// fetcher reads this commit, never the change's current head
	// (R-SOURCE-5): GitHub compares BaseSHA...HeadSHA, GitLab reads the
	// merge request version whose head is HeadSHA, Gerrit the patch set
	// (or this revision when Patchset is 0). A head that moved on is the
	// next event's, and the next version's.
	HeadSHA string
	// BaseSHA is the commit of merged code the version's repository
	// files are read at (R-REPO-6): the base commit the event named
	// (GitHub's pull_request.base.sha), or the one an earlier attempt
	// pinned (Changelist.BaseSHA, recorded by the fetch stage); empty
	// when neither, and the fetcher finds it itself.
	BaseSHA string
	// Patchset is the Gerrit patch set number; 0 means HeadSHA, or the
	// current patch set when HeadSHA is empty too.
	Patchset int
}

func (r Ref) String() string {
	return fmt.Sprintf("%s:%s#%d", r.Source, r.Repo, r.Number)
}

// Changelist is what a fetcher returns.
type Changelist struct {
	// BaseSHA is the commit of merged code where the repository's
	// settings and files' first lines are read (R-SOURCE-5, R-REPO-6):
	// Ref.BaseSHA when set; else on GitHub the pull request's base and on
	// GitLab the merge request version's base_commit_sha (of the target
	// project), both the commit Diff is against; on Gerrit the
	// destination branch's tip, never the patch set's parent (Diff is
	// against that parent, which in a stack is an unmerged change). Empty
	// when the source knows none: no file is read.
	BaseSHA string
	// BaseUnmerged: the commit Diff is against is not known to be merged
	// code (a Gerrit change made on another open change, the author's
	// own): what Diff shows of its base — a file's old name, its removed
	// and context lines — proves nothing about the repository, and only
	// what is read at BaseSHA may call a file generated (R-CRITIC-7).
	// GitHub's and GitLab's diffs are against a merge base of the target
	// branch: merged.
	BaseUnmerged bool
	Diff         string // unified diff (git format), at most the fetcher's limit
	Truncated    bool   // Diff is incomplete: cut at the limit, or files the API would not serve
	Reviewers    Reviewers
}

// Reviewer is a person asked to review. Email is empty when the source does
// not disclose it (GitHub, GitLab): a reviewers.Directory resolves it.
type Reviewer = reviewers.Person

// Reviewers is what a code review system says of a changelist's reviewers
// now (reviewers.Asked, with what could not be expanded).
type Reviewers struct {
	// Requested are the people asked to review, in the source's order,
	// de-duplicated: requested users (GitHub), then the members of
	// requested teams (Reviewer.Team says which); GitLab's reviewers;
	// Gerrit's reviewers and CCs, with their addresses.
	Requested []Reviewer
	// Reviewed are the people who submitted a review, with the time of
	// their latest (GitHub: the pull request's reviews; GitLab and Gerrit
	// keep a reviewer in Requested after they review).
	Reviewed []Reviewer
	// Author is the change's author as the system says it (GitLab: the
	// merge request's author); empty when the webhook already said it.
	Author string
	// UnexpandedTeams are requested teams whose members the token could
	// not read (GitHub: the token needs the organization's members: read).
	UnexpandedTeams []string
}

// Asked is the reviewers' part reviewers.Select takes.
func (r Reviewers) Asked(author string) reviewers.Asked {
	if r.Author != "" {
		author = r.Author
	}
	return reviewers.Asked{Requested: r.Requested, Reviewed: r.Reviewed, Author: author}
}

// Fetcher fetches a changelist from one source: its diff and reviewers,
// or its reviewers alone (a reviewer added to a version already fetched).
type Fetcher interface {
	Fetch(ctx context.Context, ref Ref) (Changelist, error)
	Reviewers(ctx context.Context, ref Ref) (Reviewers, error)
}

// Standing is where a changelist's head commit stands relative to
// another of its heads, as the code host says (R-SOURCE-6).
type Standing int

const (
	// Ahead: the head follows the other (GitHub: it descends from it;
	// GitLab: a later version of the merge request).
	Ahead Standing = iota
	// Behind: the other follows the head (GitHub: the head is an ancestor
	// of the other; GitLab: an earlier version).
	Behind
	// Identical: the same commit.
	Identical
	// Diverged: neither follows the other (GitHub: a force-push left the
	// other off the branch), or the host knows nothing of the other: the
	// head is a new version.
	Diverged
)

func (s Standing) String() string {
	return [...]string{"ahead", "behind", "identical", "diverged"}[s]
}

// Orderer says where a changelist's head commit (Ref.HeadSHA) stands
// relative to another head of it (R-SOURCE-6): GitHub's compare status,
// GitLab's merge request versions. Gerrit's patch set numbers are their
// own order; it has none.
type Orderer interface {
	Standing(ctx context.Context, ref Ref, other string) (Standing, error)
}

// Router dispatches on Ref.Source to the fetcher registered for it.
type Router map[string]Fetcher

// Standing implements Orderer with the source's fetcher. A source
// without an order of its own (Gerrit: its versions come from the
// event) has the head ahead, as intake placed it.
func (r Router) Standing(ctx context.Context, ref Ref, other string) (Standing, error) {
	f, ok := r[ref.Source]
	if !ok || f == nil {
		return 0, retry.Permanent(retry.RuntimeBug, fmt.Errorf("source: no fetcher configured for source %q", ref.Source))
	}
	if o, ok := f.(Orderer); ok {
		return o.Standing(ctx, ref, other)
	}
	return Ahead, nil
}

// Fetch implements Fetcher.
func (r Router) Fetch(ctx context.Context, ref Ref) (Changelist, error) {
	f, ok := r[ref.Source]
	if !ok || f == nil {
		return Changelist{}, retry.Permanent(retry.RuntimeBug, fmt.Errorf("source: no fetcher configured for source %q", ref.Source))
	}
	return f.Fetch(ctx, ref)
}

// Reviewers implements Fetcher.
func (r Router) Reviewers(ctx context.Context, ref Ref) (Reviewers, error) {
	f, ok := r[ref.Source]
	if !ok || f == nil {
		return Reviewers{}, retry.Permanent(retry.RuntimeBug, fmt.Errorf("source: no fetcher configured for source %q", ref.Source))
	}
	return f.Reviewers(ctx, ref)
}

// TruncateDiff cuts d to at most max bytes at a file boundary (a line
// starting "diff --git "), or, when even the first file does not fit, at a
// hunk boundary (a line starting "@@ "), so that what remains is still a
// well-formed diff. It reports whether anything was cut. max <= 0 means no
// limit.
func TruncateDiff(d string, max int) (string, bool) {
	if max <= 0 || len(d) <= max {
		return d, false
	}
	if i := lastBoundary(d, max, "diff --git "); i > 0 {
		return d[:i], true
	}
	if i := lastBoundary(d, max, "@@ "); i > 0 && strings.Contains(d[:i], "\n@@ ") {
		return d[:i], true
	}
	return "", true
}

// lastBoundary returns the offset, at most max, of the last line of d that
// starts with prefix; -1 when there is none, 0 when it is the first line.
func lastBoundary(d string, max int, prefix string) int {
	end := min(len(d), max+len(prefix)) // see a line that starts at max whole
	for {
		i := strings.LastIndex(d[:end], "\n"+prefix)
		if i < 0 {
			break
		}
		if i+1 <= max {
			return i + 1
		}
		end = i
	}
	if strings.HasPrefix(d, prefix) {
		return 0
	}
	return -1
}

// RequestTimeout bounds one request to a code review system: a hung
// upstream must not hold a Lambda invocation until its own timeout. The
// invocation's deadline bounds it too (the stage runner's context), and
// the fetch stage starts a message only while at least this much of the
// invocation is left (R-STAGE-9).
const RequestTimeout = 30 * time.Second

// defaultClient bounds every request by RequestTimeout.
var defaultClient = &http.Client{Timeout: RequestTimeout}

// api is the HTTP plumbing the three fetchers share.
type api struct {
	client *http.Client
	now    func() time.Time
	// auth sets credentials and fixed headers on every request.
	auth func(*http.Request)
}

func newAPI(c *http.Client, now func() time.Time, auth func(*http.Request)) api {
	if c == nil {
		c = defaultClient
	}
	if now == nil {
		now = time.Now
	}
	return api{client: c, now: now, auth: auth}
}

// get performs a GET and returns the response when its status is 2xx. The
// caller closes the body. Any other status is returned as a classified
// error (see statusError) after the body has been drained.
func (a api) get(ctx context.Context, op, url, accept string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, retry.Permanent(retry.RuntimeBug, fmt.Errorf("%s: building request: %w", op, err))
	}
	req.Header.Set("Accept", accept)
	req.Header.Set("User-Agent", "criticizer")
	if a.auth != nil {
		a.auth(req)
	}
	return do(a.client, req, op, a.now)
}

// do sends req with c and returns the response when its status is 2xx;
// any other status is a classified error (statusError) once the body is
// drained, and a transport error names op without the URL's secrets.
func do(c *http.Client, req *http.Request, op string, now func() time.Time) (*http.Response, error) {
	resp, err := c.Do(req)
	if err != nil {
		return nil, retry.WithOp(stripURL(err), op)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		return nil, statusError(op, resp, now())
	}
	return resp, nil
}

// stripURL removes the query and any user information from the URL a
// transport error (*url.Error) quotes: a misconfigured base URL could carry
// credentials. The error chain, which decides the class (timeout,
// refused...), is kept.
func stripURL(err error) error {
	var ue *url.Error
	if !errors.As(err, &ue) {
		return err
	}
	c := *ue
	if u, perr := url.Parse(ue.URL); perr == nil {
		u.User, u.RawQuery, u.Fragment = nil, "", ""
		c.URL = u.String()
	} else {
		c.URL = "(unparseable URL)"
	}
	return &c
}

// statusError classifies a non-2xx response:
//
//   - a spent rate limit (X-RateLimit-Remaining or RateLimit-Remaining: 0 on
//     a 403 or 429, as GitHub and GitLab send) is RATE_LIMITED until the
//     reset time (X-RateLimit-Reset / RateLimit-Reset, Unix seconds), or
//     Retry-After if that is later;
//   - 429, and 403 with Retry-After (GitHub's secondary limits), are
//     RATE_LIMITED with Retry-After;
//   - everything else follows retry.StatusClass: 404 NOT_FOUND, 401/403
//     AUTH_DENIED, 5xx UPSTREAM_5XX...
func statusError(op string, resp *http.Response, now time.Time) error {
	hse := &retry.HTTPStatusError{Status: resp.StatusCode, RetryAfter: resp.Header.Get("Retry-After"), Op: op}
	remaining := firstHeader(resp.Header, "X-RateLimit-Remaining", "RateLimit-Remaining")
	if (resp.StatusCode == http.StatusForbidden || resp.StatusCode == http.StatusTooManyRequests) && strings.TrimSpace(remaining) == "0" {
		wait := time.Minute // no usable reset header: a sane default
		if reset, err := strconv.ParseInt(strings.TrimSpace(firstHeader(resp.Header, "X-RateLimit-Reset", "RateLimit-Reset")), 10, 64); err == nil {
			wait = time.Unix(reset, 0).Sub(now)
		}
		if ra, ok := retry.ParseRetryAfter(hse.RetryAfter, now); ok && ra > wait {
			wait = ra
		}
		if wait < time.Second {
			wait = time.Second
		}
		return retry.WithRetryAfter(&retry.Error{Class: retry.RateLimited, Status: resp.StatusCode, Op: op, Err: hse}, wait)
	}
	return retry.ClassifyAt(hse, now)
}

func firstHeader(h http.Header, names ...string) string {
	for _, n := range names {
		if v := h.Get(n); v != "" {
			return v
		}
	}
	return ""
}

// malformed classifies an unreadable 2xx response body. It is retried: a
// garbled answer from an upstream (or a proxy in front of it) is far more
// often transient than a change in the API.
func malformed(op string, err error) error {
	return retry.Transient(retry.Upstream5xx, fmt.Errorf("%s: malformed response: %w", op, err))
}

// diffLookahead is how far past the limit a diff is read, so that a file
// boundary right at the limit is recognised as one.
const diffLookahead = 64

// readLimited reads at most limit+diffLookahead bytes of r and reports
// whether there was more.
func readLimited(r io.Reader, limit int) ([]byte, bool, error) {
	n := limit + diffLookahead
	b, err := io.ReadAll(io.LimitReader(r, int64(n)+1))
	if err != nil {
		return nil, false, err
	}
	if len(b) > n {
		return b[:n], true, nil
	}
	return b, false, nil
}

// maxBytes returns the configured limit or the default.
func maxBytes(n int) int {
	if n <= 0 {
		return DefaultMaxDiffBytes
	}
	return n
}

// checkRef validates the parts of a Ref every fetcher needs.
func checkRef(source string, ref Ref) error {
	switch {
	case ref.Source != source:
		return retry.Permanent(retry.RuntimeBug, fmt.Errorf("source: %s fetcher given a %q ref", source, ref.Source))
	case strings.TrimSpace(ref.Repo) == "":
		return retry.Permanent(retry.SchemaInvalid, fmt.Errorf("source: %s ref without a repository", source))
	case ref.Number < 1:
		return retry.Permanent(retry.SchemaInvalid, fmt.Errorf("source: %s ref without a change number", source))
	}
	return nil
}

// fileDiff is one file of a diff an API serves per file (GitLab's diffs,
// GitHub's files); render turns it back into git's format.
type fileDiff struct {
	OldPath, NewPath        string
	Added, Deleted, Renamed bool
	OldMode, NewMode        string
	Patch                   string // hunks ("@@ ..."), or "Binary files ... differ", or empty
}

func (f fileDiff) render(b *strings.Builder) {
	fmt.Fprintf(b, "diff --git a/%s b/%s\n", f.OldPath, f.NewPath)
	mode := func(m string) string {
		if m == "" || m == "0" {
			return "100644"
		}
		return m
	}
	switch {
	case f.Added:
		fmt.Fprintf(b, "new file mode %s\n", mode(f.NewMode))
	case f.Deleted:
		fmt.Fprintf(b, "deleted file mode %s\n", mode(f.OldMode))
	case f.OldMode != "" && f.NewMode != "" && f.OldMode != f.NewMode:
		fmt.Fprintf(b, "old mode %s\nnew mode %s\n", f.OldMode, f.NewMode)
	}
	if f.Renamed {
		fmt.Fprintf(b, "rename from %s\nrename to %s\n", f.OldPath, f.NewPath)
	}
	patch := f.Patch
	if patch == "" {
		return
	}
	if !strings.HasPrefix(patch, "@@") {
		// "Binary files a/x and b/x differ" and the like: no ---/+++.
		b.WriteString(strings.TrimRight(patch, "\n"))
		b.WriteByte('\n')
		return
	}
	oldName, newName := "a/"+f.OldPath, "b/"+f.NewPath
	if f.Added {
		oldName = "/dev/null"
	}
	if f.Deleted {
		newName = "/dev/null"
	}
	fmt.Fprintf(b, "--- %s\n+++ %s\n", oldName, newName)
	b.WriteString(patch)
	if !strings.HasSuffix(patch, "\n") {
		b.WriteByte('\n')
	}
}
