// Package retry decides what happens after a stage attempt fails: which
// failure class it belongs to (Criticizer Processing Specification R-STAGE-1), how
// long to wait before the next attempt (R-STAGE-2), and when the per-stage attempt
// budget is spent (R-STAGE-3).
//
// The package is pure: it reads error values and numbers and returns
// decisions. It performs no I/O, keeps no global state and owns no random
// source; callers pass a *rand.Rand (see NewRand) so that jitter is
// reproducible in tests and independent per worker in production.
//
// The intended use in a stage runner is:
//
//	cerr := retry.Classify(err)
//	d := policy.Decide(attempt, cerr, rnd)
//	if d.Retry {
//		// change the SQS message visibility to d.Delay
//	} else {
//		// dead-letter with cerr.Class and cerr.Retryable() (see package deadletter)
//	}
package retry
