package source

import (
	"context"
	"encoding/base64"
	"io"
	"net/url"
	"strings"
)

// BaseFile implements FileFetcher with Gerrit's file content of a
// commit: GET
// /a/projects/{project}/commits/{Ref.BaseSHA}/files/{path}/content,
// base64 text. Ref.BaseSHA is the destination branch's tip Fetch
// returned (Changelist.BaseSHA), pinned for the version: code already
// merged (R-REPO-6). Never the patch set, nor its parent (?parent=1),
// which in a stack of changes is the author's own unmerged change.
// Without a base commit there is nothing merged to read, and the file
// counts as absent.
func (g *Gerrit) BaseFile(ctx context.Context, ref Ref, path string, limit int) (RepoFile, error) {
	if _, err := g.change(ref); err != nil {
		return RepoFile{}, err
	}
	if strings.TrimSpace(ref.BaseSHA) == "" {
		return RepoFile{}, nil
	}
	u := g.root() + "/a/projects/" + url.PathEscape(ref.Repo) + "/commits/" + url.PathEscape(ref.BaseSHA) +
		"/files/" + url.PathEscape(path) + "/content"
	return g.api().getFile(ctx, "gerrit.GetContentFromCommit", u, "text/plain", limit, func(r io.Reader) io.Reader {
		return base64.NewDecoder(base64.StdEncoding, r)
	})
}
