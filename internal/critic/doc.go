// Package critic defines what a code reviewer is to Criticizer, and provides
// Offline, a reviewer that needs no network.
//
// Every reviewer, whether it calls an LLM or not, implements Critic and
// returns a Critique: a short summary plus structured findings tied to a file
// and line of the new code. Keeping the shape fixed lets the delivery side
// render and e-mail any critic's output the same way.
//
// Offline exists so that a review can always be produced: when the LLM is
// unavailable or over budget, in tests, and as a cheap first pass whose
// findings can be handed to the LLM as hints. It is deterministic (the same
// input always gives byte-identical JSON), so its output can be cached,
// diffed between runs, and asserted on in tests.
//
// Incremental wraps any critic so that a rerun builds on the review of the
// last reviewed version: only the files whose change differs are reviewed
// again, the others keep their findings, and the critique says what is
// new, unchanged and resolved since that version.
//
// Findings are e-mailed to people, so they must never carry sensitive text
// from the diff: messages are written from fixed templates and numbers only,
// never quoting the code, and file names are shown with e-mail addresses and
// token-shaped strings masked. The code at a finding (Excerpt) is the one
// place the diff's text is quoted, with credentials, addresses and private
// keys redacted and control and bidi characters made visible.
package critic
