package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"

	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/retry"
)

// Fetch is the fetch stage: it makes sure the changelist's diff is in the
// blob store and records where.
type Fetch struct {
	Base
	HTTP *http.Client
}

// NewDiffHTTPClient returns the client used for diff_url. It refuses
// link-local addresses always (the EC2/ECS metadata endpoints), and loopback
// and private addresses unless allowPrivate: diff_url comes from the webhook
// caller, and fetching it must not be a way into the VPC.
func NewDiffHTTPClient(allowPrivate bool, timeout time.Duration) *http.Client {
	dialer := &net.Dialer{Timeout: 5 * time.Second, Control: func(_, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return fmt.Errorf("diff_url address %q: %w", address, err)
		}
		a := ap.Addr().Unmap()
		if a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() || a.IsUnspecified() || a.IsMulticast() {
			return retry.Permanent(retry.PolicyRejected, fmt.Errorf("diff_url resolves to a forbidden address"))
		}
		if !allowPrivate && (a.IsLoopback() || a.IsPrivate()) {
			return retry.Permanent(retry.PolicyRejected, fmt.Errorf("diff_url resolves to a private address (set CRITICIZER_ALLOW_PRIVATE_DIFF_URLS to allow)"))
		}
		return nil
	}}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = dialer.DialContext
	tr.Proxy = nil
	return &http.Client{Timeout: timeout, Transport: tr, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if len(via) >= 5 {
			return errors.New("too many redirects")
		}
		return nil
	}}
}

// Handle runs the fetch stage for one message.
func (f *Fetch) Handle(ctx context.Context, m job.Message, attempt int) error {
	j, ok, err := f.begin(ctx, m, job.StageFetch)
	if err != nil || !ok {
		return err
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

// download GETs a diff_url with a size limit; HTTP failures carry their
// status and Retry-After for classification (seed 001 §8.1).
func (f *Fetch) download(ctx context.Context, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, retry.Permanent(retry.SchemaInvalid, fmt.Errorf("diff_url: %w", err))
	}
	req.Header.Set("Accept", "text/x-diff, text/plain, */*")
	resp, err := f.HTTP.Do(req)
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
