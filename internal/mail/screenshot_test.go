package mail_test

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Screenshot tests render every HTML template with headless Chromium: the
// layout must fit the 600px column an email client gives it, and the
// picture must show something. They need /usr/bin/chromium (`make
// chromium`); without it they skip, unless CRITICIZER_REQUIRE_STACK=1 (`make
// test`), where a missing browser is a failure.
//
// CRITICIZER_SCREENSHOT_DIR=<dir> keeps the screenshots there as
// <template>-<version>.png (critique-v2.png is docs/img/critique-email.png).

// columnWidth is the width every HTML template must fit in.
const columnWidth = 600

func chromium(t *testing.T) string {
	t.Helper()
	path := "/usr/bin/chromium"
	if p := os.Getenv("CRITICIZER_CHROMIUM"); p != "" {
		path = p
	}
	if _, err := os.Stat(path); err != nil {
		if p, lerr := exec.LookPath("chromium"); lerr == nil {
			return p
		}
		if os.Getenv("CRITICIZER_REQUIRE_STACK") == "1" {
			t.Fatalf("headless Chromium is required (CRITICIZER_REQUIRE_STACK=1) but %s is missing: run `make chromium` (apt-get install chromium) or set CRITICIZER_CHROMIUM", path)
		}
		t.Skipf("headless Chromium not found at %s; `make chromium` installs it", path)
	}
	return path
}

// runChromium runs one headless Chromium with a fresh profile and no
// network chatter, and returns its stdout.
func runChromium(t *testing.T, bin string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars",
		"--user-data-dir=" + t.TempDir()}
	cmd := exec.CommandContext(ctx, bin, append(base, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %s: %v\n%s", strings.Join(args, " "), err, tail(stderr.String(), 2000))
	}
	return stdout.Bytes()
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

var measured = regexp.MustCompile(`CRITICIZER-MEASURE (\d+) (\d+)`)

// measure loads page at a 600px-wide viewport and returns the document's
// scrollWidth and scrollHeight. A copy of the page gets an inline script that
// writes them into the DOM once the page has loaded; --dump-dom prints the
// DOM after the virtual time budget, so the numbers are read from stdout.
func measure(t *testing.T, bin string, page []byte) (width, height int) {
	t.Helper()
	const probe = `<script>addEventListener("load", function () {
  var d = document.documentElement, p = document.createElement("pre");
  p.textContent = "CRITICIZER-MEASURE " + d.scrollWidth + " " + d.scrollHeight;
  document.body.appendChild(p);
});</script>`
	s := string(page)
	i := strings.LastIndex(strings.ToLower(s), "</body>")
	if i < 0 {
		t.Fatalf("page has no </body>")
	}
	file := filepath.Join(t.TempDir(), "measure.html")
	if err := os.WriteFile(file, []byte(s[:i]+probe+s[i:]), 0o600); err != nil {
		t.Fatal(err)
	}
	out := runChromium(t, bin, "--dump-dom", "--virtual-time-budget=3000",
		fmt.Sprintf("--window-size=%d,800", columnWidth), "file://"+file)
	m := measured.FindSubmatch(out)
	if m == nil {
		t.Fatalf("no measurement in the dumped DOM:\n%s", tail(string(out), 2000))
	}
	width, _ = strconv.Atoi(string(m[1]))
	height, _ = strconv.Atoi(string(m[2]))
	return width, height
}

// screenshot renders page at 600px × height and returns the decoded PNG
// and its bytes.
func screenshot(t *testing.T, bin string, page []byte, height int) (image.Image, []byte) {
	t.Helper()
	dir := t.TempDir()
	file, shot := filepath.Join(dir, "page.html"), filepath.Join(dir, "shot.png")
	if err := os.WriteFile(file, page, 0o600); err != nil {
		t.Fatal(err)
	}
	runChromium(t, bin, "--screenshot="+shot, fmt.Sprintf("--window-size=%d,%d", columnWidth, height), "file://"+file)
	b, err := os.ReadFile(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("screenshot is not a PNG: %v", err)
	}
	return img, b
}

// inkFraction is the share of pixels that differ clearly from the top-left
// pixel (the page background), and colours the number of distinct colours
// (capped at 1000): a blank or single-colour picture has almost none of
// either.
func inkFraction(img image.Image) (ink float64, colours int) {
	b := img.Bounds()
	br, bg, bb, _ := img.At(b.Min.X, b.Min.Y).RGBA()
	seen := map[[3]uint32]bool{}
	n := 0
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			if len(seen) < 1000 {
				seen[[3]uint32{r >> 8, g >> 8, bl >> 8}] = true
			}
			if absDiff(r, br)+absDiff(g, bg)+absDiff(bl, bb) > 3*0x1000 {
				n++
			}
		}
	}
	return float64(n) / float64(b.Dx()*b.Dy()), len(seen)
}

func absDiff(a, b uint32) uint32 {
	if a > b {
		return a - b
	}
	return b - a
}

// Every HTML template fits a 600px column (no horizontal scrolling, even
// with the sample's long paths, long unbreakable words and non-ASCII title)
// and renders to a non-blank picture 600px wide.
func TestTemplates_HTMLFitsA600pxColumnAndIsNotBlank(t *testing.T) {
	bin := chromium(t)
	r := renderer(t)
	outDir := os.Getenv("CRITICIZER_SCREENSHOT_DIR")
	n := 0
	for _, name := range r.PreviewNames() {
		if !strings.HasSuffix(name, ".html") {
			continue
		}
		n++
		t.Run(name, func(t *testing.T) {
			_, page, err := r.Preview(name)
			if err != nil {
				t.Fatal(err)
			}
			w, h := measure(t, bin, page)
			t.Logf("%s: scrollWidth %d, scrollHeight %d at a %dpx viewport", name, w, h, columnWidth)
			if w > columnWidth {
				t.Errorf("%s is %dpx wide at a %dpx viewport; want ≤ %d (something does not wrap)", name, w, columnWidth, columnWidth)
			}
			if h < 100 || h > 20000 {
				t.Fatalf("%s: implausible height %d", name, h)
			}
			img, raw := screenshot(t, bin, page, h)
			if got := img.Bounds().Dx(); got != columnWidth {
				t.Errorf("screenshot is %dpx wide; want %d", got, columnWidth)
			}
			ink, colours := inkFraction(img)
			t.Logf("%s: %.1f%% ink, %d colours", name, 100*ink, colours)
			if ink < 0.02 || colours < 16 {
				t.Errorf("screenshot of %s looks blank: %.2f%% of pixels differ from the background, %d colours", name, 100*ink, colours)
			}
			if outDir != "" {
				base := strings.ReplaceAll(strings.TrimSuffix(name, ".html"), "/", "-") + ".png"
				if err := os.MkdirAll(outDir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(outDir, base), raw, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
	if n < 2 {
		t.Fatalf("only %d HTML templates previewed; want the critique and the unsubscribe page", n)
	}
}

// The width check can fail: a page wider than the column measures wider,
// and a blank page is seen as blank.
func TestTemplates_ScreenshotChecksCatchOverflowAndBlank(t *testing.T) {
	bin := chromium(t)
	wide := []byte(`<!DOCTYPE html><html><body style="margin:0"><table width="900"><tr><td>wide</td></tr></table></body></html>`)
	if w, _ := measure(t, bin, wide); w <= columnWidth {
		t.Errorf("a 900px table measured %dpx wide; the overflow check would not catch it", w)
	}
	blank := []byte(`<!DOCTYPE html><html><body style="margin:0;background:#fff"></body></html>`)
	img, _ := screenshot(t, bin, blank, 300)
	if ink, colours := inkFraction(img); ink >= 0.02 && colours >= 16 {
		t.Errorf("a blank page passed the blank check: %.2f%% ink, %d colours", 100*ink, colours)
	}
}
