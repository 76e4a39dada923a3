package devstack

import "testing"

// Only one process (here, one lock) may own a set of ports at a time; it
// is free again once released.
func TestLockPorts_OneOwnerAtATime(t *testing.T) {
	p := Ports{DynamoDB: 1, SQS: 2, SES: 3}
	a, ok, err := LockPorts(p)
	if err != nil || !ok {
		t.Fatalf("first lock: %v %v", ok, err)
	}
	if b, ok, err := LockPorts(p); err != nil || ok {
		b.Unlock()
		t.Fatalf("second lock while held: %v %v, want refused", ok, err)
	}
	a.Unlock()
	b, ok, err := LockPorts(p)
	if err != nil || !ok {
		t.Fatalf("lock after release: %v %v", ok, err)
	}
	b.Unlock()
}
