package source

import (
	"context"
	"encoding/base64"
	"io"
	"net/url"
)

// BaseFile implements FileFetcher with Gerrit's file content of the
// patch set's first parent: GET
// /a/changes/{project}~{number}/revisions/{revision}/files/{path}/content?parent=1,
// base64 text, the revision Fetch reads (the patch set, else the head
// commit, else the current one). The parent is the commit the patch set
// was made on: the branch as the change found it.
func (g *Gerrit) BaseFile(ctx context.Context, ref Ref, path string, limit int) (RepoFile, error) {
	change, err := g.change(ref)
	if err != nil {
		return RepoFile{}, err
	}
	rev := gerritRevision(ref)
	u := change + "/revisions/" + rev + "/files/" + url.PathEscape(path) + "/content?parent=1"
	return g.api().getFile(ctx, "gerrit.GetContent", u, "text/plain", limit, func(r io.Reader) io.Reader {
		return base64.NewDecoder(base64.StdEncoding, r)
	})
}
