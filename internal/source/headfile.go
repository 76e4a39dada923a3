package source

import (
	"context"
	"encoding/base64"
	"io"
	"net/url"
	"strings"
)

// HeadFileFetcher reads a changed file as the version under review
// wrote it: at Ref.HeadSHA, the commit the event named (R-SOURCE-5),
// never the change's current head nor a branch. What it reads is only
// ever shown to the model as context around the hunks (R-CONTEXT-1):
// it is the change's own code, so it decides nothing — no setting, no
// generated mark, which stay read at the base (R-REPO-6). A missing file
// is not an error (Found false), nor is one the credentials may not read
// (Denied); rate limits, 5xx and transport failures are, classified as
// the diff's are.
type HeadFileFetcher interface {
	HeadFile(ctx context.Context, ref Ref, path string, limit int) (RepoFile, error)
}

// HeadFile implements HeadFileFetcher; a source whose fetcher reads no
// files has none (Found false).
func (r Router) HeadFile(ctx context.Context, ref Ref, path string, limit int) (RepoFile, error) {
	f, ok := r[ref.Source].(HeadFileFetcher)
	if !ok {
		return RepoFile{}, nil
	}
	return f.HeadFile(ctx, ref, path, limit)
}

// HeadFile implements HeadFileFetcher with GitHub's contents API: GET
// /repos/{owner}/{repo}/contents/{path}?ref={head sha}, served raw
// (Accept: application/vnd.github.raw+json). The upstream repository
// serves a fork's head commit too (a pull request's head is reachable
// there as refs/pull/N/head). Without a head commit nothing is read:
// never the default branch. The token needs contents: read.
func (g *GitHub) HeadFile(ctx context.Context, ref Ref, path string, limit int) (RepoFile, error) {
	repo, _, err := g.repoURL(ref)
	if err != nil {
		return RepoFile{}, err
	}
	if strings.TrimSpace(ref.HeadSHA) == "" {
		return RepoFile{}, nil
	}
	u := repo + "/contents/" + escapeSegments(path) + "?ref=" + url.QueryEscape(ref.HeadSHA)
	return g.api().getFile(ctx, "github.GetRepositoryContent", u, "application/vnd.github.raw+json", limit, nil)
}

// HeadFile implements HeadFileFetcher with GitLab's repository files
// API: GET /projects/:id/repository/files/:file_path/raw?ref={head sha}
// in the target project (a fork's head is reachable there as
// refs/merge-requests/:iid/head), the path URL-encoded whole. Without a
// head commit nothing is read. The token needs read_api (or
// read_repository).
func (g *GitLab) HeadFile(ctx context.Context, ref Ref, path string, limit int) (RepoFile, error) {
	if err := checkRef("gitlab", ref); err != nil {
		return RepoFile{}, err
	}
	if strings.TrimSpace(ref.HeadSHA) == "" {
		return RepoFile{}, nil
	}
	u := g.base() + "/projects/" + url.PathEscape(ref.Repo) + "/repository/files/" + url.PathEscape(path) + "/raw?ref=" + url.QueryEscape(ref.HeadSHA)
	return g.api().getFile(ctx, "gitlab.GetRawFile", u, "text/plain", limit, nil)
}

// HeadFile implements HeadFileFetcher with Gerrit's file content of a
// revision: GET
// /a/changes/{project}~{number}/revisions/{revision}/files/{path}/content,
// base64 text, the revision the one Fetch read the patch of (the patch
// set, or HeadSHA). The account needs read access to the change's
// branch, as for the patch.
func (g *Gerrit) HeadFile(ctx context.Context, ref Ref, path string, limit int) (RepoFile, error) {
	change, err := g.change(ref)
	if err != nil {
		return RepoFile{}, err
	}
	u := change + "/revisions/" + gerritRevision(ref) + "/files/" + url.PathEscape(path) + "/content"
	return g.api().getFile(ctx, "gerrit.GetContent", u, "text/plain", limit, func(r io.Reader) io.Reader {
		return base64.NewDecoder(base64.StdEncoding, r)
	})
}
