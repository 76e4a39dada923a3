package devstack

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
)

// AnswerLoss drops a code host stand-in's answers after the work: the
// request is applied (the check run stored, the status set), then the
// connection is closed before a byte of the answer is written, as a
// network that fails on the way back does. The client sees its request
// fail with no answer and cannot know the host did the work: what the
// delivery protocol's Find exists for (R-CHANNEL-14). It is the code
// hosts' counterpart of internal/fault's LoseAnswer, which sits below
// the AWS SDK.
type AnswerLoss struct {
	mu    sync.Mutex
	rules []*lossRule
	lost  int
}

type lossRule struct {
	method, path, body string
	skip, left         int
}

// Lose drops the answers of the next times requests whose method is
// method and whose path contains path.
func (l *AnswerLoss) Lose(method, path string, times int) {
	l.LoseAfter(method, path, 0, times)
}

// LoseAfter lets the next skip matching requests through, then drops the
// answers of times more: the second page of an update, say.
func (l *AnswerLoss) LoseAfter(method, path string, skip, times int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.rules = append(l.rules, &lossRule{method: method, path: path, skip: skip, left: times})
}

// LoseWith drops the answers of the next times requests whose method is
// method, whose path contains path and whose body contains body: a
// finished status (`"state":"success"`) rather than a pending one.
func (l *AnswerLoss) LoseWith(method, path, body string, times int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.rules = append(l.rules, &lossRule{method: method, path: path, body: body, left: times})
}

// Lost is how many answers were dropped.
func (l *AnswerLoss) Lost() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lost
}

// fires reports whether r's answer is to be dropped, counting it. A
// rule on the body reads it (at most 1 MiB) and puts it back.
func (l *AnswerLoss) fires(r *http.Request) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	var body []byte
	read := false
	for _, x := range l.rules {
		if x.left > 0 && x.body != "" && !read && r.Body != nil {
			body, _ = io.ReadAll(io.LimitReader(r.Body, 1<<20))
			r.Body, read = io.NopCloser(bytes.NewReader(body)), true
		}
		if x.left > 0 && r.Method == x.method && strings.Contains(r.URL.EscapedPath(), x.path) &&
			(x.body == "" || bytes.Contains(body, []byte(x.body))) {
			if x.skip > 0 {
				x.skip--
				continue
			}
			x.left--
			l.lost++
			return true
		}
	}
	return false
}

// Wrap serves h, dropping the answers Lose chose after h did the work.
func (l *AnswerLoss) Wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !l.fires(r) {
			h.ServeHTTP(w, r)
			return
		}
		h.ServeHTTP(httptest.NewRecorder(), r) // the work, its answer kept from the client
		if hj, ok := w.(http.Hijacker); ok {
			if c, _, err := hj.Hijack(); err == nil {
				_ = c.Close()
				return
			}
		}
		panic(http.ErrAbortHandler)
	})
}
