package credentials

import (
	"errors"
	"fmt"
	"strings"
	"text/template"
	"text/template/parse"
)

// A template is parsed, checked and run with its bounds:
//
//   - Its text is at most MaxTemplateBytes, and it may not define or call
//     other templates ({{define}}, {{template}}, {{block}}: recursion
//     would loop without a range).
//   - Steps: every node weighs 1 plus the length of the text it holds
//     (a key's name, a string, a number, plain text), and a function's
//     name callWeight more, so a template's weight is about the length
//     of its text. Running the template takes
//     its weight outside range bodies once, and a pass through a range's
//     body takes passWeight and the body's weight. Each range's pipeline
//     is wrapped in a call of lockstep's own (_range N (pipeline)), which
//     charges the budget for all the passes the range is about to make
//     (N for each) before it makes the first, and hands the value on
//     unchanged: so a range that writes nothing ({{range 150000000}}
//     {{end}}) is refused before it starts, and nested ranges are charged
//     every time the inner one starts. Before the broker is called, a
//     template whose ranges over numbers alone would take more steps than
//     the bound is refused; every range over anything else counts as one
//     pass there.
//   - Work: the functions that make text (print, printf, println, html,
//     js, urlquery) are lockstep's own, which work out the most they can
//     make before they make it, and charge it; the comparisons (eq, ne,
//     lt, le, gt, ge) and index charge the strings they compare or look up
//     (they are the standard ones, ported so that they can).
//   - Output: what it writes goes to a writer that stops at MaxValueBytes.
//   - Time: the charges check the CPU time the templates have taken.
//
// The template's own error then names the bound (the budget keeps the
// first one hit), never a value.

// rangeFunc is the function that wraps ranges' pipelines. A template
// cannot name it: it is not among the functions a template is parsed
// with.
const rangeFunc = "_range"

// passWeight is what a pass through a range takes besides its body, and
// callWeight what a call of a function takes besides its name and
// arguments: a call through reflection costs as much as a few dozen
// bytes of text.
const (
	passWeight = 8
	callWeight = 16
)

// program is a template parsed and checked, with what its bounds need.
type program struct {
	tmpl *template.Template
	// weight is what the template takes outside range bodies.
	weight int
	// cost is the most its ranges over numbers can take, with every range
	// over anything else passed once.
	cost int
	// bodies is the weight of a pass through each range's body.
	bodies map[*parse.RangeNode]int
}

// errDefinesTemplates refuses {{define}}, {{template}} and {{block}}.
var errDefinesTemplates = errors.New("it defines or calls other templates ({{define}}, {{template}}, {{block}}), which a template here may not")

// compileTemplate parses and checks a template; it does not run it.
func compileTemplate(text string) (*program, error) {
	tmpl, err := template.New("value").Option("missingkey=error").Parse(text)
	if err != nil {
		return nil, err
	}
	if len(tmpl.Templates()) > 1 || callsTemplates(tmpl.Tree.Root) {
		return nil, errDefinesTemplates
	}
	w := weigher{bodies: map[*parse.RangeNode]int{}}
	weight := w.weight(tmpl.Tree.Root)
	return &program{tmpl: tmpl, weight: weight, cost: add(weight, w.rangeCost(tmpl.Tree.Root)), bodies: w.bodies}, nil
}

// bind readies the program to run against b: every range's pipeline
// wrapped in a call of rangeFunc with the weight of a pass, and the
// bounded functions. A program runs once.
func (p *program) bind(b *budget) {
	for r, weight := range p.bodies {
		pipe := r.Pipe
		pos := pipe.Position()
		inner := &parse.PipeNode{NodeType: parse.NodePipe, Pos: pos, Cmds: pipe.Cmds}
		weightArg := &parse.NumberNode{NodeType: parse.NodeNumber, Pos: pos, IsInt: true, Int64: int64(weight), Text: fmt.Sprint(weight)}
		call := &parse.CommandNode{NodeType: parse.NodeCommand, Pos: pos,
			Args: []parse.Node{parse.NewIdentifier(rangeFunc).SetPos(pos), weightArg, inner}}
		pipe.Cmds = []*parse.CommandNode{call}
	}
	p.tmpl.Funcs(b.funcs())
}

// run executes a bound program over values, within b.
func (p *program) run(b *budget, values map[string]string) ([]byte, error) {
	if err := b.step(p.weight); err != nil {
		return nil, err
	}
	out := &valueWriter{b: b}
	err := p.tmpl.Execute(out, values)
	if b.exceeded != nil {
		return nil, b.exceeded
	}
	return out.buf, err
}

// valueWriter keeps what a template writes, up to MaxValueBytes.
type valueWriter struct {
	buf []byte
	b   *budget
}

func (w *valueWriter) Write(p []byte) (int, error) {
	if len(w.buf)+len(p) > MaxValueBytes {
		return 0, w.b.fail(outputExceeded())
	}
	w.buf = append(w.buf, p...)
	return len(p), nil
}

// callsTemplates reports a {{template}} node anywhere in the tree.
func callsTemplates(n parse.Node) bool {
	found := false
	walkNodes(n, func(n parse.Node) bool {
		if _, ok := n.(*parse.TemplateNode); ok {
			found = true
		}
		return true
	})
	return found
}

// walkNodes calls visit for n and, where visit returns true, for the
// nodes below it, depth first.
func walkNodes(n parse.Node, visit func(parse.Node) bool) {
	if n == nil || !visit(n) {
		return
	}
	var children []parse.Node
	switch n := n.(type) {
	case *parse.ListNode:
		if n == nil {
			return
		}
		children = n.Nodes
	case *parse.ActionNode:
		children = []parse.Node{n.Pipe}
	case *parse.PipeNode:
		if n == nil {
			return
		}
		for _, d := range n.Decl {
			children = append(children, d)
		}
		for _, c := range n.Cmds {
			children = append(children, c)
		}
	case *parse.CommandNode:
		children = n.Args
	case *parse.ChainNode:
		children = []parse.Node{n.Node}
	case *parse.IfNode:
		children = branch(&n.BranchNode)
	case *parse.RangeNode:
		children = branch(&n.BranchNode)
	case *parse.WithNode:
		children = branch(&n.BranchNode)
	case *parse.TemplateNode:
		children = []parse.Node{n.Pipe}
	}
	for _, c := range children {
		walkNodes(c, visit)
	}
}

func branch(b *parse.BranchNode) []parse.Node {
	nodes := []parse.Node{b.Pipe, b.List}
	if b.ElseList != nil {
		nodes = append(nodes, b.ElseList)
	}
	return nodes
}

// weigher weighs a template's nodes, and the body of each range.
type weigher struct {
	// bodies is the weight of a pass through each range's body: 1, and
	// the body's weight outside the bodies of the ranges in it.
	bodies map[*parse.RangeNode]int
}

// weight is n's weight outside range bodies: 1 for each node, plus the
// length of the text it holds.
func (w *weigher) weight(n parse.Node) int {
	switch n := n.(type) {
	case nil:
		return 0
	case *parse.ListNode:
		if n == nil {
			return 0
		}
		total := 0
		for _, c := range n.Nodes {
			total = add(total, w.weight(c))
		}
		return total
	case *parse.TextNode:
		return 1 + len(n.Text)
	case *parse.CommentNode:
		return 1
	case *parse.ActionNode:
		return add(1, w.weight(n.Pipe))
	case *parse.PipeNode:
		if n == nil {
			return 0
		}
		total := 1
		for _, d := range n.Decl {
			total = add(total, w.weight(d))
		}
		for _, c := range n.Cmds {
			total = add(total, w.weight(c))
		}
		return total
	case *parse.CommandNode:
		total := 1
		for _, a := range n.Args {
			total = add(total, w.weight(a))
		}
		return total
	case *parse.FieldNode:
		return 1 + identsLength(n.Ident)
	case *parse.VariableNode:
		return 1 + identsLength(n.Ident)
	case *parse.ChainNode:
		return add(1+identsLength(n.Field), w.weight(n.Node))
	case *parse.IdentifierNode:
		return callWeight + len(n.Ident)
	case *parse.StringNode:
		return 1 + len(n.Text)
	case *parse.NumberNode:
		return 1 + len(n.Text)
	case *parse.IfNode:
		return add(1, add(w.weight(n.Pipe), add(w.weight(n.List), w.weight(n.ElseList))))
	case *parse.WithNode:
		return add(1, add(w.weight(n.Pipe), add(w.weight(n.List), w.weight(n.ElseList))))
	case *parse.RangeNode:
		w.bodies[n] = add(passWeight, w.weight(n.List))
		return add(1, add(w.weight(n.Pipe), w.weight(n.ElseList)))
	}
	return 1 // dot, nil, bool, break, continue
}

func identsLength(idents []string) int {
	n := 0
	for _, s := range idents {
		n += len(s)
	}
	return n
}

// rangeCost is what the ranges in n may take beyond n's weight: each
// range's body weight (and the ranges in it) as often as the range
// passes, which is the number it ranges over where that is a number in
// the text, and once otherwise. The weights must have been taken.
func (w *weigher) rangeCost(n parse.Node) int {
	total := 0
	walkNodes(n, func(c parse.Node) bool {
		r, ok := c.(*parse.RangeNode)
		if !ok || c == n {
			return true
		}
		body := add(w.bodies[r], w.rangeCost(r.List))
		total = add(total, mul(passes(r), body))
		if r.ElseList != nil {
			total = add(total, w.rangeCost(r.ElseList))
		}
		return false // the ranges in its body are in body
	})
	return total
}

// passes is how often a range passes through its body where the text
// says (a range over a number), and 1 otherwise.
func passes(r *parse.RangeNode) int {
	if r.Pipe == nil || len(r.Pipe.Cmds) != 1 || len(r.Pipe.Cmds[0].Args) != 1 {
		return 1
	}
	num, ok := r.Pipe.Cmds[0].Args[0].(*parse.NumberNode)
	if !ok || !num.IsInt || floatText(num.Text) {
		return 1 // not a number, or one the range cannot pass over
	}
	if num.Int64 <= 0 {
		return 0
	}
	if num.Int64 >= saturated {
		return saturated
	}
	return int(num.Int64)
}

// floatText reports whether a number in a template's text runs as a
// float, as text/template reads it: with a point, an exponent or a binary
// exponent, unless a hexadecimal integer or a character.
func floatText(s string) bool {
	hexInt := len(s) > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') && !strings.ContainsAny(s, "pP")
	runeInt := len(s) > 0 && s[0] == '\''
	return strings.ContainsAny(s, ".eEpP") && !hexInt && !runeInt
}
