package source

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/criticizer/criticizer/internal/retry"
)

// maxCallAnswer bounds the JSON answer Call reads: a code host's answer
// about one check run, status or message list is far below it.
const maxCallAnswer = 4 << 20

// send performs one request with a JSON body (nil: none) and returns the
// response when its status is 2xx, as get does.
func (a api) send(ctx context.Context, op, method, url, accept string, in any) (*http.Response, error) {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return nil, retry.Permanent(retry.RuntimeBug, fmt.Errorf("%s: encoding request: %w", op, err))
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		return nil, retry.Permanent(retry.RuntimeBug, fmt.Errorf("%s: building request: %w", op, err))
	}
	req.Header.Set("Accept", accept)
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("User-Agent", "criticizer")
	if a.auth != nil {
		a.auth(req)
	}
	return do(a.client, req, op, a.now)
}

// call sends in as JSON and decodes a 2xx answer into out (nil: the
// answer is drained). xssi strips Gerrit's ")]}'" line first. A non-2xx
// answer is the classified error do returns: its *retry.Error carries
// the HTTP status, which a caller tells a 404, 400 or 422 by.
func (a api) call(ctx context.Context, op, method, url, accept string, in, out any, xssi bool) error {
	resp, err := a.send(ctx, op, method, url, accept, in)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxCallAnswer))
	if err != nil {
		return retry.WithOp(err, op)
	}
	if out == nil {
		return nil
	}
	if xssi {
		b = stripXSSI(b)
	}
	if err := json.Unmarshal(b, out); err != nil {
		return malformed(op, err)
	}
	return nil
}

// Call is one JSON request to the GitHub REST API with the fetcher's
// credentials (its token, or its Client's App transport) and failure
// classes: path is below BaseURL ("/repos/o/r/check-runs"), in is sent as
// JSON (nil: no body), a 2xx answer is decoded into out (nil: ignored).
// It is how code-host channels (internal/codehost) write to the host
// with the same auth and base URL the fetch stage reads with.
func (g *GitHub) Call(ctx context.Context, op, method, path string, in, out any) error {
	a := g.api()
	return a.call(ctx, op, method, g.base()+path, "application/vnd.github+json", in, out, false)
}

// Call is one JSON request to the GitLab REST API, as GitHub.Call: path
// is below BaseURL ("/projects/:id/statuses/:sha").
func (g *GitLab) Call(ctx context.Context, op, method, path string, in, out any) error {
	a := g.api()
	return a.call(ctx, op, method, g.base()+path, "application/json", in, out, false)
}

// Call is one JSON request to the Gerrit REST API with the account's
// HTTP credentials, as GitHub.Call: path is below BaseURL and starts
// with "/a/"; the answer's ")]}'" line is stripped.
func (g *Gerrit) Call(ctx context.Context, op, method, path string, in, out any) error {
	if g.BaseURL == "" {
		return retry.Permanent(retry.RuntimeBug, fmt.Errorf("source: gerrit base URL is not configured"))
	}
	a := g.api()
	return a.call(ctx, op, method, g.root()+path, "application/json", in, out, true)
}
