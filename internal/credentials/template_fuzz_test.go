package credentials

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"text/template"

	"github.com/lockstep-dev/lockstep/test/fuzzrun"
)

// The differential test of a bounded template against text/template
// itself: the same template over the same keys, once as lockstep runs it
// (its ranges wrapped, its functions bounded, the comparisons and index
// ported) and once as text/template runs it, must both fail or both write
// the same text. Templates come from a grammar driven by the input: the
// functions lockstep replaces, the ones it keeps, literals of every kind,
// keys, conditions, ranges and withs, nested.

var funcsTarget = fuzzrun.Target{Name: "FuzzTemplateFuncs", Inputs: 3000}

func init() {
	for i := range 24 {
		funcsTarget.Seeds = append(funcsTarget.Seeds, [][]byte{{byte(i), byte(i * 7), byte(i * 13), 3, 200, byte(i * 31), 9, 77, 1, 5, byte(i), 44, 18, 250}})
	}
}

func FuzzTemplateFuncs(f *testing.F) {
	fuzzrun.Add(f, funcsTarget)
	f.Fuzz(func(t *testing.T, in []byte) { checkTemplateFuncs(t, in) })
}

func TestFuncsAsStandard(t *testing.T) {
	fuzzrun.Run(t, funcsTarget, func(t *testing.T, in [][]byte) { checkTemplateFuncs(t, in[0]) })
}

// templateKeysData are the keys the generated templates run over.
var templateKeysData = map[string]string{"a": "x", "b": `<b>&"'=` + "\x00\u00e9", "num": "12", "empty": ""}

func checkTemplateFuncs(t *testing.T, in []byte) {
	g := templateGen{c: fuzzrun.Choices{Data: in}}
	text := g.template(2)
	std, err := template.New("value").Option("missingkey=error").Parse(text)
	if err != nil {
		return // the grammar can make what does not parse: both refuse it alike
	}
	var want bytes.Buffer
	stdErr := std.Execute(&want, templateKeysData)

	prog, err := compileTemplate(text)
	if err != nil {
		t.Fatalf("%q parses for text/template but not for lockstep: %v", text, err)
	}
	b := newBudget(threadCPU)
	prog.bind(b)
	b.begin()
	got, err := prog.run(b, templateKeysData)
	_ = b.end()
	if b.exceeded != nil {
		return // over a bound: lockstep refuses what text/template would run on
	}
	switch {
	case (stdErr == nil) != (err == nil):
		t.Fatalf("%q: text/template says %v, lockstep says %v", text, stdErr, err)
	case stdErr == nil && want.String() != string(got):
		t.Fatalf("%q: text/template writes %q, lockstep %q", text, want.String(), got)
	}
}

// templateGen makes templates from choices.
type templateGen struct{ c fuzzrun.Choices }

func (g *templateGen) pick(options ...string) string { return options[g.c.Pick(len(options))] }

func (g *templateGen) template(depth int) string {
	var b strings.Builder
	for range 1 + g.c.Pick(3) {
		b.WriteString(g.node(depth))
	}
	return b.String()
}

func (g *templateGen) node(depth int) string {
	if depth <= 0 {
		return "{{" + g.expr(1) + "}}"
	}
	switch g.c.Pick(6) {
	case 0:
		return fmt.Sprintf("{{if %s}}T%s{{else}}F{{end}}", g.expr(1), g.template(depth-1))
	case 1:
		return fmt.Sprintf("{{range $i, $v := %s}}[{{$i}}:{{$v}}]%s{{else}}none{{end}}", g.expr(1), g.template(depth-1))
	case 2:
		return fmt.Sprintf("{{range %s}}<{{.}}>{{break}}{{end}}", g.expr(1))
	case 3:
		return fmt.Sprintf("{{with $x := %s}}W{{$x}}{{end}}", g.expr(1))
	case 4:
		return "text"
	}
	return "{{" + g.expr(2) + "}}"
}

func (g *templateGen) expr(depth int) string {
	if depth <= 0 || g.c.Pick(3) == 0 {
		return g.value()
	}
	fn := g.pick("eq", "ne", "lt", "le", "gt", "ge", "index", "print", "printf", "println", "html", "js", "urlquery",
		"len", "slice", "not", "and", "or")
	n := g.c.Pick(4)
	if fn == "printf" {
		n = max(n, 1)
	}
	args := make([]string, n)
	for i := range args {
		if fn == "printf" && i == 0 {
			args[i] = g.pick(`"%s"`, `"%d"`, `"%v"`, `"%q"`, `"%x"`, `"% #x"`, `"%5s|"`, `"%[1]s %[1]v"`, `"%s %s"`, `"%-3d|"`, `"%%"`, `"%.2f"`, `"%*d"`, `"%[2]d"`, `"%U"`, `"%#v"`)
			continue
		}
		if g.c.Pick(3) == 0 {
			args[i] = "(" + g.expr(depth-1) + ")"
		} else {
			args[i] = g.value()
		}
	}
	return strings.TrimSpace(fn + " " + strings.Join(args, " "))
}

func (g *templateGen) value() string {
	return g.pick(".a", ".b", ".num", ".empty", "$.a", "$.b", "$", ".", `"x"`, `""`, `"<&>"`, `"num"`, "0", "1", "-1", "2", "255", "300",
		"1.5", "1e3", "true", "false", "nil", "'a'", "0x10", "$.num", `"a"`, "3")
}
