package chaos

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/criticizer/criticizer/internal/redact"
)

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

// planted are the campaign's secrets: the webhook secret, the source and
// critic tokens in the configuration, and a token in every webhook (in the
// changelist URL's query and in the diff). None may appear in a log line or
// a dead letter. They differ per seed and look like the real thing.
type planted struct {
	webhook, githubWebhook, github, gitlab, openai, token string
}

func plantedSecrets(seed uint64) planted {
	s := fmt.Sprintf("%016x", seed*0x9e3779b97f4a7c15+1)
	return planted{
		webhook: "whsec-chaos-" + s + "-Zq7",
		// GitHub's own: a deployment refuses one source's secret
		// reused for another.
		githubWebhook: "whsec-chaos-github-" + s + "-Zq7",
		github:        "ghp_" + "Ch4osGithubT0ken" + s,
		gitlab:        "glpat-" + "Ch4osGitlab" + s,
		openai:        "sk-" + "proj-Ch4osOpenAIKey" + s,
		token:         "ghp_" + "Ch4osPlantedInWebhook" + s,
	}
}

func (p planted) all() map[string]string {
	return map[string]string{"webhook secret": p.webhook, "GitHub webhook secret": p.githubWebhook, "GitHub token": p.github, "GitLab token": p.gitlab,
		"OpenAI key": p.openai, "webhook token": p.token}
}

// leakScanner finds raw recipient addresses and planted secrets in text.
type leakScanner struct {
	addrs   map[string]bool // lower-cased recipient addresses
	secrets map[string]string

	mu   sync.Mutex
	hits map[string]int // "log: <what>" / "dlq: <what>" -> count
}

var addrRun = regexp.MustCompile(`[A-Za-z0-9._%+\-]+@[A-Za-z0-9.\-]+`)

func newLeakScanner(specs []spec, secrets map[string]string) *leakScanner {
	s := &leakScanner{addrs: map[string]bool{}, secrets: secrets, hits: map[string]int{}}
	for _, sp := range specs {
		for _, r := range sp.Recipients {
			s.addrs[strings.ToLower(r)] = true
		}
	}
	return s
}

// scan records every leak in b under where ("log", "dlq") and reports
// whether there was one.
func (s *leakScanner) scan(where string, b []byte) bool {
	found := false
	if bytes.IndexByte(b, '@') >= 0 {
		for _, m := range addrRun.FindAll(b, -1) {
			if s.addrs[strings.ToLower(strings.TrimRight(string(m), "."))] {
				s.add(where + ": raw recipient address")
				found = true
			}
		}
	}
	for what, v := range s.secrets {
		if bytes.Contains(b, []byte(v)) {
			s.add(where + ": " + what)
			found = true
		}
	}
	return found
}

func (s *leakScanner) add(k string) {
	s.mu.Lock()
	s.hits[k]++
	s.mu.Unlock()
}

// redact makes a message safe to print in the report.
func (s *leakScanner) redact(msg string) string {
	msg = addrRun.ReplaceAllStringFunc(msg, redact.Email)
	for _, v := range s.secrets {
		msg = strings.ReplaceAll(msg, v, "[planted]")
	}
	return msg
}

func (s *leakScanner) logHits() []string { return s.list("log") }
func (s *leakScanner) dlqHits() []string { return s.list("dlq") }
func (s *leakScanner) list(where string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for k, n := range s.hits {
		if strings.HasPrefix(k, where+":") {
			out = append(out, fmt.Sprintf("%s (%d)", k, n))
		}
	}
	sort.Strings(out)
	return out
}

// scanWriter is the functions' log sink: every JSON line is scanned for
// leaks before it is passed on. slog writes one record per Write.
type scanWriter struct {
	scan  *leakScanner
	next  io.Writer
	lines atomic.Int64
	mu    sync.Mutex
}

func (w *scanWriter) Write(p []byte) (int, error) {
	w.lines.Add(int64(bytes.Count(p, []byte{'\n'})))
	w.scan.scan("log", p)
	w.mu.Lock()
	defer w.mu.Unlock()
	_, _ = w.next.Write(p)
	return len(p), nil
}
