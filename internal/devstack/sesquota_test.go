package devstack

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// The quota proxy's account: a send is counted only when the emulator
// accepted it, the daily window rolls with the proxy's clock, the rate is
// per second of that clock, and refusals carry SES's messages in the
// configured shape (R-RATE-3).
func TestSESQuota_CountsWindowAndRefusals(t *testing.T) {
	fail := false
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if fail {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		_, _ = w.Write([]byte(`{"MessageId":"m"}`))
	}))
	defer upstream.Close()
	p, err := NewSESQuota(upstream.URL, SESQuotaConfig{Max24HourSend: 2, MaxSendRate: 1, EnforceDaily: true, EnforceRate: true,
		ErrorCode: "TooManyRequestsException", ErrorStatus: http.StatusTooManyRequests})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_800_000_000, 0)
	p.Clock = func() time.Time { return now }
	send := func() *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		p.ServeHTTP(w, httptest.NewRequest(http.MethodPost, sesSendEmailPath, strings.NewReader(`{}`)))
		return w
	}
	sentLast24Hours := func() float64 {
		w := httptest.NewRecorder()
		p.ServeHTTP(w, httptest.NewRequest(http.MethodGet, sesGetAccountPath, nil))
		var out struct {
			SendQuota struct{ Max24HourSend, MaxSendRate, SentLast24Hours float64 }
		}
		if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil || out.SendQuota.Max24HourSend != 2 || out.SendQuota.MaxSendRate != 1 {
			t.Fatalf("GetAccount answered %s (%v)", w.Body.String(), err)
		}
		return out.SendQuota.SentLast24Hours
	}
	if w := send(); w.Code != http.StatusOK || sentLast24Hours() != 1 {
		t.Fatalf("first send: %d, counted %v", w.Code, sentLast24Hours())
	}
	w := send()
	if w.Code != http.StatusTooManyRequests || w.Header().Get("X-Amzn-Errortype") != "TooManyRequestsException" ||
		!strings.Contains(w.Body.String(), "Maximum sending rate exceeded.") {
		t.Fatalf("second send in the same second: %d %v %s; want the rate refusal", w.Code, w.Header(), w.Body)
	}
	now = now.Add(time.Second)
	fail = true
	if w := send(); w.Code != http.StatusBadRequest || sentLast24Hours() != 1 {
		t.Fatalf("a send the emulator refused is counted: %d, %v", w.Code, sentLast24Hours())
	}
	fail = false
	send()
	now = now.Add(time.Second)
	if w := send(); !strings.Contains(w.Body.String(), "Daily message quota exceeded.") || sentLast24Hours() != 2 {
		t.Fatalf("third send of a 2-a-day quota: %d %s", w.Code, w.Body)
	}
	if daily, rate := p.Refused(); daily != 1 || rate != 1 {
		t.Errorf("refused %d daily, %d rate; want 1 and 1", daily, rate)
	}
	p.Advance(24*time.Hour - 2*time.Second) // 24 h after the first send: it leaves the window
	if got := sentLast24Hours(); got != 1 {
		t.Errorf("a day after the first send: SentLast24Hours %v, want 1", got)
	}
	p.Reset()
	if got := sentLast24Hours(); got != 0 || send().Code != http.StatusOK {
		t.Errorf("after Reset: SentLast24Hours %v, want 0 and room to send", got)
	}
}

func TestSESQuotaFromEnv(t *testing.T) {
	env := func(v string) func(string) string { return func(string) string { return v } }
	if q, err := SESQuotaFromEnv(env("")); err != nil || q != DefaultSESQuota() {
		t.Fatalf("unset: %+v %v", q, err)
	}
	if q, err := SESQuotaFromEnv(env("200/1")); err != nil || q != Sandbox() {
		t.Fatalf("200/1: %+v %v, want the sandbox", q, err)
	}
	for _, bad := range []string{"200", "x/1", "200/0", "-1/1"} {
		if _, err := SESQuotaFromEnv(env(bad)); err == nil || !strings.Contains(err.Error(), EnvLocalSESQuota) {
			t.Errorf("%q: %v, want an error naming %s", bad, err, EnvLocalSESQuota)
		}
	}
}
