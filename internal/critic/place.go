package critic

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"strconv"
	"strings"

	"github.com/criticizer/criticizer/internal/diff"
)

// placeReach is how many lines on each side of a flagged line its Place
// may look at. A diff shows three lines of context around each change
// (git's default, and the code hosts'), so an added line's nearest three
// lines either side are always in its hunk, whatever else changed.
const placeReach = 3

// A Place says where a flagged line stands among the lines around it, so
// that a mark on it (R-VOTE-3) follows the line when lines above it move
// and never lands on a line with the same text elsewhere in the file.
//
// It is a digest of the flagged line's nearest k non-blank neighbours
// above and below on the new side of the diff (context and added lines,
// white space collapsed as in an Anchor; blank lines carry no identity,
// so adding or removing one beside the line does not move it), with the
// smallest k from 1 to placeReach for which no other line of the file's
// diff with the same text has the same neighbours. A line whose text is
// nowhere else has k = 1: its immediate neighbours. A line that its k
// neighbours either side cannot tell from another line with the same
// text (a copied block) has no Place: a mark could not say which of them
// the reader saw. A neighbour past the edge of the hunk (what the diff
// does not show) counts as "none" on both versions alike.
//
// Hand-written rather than taken from a diff library: it needs only the
// lines the parsed diff (internal/diff) already holds, and what it must
// keep is a small digest, never the lines (a mark is stored for months).
//
// placeIndex is one file's new side, built once for the findings on it.
type placeIndex struct {
	lines  []placeLine
	at     map[int]int      // new line number → index in lines; -1: two lines have it
	byText map[string][]int // collapsed text → indexes with that text
	// prev and next are, for each index, the nearest non-blank line
	// above and below it in the same hunk; -1: none.
	prev, next []int
	// windows caches window's digests: [i][k-1], 0 when not computed.
	windows [][placeReach]uint64
	// texts maps an Anchor to its collapsed text, built by lineOf.
	texts map[string]string
}

type placeLine struct {
	text string // white space collapsed, as an Anchor digests it
	hunk int
}

// newPlaceIndex indexes f's new side: every context and added line of its
// hunks, in order.
func newPlaceIndex(f *diff.File) *placeIndex {
	n := 0
	for h := range f.Hunks {
		n += len(f.Hunks[h].Lines)
	}
	x := &placeIndex{lines: make([]placeLine, 0, n), at: make(map[int]int, n), byText: map[string][]int{}}
	for h := range f.Hunks {
		for _, l := range f.Hunks[h].Lines {
			if l.Kind == diff.Removed {
				continue
			}
			i := len(x.lines)
			text := strings.Join(strings.Fields(l.Text), " ")
			x.lines = append(x.lines, placeLine{text: text, hunk: h})
			if _, dup := x.at[l.NewLine]; dup {
				// Hunks that overlap (a malformed diff the parser let
				// through): which line the number names is unknown.
				x.at[l.NewLine] = -1
			} else {
				x.at[l.NewLine] = i
			}
			x.byText[text] = append(x.byText[text], i)
		}
	}
	n = len(x.lines)
	x.prev, x.next, x.windows = make([]int, n), make([]int, n), make([][placeReach]uint64, n)
	last := -1
	for i := range n {
		if i > 0 && x.lines[i].hunk != x.lines[i-1].hunk {
			last = -1
		}
		x.prev[i] = last
		if x.lines[i].text != "" {
			last = i
		}
	}
	last = -1
	for i := n - 1; i >= 0; i-- {
		if i < n-1 && x.lines[i].hunk != x.lines[i+1].hunk {
			last = -1
		}
		x.next[i] = last
		if x.lines[i].text != "" {
			last = i
		}
	}
	return x
}

// window is the digest of line i's k nearest non-blank neighbours above
// and below, nearest first, "none" past its hunk's edge: the first 8
// bytes of a SHA-256, so that a change's author cannot make another line
// share a place with one a reader dismissed.
func (x *placeIndex) window(i, k int) uint64 {
	if w := x.windows[i][k-1]; w != 0 {
		return w
	}
	h := sha256.New()
	h.Write([]byte("place\x00" + strconv.Itoa(k)))
	for _, step := range [][]int{x.prev, x.next} {
		j := i
		for range k {
			if j >= 0 {
				j = step[j]
			}
			if j < 0 {
				h.Write([]byte("\x00\x01")) // none: past the hunk's edge
				continue
			}
			h.Write([]byte("\x00" + x.lines[j].text))
		}
		h.Write([]byte("\x00\x02"))
	}
	w := binary.BigEndian.Uint64(h.Sum(nil))
	x.windows[i][k-1] = w
	return w
}

// place is the Place of the new file's line numbered line; "" when the
// diff does not show it, or its placeReach neighbours either side do not
// tell it from another line with the same text.
func (x *placeIndex) place(line int) string {
	i, ok := x.at[line]
	if !ok || i < 0 {
		return ""
	}
	same := x.byText[x.lines[i].text]
	for k := 1; k <= placeReach; k++ {
		w := x.window(i, k)
		unique := true
		for _, j := range same {
			if j != i && x.window(j, k) == w {
				unique = false
				break
			}
		}
		if unique {
			var b [8]byte
			binary.BigEndian.PutUint64(b[:], w)
			return hex.EncodeToString(b[:])
		}
	}
	return ""
}

// lineOf is the new file's number of the line whose Anchor is a, the one
// with Place p if there is one, else the first; 0 when none has that text.
func (x *placeIndex) lineOf(a, p string) int {
	if x.texts == nil {
		x.texts = make(map[string]string, len(x.byText))
		for t := range x.byText {
			x.texts[lineAnchor(t)] = t
		}
	}
	text, ok := x.texts[a]
	if !ok {
		return 0
	}
	first := 0
	for line, i := range x.at {
		if i < 0 || x.lines[i].text != text {
			continue
		}
		if p != "" && x.place(line) == p {
			return line
		}
		if first == 0 || line < first {
			first = line
		}
	}
	return first
}

// places stamps findings with their Place, one index per file of the
// diff, built the first time a finding on that file asks.
type places struct {
	byPath map[string]*diff.File
	idx    map[string]*placeIndex
}

func newPlaces(byPath map[string]*diff.File) *places {
	return &places{byPath: byPath, idx: map[string]*placeIndex{}}
}

func (p *places) index(path string) *placeIndex {
	f := p.byPath[path]
	if f == nil {
		return nil
	}
	x := p.idx[path]
	if x == nil {
		x = newPlaceIndex(f)
		p.idx[path] = x
	}
	return x
}

// of is the Place of line on path: "" for line 0, a file not in the diff
// (or named twice), or a line without one.
func (p *places) of(path string, line int) string {
	if line <= 0 {
		return ""
	}
	if x := p.index(path); x != nil {
		return x.place(line)
	}
	return ""
}

// lineOf is placeIndex.lineOf on path; 0 when path is not in the diff.
func (p *places) lineOf(path, a, place string) int {
	if x := p.index(path); x != nil {
		return x.lineOf(a, place)
	}
	return 0
}
