package dynamo

import (
	"testing"
)

// A rerun's job item is a job item (Get reads it like any other) plus the
// audit trail: the job it reruns and the operator's reason.
func TestRerunJobItem_IsAJobItemWithItsOrigin(t *testing.T) {
	item, err := marshal(rerunJobItem{jobItem: jobItem{PK: "JOB#j_x", Kind: "job", jobRecord: jobRecord{ID: "j_x", ReviewVersion: 4}},
		RerunOf: "j_w", RerunReason: "INC-7"})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"pk", "kind", "job_id", "review_version", "rerun_of", "rerun_reason"} {
		if _, ok := item[k]; !ok {
			t.Errorf("attribute %q missing from %v", k, item)
		}
	}
	var back jobItem
	if err := unmarshal(item, &back); err != nil || back.ID != "j_x" || back.ReviewVersion != 4 {
		t.Fatalf("read back as a job: %+v %v", back, err)
	}
}
