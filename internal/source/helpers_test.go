package source

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/diff"
	"github.com/criticizer/criticizer/internal/retry"
)

// testNow is the fixed clock the fetchers get in tests.
var testNow = time.Date(2025, 3, 14, 15, 9, 26, 0, time.UTC)

func testClock() time.Time { return testNow }

// fixture reads a recorded response from testdata.
func fixture(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", path))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// fakeAPI is a stand-in for a code review system's REST API: it answers
// each request path (RequestURI, so escaping and query strings count) with
// a recorded response, and keeps what it was sent.
type fakeAPI struct {
	t      testing.TB
	srv    *httptest.Server
	mu     sync.Mutex
	routes map[string]http.HandlerFunc
	got    []*http.Request
}

func newFakeAPI(t testing.TB) *fakeAPI {
	f := &fakeAPI{t: t, routes: map[string]http.HandlerFunc{}}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.got = append(f.got, r.Clone(r.Context()))
		h, ok := f.routes[r.Method+" "+r.RequestURI]
		f.mu.Unlock()
		if !ok {
			t.Errorf("unexpected request %s %s", r.Method, r.RequestURI)
			http.Error(w, "no such route in the fake", http.StatusTeapot)
			return
		}
		h(w, r)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

// on registers a handler for "GET /path?query".
func (f *fakeAPI) on(route string, h http.HandlerFunc) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.routes[route] = h
}

// reply answers with a fixed status, headers (pairs) and body.
func reply(status int, body []byte, headers ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i+1 < len(headers); i += 2 {
			w.Header().Set(headers[i], headers[i+1])
		}
		w.WriteHeader(status)
		w.Write(body)
	}
}

// requests returns what the fake was sent, in order.
func (f *fakeAPI) requests() []*http.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*http.Request(nil), f.got...)
}

// requested reports whether a route was hit.
func (f *fakeAPI) requested(route string) bool {
	for _, r := range f.requests() {
		if r.Method+" "+r.RequestURI == route {
			return true
		}
	}
	return false
}

// wantClass asserts err's classification.
func wantClass(t testing.TB, err error, class retry.Class, retryable bool, retryAfter time.Duration) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want %s", class)
	}
	c := retry.ClassifyAt(err, testNow)
	if c.Class != class || c.Retryable() != retryable {
		t.Fatalf("classified %s (retryable %v), want %s (retryable %v): %v", c.Class, c.Retryable(), class, retryable, err)
	}
	if c.RetryAfter != retryAfter {
		t.Fatalf("RetryAfter = %v, want %v (%v)", c.RetryAfter, retryAfter, err)
	}
	var re *retry.Error
	if !errors.As(err, &re) {
		t.Fatalf("error is not classified at the source: %T %v", err, err)
	}
}

// wantClean asserts an error message carries no secret and no response
// body text.
func wantClean(t testing.TB, err error, forbidden ...string) {
	t.Helper()
	for _, s := range forbidden {
		if s != "" && strings.Contains(err.Error(), s) {
			t.Fatalf("error %q contains %q", err, s)
		}
	}
}

// mustParseDiff asserts d is a well-formed diff and returns its file paths.
func mustParseDiff(t testing.TB, d string) []string {
	t.Helper()
	parsed, err := diff.ParseString(d)
	if err != nil {
		t.Fatalf("diff does not parse: %v\n%s", err, d)
	}
	var paths []string
	for _, f := range parsed.Files {
		paths = append(paths, f.Path())
	}
	return paths
}
