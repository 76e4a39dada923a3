package retry_test

import (
	"fmt"
	"time"

	"github.com/criticizer/criticizer/internal/retry"
)

func ExamplePolicy_Decide() {
	p := retry.DefaultPolicy()
	rnd := retry.NewRand(42)
	err := fmt.Errorf("fetch diff: %w", &retry.HTTPStatusError{Status: 429, RetryAfter: "120", Op: "github.GetDiff"})

	d := p.Decide(1, err, rnd)
	fmt.Println(d.Err.Class, d.Retry, d.Delay)

	d = p.Decide(5, err, rnd)
	fmt.Println(d.Err.Class, d.Retry, d.Exhausted)
	// Output:
	// RATE_LIMITED true 2m0s
	// RATE_LIMITED false true
}

func ExamplePolicy_Cap() {
	p := retry.DefaultPolicy()
	for attempt := 1; attempt <= 8; attempt++ {
		fmt.Print(p.Cap(attempt).Round(time.Second), " ")
	}
	fmt.Println()
	// Output: 1s 2s 4s 8s 16s 32s 1m0s 1m0s
}
