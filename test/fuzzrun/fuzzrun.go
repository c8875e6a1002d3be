package fuzzrun

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Target describes a fuzz target whose arguments are all []byte.
type Target struct {
	// Name is the fuzz target's function name (FuzzSplit); its saved
	// corpus is testdata/fuzz/<Name> in the package's directory.
	Name string
	// Seeds are the inputs the target adds with f.Add, each with one
	// []byte per argument.
	Seeds [][][]byte
	// Inputs is how many mutated inputs Run tries after the seeds and the
	// saved corpus.
	Inputs int
	// Dict are tokens that mutations insert; nil means JSONDict.
	Dict []string
}

// JSONDict are the tokens mutations insert by default: what JSON is made
// of, and the spellings where decoders tend to differ.
var JSONDict = []string{
	`{`, `}`, `[`, `]`, `,`, `:`, `"`, `\`, ` `, "\t", "\n", `{}`, `[]`, `""`,
	`null`, `true`, `false`, `0`, `-0`, `1`, `1.0`, `10e-1`, `0.1e1`, `1E+2`, `-1.5e-3`,
	`1e400`, `1e-400`, `9007199254740993`, `123456789012345678901234567890`,
	`\"`, `\\`, `\/`, `\u0000`, `\u0041`, `\ud83d\ude00`, `\ud800`, `\u00e9`, "\xff", "\xc3\xa9", "\u2028",
	`"a":1`, `"spec"`, `"metadata"`, `"sp\u0065c"`,
}

// Add adds the seeds of t to a fuzz target.
func Add(f *testing.F, t Target) {
	for _, s := range t.Seeds {
		args := make([]any, len(s))
		for i, a := range s {
			args[i] = a
		}
		f.Add(args...)
	}
}

// Run runs body on the seeds of t, on its saved corpus, and then on
// t.Inputs inputs mutated from them by a random source seeded with t.Name:
// the same inputs on every run. It stops at the first input body fails
// on, saves that input into the corpus and reports where.
func Run(t *testing.T, tg Target, body func(t *testing.T, args [][]byte)) {
	t.Helper()
	pool := slices.Clone(tg.Seeds)
	saved, err := Corpus(tg.Name)
	if err != nil {
		t.Fatalf("reading the corpus of %s: %v", tg.Name, err)
	}
	pool = append(pool, saved...)
	if len(pool) == 0 {
		t.Fatalf("%s has no seeds to start from", tg.Name)
	}
	arity := len(pool[0])
	dict := tg.Dict
	if dict == nil {
		dict = JSONDict
	}
	h := fnv.New64a()
	h.Write([]byte(tg.Name))
	r := rand.New(rand.NewPCG(h.Sum64(), 0))
	m := mutator{r: r, dict: dict}

	var current [][]byte
	for i := range len(pool) + tg.Inputs {
		if i < len(pool) {
			current = pool[i]
		} else {
			current = m.input(pool, arity)
		}
		if !t.Run(fmt.Sprintf("input-%d", i), func(t *testing.T) { guarded(t, body, current) }) {
			if i < len(pool) {
				t.Fatalf("%s fails on its seed or saved input #%d", tg.Name, i)
			}
			name, err := save(tg.Name, current)
			if err != nil {
				t.Fatalf("%s fails on a randomized input, which could not be saved (%v): %q", tg.Name, err, current)
			}
			t.Fatalf("%s fails on a randomized input, saved as %s; `go test -run '%s/%s'` replays it",
				tg.Name, name, tg.Name, filepath.Base(name))
		}
	}
}

// guarded runs body on one input and turns a panic into a failure, so
// that the input is saved.
func guarded(t *testing.T, body func(*testing.T, [][]byte), args [][]byte) {
	t.Helper()
	defer func() {
		if p := recover(); p != nil {
			t.Fatalf("panic: %v\n%s", p, debug.Stack())
		}
	}()
	body(t, args)
}

// mutator derives new inputs from a pool of inputs.
type mutator struct {
	r    *rand.Rand
	dict []string
}

// input returns a new input: an input of the pool with each argument
// mutated a few times, or now and then random bytes.
func (m *mutator) input(pool [][][]byte, arity int) [][]byte {
	base := pool[m.r.IntN(len(pool))]
	out := make([][]byte, arity)
	for a := range out {
		if m.r.IntN(20) == 0 {
			out[a] = m.random(m.r.IntN(48))
			continue
		}
		b := slices.Clone(base[a])
		for range 1 + m.r.IntN(4) {
			b = m.mutate(b, pool, a)
		}
		out[a] = b
	}
	return out
}

func (m *mutator) random(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(m.r.Uint32())
	}
	return b
}

// mutate applies one random change to b; other is where splices come from.
func (m *mutator) mutate(b []byte, pool [][][]byte, arg int) []byte {
	pos := func(n int) int { return m.r.IntN(n + 1) }
	switch m.r.IntN(9) {
	case 0, 1: // insert a dictionary token
		tok := m.dict[m.r.IntN(len(m.dict))]
		i := pos(len(b))
		return slices.Insert(b, i, []byte(tok)...)
	case 2: // replace a byte by a dictionary token
		if len(b) == 0 {
			return b
		}
		i := m.r.IntN(len(b))
		return slices.Replace(b, i, i+1, []byte(m.dict[m.r.IntN(len(m.dict))])...)
	case 3: // delete a range
		if len(b) == 0 {
			return b
		}
		i := m.r.IntN(len(b))
		j := min(len(b), i+1+m.r.IntN(8))
		return slices.Delete(b, i, j)
	case 4: // flip a bit
		if len(b) == 0 {
			return b
		}
		b[m.r.IntN(len(b))] ^= 1 << m.r.IntN(8)
		return b
	case 5: // set a byte
		if len(b) == 0 {
			return b
		}
		b[m.r.IntN(len(b))] = byte(m.r.Uint32())
		return b
	case 6: // repeat a range
		if len(b) == 0 {
			return b
		}
		i := m.r.IntN(len(b))
		j := min(len(b), i+1+m.r.IntN(16))
		return slices.Insert(b, pos(len(b)), slices.Clone(b[i:j])...)
	case 7: // splice in a range of another input's same argument
		other := pool[m.r.IntN(len(pool))][arg]
		if len(other) == 0 {
			return b
		}
		i := m.r.IntN(len(other))
		j := min(len(other), i+1+m.r.IntN(32))
		return slices.Insert(b, pos(len(b)), other[i:j]...)
	default: // change a digit
		var digits []int
		for i, c := range b {
			if c >= '0' && c <= '9' {
				digits = append(digits, i)
			}
		}
		if len(digits) == 0 {
			return b
		}
		b[digits[m.r.IntN(len(digits))]] = byte('0' + m.r.IntN(10))
		return b
	}
}

const corpusHeader = "go test fuzz v1"

// save writes an input into the target's corpus, named as Go's fuzzing
// engine names its findings, and returns the file's path.
func save(target string, args [][]byte) (string, error) {
	var b bytes.Buffer
	b.WriteString(corpusHeader + "\n")
	for _, a := range args {
		fmt.Fprintf(&b, "[]byte(%q)\n", a)
	}
	sum := sha256.Sum256(b.Bytes())
	dir := filepath.Join("testdata", "fuzz", target)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	name := filepath.Join(dir, hex.EncodeToString(sum[:])[:16])
	return name, os.WriteFile(name, b.Bytes(), 0o644)
}

// Corpus returns the inputs saved for the fuzz target name of the
// package the test runs in (testdata/fuzz/<name>), in the order of their
// file names; none when there are none.
func Corpus(name string) ([][][]byte, error) {
	return readCorpus(filepath.Join("testdata", "fuzz", name))
}

// readCorpus reads the inputs saved in dir (none when it does not exist),
// in the order of their names.
func readCorpus(dir string) ([][][]byte, error) {
	entries, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out [][][]byte
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		args, err := parseCorpusFile(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", e.Name(), err)
		}
		out = append(out, args)
	}
	return out, nil
}

// parseCorpusFile reads a corpus file whose values are all []byte or
// string literals.
func parseCorpusFile(data []byte) ([][]byte, error) {
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) < 2 || strings.TrimSuffix(lines[0], "\r") != corpusHeader {
		return nil, fmt.Errorf("not a %q file", corpusHeader)
	}
	var args [][]byte
	for _, line := range lines[1:] {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		var lit string
		switch {
		case strings.HasPrefix(line, "[]byte(") && strings.HasSuffix(line, ")"):
			lit = line[len("[]byte(") : len(line)-1]
		case strings.HasPrefix(line, "string(") && strings.HasSuffix(line, ")"):
			lit = line[len("string(") : len(line)-1]
		default:
			return nil, fmt.Errorf("only []byte and string values are read: %q", line)
		}
		s, err := strconv.Unquote(lit)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", line, err)
		}
		args = append(args, []byte(s))
	}
	return args, nil
}

// Choices hands out a fuzz input's bytes as choices, for generators that
// turn inputs which are not what a target reads into inputs that are.
// When the bytes run out, every choice is the first.
type Choices struct {
	Data []byte
}

// Next returns the next byte, or 0.
func (c *Choices) Next() int {
	if len(c.Data) == 0 {
		return 0
	}
	b := c.Data[0]
	c.Data = c.Data[1:]
	return int(b)
}

// Pick chooses one of n.
func (c *Choices) Pick(n int) int { return c.Next() % n }
