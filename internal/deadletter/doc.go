// Package deadletter defines the dead-letter envelope (Criticizer Processing
// Specification R-STAGE-4) and the redaction that keeps it safe to store, read and
// paste into a ticket.
//
// Every constructor and mutator redacts: New redacts the error chain, the
// context and the original body; Annotate redacts operator notes. A caller
// cannot build a populated Envelope through this package without redaction,
// which is the point: R-STAGE-4 forbids secrets, tokens, full prompts and raw PII
// in dead-letter payloads, and the cheapest way to guarantee that is to make
// the safe path the only path.
//
// The package is pure: no I/O, no clocks, no globals beyond compiled
// regular expressions. Times are passed in.
package deadletter
