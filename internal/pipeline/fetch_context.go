package pipeline

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/criticizer/criticizer/internal/critic"
	"github.com/criticizer/criticizer/internal/diff"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/obs"
	"github.com/criticizer/criticizer/internal/retry"
	"github.com/criticizer/criticizer/internal/source"
)

// Bounds on reading changed files at the version's head for the code
// around their hunks (R-CONTEXT-1, R-CONTEXT-2): the author decides how
// many files a change has and how large they are, and each read is a
// request to the code host.
const (
	// MaxContextFiles is how many files one version reads at its head,
	// the most useful first (critic.ContextPaths).
	MaxContextFiles = 20
	// MaxContextBlobBytes bounds the object the files are stored in
	// (JSON, by path); the llm stage reads no more.
	MaxContextBlobBytes = 4 << 20
	// contextReaders is how many reads run at once.
	contextReaders = 4
	// contextPrefix is where the objects are stored: under diffs/, whose
	// grants and expiry they share.
	contextPrefix = "diffs/context"
)

// headContext reads the changed files worth it (critic.ContextPaths) at
// the version's head commit (ref.HeadSHA, the one the event named,
// R-SOURCE-5), stores them in the blob store as one JSON object by path,
// and returns its reference; "" when there is nothing to store. It never
// fails the stage for a file: a file the host does not serve (404, 403,
// 5xx, a timeout), one over ContextFileBytes, or not text, is reviewed
// from its hunks as before, and counted (ContextFilesUnread,
// ContextFilesTooLarge). The reads end by deadline, the end of the
// source.FileRequestTimeout the base reads began (the fetch message
// reserves one for both, R-STAGE-9), contextReaders at a time. Only
// storing the object can fail, as storing the diff can.
func (f *Fetch) headContext(ctx context.Context, j job.Job, ref source.Ref, diffText string, g critic.Generated, deadline time.Time) (string, error) {
	ff, ok := f.Source.(source.HeadFileFetcher)
	if !ok || f.ContextFileBytes <= 0 {
		return "", nil
	}
	d, err := diff.ParseString(diffText)
	if err != nil {
		return "", nil // the llm stage refuses the diff
	}
	paths, more := critic.ContextPaths(d, g, MaxContextFiles)
	if len(paths) == 0 {
		return "", nil
	}
	rctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	type result struct {
		path string
		file source.RepoFile
		err  error
	}
	results := make([]result, len(paths))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(contextReaders, len(paths)) {
		wg.Go(func() {
			for i := range next {
				if err := rctx.Err(); err != nil {
					results[i] = result{path: paths[i], err: err}
					continue
				}
				file, err := ff.HeadFile(rctx, ref, paths[i], f.ContextFileBytes)
				results[i] = result{paths[i], file, err}
			}
		})
	}
	for i := range paths {
		next <- i
	}
	close(next)
	wg.Wait()

	files := critic.HeadFiles{}
	counts := map[string]float64{"ContextFileReads": float64(len(paths))}
	unread, tooLarge := 0, 0
	for _, r := range results {
		switch {
		case r.err != nil || !r.file.Found:
			unread++
			if r.err != nil && ctx.Err() == nil && rctx.Err() == nil {
				f.Log.WarnContext(ctx, "could not read a changed file at the head; it is reviewed from its hunks", "job_id", j.ID,
					"error_class", string(retry.Classify(r.err).Class))
			}
		case len(r.file.Content) > f.ContextFileBytes || !utf8.Valid(r.file.Content) || bytes.IndexByte(r.file.Content, 0) >= 0:
			tooLarge++ // over the cap, or not text: none
		default:
			files[r.path] = string(r.file.Content)
		}
	}
	if unread > 0 {
		counts["ContextFilesUnread"] = float64(unread)
	}
	if tooLarge > 0 {
		counts["ContextFilesTooLarge"] = float64(tooLarge)
	}
	if more > 0 {
		counts["ContextFilesPastLimit"] = float64(more)
	}
	obs.Metric(ctx, f.Log, map[string]string{"Source": j.Source}, counts)
	if len(files) == 0 {
		return "", nil
	}
	b, err := encodeHeadFiles(files)
	if err != nil {
		return "", err
	}
	blobRef, _, err := f.Blobs.Put(ctx, contextPrefix, b)
	return blobRef, err
}

// encodeHeadFiles is the JSON object of files by path, its largest files
// left out until it is at most MaxContextBlobBytes (escaping can make the
// JSON of MaxContextFiles files at the cap larger than their bytes).
func encodeHeadFiles(files critic.HeadFiles) ([]byte, error) {
	for {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(files); err != nil {
			return nil, retry.Permanent(retry.RuntimeBug, err)
		}
		if buf.Len() <= MaxContextBlobBytes || len(files) == 0 {
			return buf.Bytes(), nil
		}
		largest := ""
		for p, c := range files {
			if largest == "" || len(c) > len(files[largest]) {
				largest = p
			}
		}
		delete(files, largest)
	}
}
