package main

import "github.com/criticizer/criticizer/internal/deploy"

// deployment is what the cost of a review depends on in the deployment:
// each function's memory size, the payload bucket's expiry and the API's
// access log line, from its description (internal/deploy).
type deployment struct {
	MemoryMB          map[string]int // by function name
	PayloadExpiryDays int
	AccessLogFormat   string
}

// describedDeployment reads them from the description.
func describedDeployment() deployment {
	d := deploy.Describe()
	out := deployment{MemoryMB: map[string]int{}, PayloadExpiryDays: d.Bucket.Expire[0].Days, AccessLogFormat: d.API.AccessLogFormat}
	for _, f := range d.Functions {
		out.MemoryMB[f.Name] = f.MemoryMB
	}
	return out
}
