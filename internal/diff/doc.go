// Package diff parses unified diffs: the output of `git diff`, `git
// format-patch`, `git log -p` and `diff -u`, which is also what GitHub's
// ".diff" URLs, GitLab's patches and Gerrit's patch downloads serve.
//
// Criticizer reviews code by reading the diff a code-review system hands it,
// so this package is the single place that turns that text into structure.
// It is deliberately strict about the parts that carry meaning (hunk headers
// and the line counts they promise) and lenient about everything around them
// (commit messages, e-mail headers, diffstats, signatures), because the
// former decides which line number a reviewer's comment lands on and the
// latter varies from tool to tool.
//
// The parser is a single pass over the input with one line of look-ahead, so
// its running time is linear in the size of the input whatever that input
// is; it is safe to feed untrusted webhook payloads to it. It never echoes
// input text in its errors, so a diff containing a credential cannot leak it
// into logs through an error message.
package diff
