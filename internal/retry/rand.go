package retry

import "math/rand/v2"

// NewRand returns a PCG-backed *rand.Rand for Policy.Backoff. The package
// deliberately has no default source: callers seed one per worker (for
// example from crypto/rand at start-up, or from a hash of the Lambda request
// id) and tests seed a fixed value to make jitter reproducible.
func NewRand(seed uint64) *rand.Rand {
	// The second PCG word only needs to differ from the first; the constant
	// is the 64-bit golden ratio.
	return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
}
