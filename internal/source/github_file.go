package source

import (
	"context"
	"net/url"
	"strings"
)

// BaseFile implements FileFetcher with GitHub's contents API: GET
// /repos/{owner}/{repo}/contents/{path}?ref={base sha}, served raw
// (Accept: application/vnd.github.raw+json). Without a base commit it
// reads the default branch (no ref), as PR-Agent does: never the head.
// The token needs contents: read; one without it reads as no file
// (RepoFile.Denied).
func (g *GitHub) BaseFile(ctx context.Context, ref Ref, path string, limit int) (RepoFile, error) {
	repo, _, err := g.repoURL(ref)
	if err != nil {
		return RepoFile{}, err
	}
	u := repo + "/contents/" + escapeSegments(path)
	if ref.BaseSHA != "" {
		u += "?ref=" + url.QueryEscape(ref.BaseSHA)
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
