package config

import (
	"fmt"
	"strconv"
	"strings"
)

// readDiffs reads which diff URLs the fetch stage may follow.
func (c *Config) readDiffs(getenv func(string) string) error {
	var err error
	if c.DiffURLPorts, err = ports(getenv(EnvDiffURLPorts)); err != nil {
		return err
	}
	if v := getenv(EnvAllowPrivateDiffs); v != "" {
		if c.AllowPrivateDiffs, err = strconv.ParseBool(v); err != nil {
			return fmt.Errorf("%s: %w", EnvAllowPrivateDiffs, err)
		}
	}
	return nil
}

// ports reads CRITICIZER_DIFF_URL_PORTS: a comma-separated list of port
// numbers, or "*" for any; empty: nil (80 and 443).
func ports(v string) ([]int, error) {
	v = strings.TrimSpace(v)
	switch v {
	case "":
		return nil, nil
	case "*":
		return []int{0}, nil
	}
	var out []int
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("%s: want port numbers separated by commas, or *, got %q", EnvDiffURLPorts, v)
		}
		out = append(out, n)
	}
	return out, nil
}
