package source

import (
	"context"
	"net/url"
	"strings"
)

// File implements FileFetcher with GitHub's contents API: GET
// /repos/{owner}/{repo}/contents/{path}?ref={head sha}, served raw
// (Accept: application/vnd.github.raw+json). The token needs contents:
// read; one without it reads as no file (RepoFile.Denied).
func (g *GitHub) File(ctx context.Context, ref Ref, path string, limit int) (RepoFile, error) {
	if _, _, err := g.pull(ref); err != nil {
		return RepoFile{}, err
	}
	owner, repo, _ := strings.Cut(ref.Repo, "/")
	u := g.base() + "/repos/" + url.PathEscape(owner) + "/" + url.PathEscape(repo) + "/contents/" + escapeSegments(path)
	if ref.HeadSHA != "" {
		u += "?ref=" + url.QueryEscape(ref.HeadSHA)
	}
	return g.api().getFile(ctx, "github.GetRepositoryContent", u, "application/vnd.github.raw+json", limit, nil)
}

// escapeSegments escapes each segment of a slash-separated path.
func escapeSegments(p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return strings.Join(segs, "/")
}
